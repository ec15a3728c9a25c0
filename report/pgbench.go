package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
)

// PgbenchRun describes a run the way pgbench's report header does.
type PgbenchRun struct {
	Scripts          []PgbenchScript // in --file/-b order; index = OpStats index
	Scale            int             // scaling factor; 0 prints as pgbench's default, 1
	QueryMode        string          // simple | extended | prepared; "" = simple
	Clients, Threads int             // Threads 0 = Clients (txload runs one goroutine per client)
	// MaxTries is --max-tries as pgbench takes it: 1 (pgbench's default)
	// means no retries, 0 means unlimited (bounded by -T or --latency-limit):
	// then the "maximum number of tries" line is left out, as pgbench does.
	MaxTries     int
	Duration     time.Duration // -T; 0 if the run was bounded otherwise
	Transactions int           // -t, transactions per client; used when Duration is 0
	Rate         float64       // --rate, 0 = none
	LatencyLimit time.Duration // 0 = none
	// Progress is -P; pgbench prints the latency stddev only when latencies
	// were measured, which a progress report implies.
	Progress         time.Duration
	FailuresDetailed bool
	PerStatement     bool          // -r / --report-per-statement
	ConnectTime      time.Duration // mean initial connection time per client; under Connect, per transaction
	// Connect is -C/--connect, a new connection per transaction: the
	// report gives the average connection time and a tps that includes
	// it, as pgbench does.
	Connect bool
	// Interrupted names what cut a -T run short ("SIGTERM"; "" for a run
	// that went its length): the duration line says how long it ran, so
	// that the report cannot pass for a whole run.
	Interrupted string
	// PartitionMethod is "range" or "hash" when pgbench_accounts is
	// partitioned (pgbench prints the method and number of partitions then);
	// "" otherwise.
	PartitionMethod string
	Partitions      int
	// ProgressTimestamp is --progress-timestamp: progress lines begin
	// with the Unix time of the interval's end instead of the elapsed
	// time (see PgbenchProgressAt).
	ProgressTimestamp bool
	// OtherErrorsAbort is pgbench's own rule (`txload pgbench`): an error
	// other than a serialization failure or a deadlock aborts its client,
	// and the transaction it ended counts as neither processed nor
	// failed. Failures are then those two classes only.
	OtherErrorsAbort bool
}

// failed is the number of failed transactions of o as the report counts
// them.
func (run PgbenchRun) failed(o *metrics.OpStats) int64 {
	if run.OtherErrorsAbort {
		return o.Failed[metrics.Serialization] + o.Failed[metrics.Deadlock]
	}
	return o.FailedTotal()
}

// PgbenchScript is one script (transaction type) of the run.
type PgbenchScript struct {
	Title      string   // "<builtin: TPC-B (sort of)>" or the file name
	Weight     int      // its weight (@N); pgbench's default is 1
	Statements []string // the commands as pgbench prints them under -r (e.g. `\set aid random(1, 100000 * :scale)` and SQL text)
}

// PgbenchProgress writes one progress line (stderr in pgbench): interval snapshot iv, elapsed since start.
func PgbenchProgress(w io.Writer, elapsed time.Duration, iv *metrics.Snapshot, run PgbenchRun) {
	PgbenchProgressAt(w, time.Time{}, elapsed, iv, run)
}

// PgbenchProgressAt is PgbenchProgress for an interval that ended at at:
// under run.ProgressTimestamp the line gives at as Unix seconds with three
// decimals, as pgbench's --progress-timestamp does.
func PgbenchProgressAt(w io.Writer, at time.Time, elapsed time.Duration, iv *metrics.Snapshot, run PgbenchRun) {
	t := iv.Total("all")
	tps := float64(t.OK) / iv.Elapsed.Seconds()
	var lat, stddev, lag float64
	if t.OK > 0 {
		lat, stddev, lag = t.Response.Mean()/1e3, t.Response.StdDev()/1e3, t.Lag.Mean()/1e3
	}
	when := pgFloat(elapsed.Seconds(), 1)
	if run.ProgressTimestamp {
		when = pgFloat(float64(at.UnixMicro())/1e6, 3)
	}
	line := fmt.Sprintf("progress: %s s, %s tps, lat %s ms stddev %s, %d failed",
		when, pgFloat(tps, 1), pgFloat(lat, 3), pgFloat(stddev, 3), run.failed(t))
	if run.Rate > 0 {
		line += fmt.Sprintf(", lag %s ms", pgFloat(lag, 3))
		if run.LatencyLimit > 0 {
			line += fmt.Sprintf(", %d skipped", t.Skipped)
		}
	}
	if run.MaxTries != 1 {
		line += fmt.Sprintf(", %d retried, %d retries", t.Retried, t.Retries)
	}
	fmt.Fprintln(w, line)
}

// PgbenchReport writes the final report for total (Total.Elapsed = measured period).
//
// The pgbench output format (--output pgbench) reproduces, line for line,
// what pgbench of PostgreSQL 15 and 16 prints: its progress lines (stderr,
// under -P) and its final report (stdout), with the same wording, order,
// conditions and number formats (printf's %f, %.1f, %.3f, %11.3f, %10d), so
// that scripts and dashboards that parse pgbench's output read txload's.
// testdata/pgbench/*.real.txt holds what the real pgbench 15 printed.
//
// Left out, because they are not part of the report or txload does not do
// what they describe:
//   - the banner "pgbench (15.x)" or "pgbench (15.x, server 16.y)" and
//     "starting vacuum...end.": the caller's (`txload pgbench` prints both;
//     `txload run` neither);
//   - pgbench's error messages ("client N aborted …", "Run was aborted; the
//     above results are incomplete."), which go to stderr and are the
//     caller's.
//
// Printed differently:
//   - latency average and stddev (report, per-script sections, progress) and
//     the schedule lag are those of txload's HDR histograms: microsecond
//     resolution, 3 significant digits, so they may differ from exact sums in
//     the last printed digit; the lag maximum is the histogram's highest
//     equivalent value;
//   - failures: pgbench 15 only survives serialization (40001) and deadlock
//     (40P01) errors and aborts the client on any other. Unless
//     PgbenchRun.OtherErrorsAbort says the run did the same (`txload
//     pgbench`), txload records other classes as failed transactions too:
//     they are counted in "number of failed transactions" (and the
//     per-interval "failed"), but in neither of the --failures-detailed
//     lines, which are the serialization and deadlock failures as in
//     pgbench 15 (which has no "other failures" line);
//   - "initial connection time" is PgbenchRun.ConnectTime as the caller
//     measured it; pgbench prints the time from its start until the first
//     thread had connected all its clients; under -C, "average connection
//     time" is PgbenchRun.ConnectTime too, the caller's mean per
//     transaction (pgbench divides its threads' connection time by the
//     committed and failed transactions);
//   - when the run was bounded neither by a duration nor by a number of
//     transactions per client, "duration: N s" gives the measured period
//     rounded to whole seconds.
//
// The latency average is, as in pgbench, computed from the duration
// (duration × clients ÷ transactions, " (including failures)" when some
// failed) unless the run measured latencies (--rate, --latency-limit or
// --progress), in which case average and stddev are printed.
func PgbenchReport(w io.Writer, total *metrics.Snapshot, run PgbenchRun) {
	p := &printer{w: w}
	all := total.Total("all")
	secs := total.Elapsed.Seconds()
	failures := run.failed(all)
	totalCnt := all.OK + all.Skipped + failures

	title := "multiple scripts"
	if len(run.Scripts) == 1 {
		title = run.Scripts[0].Title
	}
	p.printf("transaction type: %s\n", title)
	p.printf("scaling factor: %d\n", max(run.Scale, 1))
	if run.PartitionMethod != "" {
		p.printf("partition method: %s\npartitions: %d\n", run.PartitionMethod, run.Partitions)
	}
	mode := run.QueryMode
	if mode == "" {
		mode = "simple"
	}
	p.printf("query mode: %s\n", mode)
	p.printf("number of clients: %d\n", run.Clients)
	threads := run.Threads
	if threads <= 0 {
		threads = run.Clients
	}
	p.printf("number of threads: %d\n", threads)
	if run.MaxTries != 0 {
		p.printf("maximum number of tries: %d\n", run.MaxTries)
	}
	if run.Duration <= 0 && run.Transactions > 0 {
		p.printf("number of transactions per client: %d\n", run.Transactions)
		p.printf("number of transactions actually processed: %d/%d\n", all.OK, run.Transactions*run.Clients)
	} else {
		d := run.Duration
		if d <= 0 {
			d = total.Elapsed
		}
		if run.Interrupted != "" && run.Duration > 0 {
			p.printf("duration: %.1f s (interrupted by %s; -T was %d s)\n", total.Elapsed.Seconds(), run.Interrupted, int64(math.Round(d.Seconds())))
		} else {
			p.printf("duration: %d s\n", int64(math.Round(d.Seconds())))
		}
		p.printf("number of transactions actually processed: %d\n", all.OK)
	}

	p.printf("number of failed transactions: %d (%s%%)\n", failures, pct(failures, totalCnt))
	if run.FailuresDetailed {
		p.printf("number of serialization failures: %d (%s%%)\n", all.Failed[metrics.Serialization], pct(all.Failed[metrics.Serialization], totalCnt))
		p.printf("number of deadlock failures: %d (%s%%)\n", all.Failed[metrics.Deadlock], pct(all.Failed[metrics.Deadlock], totalCnt))
	}
	if run.MaxTries != 1 {
		p.printf("number of transactions retried: %d (%s%%)\n", all.Retried, pct(all.Retried, totalCnt))
		p.printf("total number of retries: %d\n", all.Retries)
	}
	// pgbench: the remaining figures are nonsensical without a successful
	// transaction.
	if all.OK <= 0 {
		return
	}
	if run.Rate > 0 && run.LatencyLimit > 0 {
		p.printf("number of transactions skipped: %d (%s%%)\n", all.Skipped, pct(all.Skipped, totalCnt))
	}
	if run.LatencyLimit > 0 {
		p.printf("number of transactions above the %s ms latency limit: %d/%d (%s%%)\n",
			pgFloat(float64(run.LatencyLimit)/float64(time.Millisecond), 1), all.Late, all.OK, pct(all.Late, all.OK))
	}
	if run.Rate > 0 || run.Progress > 0 || run.LatencyLimit > 0 {
		p.latency("latency", all.Response)
	} else {
		// No per-transaction measurement in pgbench: the average latency
		// follows from the run time.
		suffix := ""
		if failures > 0 {
			suffix = " (including failures)"
		}
		p.printf("latency average = %s ms%s\n", pgFloat(1e3*secs*float64(run.Clients)/float64(totalCnt), 3), suffix)
	}
	if run.Rate > 0 {
		p.printf("rate limit schedule lag: avg %s (max %s) ms\n",
			pgFloat(all.Lag.Mean()/1e3, 3), pgFloat(float64(all.Lag.Max())/1e3, 3))
	}
	if run.Connect {
		p.printf("average connection time = %s ms\n", pgFloat(float64(run.ConnectTime)/float64(time.Millisecond), 3))
		p.printf("tps = %s (including reconnection times)\n", pgFloat(float64(all.OK)/secs, 6))
	} else {
		p.printf("initial connection time = %s ms\n", pgFloat(float64(run.ConnectTime)/float64(time.Millisecond), 3))
		p.printf("tps = %s (without initial connection time)\n", pgFloat(float64(all.OK)/secs, 6))
	}

	perScript := len(run.Scripts) > 1
	if !perScript && !run.PerStatement {
		return
	}
	totalWeight := 0
	for _, s := range run.Scripts {
		totalWeight += s.Weight
	}
	for i, s := range run.Scripts {
		var o *metrics.OpStats
		if i < len(total.Ops) {
			o = total.Ops[i]
		} else {
			o = metrics.NewSnapshot([]string{s.Title}).Ops[0]
		}
		if perScript {
			p.script(i, s, o, totalWeight, all.OK, secs, run)
		}
		if run.PerStatement {
			p.statements(s, o, perScript, run.MaxTries)
		}
	}
}

// script writes the section of one of several scripts.
func (p *printer) script(i int, s PgbenchScript, o *metrics.OpStats, totalWeight int, totalOK int64, secs float64, run PgbenchRun) {
	failures := run.failed(o)
	scriptTotal := o.OK + o.Skipped + failures
	p.printf("SQL script %d: %s\n", i+1, s.Title)
	p.printf(" - weight: %d (targets %s%% of total)\n", s.Weight, pgFloat(100*float64(s.Weight)/float64(totalWeight), 1))
	p.printf(" - %d transactions (%s%% of total, tps = %s)\n", o.OK, pgFloat(100*float64(o.OK)/float64(totalOK), 1), pgFloat(float64(o.OK)/secs, 6))
	p.printf(" - number of failed transactions: %d (%s%%)\n", failures, pct(failures, scriptTotal))
	if run.FailuresDetailed {
		p.printf(" - number of serialization failures: %d (%s%%)\n", o.Failed[metrics.Serialization], pct(o.Failed[metrics.Serialization], scriptTotal))
		p.printf(" - number of deadlock failures: %d (%s%%)\n", o.Failed[metrics.Deadlock], pct(o.Failed[metrics.Deadlock], scriptTotal))
	}
	if run.MaxTries != 1 {
		p.printf(" - number of transactions retried: %d (%s%%)\n", o.Retried, pct(o.Retried, scriptTotal))
		p.printf(" - total number of retries: %d\n", o.Retries)
	}
	if run.Rate > 0 && run.LatencyLimit > 0 && scriptTotal > 0 {
		p.printf(" - number of transactions skipped: %d (%s%%)\n", o.Skipped, pct(o.Skipped, scriptTotal))
	}
	p.latency(" - latency", o.Response)
}

// statements writes the -r block of one script: mean latency, failures and,
// when transactions are retried, retries of each command.
func (p *printer) statements(s PgbenchScript, o *metrics.OpStats, perScript bool, maxTries int) {
	prefix, what := "", " and failures"
	if perScript {
		prefix = " - "
	}
	if maxTries != 1 {
		what = ", failures and retries"
	}
	p.printf("%sstatement latencies in milliseconds%s:\n", prefix, what)
	for j, text := range s.Statements {
		var st metrics.StmtStats
		if j < len(o.Stmts) {
			st = o.Stmts[j]
		}
		mean := 0.0
		if st.Count > 0 {
			mean = float64(st.Total) / float64(st.Count) / float64(time.Millisecond)
		}
		if maxTries == 1 {
			p.printf("   %11s  %10d  %s\n", pgFloat(mean, 3), st.Failures, text)
		} else {
			p.printf("   %11s  %10d  %10d  %s\n", pgFloat(mean, 3), st.Failures, st.Retries, text)
		}
	}
}

// latency writes pgbench's average and stddev lines, if anything was
// measured.
func (p *printer) latency(prefix string, h *hdr.Histogram) {
	if h.TotalCount() == 0 {
		return
	}
	p.printf("%s average = %s ms\n", prefix, pgFloat(h.Mean()/1e3, 3))
	p.printf("%s stddev = %s ms\n", prefix, pgFloat(h.StdDev()/1e3, 3))
}

type printer struct{ w io.Writer }

func (p *printer) printf(format string, args ...any) { fmt.Fprintf(p.w, format, args...) }

// pct is 100·n/of with 3 decimals, "NaN" when of is 0, as pgbench prints it.
func pct(n, of int64) string { return pgFloat(100*float64(n)/float64(of), 3) }

// pgFloat formats v like PostgreSQL's printf %.<prec>f: NaN as "NaN" and
// infinities as "Infinity" and "-Infinity" (PostgreSQL's own snprintf, used
// by pgbench, spells them so on every platform).
func pgFloat(v float64, prec int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}
