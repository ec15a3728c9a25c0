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
	"reflect"
	"slices"
	"unsafe"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	kzlib "github.com/klauspost/compress/zlib"
)

// Decoder reads encoded histograms (as Encode writes them) with buffers and
// an inflater it keeps from one to the next: adding up a day of intervals,
// hundreds of thousands of histograms, allocates next to nothing. Its
// inflater is klauspost/compress's, twice as fast as the standard
// library's on these small streams. The zero value is ready; a Decoder is
// not safe for concurrent use.
type Decoder struct {
	raw     []byte
	br      bytes.Reader
	zr      io.ReadCloser
	payload []byte
}

// header is what an encoding says of its histogram: its geometry, and the
// length of its counts.
type header struct {
	digits, lowest, highest int64
	payload                 int64
}

// open decodes s down to its header; counts reads on.
func (d *Decoder) open(s string) (header, error) {
	n := base64.StdEncoding.DecodedLen(len(s))
	if cap(d.raw) < n {
		d.raw = make([]byte, n)
	}
	k, err := base64.StdEncoding.Decode(d.raw[:n], []byte(s))
	if err != nil {
		return header{}, err
	}
	raw := d.raw[:k]
	if len(raw) < 8 {
		return header{}, fmt.Errorf("%d bytes, fewer than the 8 of the envelope", len(raw))
	}
	cookie, size := binary.BigEndian.Uint32(raw), binary.BigEndian.Uint32(raw[4:])
	if cookie&^0xf0 != v2CompressedCookie {
		return header{}, fmt.Errorf("cookie %#x: not HdrHistogram's V2 compressed encoding", cookie)
	}
	if uint64(size) > uint64(len(raw)-8) {
		return header{}, fmt.Errorf("the envelope holds %d bytes, it says %d", len(raw)-8, size)
	}
	d.br.Reset(raw[8 : 8+size])
	if d.zr == nil {
		d.zr, err = kzlib.NewReader(&d.br)
	} else {
		err = d.zr.(kzlib.Resetter).Reset(&d.br, nil)
	}
	if err != nil {
		return header{}, err
	}
	var head [v2HeaderSize]byte
	if _, err := io.ReadFull(d.zr, head[:]); err != nil {
		return header{}, fmt.Errorf("reading the header: %w", err)
	}
	if c := binary.BigEndian.Uint32(head[:]); c&^0xf0 != v2Cookie {
		return header{}, fmt.Errorf("cookie %#x: not HdrHistogram's V2 encoding", c)
	}
	h := header{payload: int64(int32(binary.BigEndian.Uint32(head[4:]))), digits: int64(int32(binary.BigEndian.Uint32(head[12:]))),
		lowest: int64(binary.BigEndian.Uint64(head[16:])), highest: int64(binary.BigEndian.Uint64(head[24:]))}
	return h, nil
}

// counts reads the counts' payload of the encoding open opened, for a
// histogram of size bytes; it stays the decoder's until its next call.
func (d *Decoder) counts(h header, size int64) ([]byte, error) {
	// At most a 9-byte varint per bucket, and a bucket is 8 bytes.
	if h.payload < 0 || h.payload > 2*size {
		return nil, fmt.Errorf("payload of %d bytes for a histogram of %d", h.payload, size)
	}
	if int64(cap(d.payload)) < h.payload+1 {
		d.payload = make([]byte, h.payload+1)
	}
	buf := d.payload[:h.payload+1]
	got, err := io.ReadFull(d.zr, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	if int64(got) != h.payload {
		return nil, fmt.Errorf("payload of %d bytes, the header says %d", got, h.payload)
	}
	return buf[:got], nil
}

// txload's geometry is the one NewHistogram makes.
func (h header) txloads() bool {
	return h.digits == sigFigs && h.lowest == lowestMicros && h.highest == highestMicros
}

// MergeEncoded adds the histogram s encodes to h, as the package's
// MergeEncoded does, with the decoder's buffers.
func (d *Decoder) MergeEncoded(h *hdr.Histogram, s string) error {
	if err := d.mergeEncoded(h, s); err != nil {
		return fmt.Errorf("decoding histogram: %w", err)
	}
	return nil
}

func (d *Decoder) mergeEncoded(h *hdr.Histogram, s string) error {
	head, err := d.open(s)
	if err != nil {
		return err
	}
	if head.digits != h.SignificantFigures() || head.lowest != h.LowestTrackableValue() || head.highest != h.HighestTrackableValue() {
		return mergeDecoded(h, s)
	}
	payload, err := d.counts(head, int64(h.ByteSize()))
	if err != nil {
		return err
	}
	g := geometryOf(h)
	return eachCount(payload, func(idx, n int64) error {
		// RecordValues refuses a bucket beyond h's, once its value is
		// representable.
		if (idx>>g.halfMagnitude)+g.unit > 62 {
			return fmt.Errorf("bucket %d beyond any histogram's", idx)
		}
		return h.RecordValues(g.value(idx), n)
	})
}

// eachCount calls f with each bucket of a V2 payload that holds values:
// its index and its count.
func eachCount(payload []byte, f func(idx, n int64) error) error {
	for idx := int64(0); len(payload) > 0; {
		c, k := leb128(payload)
		if k == 0 {
			return errors.New("a count is cut short")
		}
		payload = payload[k:]
		v := int64(c>>1) ^ -int64(c&1) // zig-zag
		switch {
		case v < 0 && v > -1<<40:
			idx -= v
		case v > 0:
			if err := f(idx, v); err != nil {
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

// Sum adds up encoded histograms bucket by bucket, and encodes the sum,
// without building a histogram: the merge of documents' intervals, where
// building, resetting and encoding a histogram for each interval would
// cost a hundred times more. Its histograms have txload's geometry (any
// other is converted to it). Not safe for concurrent use.
type Sum struct {
	dec    Decoder
	counts []int64
	// lo and hi bound the buckets that may hold values.
	lo, hi int
	total  int64
	g      geometry
	level  int // of zlib
	pack   packer
}

// NewSum returns an empty sum.
func NewSum() *Sum {
	h := NewHistogram()
	return &Sum{counts: make([]int64, len(h.Export().Counts)), lo: math.MaxInt, g: geometryOf(h), level: zlib.BestSpeed}
}

// Reset empties s.
func (s *Sum) Reset() {
	if s.hi > s.lo {
		clear(s.counts[s.lo:s.hi])
	}
	s.lo, s.hi, s.total = math.MaxInt, 0, 0
}

// Count is the number of values in s.
func (s *Sum) Count() int64 { return s.total }

// Add adds the histogram enc encodes (as Encode writes it). Values beyond
// txload's range are an error; after an error, s may hold part of enc.
func (s *Sum) Add(enc string) error {
	if err := s.add(enc); err != nil {
		return fmt.Errorf("decoding histogram: %w", err)
	}
	return nil
}

func (s *Sum) add(enc string) error {
	head, err := s.dec.open(enc)
	if err != nil {
		return err
	}
	if !head.txloads() {
		h := NewHistogram()
		if err := mergeDecoded(h, enc); err != nil {
			return err
		}
		for i, n := range h.Export().Counts {
			if n != 0 {
				s.addCount(i, n)
			}
		}
		return nil
	}
	payload, err := s.dec.counts(head, int64(8*len(s.counts)))
	if err != nil {
		return err
	}
	// eachCount's loop, for the counts alone: this is what merge and the
	// HTML report spend most of their time in.
	counts := s.counts
	first, last := -1, -1
	for i, idx := 0, 0; i < len(payload); {
		var c uint64
		if b := payload[i]; b < 0x80 {
			c = uint64(b)
			i++
		} else {
			v, k := leb128(payload[i:])
			if k == 0 {
				return errors.New("a count is cut short")
			}
			c = v
			i += k
		}
		v := int64(c>>1) ^ -int64(c&1) // zig-zag
		switch {
		case v > 0:
			if idx >= len(counts) {
				return fmt.Errorf("bucket %d beyond the histogram's %d", idx, len(counts))
			}
			counts[idx] += v
			s.total += v
			if first < 0 {
				first = idx
			}
			last = idx
			idx++
		case v < 0 && v > -1<<40:
			idx -= int(v)
		case v == 0:
			idx++
		default:
			return errors.New("an empty run too long to count")
		}
	}
	if first >= 0 {
		s.lo, s.hi = min(s.lo, first), max(s.hi, last+1)
	}
	return nil
}

func (s *Sum) addCount(i int, n int64) {
	s.counts[i] += n
	s.total += n
	s.lo, s.hi = min(s.lo, i), max(s.hi, i+1)
}

// AddTo adds the sum to h, a histogram of txload's geometry (values out
// of h's range are an error).
func (s *Sum) AddTo(h *hdr.Histogram) error {
	for i := s.lo; i < s.hi; i++ {
		if n := s.counts[i]; n != 0 {
			if err := h.RecordValues(s.g.value(int64(i)), n); err != nil {
				return err
			}
		}
	}
	return nil
}

// Encode returns the sum encoded as Encode encodes a histogram ("" when s
// is empty): the same counts in the same format, which any HdrHistogram
// decodes (compressed faster, so its bytes may differ).
func (s *Sum) Encode() (string, error) {
	if s.total == 0 {
		return "", nil
	}
	return s.pack.encode(s.counts[:s.hi], s.level)
}

// Encoder encodes histograms as Encode does, byte for byte, with a
// compressor and buffers it keeps from one to the next: an order of
// magnitude faster, with a fraction of the garbage (what a run encodes at
// each tick). The zero value is ready; an Encoder is not safe for
// concurrent use.
type Encoder struct {
	pack packer
	// checked: inPlace says whether histograms' buckets are read in place.
	checked, inPlace bool
}

// Encode returns h encoded.
func (e *Encoder) Encode(h *hdr.Histogram) (string, error) {
	if h.SignificantFigures() != sigFigs || h.LowestTrackableValue() != lowestMicros || h.HighestTrackableValue() != highestMicros {
		return Encode(h)
	}
	if !e.checked {
		e.checked, e.inPlace = true, countsInPlaceWork(h)
	}
	var counts []int64
	if e.inPlace {
		counts = countsInPlace(h)
	} else {
		counts = h.Export().Counts
	}
	hi := len(counts)
	for hi > 0 && counts[hi-1] == 0 {
		hi--
	}
	// An empty histogram's one empty bucket, as HdrHistogram writes it.
	return e.pack.encode(counts[:max(hi, 1)], zlib.BestCompression)
}

// packer writes HdrHistogram's V2 compressed encoding of a histogram of
// txload's geometry.
type packer struct {
	zw     zlibWriter
	level  int
	plain  []byte
	packed bytes.Buffer
	out    []byte
}

// zlibWriter is a zlib compressor that can start again: the standard
// library's at HdrHistogram's own level (its bytes are HdrHistogram's),
// klauspost/compress's at any other (faster).
type zlibWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// encode encodes counts, txload's buckets up to the last that holds
// values, compressed at level.
func (p *packer) encode(counts []int64, level int) (string, error) {
	// A run of empty buckets is written as its negated length, one as 0.
	b := p.plain[:0]
	b = binary.BigEndian.AppendUint32(b, v2Cookie|0x10)
	b = binary.BigEndian.AppendUint32(b, 0) // the payload's length, below
	b = binary.BigEndian.AppendUint32(b, 0) // normalizing index offset
	b = binary.BigEndian.AppendUint32(b, sigFigs)
	b = binary.BigEndian.AppendUint64(b, lowestMicros)
	b = binary.BigEndian.AppendUint64(b, uint64(highestMicros))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(1))
	for i := 0; i < len(counts); {
		n := counts[i]
		i++
		if n == 0 {
			zeros := int64(1)
			for i < len(counts) && counts[i] == 0 {
				zeros++
				i++
			}
			if zeros > 1 {
				n = -zeros
			}
		}
		b = appendZigZag(b, n)
	}
	binary.BigEndian.PutUint32(b[4:], uint32(len(b)-v2HeaderSize))
	p.plain = b
	p.packed.Reset()
	if p.zw == nil || p.level != level {
		var err error
		if level == zlib.BestCompression {
			p.zw, err = zlib.NewWriterLevel(&p.packed, level)
		} else {
			p.zw, err = kzlib.NewWriterLevel(&p.packed, level)
		}
		if err != nil {
			return "", err
		}
		p.level = level
	} else {
		p.zw.Reset(&p.packed)
	}
	if _, err := p.zw.Write(b); err != nil {
		return "", err
	}
	if err := p.zw.Close(); err != nil {
		return "", err
	}
	env := binary.BigEndian.AppendUint32(p.out[:0], v2CompressedCookie|0x10)
	env = binary.BigEndian.AppendUint32(env, uint32(p.packed.Len()))
	env = append(env, p.packed.Bytes()...)
	p.out = env
	return base64.StdEncoding.EncodeToString(env), nil
}

// appendZigZag appends v as HdrHistogram's varint: zig-zag, then LEB128
// whose ninth byte, if any, holds 8 bits.
func appendZigZag(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for i := 0; i < 8; i++ {
		if u < 0x80 {
			return append(b, byte(u))
		}
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

// countsInPlace is h's buckets, read where they are: HdrHistogram reads
// them out only through Export, which copies every one (23,552, 184 KB, in
// txload's geometry), and a run encodes three histograms of each operation
// at every tick: at --progress 10ms, 50 MB a second of garbage for the
// collector. Nil when h has no field counts of type []int64 (another
// version of HdrHistogram); the slice is h's, to read only.
func countsInPlace(h *hdr.Histogram) []int64 {
	f := reflect.ValueOf(h).Elem().FieldByName("counts")
	if !f.IsValid() || f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Int64 {
		return nil
	}
	return unsafe.Slice((*int64)(f.UnsafePointer()), f.Len())
}

// countsInPlaceWork says whether countsInPlace reads h's buckets: the same
// as Export's copy of them, and a value recorded into a copy of h shows in
// the copy's.
func countsInPlaceWork(h *hdr.Histogram) bool {
	c := h.Clone()
	if err := c.RecordValue(lowestMicros + 1); err != nil {
		return false
	}
	in := countsInPlace(c)
	return in != nil && slices.Equal(in, c.Export().Counts)
}
