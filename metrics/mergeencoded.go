package metrics

import (
	"fmt"
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
	var d Decoder
	return d.MergeEncoded(h, s)
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
