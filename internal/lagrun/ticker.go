package lagrun

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/lag"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/prom"
)

// ticker prints lag progress lines, writes the lag's interval histograms
// (--histogram) and sets lag's gauges on the --metrics-addr exporter.
type ticker struct {
	tracker  *lag.Tracker
	views    *lag.Views
	start    time.Time
	progress time.Duration // 0: no progress lines
	stderr   io.Writer
	exp      *prom.Exporter // nil: no exporter
	h        *hdr.Histogram
	hlog     *hdr.HistogramLogWriter
	file     *outfile.Stream
	path     string
	last     time.Time
	mu       sync.Mutex
	// points are the lag per interval, for the document's chart, spooled
	// as they come; closed once the run is done with them.
	points *report.Spool[report.SeriesPoint]
	closed bool
}

// close closes the spool of points.
func (t *ticker) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		t.points.Close()
	}
}

// pointsSoFar are the lag's points so far, read from the spool under the
// ticker's lock (the live page reads them while the ticker appends): a few
// values a second.
func (t *ticker) pointsSoFar() report.Slice[report.SeriesPoint] {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	c, err := t.points.Open()
	if err != nil {
		return nil
	}
	defer c.Close()
	var out report.Slice[report.SeriesPoint]
	for {
		pt, err := c.Next()
		if err != nil {
			return out
		}
		out = append(out, report.SeriesPoint{At: pt.At, Values: slices.Clone(pt.Values)})
	}
}

// startTicker ticks every progress interval (every second without one:
// intervals still expire markers) until ctx ends.
func (p *plan) startTicker(ctx context.Context, wg *sync.WaitGroup, tr *lag.Tracker, v *lag.Views, start time.Time) (*ticker, error) {
	points, err := report.NewPointSpool("")
	if err != nil {
		return nil, err
	}
	t := &ticker{tracker: tr, views: v, start: start, progress: p.load.Engine.Progress, stderr: p.load.Stderr, exp: p.load.Metrics,
		h: metrics.NewHistogram(), path: p.histogram, last: time.Now(), points: points}
	if t.path != "" {
		if err := t.openLog(ctx); err != nil {
			points.Close()
			return nil, fmt.Errorf("--histogram: %w", err)
		}
	}
	every := t.progress
	if every <= 0 {
		every = time.Second
	}
	wg.Go(func() {
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				// The clock now, not the tick's: markers acknowledged since
				// the tick fired would seem to come from the future.
				t.tick(time.Now(), false)
			}
		}
	})
	return t, nil
}

// openLog creates the --histogram file and writes its header.
func (t *ticker) openLog(ctx context.Context) error {
	f, err := outfile.CreateStream(ctx, t.path)
	if err != nil {
		return err
	}
	t.file = f
	t.hlog = hdr.NewHistogramLogWriter(f)
	ms := t.start.UnixMilli()
	t.hlog.SetBaseTime(ms)
	for _, fn := range []func() error{
		t.hlog.OutputLogFormatVersion,
		func() error {
			return t.hlog.OutputComment("txload lag interval histograms: replication lag in microseconds")
		},
		func() error { return t.hlog.OutputStartTime(ms) },
		func() error { return t.hlog.OutputBaseTime(ms) },
		t.hlog.OutputLegend,
	} {
		if err := fn(); err != nil {
			f.Close()
			return err
		}
	}
	return nil
}

func (t *ticker) tick(now time.Time, final bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	iv := t.tracker.Tick(now, t.h)
	if t.hlog != nil {
		iv.Lag.SetTag("replication-lag")
		iv.Lag.SetStartTimeMs(t.last.UnixMilli())
		iv.Lag.SetEndTimeMs(now.UnixMilli())
		if err := t.hlog.OutputIntervalHistogram(iv.Lag); err != nil {
			fmt.Fprintf(t.stderr, "--histogram: %v\n", err)
		}
	}
	t.last = now
	t.export(iv)
	if iv.Measured > 0 || iv.Pending > 0 {
		at := now.Sub(t.start).Seconds()
		// An error sticks to the spool, and writing the document says it.
		_ = t.points.Append(&report.SeriesPoint{At: at, Values: []float64{
			float64(iv.Lag.ValueAtQuantile(50)), float64(iv.Lag.ValueAtQuantile(99)), float64(iv.Lag.Max()), float64(iv.Behind.Microseconds())}})
	}
	if final || t.progress <= 0 {
		return
	}
	fmt.Fprintln(t.stderr, progressLine(now.Sub(t.start), iv, t.views.Last()))
}

// progressLine is the progress line of an interval that ended at since
// the start, beside the servers' latest view.
func progressLine(since time.Duration, iv lag.Interval, s lag.ViewSample) string {
	line := fmt.Sprintf("%6.1fs  lag", since.Seconds())
	if iv.Measured == 0 {
		line += "  none seen"
	} else {
		line += fmt.Sprintf("  p50 %s  p99 %s  max %s  markers %d", report.Micros(iv.Lag.ValueAtQuantile(50)),
			report.Micros(iv.Lag.ValueAtQuantile(99)), report.Micros(iv.Lag.Max()), iv.Measured)
	}
	if iv.Pending > 0 {
		line += fmt.Sprintf("  behind %s (%d pending)", report.Micros(iv.Behind.Microseconds()), iv.Pending)
	}
	if s.Replay >= 0 {
		line += "  replay_lag " + report.Micros(s.Replay.Microseconds())
	}
	if s.Behind >= 0 {
		line += "  replay behind " + bytesString(s.Behind)
	}
	if s.Delay >= 0 {
		line += "  subscription delay " + report.Micros(s.Delay.Microseconds())
	}
	return line
}

// export sets lag's gauges of the interval on the --metrics-addr exporter.
func (t *ticker) export(iv lag.Interval) {
	exp := t.exp
	if exp == nil {
		return
	}
	seconds := func(us int64) float64 { return float64(us) / 1e6 }
	if iv.Measured > 0 {
		exp.SetFigure("replication_lag_p50_seconds", "Replication lag of the markers seen in the last interval: median.", seconds(iv.Lag.ValueAtQuantile(50)))
		exp.SetFigure("replication_lag_p99_seconds", "Replication lag of the markers seen in the last interval: 99th percentile.", seconds(iv.Lag.ValueAtQuantile(99)))
		exp.SetFigure("replication_lag_max_seconds", "Replication lag of the markers seen in the last interval: maximum.", seconds(iv.Lag.Max()))
	}
	exp.SetFigure("replication_markers_seen", "Markers seen on the destination in the last interval.", float64(iv.Measured))
	exp.SetFigure("replication_markers_pending", "Markers committed on the source and not yet seen on the destination.", float64(iv.Pending))
	exp.SetFigure("replication_behind_seconds", "Age of the oldest marker not yet seen on the destination (0: none pending).", iv.Behind.Seconds())
	s := t.views.Last()
	if s.Replay >= 0 {
		exp.SetFigure("replication_replay_lag_seconds", "The server's own view: pg_stat_replication's replay_lag.", s.Replay.Seconds())
	}
	if s.Behind >= 0 {
		exp.SetFigure("replication_replay_behind_bytes", "The server's own view: WAL bytes the standby has yet to replay.", float64(s.Behind))
	}
	if s.Delay >= 0 {
		exp.SetFigure("replication_subscription_delay_seconds", "The server's own view: pg_stat_subscription's message delay.", s.Delay.Seconds())
	}
}

// finish writes the last interval and closes the log; its error is the
// log's that could not be written (no "wrote" line then).
func (t *ticker) finish(now time.Time) error {
	t.tick(now, true)
	if t.file == nil {
		return nil
	}
	if err := t.file.Close(); err != nil {
		return fmt.Errorf("writing --histogram %s: %w", t.path, err)
	}
	fmt.Fprintf(t.stderr, "wrote %s\n", t.path)
	return nil
}
