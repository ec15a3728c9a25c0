package report_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
)

// Hlog writes what HdrHistogram's HistogramLogWriter writes of the same
// histograms, byte for byte: empty ones, one value, many, the times of
// intervals of a millisecond and of a second.
func TestHlogIsTheLogWriters(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_123)
	var got bytes.Buffer
	l, err := report.NewHlog(&got, start)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if _, err := report.NewHlog(&want, start); err != nil {
		t.Fatal(err)
	}
	lw := hdr.NewHistogramLogWriter(&want)
	lw.SetBaseTime(start.UnixMilli())

	r := rand.New(rand.NewPCG(3, 4))
	end := start
	for i := range 50 {
		iv := metrics.NewSnapshot([]string{"new order", "pay,ment"})
		iv.Elapsed = time.Millisecond
		if i%2 == 1 {
			iv.Elapsed = time.Second + 7*time.Millisecond
		}
		end = end.Add(iv.Elapsed)
		for _, o := range iv.Ops {
			for _, h := range []*hdr.Histogram{o.Response, o.Service, o.Lag} {
				for range r.IntN(3) * r.IntN(200) {
					if err := h.RecordValue(1 + r.Int64N(int64(time.Minute/time.Microsecond))); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if err := l.Interval(iv, end); err != nil {
			t.Fatal(err)
		}
		for _, o := range iv.Ops {
			for _, k := range []struct {
				kind string
				h    *hdr.Histogram
			}{{"sojourn", o.Response}, {"remote", o.Service}, {"lag", o.Lag}} {
				c := k.h.Clone()
				c.SetTag(report.Tag(o.Name) + "-" + k.kind)
				c.SetStartTimeMs(end.Add(-iv.Elapsed).UnixMilli())
				c.SetEndTimeMs(end.UnixMilli())
				if err := lw.OutputIntervalHistogram(c); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		g, w := bytes.Split(got.Bytes(), []byte("\n")), bytes.Split(want.Bytes(), []byte("\n"))
		for i := range min(len(g), len(w)) {
			if !bytes.Equal(g[i], w[i]) {
				t.Fatalf("line %d:\n%.300s\nHistogramLogWriter's:\n%.300s", i+1, g[i], w[i])
			}
		}
		t.Fatalf("%d lines, HistogramLogWriter's %d", len(g), len(w))
	}
}
