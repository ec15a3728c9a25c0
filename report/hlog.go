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
	w     *hdr.HistogramLogWriter
	start time.Time
	tmp   *hdr.Histogram
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
	return &Hlog{w: lw, start: start, tmp: metrics.NewHistogram()}, nil
}

// Interval writes the histograms of one interval ending at end.
func (h *Hlog) Interval(iv *metrics.Snapshot, end time.Time) error {
	from, to := end.Add(-iv.Elapsed).UnixMilli(), end.UnixMilli()
	for _, o := range iv.Ops {
		for _, k := range []struct {
			kind string
			h    *hdr.Histogram
		}{{"sojourn", o.Response}, {"remote", o.Service}, {"lag", o.Lag}} {
			// The snapshot is reused by the next tick: write a copy with
			// this interval's times and tag.
			h.tmp.Reset()
			h.tmp.Merge(k.h)
			h.tmp.SetTag(Tag(o.Name) + "-" + k.kind)
			h.tmp.SetStartTimeMs(from)
			h.tmp.SetEndTimeMs(to)
			if err := h.w.OutputIntervalHistogram(h.tmp); err != nil {
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
