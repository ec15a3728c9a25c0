package metrics

import (
	"compress/zlib"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// A Sum of encoded histograms holds, and encodes, what decoding and
// merging them gives; at HdrHistogram's own compression its encoding is
// HdrHistogram's byte for byte, and after a Reset it starts again from
// nothing.
func TestSumEqualsDecodeAndMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s := NewSum()
	exact := NewSum()
	exact.level = zlib.BestCompression
	for i := range 100 {
		s.Reset()
		exact.Reset()
		want := NewHistogram()
		for range r.IntN(4) {
			h := randomHistogram(t, r, r.IntN(200))
			enc, err := Encode(h)
			if err != nil {
				t.Fatal(err)
			}
			want.Merge(h)
			for _, sum := range []*Sum{s, exact} {
				if err := sum.Add(enc); err != nil {
					t.Fatalf("case %d: %v", i, err)
				}
			}
		}
		if s.Count() != want.TotalCount() {
			t.Fatalf("case %d: count %d, want %d", i, s.Count(), want.TotalCount())
		}
		got, err := s.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if want.TotalCount() == 0 {
			if got != "" {
				t.Fatalf("case %d: an empty sum encodes as %q", i, got)
			}
			continue
		}
		back, err := hdr.Decode([]byte(got))
		if err != nil {
			t.Fatalf("case %d: HdrHistogram does not decode the sum: %v", i, err)
		}
		if !back.Equals(want) || back.TotalCount() != want.TotalCount() || back.Max() != want.Max() || back.Min() != want.Min() {
			t.Fatalf("case %d: the sum decodes to count %d max %d, want %d %d", i, back.TotalCount(), back.Max(), want.TotalCount(), want.Max())
		}
		same, err := exact.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if enc, _ := Encode(want); same != enc {
			t.Fatalf("case %d: at HdrHistogram's compression the sum encodes as\n%s\nHdrHistogram as\n%s", i, same, enc)
		}
	}
}

// A histogram of another geometry is converted; one beyond txload's range
// or damaged is an error.
func TestSumOtherGeometryAndDamage(t *testing.T) {
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
	s := NewSum()
	if err := s.Add(enc); err != nil {
		t.Fatal(err)
	}
	got, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	if back.TotalCount() != 4 || back.Min() != 1 || back.Max() < 9_900 || back.Max() > 10_100 {
		t.Errorf("converted: count %d, min %d, max %d", back.TotalCount(), back.Min(), back.Max())
	}
	huge := hdr.New(1, 1<<50, 3)
	if err := huge.RecordValue(1 << 45); err != nil {
		t.Fatal(err)
	}
	enc, err = Encode(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := NewSum().Add(enc); err == nil || !strings.Contains(err.Error(), "out of the histogram's range") {
		t.Errorf("a value beyond an hour: %v", err)
	}
	for _, bad := range []string{"SGlzdG9ncmFt", "not base64!", ""} {
		if err := NewSum().Add(bad); err == nil || !strings.HasPrefix(err.Error(), "decoding histogram: ") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// A Decoder kept from one histogram to the next merges what a fresh one
// does.
func TestDecoderReused(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var d Decoder
	for i := range 50 {
		from := randomHistogram(t, r, r.IntN(300))
		enc, err := Encode(from)
		if err != nil {
			t.Fatal(err)
		}
		a, b := NewHistogram(), NewHistogram()
		if err := d.MergeEncoded(a, enc); err != nil {
			t.Fatal(err)
		}
		if err := MergeEncoded(b, enc); err != nil {
			t.Fatal(err)
		}
		if !a.Equals(b) || !a.Equals(from) {
			t.Fatalf("case %d: the reused decoder merged another histogram", i)
		}
	}
}

// An Encoder kept from one histogram to the next writes what Encode
// writes, byte for byte, empty histograms included.
func TestEncoderEqualsEncode(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var e Encoder
	for i := range 100 {
		h := randomHistogram(t, r, r.IntN(4)*r.IntN(100))
		if i%10 == 0 {
			h = NewHistogram()
		}
		want, err := Encode(h)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Encode(h)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("case %d (%d values): the Encoder wrote\n%s\nEncode\n%s", i, h.TotalCount(), got, want)
		}
	}
}

// The Encoder reads a histogram's buckets in place (HdrHistogram's
// Export copies all 184 KB of them): encoding a histogram of a few values
// allocates a few hundred bytes, not the buckets' copy.
func TestEncoderReadsInPlace(t *testing.T) {
	h := NewHistogram()
	for _, v := range []int64{1, 250, 3000, 1e6} {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	if in := countsInPlace(h); !slices.Equal(in, h.Export().Counts) {
		t.Fatal("the buckets read in place are not Export's")
	}
	var e Encoder
	if _, err := e.Encode(h); err != nil {
		t.Fatal(err)
	}
	if !e.inPlace {
		t.Fatal("the Encoder copies the buckets")
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range 10 {
		if _, err := e.Encode(h); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&m1)
	if per := (m1.TotalAlloc - m0.TotalAlloc) / 10; per > 4<<10 {
		t.Errorf("an encoding allocates %d bytes", per)
	}
}
