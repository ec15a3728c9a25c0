package metrics

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// HdrHistogram's V2 encoding: a compressed envelope (cookie, length), then,
// zlib-compressed, a 40-byte header and the counts as zig-zag LEB128
// varints, a negative one standing for that many empty buckets.
const (
	v2Cookie           = 0x1c849303
	v2CompressedCookie = 0x1c849304
	v2HeaderSize       = 40
)

// MergeEncoded adds the histogram s encodes (as Encode writes it) to h. When
// s has h's geometry, as every histogram txload writes does, its counts go
// straight into h's buckets: no histogram is built, so adding up thousands
// of intervals allocates next to nothing. Another geometry is decoded and
// merged, and values out of h's range are an error. After an error, h may
// hold part of s.
func MergeEncoded(h *hdr.Histogram, s string) error {
	if err := mergeEncoded(h, s); err != nil {
		return fmt.Errorf("decoding histogram: %w", err)
	}
	return nil
}

func mergeEncoded(h *hdr.Histogram, s string) error {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	if len(raw) < 8 {
		return fmt.Errorf("%d bytes, fewer than the 8 of the envelope", len(raw))
	}
	cookie, n := binary.BigEndian.Uint32(raw), binary.BigEndian.Uint32(raw[4:])
	if cookie&^0xf0 != v2CompressedCookie {
		return fmt.Errorf("cookie %#x: not HdrHistogram's V2 compressed encoding", cookie)
	}
	if uint64(n) > uint64(len(raw)-8) {
		return fmt.Errorf("the envelope holds %d bytes, it says %d", len(raw)-8, n)
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8 : 8+n]))
	if err != nil {
		return err
	}
	defer z.Close()
	var head [v2HeaderSize]byte
	if _, err := io.ReadFull(z, head[:]); err != nil {
		return fmt.Errorf("reading the header: %w", err)
	}
	if c := binary.BigEndian.Uint32(head[:]); c&^0xf0 != v2Cookie {
		return fmt.Errorf("cookie %#x: not HdrHistogram's V2 encoding", c)
	}
	payload := int64(int32(binary.BigEndian.Uint32(head[4:])))
	digits := int64(int32(binary.BigEndian.Uint32(head[12:])))
	lowest, highest := int64(binary.BigEndian.Uint64(head[16:])), int64(binary.BigEndian.Uint64(head[24:]))
	if digits != h.SignificantFigures() || lowest != h.LowestTrackableValue() || highest != h.HighestTrackableValue() {
		return mergeDecoded(h, s)
	}
	g := geometryOf(h)
	// At most a 9-byte varint per bucket, and a bucket is 8 bytes of h.
	if payload < 0 || payload > 2*int64(h.ByteSize()) {
		return fmt.Errorf("payload of %d bytes for a histogram of %d", payload, h.ByteSize())
	}
	counts, err := io.ReadAll(io.LimitReader(z, payload+1))
	if err != nil {
		return err
	}
	if int64(len(counts)) != payload {
		return fmt.Errorf("payload of %d bytes, the header says %d", len(counts), payload)
	}
	for idx := int64(0); len(counts) > 0; {
		c, k := leb128(counts)
		if k == 0 {
			return errors.New("a count is cut short")
		}
		counts = counts[k:]
		v := int64(c>>1) ^ -int64(c&1) // zig-zag
		switch {
		case v < 0 && v > -1<<40:
			idx -= v
		case v > 0:
			// RecordValues refuses a bucket beyond h's, once its value is
			// representable.
			if (idx>>g.halfMagnitude)+g.unit > 62 {
				return fmt.Errorf("bucket %d beyond any histogram's", idx)
			}
			if err := h.RecordValues(g.value(idx), v); err != nil {
				return err
			}
			idx++
		case v == 0:
			idx++
		default:
			return errors.New("an empty run too long to count")
		}
	}
	return nil
}

// mergeDecoded decodes s and merges it into h: for a histogram of another
// geometry.
func mergeDecoded(h *hdr.Histogram, s string) error {
	d, err := hdr.Decode([]byte(s))
	if err != nil {
		return err
	}
	if dropped := h.Merge(d); dropped != 0 {
		return fmt.Errorf("%d values out of the histogram's range", dropped)
	}
	return nil
}

// leb128 reads HdrHistogram's varint: LEB128, whose ninth byte, if any,
// holds 8 bits. k is 0 when b ends first.
func leb128(b []byte) (v uint64, k int) {
	for i := range 9 {
		if i == len(b) {
			return 0, 0
		}
		if i == 8 {
			return v | uint64(b[8])<<56, 9
		}
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return v, 9
}

// geometry is how an HdrHistogram numbers its buckets: the log2 of the
// lowest value's unit, and of half a sub-bucket count.
type geometry struct{ unit, halfMagnitude int64 }

func geometryOf(h *hdr.Histogram) geometry {
	largest := 2 * math.Pow10(int(h.SignificantFigures()))
	sub := int64(math.Ceil(math.Log2(largest)))
	return geometry{unit: int64(bits.Len64(uint64(h.LowestTrackableValue())) - 1), halfMagnitude: max(sub, 1) - 1}
}

// value is the lowest value that bucket idx holds.
func (g geometry) value(idx int64) int64 {
	half := int64(1) << g.halfMagnitude
	bucket := (idx >> g.halfMagnitude) - 1
	sub := (idx & (half - 1)) + half
	if bucket < 0 {
		sub -= half
		bucket = 0
	}
	return sub << (bucket + g.unit)
}
