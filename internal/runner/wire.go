package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/report"
	"github.com/txload/txload/workload"
)

// wired is a run's engine configuration with its outputs attached.
type wired struct {
	cfg engine.Config
	// close closes the files wire opened, with the first error writing
	// them.
	close func() error
	// intervals collects the run's intervals for its document (nil: no
	// document); whoever holds the outcome closes it.
	intervals *report.Intervals
	// printer prints the run in opts.Format (nil: txload's own lines).
	printer Printer
}

// wire connects the engine's callbacks to the outputs: progress lines in the
// chosen format, the interval log, failed attempts and the run's events on
// Stderr; with --json, the intervals for the document; with --metrics-addr,
// the exporter; with a TxnLog, every transaction.
func wire(ctx context.Context, conn *Conn, load *workload.QueryLoad, opts Options) (wired, error) {
	cfg := opts.Engine
	cfg.Classify = pg.Classify
	if opts.ClientErrorsAbort {
		cfg.Classify = func(err error) (metrics.Class, bool) {
			class, fatal := pg.Classify(err)
			var pe *pgconn.PgError
			if fatal && !(errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28")) {
				return class, false // the engine ends the client
			}
			if class == metrics.ConnectionLost || class == metrics.AmbiguousCommit {
				// The client gives up with its connection.
				return metrics.Other, false
			}
			return class, fatal
		}
	}
	stderr := opts.Stderr
	scrub := conn.Target.Scrub
	var pr Printer
	if opts.Format != nil {
		pr = opts.Format.Printer(RunInfo{Load: load, Engine: cfg, Threads: threads(load, cfg),
			PerStatement: opts.PerStatement, Scrub: scrub})
	}
	// Progress lines cover the measured window, interval by interval: its
	// last one ends with it (at the end of the duration or at an
	// interrupt), a partial interval whose rate is over its real length,
	// unless the format prints whole intervals only. The drain after the
	// window has a line of its own in the summary. A run of a number of
	// transactions has no end to its window: its final interval is printed
	// when it reaches a progress boundary whose tick the end of the run
	// overtook (with progress every 5 s, a run that ends just after 5 s
	// prints its 5.0 s line). Ticks come one at a time.
	var shownUpTo time.Duration
	show := func(t engine.Tick) bool {
		p := opts.Engine.Progress
		switch {
		case p <= 0 || t.Drain:
			return false
		case pr != nil && pr.WholeIntervals() && t.Interval.Elapsed < p-p/100 && !t.Final && !t.Resumed:
			return false
		case !t.Final || t.Elapsed >= shownUpTo+p:
			shownUpTo = t.Elapsed
			return true
		}
		return false
	}
	ticks := []func(engine.Tick){func(t engine.Tick) {
		switch {
		case !show(t):
		case pr != nil:
			pr.Progress(stderr, t)
		default:
			report.Progress(stderr, t.Elapsed, t.Warmup, t.Interval)
		}
	}}
	var closers []func() error
	closeOut := func() error {
		var first error
		for _, c := range closers {
			if err := c(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	var starts []func(time.Time)
	if cfg.Start != nil {
		starts = append(starts, cfg.Start)
	}
	if f := opts.figures; f != nil {
		starts = append(starts, func(start time.Time) { f.start(start.Add(cfg.Warmup)) })
	}
	if opts.Histogram != "" {
		hf, err := outfile.CreateStream(ctx, opts.Histogram)
		if err != nil {
			return wired{}, fmt.Errorf("--histogram: %w", err)
		}
		closers = append(closers, func() error {
			if err := hf.Close(); err != nil {
				return fmt.Errorf("writing --histogram %s: %w", opts.Histogram, err)
			}
			fmt.Fprintf(stderr, "wrote %s\n", opts.Histogram)
			return nil
		})
		if cfg.Progress <= 0 {
			cfg.Progress = time.Second // intervals for the log, no progress lines
		}
		var hlog *report.Hlog
		starts = append(starts, func(start time.Time) {
			var err error
			if hlog, err = report.NewHlog(hf, start); err != nil {
				fmt.Fprintln(stderr, err)
			}
		})
		ticks = append(ticks, func(t engine.Tick) {
			if hlog != nil && !t.Drain {
				if err := hlog.Interval(t.Interval, t.End); err != nil {
					// Said once, when it happens; the log is not written
					// further, and its close fails the run.
					fmt.Fprintln(stderr, err)
					hlog = nil
				}
			}
		})
	}
	var intervals *report.Intervals
	if opts.keepsDocument() || opts.KeepIntervals {
		// The document carries every interval, so that documents of
		// several load generators merge interval by interval: they are
		// spooled as they come, and read back when it is written.
		var err error
		if intervals, err = report.NewIntervals(""); err != nil {
			closeOut()
			return wired{}, err
		}
		if cfg.Progress <= 0 {
			cfg.Progress = time.Second
		}
		said := false
		ticks = append(ticks, func(t engine.Tick) {
			if !t.Drain {
				opts.Live.locked(func() { intervals.Add(t.Interval, t.End, t.Warmup) }) // the live page reads the spool
			}
			if err := intervals.Err(); err != nil && !said {
				// Said when it happens, not at the end of a long run.
				said = true
				fmt.Fprintf(stderr, "%v: the run goes on, but will write no document (--json, --html)\n", err)
			}
		})
	}
	if exp := opts.Metrics; exp != nil {
		// The exporter takes the intervals the progress lines print: with
		// no progress lines, the engine still ticks for it.
		if cfg.Progress <= 0 {
			cfg.Progress = time.Second
		}
		exp.SetTargetRate(cfg.Rate)
		exp.SetWorkers(cfg.Concurrency)
		exp.SetConnections(cfg.Concurrency)
		exp.SetSaturated(false)
		ticks = append(ticks, func(t engine.Tick) {
			if err := exp.Observe(t.Interval); err != nil {
				fmt.Fprintln(stderr, err)
			}
		})
	}
	if l := opts.Live; l != nil {
		if cfg.Progress <= 0 {
			cfg.Progress = time.Second // the page's news
		}
		ticks = append(ticks, l.tick)
	}
	if tl := opts.TxnLog; tl != nil {
		if err := tl.Open(engine.Groups(cfg, load)); err != nil {
			closeOut()
			return wired{}, err
		}
		closers = append(closers, func() error { return tl.Close(time.Now()) })
		starts = append(starts, tl.Start)
		cfg.OnTxn = tl.Txn
	}
	if len(starts) > 0 {
		cfg.Start = func(start time.Time) {
			for _, f := range starts {
				f(start)
			}
		}
	}
	cfg.OnTick = func(t engine.Tick) {
		for _, f := range ticks {
			f(t)
		}
	}
	if opts.VerboseErrors {
		cfg.OnError = func(e engine.ErrorEvent) {
			if pr != nil && pr.Failed(stderr, e) {
				return
			}
			next := "gave up"
			if e.Retry {
				next = "retrying"
			}
			fmt.Fprintf(stderr, "error: worker %d %s attempt %d: %s: %s (%s)\n", e.Client, e.Op, e.Attempt, e.Class, scrub(oneLine(e.Err.Error())), next)
		}
	}
	cfg.OnEvent = func(e engine.Event) {
		switch e.Kind {
		case engine.Unreachable:
			fmt.Fprintf(stderr, "server unreachable: %s (reconnecting)\n", scrub(oneLine(e.Err.Error())))
		case engine.Reachable:
			fmt.Fprintf(stderr, "server reachable again after %s\n", e.Down.Round(time.Millisecond))
		case engine.Aborted:
			if pr != nil && pr.Aborted(stderr, e) {
				return
			}
			fmt.Fprintf(stderr, "client %d aborted in %s: %s\n", e.Client, e.Op, scrub(oneLine(e.Err.Error())))
		}
	}
	return wired{cfg: cfg, close: closeOut, intervals: intervals, printer: pr}, nil
}
