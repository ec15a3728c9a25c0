// Package pgbenchrun runs load in pgbench's ways on txload's runner: its
// output format (progress lines, error lines and report, line for line) and
// its transaction log (-l), both plugged into the runner's generic
// capabilities (runner.Format, runner.TxnLog). `txload run --output
// pgbench` and `txload pgbench` use it; the runner knows nothing of it.
// Command is `txload pgbench` once parsed: it chooses the server, runs
// pgbench's initialization or a benchmark on workload/pgbench with
// pgbench's preamble, and fails with pgbench's lines and exit codes, on
// the streams it is given.
package pgbenchrun

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/report"
)

// Format is pgbench's output format (runner.Format): its progress lines and
// report (report.PgbenchReport), and with --verbose-errors its lines for
// failed attempts and aborted clients.
type Format struct {
	// FailuresDetailed is --failures-detailed.
	FailuresDetailed bool
	// ProgressTimestamp is --progress-timestamp.
	ProgressTimestamp bool
	// OtherErrorsAbort says an error other than a serialization failure
	// or a deadlock aborts its client, as in pgbench (the runner's
	// ClientErrorsAbort): the report counts failures as pgbench does.
	OtherErrorsAbort bool
	// PartitionMethod and Partitions describe pgbench_accounts'
	// partitions, once the tables were read ("" and 0: none).
	PartitionMethod string
	Partitions      int
}

// Printer describes the run as pgbench's report header does.
func (f *Format) Printer(r runner.RunInfo) runner.Printer {
	e := r.Engine
	run := report.PgbenchRun{
		Scale: r.Load.Scale, QueryMode: r.Load.Protocol, Clients: e.Concurrency, Threads: r.Threads,
		MaxTries: e.MaxTries, Duration: e.Duration, Transactions: e.Transactions, Rate: e.Rate,
		LatencyLimit: e.LatencyLimit, FailuresDetailed: f.FailuresDetailed, PerStatement: r.PerStatement,
		Progress: e.Progress, Connect: e.ConnectPerTxn, ProgressTimestamp: f.ProgressTimestamp,
		OtherErrorsAbort: f.OtherErrorsAbort, PartitionMethod: f.PartitionMethod, Partitions: f.Partitions,
	}
	if unlimited(e.MaxTries) {
		run.MaxTries = 0 // pgbench's --max-tries 0
	}
	if len(r.Load.OpInfo) > 0 {
		for _, op := range r.Load.OpInfo {
			run.Scripts = append(run.Scripts, report.PgbenchScript{Title: op.Title, Weight: op.Weight, Statements: op.Statements})
		}
	} else {
		for _, op := range r.Load.Ops {
			run.Scripts = append(run.Scripts, report.PgbenchScript{Title: op, Weight: 1})
		}
	}
	return &printer{run: run, engine: e, scrub: r.Scrub}
}

// unlimited says maxTries is pgbench's --max-tries 0: no limit but -T or
// --latency-limit.
func unlimited(maxTries int) bool { return maxTries >= engine.Unlimited }

// MaxTries is the engine's number of tries for pgbench's --max-tries n:
// 0 is no limit.
func MaxTries(n uint32) int {
	if n == 0 {
		return engine.Unlimited
	}
	return int(n)
}

type printer struct {
	run    report.PgbenchRun
	engine engine.Config
	scrub  func(string) string
}

// WholeIntervals: pgbench prints no partial interval at the end.
func (p *printer) WholeIntervals() bool { return true }

func (p *printer) Progress(w io.Writer, t engine.Tick) {
	report.PgbenchProgressAt(w, t.End, t.Elapsed, t.Interval, p.run)
}

// Failed prints pgbench's lines for the errors it retries: serialization
// failures and deadlocks.
func (p *printer) Failed(w io.Writer, e engine.ErrorEvent) bool {
	if e.Class != metrics.Serialization && e.Class != metrics.Deadlock {
		return false
	}
	fmt.Fprintf(w, "pgbench: client %d got an error in command %d (SQL) of script %d; %s",
		e.Client, max(e.Stmt, 0), e.OpIndex, p.scrub(pg.LibpqMessage(e.Err, "", "")))
	what := "ends the failed transaction"
	if e.Retry {
		what = "repeats the transaction after the error"
	}
	tries := fmt.Sprintf("try %d", e.Attempt)
	if !unlimited(p.engine.MaxTries) { // pgbench's --max-tries 0: no limit shown
		tries += fmt.Sprintf("/%d", p.engine.MaxTries)
	}
	if limit := p.engine.LatencyLimit; limit > 0 {
		tries += fmt.Sprintf(", %.3f%% of the maximum time of tries was used", 100*float64(e.At.Sub(e.Intended))/float64(limit))
	}
	fmt.Fprintf(w, "pgbench: client %d %s (%s)\n", e.Client, what, tries)
	return true
}

// Aborted prints the workload's own account of the abort in pgbench's
// lines, if it has one (pgbench's scripts); else pgbench's line for a
// failed command.
func (p *printer) Aborted(w io.Writer, e engine.Event) bool {
	var pl interface{ PgbenchLines() string }
	if errors.As(e.Err, &pl) {
		fmt.Fprint(w, p.scrub(pl.PgbenchLines()))
		return true
	}
	var pe *pgconn.PgError
	if class, _ := pg.Classify(e.Err); !errors.As(e.Err, &pe) && (class == metrics.ConnectionLost || class == metrics.AmbiguousCommit) {
		// libpq could not read a result: the connection is gone.
		fmt.Fprintf(w, "pgbench: error: client %d aborted in command %d (SQL) of script %d; perhaps the backend died while processing\n",
			e.Client, max(e.Stmt, 0), e.OpIndex)
		return true
	}
	fmt.Fprintf(w, "pgbench: error: client %d script %d aborted in command %d query 0: %s",
		e.Client, e.OpIndex, max(e.Stmt, 0), p.scrub(pg.LibpqMessage(e.Err, "", "")))
	return true
}

// Report prints pgbench's report. Its connection time is the initial
// connections' time, or under -C pgbench's average: the connections' time
// over the committed and failed transactions.
func (p *printer) Report(w io.Writer, res *engine.Result) error {
	run := p.run
	if res.Interrupted {
		run.Interrupted = runner.InterruptedBy(res.Cause)
	}
	run.ConnectTime = res.ConnectTime
	if p.engine.ConnectPerTxn {
		all := res.Total.Total("all")
		run.ConnectTime = 0
		if n := all.OK + all.FailedTotal(); n > 0 {
			run.ConnectTime = res.ConnectionTime / time.Duration(n)
		}
	}
	all, err := res.All()
	if err != nil {
		return err
	}
	report.PgbenchReport(w, all, run)
	return nil
}
