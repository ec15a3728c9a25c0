package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/executor"
	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/htmlreport"
	"github.com/txload/txload/workload"
)

// Outcome is what one variant of a run produced.
type Outcome struct {
	Labels []workload.Line
	Result *engine.Result
	Check  *workload.CheckResult
	// AuditErr is why the audit did not finish, as the run prints it
	// (scrubbed): the document records it as a failed audit.
	AuditErr string
	Load     *workload.QueryLoad
	// Intervals are the run's progress intervals, for --json, in a spool:
	// Close removes it.
	Intervals *report.Intervals
	// Engine is the run's configuration, its clients those of the load.
	Engine engine.Config
	// Notes are the lines printed under the summary's header, for the
	// document.
	Notes []string
	// figures are the workload's own figures of each interval.
	figures *figureLog
	// live is the live page's hold on Intervals, if it has one.
	live *liveSpool
	// RunFailed is why the run failed for what it measured: its --rate
	// not kept, nothing committed ("" for a sweep's step, which the
	// sweep judges).
	RunFailed string
}

// Close removes the outcome's spool of intervals, if any.
func (o *Outcome) Close() {
	switch {
	case o == nil:
	case o.live != nil:
		o.live.close()
	case o.Intervals != nil:
		o.Intervals.Close()
	}
}

// Prepare validates everything a run is given, before any server is
// touched: the options, the target and the workload's flags.
func Prepare(m workload.Meta, g workload.Generator, target TargetOptions, opts *Options) (Resolved, workload.Hooks, error) {
	h := g.Hooks()
	if h.Ops == nil {
		return Resolved{}, h, Usagef("workload %s does not run load (it has: %s)", m.Name, Capabilities(h))
	}
	if h.Inputs != nil {
		for _, in := range h.Inputs() {
			opts.Inputs = append(opts.Inputs, outfile.File{Flag: in.Flag, Path: in.Path})
		}
	}
	if h.Outputs != nil {
		for _, out := range h.Outputs() {
			opts.Outputs = append(opts.Outputs, outfile.File{Flag: out.Flag, Path: out.Path})
		}
	}
	if err := opts.Validate(); err != nil {
		return Resolved{}, h, err
	}
	if err := ValidateHooks(h, *opts); err != nil {
		return Resolved{}, h, err
	}
	if opts.PerStatement && !h.PerStatement {
		return Resolved{}, h, Usagef("--report-per-statement (-r): workload %s does not time its statements one by one; its report is per operation", m.Name)
	}
	if h.SingleProcess != "" && opts.Engine.Instances > 1 {
		return Resolved{}, h, Usagef("--instance: %s runs in one txload process only: %s", m.Name, h.SingleProcess)
	}
	if h.Timed != "" && opts.Engine.Transactions > 0 {
		return Resolved{}, h, Usagef("%s runs for a --duration, not a number of --transactions: %s", m.Name, h.Timed)
	}
	r, err := target.Resolve()
	if err == nil && r.Embedded() && opts.Engine.Instances > 1 {
		err = Usagef("--instance needs --url: the instances must drive one database")
	}
	return r, h, err
}

// ValidateHooks checks a workload's flags (Hooks.Validate), then against
// the run's own settings (Hooks.ValidateRun): bad usage, before the
// database is touched.
func ValidateHooks(h workload.Hooks, opts Options) error {
	if h.Validate != nil {
		if err := h.Validate(); err != nil {
			return Usage(err)
		}
	}
	if h.ValidateRun != nil {
		e := opts.Engine
		c := e.Concurrency
		if opts.allClients > 0 {
			c = opts.allClients
		}
		return Usage(h.ValidateRun(workload.RunSettings{Concurrency: c, ConcurrencySet: opts.ConcurrencySet, Rate: e.Rate, Instances: e.Instances}))
	}
	return nil
}

// Capabilities lists the commands a workload's hooks support.
func Capabilities(h workload.Hooks) string {
	var out []string
	if h.Init != nil {
		out = append(out, "init")
	}
	if h.Ops != nil {
		out = append(out, "run", "sweep")
	}
	if h.Check != nil {
		out = append(out, "check")
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

// Run runs workload m on the target: every variant, its reports, its files.
func Run(ctx context.Context, m workload.Meta, g workload.Generator, target TargetOptions, opts Options) (retErr error) {
	r, h, err := Prepare(m, g, target, &opts)
	if err != nil {
		return err
	}
	if err := keepWithList(h, opts); err != nil {
		return err
	}
	opts.Stderr = Locked(opts.Stderr)
	stopMetrics, err := StartMetrics(&opts, m.Name)
	if err != nil {
		return err
	}
	defer stopMetrics()
	stop, err := startProfile(ctx, opts.Stderr, opts.CPUProfile)
	if err != nil {
		return err
	}
	defer func() {
		// A profile that could not be written fails the run, unless
		// something failed it already.
		if err := stop(); err != nil && retErr == nil {
			retErr = err
		}
	}()
	conn, err := r.openChecked(ctx, h, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	if opts.BeforeRun != nil {
		if err := opts.BeforeRun(ctx, conn, &opts); err != nil {
			return err
		}
	}
	variants := []workload.Variant{{Generator: g}}
	if h.Variants != nil {
		if vs := h.Variants(); vs != nil {
			variants = vs
		}
	}
	var outcomes []Outcome
	defer func() {
		for i := range outcomes {
			outcomes[i].Close()
		}
	}()
	var runErr error
	for i, v := range variants {
		if len(variants) > 1 {
			fmt.Fprintf(opts.Stderr, "variant %d/%d: %s\n", i+1, len(variants), LabelString(v.Labels))
		}
		o, err := RunOne(ctx, conn, m, v, opts, len(variants) > 1)
		if o != nil {
			outcomes = append(outcomes, *o)
		}
		if err != nil {
			runErr = err
			break
		}
		if ctx.Err() != nil {
			break
		}
	}
	if len(variants) > 1 && len(outcomes) > 0 {
		printComparison(opts.Stdout, outcomes)
	}
	if len(outcomes) > 0 {
		if err := writeDocument(ctx, conn, m, opts, outcomes, true, ""); err != nil && runErr == nil {
			runErr = err
		}
	}
	if ctx.Err() != nil {
		// Ctrl-C: what failed after it (an audit on a server that went
		// away) is said, and the exit says interrupted.
		if runErr != nil {
			fmt.Fprintf(opts.Stderr, "after the interrupt: %s\n", conn.Target.Scrub(runErr.Error()))
		}
		return ErrInterrupted
	}
	if ae := (*AbortedError)(nil); errors.As(runErr, &ae) {
		return ae // scrubbed already
	}
	if ue := (*UsageError)(nil); errors.As(runErr, &ue) {
		return ue // one line naming what to change, exit 2
	}
	if se := SettingsErr(runErr); se != nil {
		return se // tables that exist with other settings: nothing was written, exit 2
	}
	if runErr != nil {
		msg := conn.Target.Scrub(runErr.Error())
		if hint := pg.PoolerHint(runErr); hint != "" {
			msg += " (" + hint + ")"
		} else if hint := conn.Target.OwnTimeoutHint(runErr); hint != "" {
			msg += " (" + hint + ")"
		}
		return errors.New(msg)
	}
	for _, o := range outcomes {
		if err := OutcomeErr(o, opts.PgbenchExit); err != nil {
			msg := conn.Target.Scrub(err.Error())
			if o.Result != nil && o.Result.Aborted > 0 {
				return &AbortedError{Clients: o.Result.Aborted, Msg: msg}
			}
			return errors.New(msg)
		}
	}
	return nil
}

// OutcomeErr is the error a variant's outcome makes the run end with: a
// client aborted, a violation found (a *ViolationError), the rate not kept
// or nothing committed (unless pgbenchExit: measureFailed); nil when none.
// Commands that run the load inside a measurement of their own (lag) end
// with it too.
func OutcomeErr(o Outcome, pgbenchExit bool) error {
	if res := o.Result; res != nil && res.Aborted > 0 {
		return fmt.Errorf("%s aborted: %w", report.Count(res.Aborted, "client"), res.AbortErr)
	}
	if o.Check != nil && len(o.Check.Violations) > 0 {
		return &ViolationError{Violations: o.Check.Violations}
	}
	if why, line := o.measureFailed(pgbenchExit); why != "" {
		if line != "" {
			why += " (see " + line + " above)"
		}
		return errors.New(why)
	}
	return nil
}

// measureFailed is why what the run measured failed it, and the line of
// the report that says so: its open loop did not keep its rate
// (SATURATED, BEHIND), or no operation committed, every one failed
// (--continue-on-error, or failures of a class that retries until
// --max-tries). "" when it did what was asked; under pgbench's exit
// status (pgbenchExit), a run behind its rate or with nothing committed
// does not fail, as pgbench's does not.
func (o Outcome) measureFailed(pgbenchExit bool) (why, line string) {
	res := o.Result
	if res == nil || res.Total == nil {
		return "", ""
	}
	all := res.Total.Total("all")
	committed, failed, unknown := all.OK+all.WarmupOK, all.FailedTotal(), all.Failed[metrics.AmbiguousCommit]+all.Abandoned
	if res.Drain != nil {
		d := res.Drain.Total("all")
		committed, failed, unknown = committed+d.OK, failed+d.FailedTotal(), unknown+d.Failed[metrics.AmbiguousCommit]+d.Abandoned
	}
	switch {
	case res.Saturated:
		// The run did not do what was asked: its rate for its duration.
		return fmt.Sprintf("saturated: the database did not sustain %g ops/s, and the run stopped after %s of %s",
			o.Engine.ShareRate(), report.Seconds(res.Total.Elapsed), o.Engine.Duration), "SATURATED"
	case res.Behind && !pgbenchExit:
		return fmt.Sprintf("behind: the database did not sustain %g ops/s: %d of %d scheduled operations never started",
			o.Engine.ShareRate(), res.Unstarted, res.Offered), "BEHIND"
	case committed == 0 && failed > 0 && unknown > 0 && !res.Interrupted && !pgbenchExit:
		// Those of unknown outcome may have committed (retest 11: a
		// pipeline that committed a block of its own, then failed at its
		// Sync, said "nothing committed" over its committed rows).
		return fmt.Sprintf("none seen to commit: all %s failed, %d of unknown outcome (which may have committed)",
			report.Count(failed, "operation"), unknown), ""
	case committed == 0 && failed > 0 && !res.Interrupted && !pgbenchExit:
		return fmt.Sprintf("nothing committed: all %s failed", report.Count(failed, "operation")), ""
	}
	return "", ""
}

// startProfile starts the CPU profile to path; its stop says whether the
// profile was written (the profiler itself drops its write errors).
func startProfile(ctx context.Context, stderr io.Writer, path string) (func() error, error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	pf, err := outfile.CreateStream(ctx, path)
	if err != nil {
		return nil, Usagef("--cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := pf.Close(); err != nil {
			return fmt.Errorf("writing --cpuprofile %s: %w", path, err)
		}
		fmt.Fprintf(stderr, "wrote %s\n", path)
		return nil
	}, nil
}

// keepWithList refuses --init keep with lists (bank's --isolation rc,ser):
// a list runs each variant on fresh data, its tables dropped and
// reloaded, which would drop the tables --init keep was given to keep.
func keepWithList(h workload.Hooks, opts Options) error {
	if !opts.InitSet || opts.Init != "keep" || h.Variants == nil {
		return nil
	}
	vs := h.Variants()
	if len(vs) < 2 {
		return nil
	}
	var lists []string
	for i, l := range vs[0].Labels {
		for _, v := range vs[1:] {
			if i < len(v.Labels) && v.Labels[i].Value != l.Value {
				lists = append(lists, "--"+l.Label)
				break
			}
		}
	}
	return Usagef("--init keep with a list of %s: a list runs each on fresh data (the tables dropped and reloaded), which would drop the tables --init keep keeps; give --init fresh for that, or --init skip to run each on the tables as they are",
		strings.Join(lists, " and "))
}

// initMode is what happens to the schema before a run: fresh data for
// each variant of several; and a builtin on a user's database does not
// create tables unless --init was given.
func initMode(conn *Conn, opts Options, multi bool) string {
	switch {
	case multi && opts.Init != "skip":
		return "fresh"
	case !opts.InitSet && opts.Init == "skip" && conn.Embedded:
		return "keep" // a fresh embedded server holds nothing
	}
	return opts.Init
}

// Load prepares a run: the schema as asked, then the workload's operations.
// A workload without a Report of its own is audited by its Check after the
// run.
func Load(ctx context.Context, conn *Conn, g workload.Generator, opts Options, multi bool) (*workload.QueryLoad, error) {
	h := g.Hooks()
	if mode := initMode(conn, opts, multi); h.Init != nil && mode != "skip" {
		if err := h.Init(ctx, conn.Target, workload.InitOptions{Drop: mode == "fresh", Log: opts.Stderr}); err != nil {
			return nil, err
		}
	}
	e := opts.Engine
	load, err := h.Ops(ctx, conn.Target, workload.RunOptions{Seed: opts.Seed, Concurrency: e.Concurrency,
		MaxTries: e.MaxTries, FirstClient: opts.FirstClient, Instance: e.Instance, Instances: max(e.Instances, 1), Duration: e.Duration, Warmup: e.Warmup, Rate: e.Rate,
		Progress: e.Progress, Log: opts.Stderr, Figure: figure(opts), Marks: opts.Marks})
	if err != nil {
		return nil, err
	}
	if load.Report == nil && h.Check != nil {
		// The workload's audit of its data ends the run, as `txload
		// check` would print it.
		load.Report = func(ctx context.Context, _ *metrics.Snapshot) (*workload.CheckResult, error) {
			return h.Check(ctx, conn.Target)
		}
	}
	return load, nil
}

// SettingsErr is err's SettingsError, if any: the schema exists with
// other settings than the run's flags, found before anything was written
// (exit 2), with the run's way to recreate it. Commands that run the load
// inside their own (lag, failover) end with it as run does.
func SettingsErr(err error) error {
	var se *workload.SettingsError
	if !errors.As(err, &se) {
		return nil
	}
	return &workload.SettingsError{Workload: se.Workload, Msg: se.Msg + " (in a run: --init fresh)"}
}

// figure is what the workload's own figures go to: the exporter, and the
// document's log of them, if any.
func figure(opts Options) func(name, help string, value float64) {
	exp, log := opts.Metrics, opts.figures
	switch {
	case log == nil && exp == nil:
		return nil
	case log == nil:
		return exp.SetFigure
	}
	return func(name, help string, value float64) {
		if exp != nil {
			exp.SetFigure(name, help, value)
		}
		log.set(name, value)
	}
}

// keepsDocument says the run writes a document: --json, --html, or the
// live page.
func (o Options) keepsDocument() bool { return o.JSON != "" || o.HTML != "" || o.Live != nil }

// RunOne runs one variant and prints its report.
func RunOne(ctx context.Context, conn *Conn, m workload.Meta, v workload.Variant, opts Options, multi bool) (*Outcome, error) {
	if opts.keepsDocument() {
		opts.figures = &figureLog{}
	}
	load, err := Load(ctx, conn, v.Generator, opts, multi)
	if err != nil {
		return nil, err
	}
	if load.Close != nil {
		defer load.Close()
	}
	if load.Clients > 0 {
		// The workload chose its number of clients once it saw the
		// database (pgio: every table it finds): more than its flags said,
		// the server must still have them free.
		if need, flags := clientsNeeded(v.Generator.Hooks(), opts); load.Clients > need {
			if err := conn.CheckConnections(ctx, load.Clients+2, flags); err != nil {
				return nil, err
			}
		}
		opts.Engine.Concurrency = load.Clients
	}
	wd, err := wire(ctx, conn, load, opts)
	if err != nil {
		return nil, err
	}
	lsp := opts.Live.begin(conn, load, opts, v.Labels, wd.intervals)
	res, runErr := engine.Run(ctx, wd.cfg, load)
	if err := wd.close(); err != nil && runErr == nil {
		runErr = err
	}
	if res == nil || (opts.Engine.StopOnAbort && res.Aborted > 0) {
		opts.Live.end(nil)
		(&Outcome{Intervals: wd.intervals, live: lsp}).Close() // no document
	}
	if res == nil {
		return nil, runErr
	}
	if opts.Metrics != nil {
		opts.Metrics.SetSaturated(res.Saturated)
	}
	if opts.Engine.StopOnAbort && res.Aborted > 0 {
		// The run stopped at the first abort, with no report.
		return nil, &AbortedError{Clients: res.Aborted, Msg: fmt.Sprintf("a client aborted: %s", conn.Target.Scrub(res.AbortErr.Error())),
			Stopped: true, Group: res.AbortGroup}
	}
	o := &Outcome{Labels: v.Labels, Result: res, Load: load, Intervals: wd.intervals, Engine: opts.Engine, figures: opts.figures, live: lsp}
	o.RunFailed, _ = o.measureFailed(opts.PgbenchExit)
	defer opts.Live.end(o) // with its audit
	if wd.printer != nil {
		if err := wd.printer.Report(opts.Stdout, res); err != nil {
			return o, err
		}
		// The audit as the text output prints it, on stderr: stdout is
		// the format's report alone.
		if err := audit(ctx, conn, m, load, res, opts, o, opts.Stderr); err != nil && runErr == nil {
			runErr = err
		}
		return o, runErr
	}
	var labels []string
	for _, l := range v.Labels {
		labels = append(labels, l.Label+": "+l.Value)
	}
	h := report.Header{Workload: m.Name, Server: conn.Server.String(), Mode: Mode(opts), Labels: labels}
	if opts.PerStatement {
		for _, op := range load.OpInfo {
			h.Statements = append(h.Statements, op.Statements)
		}
	}
	o.Notes = Notes(res, opts, conn.Target)
	report.Summary(opts.Stdout, h, res.Total, o.Notes)
	if res.Offered > 0 {
		fmt.Fprintln(opts.Stdout)
		report.OpenLoop(opts.Stdout, res.Total, res.Offered-res.Unstarted, opts.Engine.Window())
		if h := res.EmitLag; h != nil && h.TotalCount() > 0 {
			fmt.Fprintf(opts.Stdout, "# generator emission lag: p50 %d, p99 %d, max %d (µs)\n", h.ValueAtQuantile(50), h.ValueAtQuantile(99), h.Max())
		}
	}
	if err := audit(ctx, conn, m, load, res, opts, o, opts.Stdout); err != nil && runErr == nil {
		runErr = err
	}
	fmt.Fprintln(opts.Stdout)
	return o, runErr
}

// audit ends a run with the workload's audit (load.Report), if it has
// one, printed on w and kept in o.Check; one instance of several says
// where the audit is instead.
func audit(ctx context.Context, conn *Conn, m workload.Meta, load *workload.QueryLoad, res *engine.Result, opts Options, o *Outcome, w io.Writer) error {
	switch {
	case load.Report == nil:
		return nil
	case opts.Engine.Instances > 1:
		fmt.Fprintf(w, "\n%s's audit: once every instance is done, run `txload check %s` (and merge the instances' --json with `txload merge`)\n", m.Name, m.Name)
		return nil
	}
	actx, cancel := auditContext(ctx)
	defer cancel()
	conn.settle(actx)
	all, err := res.All()
	if load.Measured != nil {
		load.Measured(res.Total)
	}
	if err != nil {
		return err
	}
	chk, err := load.Report(actx, all)
	if err != nil {
		o.AuditErr = pg.Printable(conn.Target.Scrub(err.Error()))
		return err
	}
	o.Check = chk.Printable()
	fmt.Fprintln(w)
	PrintCheck(w, chk)
	return nil
}

// Notes are the lines under a summary's header: how the run ended, and
// what the user must know to read it.
func Notes(res *engine.Result, opts Options, t *pg.Target) []string {
	out := []string{report.ConnectLine(opts.Engine.Concurrency, res.ConnectTime)}
	if res.Interrupted {
		out = append(out, "INTERRUPTED: the figures cover what ran before "+InterruptedBy(res.Cause))
	}
	if line := report.WarmupLine(res.Total, opts.Engine.Warmup); line != "" {
		out = append(out, line)
	}
	if res.Saturated {
		all := res.Total.Total("all")
		out = append(out, fmt.Sprintf("SATURATED: the target of %g ops/s is beyond what the database sustains: operations fell more than %s behind schedule and the run stopped; it sustained %.1f ops/s; %d of %d scheduled never started",
			opts.Engine.ShareRate(), opts.Engine.MaxLag, float64(all.OK+all.FailedTotal())/res.Total.Elapsed.Seconds(), res.Unstarted, res.Offered))
	} else if res.Behind {
		all := res.Total.Total("all")
		out = append(out, fmt.Sprintf("BEHIND: the target of %g ops/s was not sustained: %d of %d scheduled operations (%.1f%%) never started before the window ended, and their schedule lag is in no figure below; it sustained %.1f ops/s",
			opts.Engine.ShareRate(), res.Unstarted, res.Offered, 100*float64(res.Unstarted)/float64(res.Offered), float64(all.OK+all.FailedTotal())/res.Total.Elapsed.Seconds()))
	} else if res.Offered > 0 {
		out = append(out, report.OfferedLine(res.Offered, res.Unstarted))
	}
	if line := report.DrainLine(res.Drain); line != "" {
		out = append(out, line)
	}
	if res.Drained {
		n := res.Drain.Total("all").Abandoned
		if n == 0 {
			out = append(out, fmt.Sprintf("DRAIN TIMEOUT: the operations still in flight %s after the end were cancelled; the server answered each, or said whether it committed once txload had ended its session: their outcomes are known (the drain line), none unknown",
				opts.Engine.DrainTimeout))
		} else {
			out = append(out, fmt.Sprintf("DRAIN TIMEOUT: %s still in flight %s after the end %s abandoned (a COMMIT in flight, unanswered %s after its cancel request, whose session the server could not be asked about); their outcome is unknown",
				report.Count(n, "operation"), opts.Engine.DrainTimeout, metrics.Were(n), executor.SettleTimeout))
		}
	}
	if res.Outages > 0 {
		out = append(out, fmt.Sprintf("UNREACHABLE: the server could not be reached %s, %s in all; %s failed",
			report.Count(res.Outages, "time"), res.Unreachable.Round(time.Millisecond), report.Count(res.Total.Reconnects, "reconnection attempt")))
	}
	if res.Aborted > 0 {
		out = append(out, fmt.Sprintf("ABORTED: %s ended on an error no retry cures (--continue-on-error keeps them running): %s",
			report.Count(res.Aborted, "client"), pg.Printable(t.Scrub(res.AbortErr.Error()))))
	}
	for c, err := range res.FirstErrors {
		if err != nil && (res.AbortErr == nil || err != res.AbortErr) {
			out = append(out, fmt.Sprintf("first %s error: %s", metrics.Class(c), t.Scrub(oneLine(err.Error()))))
		}
	}
	return out
}

// oneLine is a message on one line, printable (pg.Printable): a server's
// message may hold newlines and terminal escapes.
func oneLine(s string) string { return pg.Printable(strings.Join(strings.Fields(s), " ")) }

// Mode describes the loop for the summary's header: of one instance of
// several, its share.
func Mode(opts Options) string {
	e := opts.Engine
	l := report.Loop{Rate: e.Rate, Arrival: e.Arrival.String(), Workers: e.Concurrency, Each: e.Transactions}
	if e.Instances > 1 {
		l.Instance, l.Instances, l.AllWorkers = e.Instance, e.Instances, opts.allClients
	}
	return l.String()
}

// LabelString is a variant's labels on one line.
func LabelString(ls []workload.Line) string {
	var parts []string
	for _, l := range ls {
		parts = append(parts, l.Label+"="+l.Value)
	}
	return strings.Join(parts, " ")
}

// PrintCheck prints a check's lines and verdict.
func PrintCheck(w io.Writer, res *workload.CheckResult) {
	report.Lines(w, Lines(res.Lines))
	if len(res.Violations) == 0 {
		if !res.Figures {
			fmt.Fprintln(w, "check: ok")
		}
		return
	}
	for _, v := range res.Violations {
		fmt.Fprintf(w, "VIOLATION: %s\n", v)
	}
}

// Lines converts a workload's lines for the report package.
func Lines(ls []workload.Line) []report.Line {
	out := make([]report.Line, len(ls))
	for i, l := range ls {
		out[i] = report.Line{Label: l.Label, Value: l.Value}
	}
	return out
}

func printComparison(w io.Writer, outcomes []Outcome) {
	var labelCols []string
	for _, l := range outcomes[0].Labels {
		labelCols = append(labelCols, l.Label)
	}
	var cols [][2]string
	var rows []report.Row
	for _, o := range outcomes {
		row := report.Row{Total: o.Result.Total}
		for _, l := range o.Labels {
			row.Labels = append(row.Labels, l.Value)
		}
		if o.Check != nil {
			row.Values = o.Check.Values
			if cols == nil {
				cols = o.Check.Columns
			}
		}
		rows = append(rows, row)
	}
	fmt.Fprintln(w, "comparison:")
	report.Comparison(w, labelCols, cols, rows)
}

// threads are the threads of load under e: the I/O loops that drive its
// clients.
func threads(load *workload.QueryLoad, e engine.Config) int {
	return engine.Groups(e, load)
}

// RunDocOf is one outcome's part of a document: its window's figures and
// intervals, its drain, how it ended, its labels and its audit.
func RunDocOf(o Outcome) (report.RunDoc, error) {
	rd, err := report.NewRunDoc(o.Result.Total)
	if err != nil {
		return rd, err
	}
	if o.Intervals != nil {
		if err := o.Intervals.Err(); err != nil {
			return rd, err
		}
		rd.Spooled = o.Intervals
	}
	res := o.Result
	rd.Notes = o.Notes
	rd.Offered, rd.Unstarted, rd.Saturated, rd.Interrupted = res.Offered, res.Unstarted, res.Saturated, res.Interrupted
	rd.RunFailed = o.RunFailed
	rd.ConnectSec = res.ConnectTime.Seconds()
	rd.Connections, rd.ConnectionSec = res.Connections, res.ConnectionTime.Seconds()
	if res.Interrupted {
		rd.InterruptedBy = InterruptedBy(res.Cause)
	}
	// Under pgbench's clock the drain also holds closing the connections:
	// its time is the run's, in-flight operations or not.
	if res.Drain != nil && (res.InFlight() > 0 || o.Engine.ClockBeforeConnect) {
		d, err := report.NewIntervalDoc(res.Drain, res.End, false)
		if err != nil {
			return rd, err
		}
		rd.Drain = &d
	}
	if res.EmitLag != nil {
		el, err := report.HistogramDoc(res.EmitLag)
		if err != nil {
			return rd, err
		}
		rd.EmissionLag = &el
	}
	if len(o.Labels) > 0 {
		rd.Labels = map[string]string{}
		for _, l := range o.Labels {
			rd.Labels[l.Label] = l.Value
		}
	}
	if o.Check != nil {
		rd.Check = &report.CheckDoc{Values: o.Check.Values, Violations: o.Check.Violations, Figures: o.Check.Figures}
		if rd.Check.Violations == nil {
			rd.Check.Violations = []string{}
		}
		for _, l := range o.Check.Lines {
			rd.Check.Lines = append(rd.Check.Lines, report.CheckLine{Label: l.Label, Value: l.Value})
		}
	} else if o.AuditErr != "" {
		rd.Check = &report.CheckDoc{Values: map[string]int64{}, Violations: []string{}, Error: o.AuditErr}
	}
	return rd, nil
}

// writeDocument writes the run's document as --json and draws it as
// --html, whichever were asked for. Its configuration is the command's
// flags, then the run's own settings under the keys every reader knows
// (report.Settings); schedule says the engine's schedule (duration, rate)
// describes every run of the document; interrupted names what interrupted
// a command of several runs before it ended ("" when nothing did).
func writeDocument(ctx context.Context, conn *Conn, m workload.Meta, opts Options, outcomes []Outcome, schedule bool, interrupted string) error {
	if !opts.keepsDocument() {
		return nil
	}
	config := documentConfig(conn, outcomes[0], opts, schedule)
	doc := &report.Document{Version: opts.Version, Command: opts.Command, Workload: m.Name, Config: config, Server: conn.Server, RunID: report.NewRunID(),
		Interrupted: interrupted != "", InterruptedBy: interrupted}
	for _, o := range outcomes {
		rd, err := RunDocOf(o)
		if err != nil {
			return err
		}
		doc.Runs = append(doc.Runs, rd)
		if o.figures != nil {
			var labels []workload.Line
			if len(outcomes) > 1 {
				labels = o.Labels
			}
			doc.Series = append(doc.Series, o.figures.series(m.Name, labels)...)
		}
	}
	opts.Live.Finish(doc)
	if opts.JSON != "" {
		if err := WriteFile(ctx, opts.Stderr, opts.JSON, func(w io.Writer) error { return report.WriteJSON(w, doc) }); err != nil {
			return fmt.Errorf("writing --json: %w", err)
		}
	}
	if opts.HTML != "" {
		err := WriteFile(ctx, opts.Stderr, opts.HTML, func(w io.Writer) error {
			return htmlreport.Write(w, []*report.Document{doc}, htmlreport.Options{Names: []string{m.Name}, Version: opts.Version})
		})
		if err != nil {
			return fmt.Errorf("writing --html: %w", err)
		}
	}
	return nil
}

// documentConfig is a document's configuration: the command's flags, then
// the run's own settings under the keys every reader knows
// (report.Settings), those of o.
func documentConfig(conn *Conn, o Outcome, opts Options, schedule bool) map[string]any {
	config := map[string]any{}
	for k, v := range opts.Config {
		config[k] = v
	}
	config[report.KeyURLs] = conn.Target.URLs()
	settingsOf(o, opts, schedule).Record(config)
	return config
}

// settingsOf is what the document records of a run's settings: those it
// ran with (the load's clients, the scale the workload found), not the
// flags that asked for them.
func settingsOf(o Outcome, opts Options, schedule bool) report.Settings {
	e := o.Engine
	clients := e.Concurrency
	if e.Instances > 1 {
		clients = opts.allClients
	}
	s := report.Settings{Concurrency: clients, Threads: threads(o.Load, e), Schedule: schedule,
		Duration: e.Duration, Transactions: e.Transactions, Warmup: e.Warmup, Rate: e.Rate, LatencyLimit: e.LatencyLimit,
		Arrival: e.Arrival.String(), MaxTries: e.MaxTries, Progress: e.Progress, Seed: opts.Seed, Connect: e.ConnectPerTxn,
		Scale: o.Load.Scale, Protocol: o.Load.Protocol, Instance: e.Instance, Instances: e.Instances}
	if e.MaxTries >= engine.Unlimited {
		s.MaxTries = 0
	}
	return s
}

// openChecked connects to the target and checks, before anything is
// written, that the server has the connections the run needs and that a
// pooler allows the session state the workload keeps.
func (r Resolved) openChecked(ctx context.Context, h workload.Hooks, opts Options) (*Conn, error) {
	conn, err := r.Open(ctx, opts.Stderr)
	if err != nil {
		return nil, err
	}
	need, flags := clientsNeeded(h, opts)
	if err := conn.CheckConnections(ctx, need+2, flags); err != nil {
		conn.Close()
		return nil, err
	}
	if err := conn.CheckSessionState(h); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// clientsNeeded is how many clients a run needs as far as the flags tell,
// and the flags that set that number ("" = --concurrency).
func clientsNeeded(h workload.Hooks, opts Options) (int, string) {
	if h.Clients != nil {
		if n, flags := h.Clients(); n > 0 {
			return n, flags
		}
	}
	return opts.Engine.Concurrency, ""
}
