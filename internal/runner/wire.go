package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/internal/pg"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/pgbenchlog"
	"github.com/txload/txload/workload"
)

// wire connects the engine's callbacks to the outputs: progress lines in the
// chosen format, the interval log, failed attempts and the run's events on
// Stderr; with --json, the intervals for the document; with --metrics-addr,
// the exporter; with TxnLog, pgbench's transaction logs. The returned func
// closes the files it opened, with the first error writing them.
func wire(ctx context.Context, conn *Conn, load *workload.QueryLoad, opts Options) (engine.Config, func() error, *report.Intervals, error) {
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
				// pgbench's client gives up with its connection.
				return metrics.Other, false
			}
			return class, fatal
		}
	}
	stderr := opts.Stderr
	scrub := conn.Target.Scrub
	// Progress lines cover the measured window, interval by interval: its
	// last one ends with it (at the end of the duration or at an
	// interrupt), a partial interval whose rate is over its real length;
	// in pgbench's format only whole intervals are printed, as pgbench
	// does. The drain after the window has a line of its own in the
	// summary. A run of a number of transactions has no end to its window:
	// its final interval is printed when it reaches a progress boundary
	// whose tick the end of the run overtook (-t … -P 5 prints its 5.0 s
	// line, as pgbench does). Ticks come one at a time.
	var shownUpTo time.Duration
	show := func(t engine.Tick) bool {
		p := opts.Engine.Progress
		switch {
		case p <= 0 || t.Drain:
			return false
		case opts.Output == "pgbench" && t.Interval.Elapsed < p-p/100 && !t.Final:
			return false
		case !t.Final || t.Elapsed >= shownUpTo+p:
			shownUpTo = t.Elapsed
			return true
		}
		return false
	}
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
	if opts.Histogram != "" {
		hf, err := outfile.Create(opts.Histogram)
		if err != nil {
			return cfg, nil, nil, fmt.Errorf("--histogram: %w", err)
		}
		closers = append(closers, func() error {
			if err := hf.Close(); err != nil {
				return fmt.Errorf("writing --histogram: %w", err)
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
					fmt.Fprintln(stderr, err)
				}
			}
		})
	}
	var intervals *report.Intervals
	if opts.JSON != "" || opts.HTML != "" || opts.KeepIntervals {
		// The document carries every interval, so that documents of
		// several load generators merge interval by interval.
		intervals = &report.Intervals{}
		if cfg.Progress <= 0 {
			cfg.Progress = time.Second
		}
		ticks = append(ticks, func(t engine.Tick) {
			if !t.Drain {
				intervals.Add(t.Interval, t.End, t.Warmup)
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
	if opts.TxnLog != nil {
		logs, err := txnLogs(*opts.TxnLog, engine.Groups(cfg, load))
		if err != nil {
			closeOut()
			return cfg, nil, nil, err
		}
		for _, w := range logs {
			closers = append(closers, func() error { return w.Close(time.Now()) })
		}
		starts = append(starts, func(start time.Time) {
			for _, w := range logs {
				w.SetStart(start)
			}
		})
		cfg.OnTxn = func(t engine.Txn) { logTxn(logs[t.Group], t) }
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
	pgbenchLines := opts.Output == "pgbench"
	if opts.VerboseErrors {
		cfg.OnError = func(e engine.ErrorEvent) {
			if pgbenchLines && (e.Class == metrics.Serialization || e.Class == metrics.Deadlock) {
				// pgbench's own lines for the errors it retries.
				fmt.Fprintf(stderr, "pgbench: client %d got an error in command %d (SQL) of script %d; %s",
					e.Client, max(e.Stmt, 0), e.OpIndex, scrub(pg.LibpqMessage(e.Err, "", "")))
				what := "ends the failed transaction"
				if e.Retry {
					what = "repeats the transaction after the error"
				}
				tries := fmt.Sprintf("try %d", e.Attempt)
				if opts.Engine.MaxTries < math.MaxInt32 { // pgbench's --max-tries 0: no limit shown
					tries += fmt.Sprintf("/%d", opts.Engine.MaxTries)
				}
				if limit := opts.Engine.LatencyLimit; limit > 0 {
					tries += fmt.Sprintf(", %.3f%% of the maximum time of tries was used", 100*float64(e.At.Sub(e.Intended))/float64(limit))
				}
				fmt.Fprintf(stderr, "pgbench: client %d %s (%s)\n", e.Client, what, tries)
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
			if pgbenchLines {
				// The workload's own account in pgbench's lines, if it
				// has one (pgbench's scripts); else pgbench's line for a
				// failed command.
				var pl interface{ PgbenchLines() string }
				if errors.As(e.Err, &pl) {
					fmt.Fprint(stderr, scrub(pl.PgbenchLines()))
					return
				}
				var pe *pgconn.PgError
				if class, _ := pg.Classify(e.Err); !errors.As(e.Err, &pe) && (class == metrics.ConnectionLost || class == metrics.AmbiguousCommit) {
					// libpq could not read a result: the connection is gone.
					fmt.Fprintf(stderr, "pgbench: error: client %d aborted in command %d (SQL) of script %d; perhaps the backend died while processing\n",
						e.Client, max(e.Stmt, 0), e.OpIndex)
					return
				}
				fmt.Fprintf(stderr, "pgbench: error: client %d script %d aborted in command %d query 0: %s",
					e.Client, e.OpIndex, max(e.Stmt, 0), scrub(pg.LibpqMessage(e.Err, "", "")))
				return
			}
			fmt.Fprintf(stderr, "client %d aborted in %s: %s\n", e.Client, e.Op, scrub(oneLine(e.Err.Error())))
		}
	}
	return cfg, closeOut, intervals, nil
}

// txnLogs opens pgbench's transaction logs, one per group (pgbench's
// thread), as pgbench opens them before its clients connect.
func txnLogs(c pgbenchlog.Config, groups int) ([]*pgbenchlog.Writer, error) {
	logs := make([]*pgbenchlog.Writer, 0, groups)
	for i := 0; i < groups; i++ {
		w, err := pgbenchlog.Create(c, i, time.Now())
		if err != nil {
			for _, w := range logs {
				w.Close(time.Now())
			}
			return nil, err
		}
		logs = append(logs, w)
	}
	return logs, nil
}

// logTxn writes t to its group's log, on the group's thread. A write error
// sticks to the log and is returned when it closes. A transaction that
// failed on an error other than a serialization failure or a deadlock is
// not logged: pgbench would have aborted its client instead.
func logTxn(w *pgbenchlog.Writer, t engine.Txn) {
	var o pgbenchlog.Outcome
	switch t.Outcome {
	case engine.TxnOK:
		o = pgbenchlog.OK
	case engine.TxnSkipped:
		o = pgbenchlog.Skipped
	case engine.TxnSerialization:
		o = pgbenchlog.Serialization
	case engine.TxnDeadlock:
		o = pgbenchlog.Deadlock
	default:
		return
	}
	_ = w.Log(pgbenchlog.Txn{Client: t.Client, Number: t.Number, Script: t.Op, Outcome: o,
		Latency: t.Latency, Lag: t.Lag, Tries: t.Tries, End: t.End})
}
