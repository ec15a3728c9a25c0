package lagrun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/lag"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/report"
	"github.com/txload/txload/slo"
	"github.com/txload/txload/workload"
)

// Result is what a lag run measured.
type Result struct {
	// Workload is the workload's name. Mode is how the destination was
	// fed: logical or physical (the embedded pair), or external (the
	// user's replication); Same says the destination was the source.
	Workload string
	Mode     string
	Same     bool
	// Source and Dest are the databases' URLs, without passwords; Server
	// is the source's.
	Source, Dest string
	Server       pg.Server
	MarkInterval time.Duration
	PollInterval time.Duration
	DrainTimeout time.Duration
	// Marked: the workload's transactions carried markers too.
	Marked bool
	// Stream counts the marker stream's markers, Tx those inside the
	// workload's transactions. Lag is every marker's lag, which the SLO
	// judges; StreamLag the stream's alone, TxLag the transactions' (µs).
	Stream, Tx            lag.Counts
	Lag, StreamLag, TxLag *hdr.Histogram
	// Reader and Writes are what the reader and the stream did (their
	// first errors without passwords).
	Reader lag.ReaderStats
	Writes lag.StreamStats
	// Senders and Subscriptions are the servers' own views, sampled.
	Senders       []*lag.SenderStats
	Subscriptions []*lag.SubscriptionStats
	// CaughtUp says the destination had every marker CatchUp after the
	// load stopped; else Pending acknowledged markers had not arrived
	// within the drain timeout (or when the run was Interrupted).
	CaughtUp    bool
	CatchUp     time.Duration
	Pending     int
	Interrupted bool
	// Outcome is the load's, as the runner ran it (nil if it never ran).
	Outcome *runner.Outcome
	// SLO is the objective's verdicts; Convergence what comparing the two
	// sides found (nil when they were not compared).
	SLO         []Verdict
	Convergence *Convergence
	// Points are the lag per interval, for the document's chart (nil:
	// none), out of memory: the ticker's spool.
	Points report.Source[report.SeriesPoint]
}

// Verdict is one condition of the objective, judged on the lag of every
// marker.
type Verdict struct {
	Cond  slo.Condition
	Value float64 // the figure the condition reads, µs
	Pass  bool
}

// verdicts judges the objective on the lag of every marker. No lag
// measured is no evidence the objective holds.
func verdicts(objective []slo.Condition, lag *hdr.Histogram) []Verdict {
	var out []Verdict
	for _, cond := range objective {
		v := cond.Metric.Value(lag)
		out = append(out, Verdict{Cond: cond, Value: v, Pass: cond.Holds(v) && lag.TotalCount() > 0})
	}
	return out
}

// Run runs a lag invocation: it validates o, opens the pair, starts the
// instrument, runs the load through the runner, drains, writes the lag
// report and the convergence table on o.Run.Stdout, and the --json,
// --html and --histogram files. The error says why the run failed: a
// runner.UsageError for bad input, runner.ErrInterrupted, a
// runner.ViolationError, or what the destination lacked. The result is
// there whenever the load ran, failed or not.
func Run(ctx context.Context, o Options) (*Result, error) {
	p, err := o.plan()
	if err != nil {
		return nil, err
	}
	return p.execute(ctx)
}

func (p *plan) execute(ctx context.Context) (*Result, error) {
	// Listening comes first: an address in use is refused before either
	// database is touched.
	stopMetrics, err := runner.StartMetrics(&p.load, p.o.Workload.Name)
	if err != nil {
		return nil, err
	}
	defer stopMetrics()
	pr := &pair{}
	defer pr.Close()
	if err := p.openPair(ctx, pr); err != nil {
		if ctx.Err() != nil {
			return nil, runner.ErrInterrupted
		}
		return nil, err
	}
	srcConn, err := pr.src.Target.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer srcConn.Close(context.WithoutCancel(ctx))
	first, err := lag.FirstWriter(ctx, srcConn)
	if err != nil {
		return nil, pr.scrub(err)
	}
	in := p.newInstrument(pr, first)
	defer in.close()
	if err := in.begin(ctx); err != nil {
		return nil, err
	}
	p.load.Live.Extend(liveLag(in.ticker, pr.src.Target.URLs()[0], pr.dst.Target.URLs()[0]))
	opts := p.load
	opts.Marks = in.marks()
	outcome, runErr := runner.RunOne(ctx, pr.src, p.o.Workload, workload.Variant{Generator: p.o.Generator}, opts, false)
	loadEnd := time.Now()
	res := p.result(in)
	res.CaughtUp, res.CatchUp = in.drain(ctx, loadEnd)
	if err := in.err(); err != nil && runErr == nil {
		runErr = err
	}
	if outcome != nil {
		defer outcome.Close()
	}
	res.Outcome, res.Interrupted, res.Points = outcome, ctx.Err() != nil, in.ticker.points
	res.Reader, res.Writes = in.reader, in.stream
	res.scrub(pr)
	return res, p.judge(ctx, in, res, loadEnd, runErr)
}

// result is the run's description, before the figures.
func (p *plan) result(in *instrument) *Result {
	pr := in.pair
	return &Result{Workload: p.o.Workload.Name, Mode: pr.mode, Same: pr.same,
		Source: pr.src.Target.URLs()[0], Dest: pr.dst.Target.URLs()[0], Server: pr.src.Server,
		MarkInterval: p.o.MarkInterval, PollInterval: p.o.PollInterval, DrainTimeout: p.drainTimeout, Marked: p.o.MarkTransactions}
}

// scrub takes the passwords out of the reader's and the stream's first
// errors.
func (r *Result) scrub(pr *pair) {
	if err := r.Reader.FirstErr; err != nil {
		r.Reader.FirstErr = errors.New(pr.dst.Target.Scrub(err.Error()))
	}
	if err := r.Writes.FirstErr; err != nil {
		r.Writes.FirstErr = errors.New(pr.src.Target.Scrub(err.Error()))
	}
}

// judge takes the figures once drained, writes the lag block, compares
// the two sides, judges the SLO and writes the document; the error is the
// run's verdict.
func (p *plan) judge(ctx context.Context, in *instrument, res *Result, loadEnd time.Time, runErr error) error {
	tr := in.tracker
	res.Stream, res.Lag, res.StreamLag, res.Tx, res.TxLag = tr.CountsOf(0), tr.Total(), tr.TotalOf(0), tr.CountsOf(1), tr.TotalOf(1)
	res.Pending, _ = tr.Pending()
	res.Senders, res.Subscriptions = in.views.Senders(), in.views.Subscriptions()
	res.SLO = verdicts(p.objective, res.Lag)
	w := p.load.Stdout
	writeLag(w, res)
	var failures []string
	if !res.Interrupted && runErr == nil {
		conv, err := p.converge(ctx, in.pair, in.first, in.writers, loadEnd)
		if err != nil {
			runErr = err
		} else {
			res.Convergence = conv
			writeConvergence(w, conv)
			if f := conv.Failures(); len(f) > 0 {
				failures = append(failures, "the destination differs from the source: "+strings.Join(f, "; "))
			}
		}
	}
	if !res.CaughtUp && !res.Interrupted {
		failures = append(failures, fmt.Sprintf("%d markers had not reached the destination %s after the load stopped", res.Pending, p.drainTimeout))
	}
	for _, v := range res.SLO {
		if !v.Pass {
			failures = append(failures, fmt.Sprintf("the lag breaks the objective %s (%s)", v.Cond, report.MicrosF(v.Value)))
		}
	}
	if err := p.writeDocument(ctx, res); err != nil && runErr == nil {
		runErr = err
	}
	return runError(res, runErr, failures, in.pair)
}

// runError is the run's verdict: interrupted, failed, a client aborted,
// the workload's check found violations, or what lag found wrong.
func runError(res *Result, runErr error, failures []string, pr *pair) error {
	o := res.Outcome
	switch {
	case res.Interrupted:
		return runner.ErrInterrupted
	case runner.SettingsErr(runErr) != nil:
		// The tables exist with other settings: nothing was written (exit 2).
		return runner.SettingsErr(runErr)
	case runErr != nil:
		return pr.scrub(runErr)
	case o != nil && runner.OutcomeErr(*o, false) != nil:
		// A client aborted, the check found violations, or the source did
		// not sustain --rate (SATURATED, BEHIND): the lag was measured
		// under less load than asked.
		err := runner.OutcomeErr(*o, false)
		if ve := (*runner.ViolationError)(nil); errors.As(err, &ve) {
			return ve
		}
		return pr.scrub(err)
	case len(failures) > 0:
		return errors.New(strings.Join(failures, "; "))
	}
	return nil
}
