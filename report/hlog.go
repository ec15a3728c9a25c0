package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
)

// Hlog writes interval histograms in HdrHistogram's log format (.hlog), the
// one HdrHistogram's own tools read (HistogramLogProcessor, the plotters):
// one line per interval, operation and kind of time, tagged OP-sojourn
// (from intended start), OP-remote (from send) and OP-lag, values in µs.
type Hlog struct {
	out   io.Writer
	start time.Time
	base  int64 // ms since the epoch
	enc   metrics.Encoder
}

// NewHlog writes the log's header; start is the run's start, its base time.
func NewHlog(w io.Writer, start time.Time) (*Hlog, error) {
	lw := hdr.NewHistogramLogWriter(w)
	ms := start.UnixMilli()
	lw.SetBaseTime(ms)
	for _, f := range []func() error{
		lw.OutputLogFormatVersion,
		func() error { return lw.OutputComment("txload interval histograms; values in microseconds") },
		func() error { return lw.OutputStartTime(ms) },
		func() error { return lw.OutputBaseTime(ms) },
		lw.OutputLegend,
	} {
		if err := f(); err != nil {
			return nil, fmt.Errorf("writing the histogram log: %w", err)
		}
	}
	return &Hlog{out: w, start: start, base: ms}, nil
}

// Interval writes the histograms of one interval ending at end: the
// lines HdrHistogram's HistogramLogWriter writes, byte for byte, each
// histogram encoded in place by a metrics.Encoder (the writer copies it
// and encodes it with a new compressor: a megabyte of garbage a line).
func (h *Hlog) Interval(iv *metrics.Snapshot, end time.Time) error {
	from, to := end.Add(-iv.Elapsed).UnixMilli(), end.UnixMilli()
	// As the writer computes them.
	start := float64(from-h.base) / 1000.0
	length := float64(to-h.base)/1000.0 - start
	for _, o := range iv.Ops {
		for _, k := range []struct {
			kind string
			h    *hdr.Histogram
		}{{"sojourn", o.Response}, {"remote", o.Service}, {"lag", o.Lag}} {
			enc, err := h.enc.Encode(k.h)
			if err == nil {
				_, err = fmt.Fprintf(h.out, "Tag=%s-%s,%f,%f,%f,%s\n", Tag(o.Name), k.kind, start, length,
					float64(k.h.Max())/hdr.MsToNsRatio, enc)
			}
			if err != nil {
				return fmt.Errorf("writing the histogram log: %w", err)
			}
		}
	}
	return nil
}

// Tag makes an operation name usable as a log tag: no commas, spaces or
// line breaks.
func Tag(name string) string {
	return strings.Map(func(r rune) rune {
		if r == ',' || r == ' ' || r == '\r' || r == '\n' {
			return '_'
		}
		return r
	}, name)
}
