package runner

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/pg"
	"github.com/txload/txload/report"
	"github.com/txload/txload/workload"
)

// wire connects the engine's callbacks to the outputs: progress lines in the
// chosen format, the interval log, failed attempts and the run's events on
// Stderr; with --json, the intervals for the document; with --metrics-addr,
// the exporter. The returned func
// closes the files it opened.
func wire(ctx context.Context, conn *Conn, load *workload.QueryLoad, opts Options) (engine.Config, func(), *report.Intervals, error) {
	cfg := opts.Engine
	cfg.Classify = pg.Classify
	stderr := opts.Stderr
	scrub := conn.Target.Scrub
	// The final interval is the sliver while in-flight operations drain:
	// printed only after Ctrl-C, as what ran last.
	show := func(t engine.Tick) bool { return opts.Engine.Progress > 0 && (!t.Final || ctx.Err() != nil) }
	var ticks []func(engine.Tick)
	switch opts.Output {
	case "pgbench":
		prun := PgbenchRun(load, opts)
		ticks = append(ticks, func(t engine.Tick) {
			if show(t) {
				report.PgbenchProgressAt(stderr, t.End, t.Elapsed, t.Interval, prun)
			}
		})
	default:
		ticks = append(ticks, func(t engine.Tick) {
			if show(t) {
				report.Progress(stderr, t.Elapsed, t.Warmup, t.Interval)
			}
		})
	}
	closeOut := func() {}
	if opts.Histogram != "" {
		hf, err := os.Create(opts.Histogram)
		if err != nil {
			return cfg, nil, nil, fmt.Errorf("--histogram: %w", err)
		}
		closeOut = func() { hf.Close() }
		if cfg.Progress <= 0 {
			cfg.Progress = time.Second // intervals for the log, no progress lines
		}
		var hlog *report.Hlog
		cfg.Start = func(start time.Time) {
			var err error
			if hlog, err = report.NewHlog(hf, start); err != nil {
				fmt.Fprintln(stderr, err)
			}
		}
		ticks = append(ticks, func(t engine.Tick) {
			if hlog != nil {
				if err := hlog.Interval(t.Interval, t.End); err != nil {
					fmt.Fprintln(stderr, err)
				}
			}
		})
	}
	var intervals *report.Intervals
	if opts.JSON != "" {
		// The document carries every interval, so that documents of
		// several load generators merge interval by interval.
		intervals = &report.Intervals{}
		if cfg.Progress <= 0 {
			cfg.Progress = time.Second
		}
		ticks = append(ticks, func(t engine.Tick) { intervals.Add(t.Interval, t.End, t.Warmup) })
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
	cfg.OnTick = func(t engine.Tick) {
		for _, f := range ticks {
			f(t)
		}
	}
	if opts.VerboseErrors {
		cfg.OnError = func(e engine.ErrorEvent) {
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
			fmt.Fprintf(stderr, "client %d aborted in %s: %s\n", e.Client, e.Op, scrub(oneLine(e.Err.Error())))
		}
	}
	return cfg, closeOut, intervals, nil
}
