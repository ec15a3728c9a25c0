package metrics

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// randomHistogram records n values spread over txload's whole range: the
// unit-resolution buckets, the largest, 0 and one hour included.
func randomHistogram(t *testing.T, r *rand.Rand, n int) *hdr.Histogram {
	t.Helper()
	h := NewHistogram()
	for range n {
		var v int64
		switch r.IntN(4) {
		case 0:
			v = r.Int64N(2048)
		case 1:
			v = r.Int64N(1_000_000)
		default:
			v = int64(1) << r.IntN(32) * (1 + r.Int64N(3))
		}
		if err := h.RecordValues(min(v, highestMicros), 1+r.Int64N(1000)); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []int64{0, 1, highestMicros} {
		if r.IntN(2) == 0 {
			if err := h.RecordValue(v); err != nil {
				t.Fatal(err)
			}
		}
	}
	return h
}

// MergeEncoded adds what Decode then Merge would, bucket for bucket.
func TestMergeEncodedEqualsDecodeAndMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		from := randomHistogram(t, r, r.IntN(300))
		into := randomHistogram(t, r, r.IntN(3)*50)
		enc, err := Encode(from)
		if err != nil {
			t.Fatal(err)
		}
		want := hdr.Import(into.Export())
		d, err := Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		if dropped := want.Merge(d); dropped != 0 {
			t.Fatal(dropped)
		}
		if err := MergeEncoded(into, enc); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !into.Equals(want) || into.TotalCount() != want.TotalCount() || into.Max() != want.Max() || into.Min() != want.Min() {
			t.Fatalf("case %d: count %d max %d, want %d %d", i, into.TotalCount(), into.Max(), want.TotalCount(), want.Max())
		}
	}
}

// A histogram of another geometry is decoded and merged; values beyond the
// receiver's range are an error, not dropped in silence.
func TestMergeEncodedOtherGeometry(t *testing.T) {
	small := hdr.New(1, 10_000, 2)
	for _, v := range []int64{1, 99, 5_000, 10_000} {
		if err := small.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	enc, err := Encode(small)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHistogram()
	if err := MergeEncoded(h, enc); err != nil {
		t.Fatal(err)
	}
	want := NewHistogram()
	want.Merge(small)
	if h.TotalCount() != 4 || !h.Equals(want) {
		t.Fatalf("count %d max %d, want %d %d", h.TotalCount(), h.Max(), want.TotalCount(), want.Max())
	}

	wide := hdr.New(1, 10*highestMicros, 3)
	if err := wide.RecordValue(5 * highestMicros); err != nil {
		t.Fatal(err)
	}
	if enc, err = Encode(wide); err != nil {
		t.Fatal(err)
	}
	if err := MergeEncoded(NewHistogram(), enc); err == nil || !strings.Contains(err.Error(), "out of the histogram's range") {
		t.Fatalf("a value beyond the range: %v", err)
	}
}

func TestMergeEncodedCorrupt(t *testing.T) {
	h := randomHistogram(t, rand.New(rand.NewPCG(3, 4)), 50)
	enc, err := Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(enc)
	b64 := base64.StdEncoding.EncodeToString
	for name, s := range map[string]string{
		"not base64":      "@@@",
		"short":           b64(raw[:5]),
		"cut":             b64(raw[:len(raw)-4]),
		"wrong cookie":    b64(append([]byte{0, 0, 0, 1}, raw[4:]...)),
		"length too long": b64(append(append([]byte{}, raw[:4]...), append([]byte{0x7f, 0, 0, 0}, raw[8:]...)...)),
	} {
		if err := MergeEncoded(NewHistogram(), s); err == nil || !strings.HasPrefix(err.Error(), "decoding histogram: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// BenchmarkMergeEncoded adds an interval's histogram to a window's, as the
// HTML report and merge do for each interval: with a fresh decoder each
// time, with one kept (Decoder), into a Sum then encoded (merge's merged
// intervals); and encoding it with HdrHistogram's Encode and with an
// Encoder kept (a run's intervals), and HdrHistogram's Decode.
func BenchmarkMergeEncoded(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	h := NewHistogram()
	for range 1000 {
		_ = h.RecordValue(200 + r.Int64N(5000))
	}
	enc, _ := Encode(h)
	into := NewHistogram()
	b.Run("MergeEncoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := MergeEncoded(into, enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Decoder", func(b *testing.B) {
		b.ReportAllocs()
		var d Decoder
		for b.Loop() {
			if err := d.MergeEncoded(into, enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SumAdd", func(b *testing.B) {
		b.ReportAllocs()
		s := NewSum()
		for b.Loop() {
			if err := s.Add(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A merged interval: its members added to a Sum, the Sum encoded.
	b.Run("SumAddEncode", func(b *testing.B) {
		b.ReportAllocs()
		s := NewSum()
		for b.Loop() {
			s.Reset()
			if err := s.Add(enc); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Encode(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Encode(h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Encoder", func(b *testing.B) {
		b.ReportAllocs()
		var e Encoder
		for b.Loop() {
			if _, err := e.Encode(h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DecodeMerge", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, err := Decode(enc)
			if err != nil {
				b.Fatal(err)
			}
			into.Merge(d)
		}
	})
}
