package runner

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/chart"
	"github.com/txload/txload/slo"
	"github.com/txload/txload/workload"
)

// SweepOptions is a capacity search: the steps' rates and how each is judged.
type SweepOptions struct {
	SLO          string
	Start        float64
	Factor       float64
	StepDuration time.Duration
	StepWarmup   time.Duration
	MaxErrorRate float64
	MaxSteps     int
	Precision    float64
	CSV, Chart   string
}

// Validate checks the search's settings; the SLO is parsed once here.
func (s SweepOptions) Validate() (slo.SLO, error) {
	objective, err := slo.Parse(s.SLO)
	switch {
	case errors.Is(err, slo.ErrEmpty):
		return slo.SLO{}, Usagef("--slo is required: %s", slo.Grammar)
	case err != nil:
		return slo.SLO{}, Usagef("--slo: %v", err)
	}
	switch {
	case !(s.Start > 0) || math.IsInf(s.Start, 0):
		return slo.SLO{}, Usagef("--start must be a positive number of operations per second, got %g", s.Start)
	case !(s.Factor > 1) || math.IsInf(s.Factor, 0):
		return slo.SLO{}, Usagef("--factor must be greater than 1, got %g", s.Factor)
	case s.StepDuration <= 0:
		return slo.SLO{}, Usagef("--step-duration must be positive (for example 10s), got %s", s.StepDuration)
	case s.StepWarmup < 0:
		return slo.SLO{}, Usagef("--step-warmup must not be negative, got %s", s.StepWarmup)
	case !(s.MaxErrorRate >= 0 && s.MaxErrorRate <= 1):
		return slo.SLO{}, Usagef("--max-error-rate must be in [0,1], got %g", s.MaxErrorRate)
	case s.MaxSteps < 1:
		return slo.SLO{}, Usagef("--max-steps must be at least 1, got %d", s.MaxSteps)
	case !(s.Precision > 0) || math.IsInf(s.Precision, 0):
		return slo.SLO{}, Usagef("--precision must be positive, got %g", s.Precision)
	case s.Start > engine.MaxRate:
		return slo.SLO{}, Usagef("--start %g is more than one operation per nanosecond, the schedule's resolution (at most %g)", s.Start, engine.MaxRate)
	case s.MaxSteps > 1 && s.Start*s.Factor > engine.MaxRate:
		return slo.SLO{}, Usagef("--factor %g makes the second step %g ops/s (--start × --factor), more than one operation per nanosecond, the schedule's resolution (at most %g)",
			s.Factor, s.Start*s.Factor, engine.MaxRate)
	case s.Start*s.StepDuration.Seconds() < 1:
		return slo.SLO{}, Usagef("--start %g over --step-duration %s schedules no operation", s.Start, s.StepDuration)
	}
	if s.Chart != "" && !chart.Supported(s.Chart) {
		return slo.SLO{}, Usagef("%s", chart.Unsupported(s.Chart))
	}
	return objective, nil
}

// Sweep finds the highest rate workload m sustains within the SLO: each step
// is an open-loop run of opts at the step's rate.
func Sweep(ctx context.Context, m workload.Meta, g workload.Generator, target TargetOptions, opts Options, s SweepOptions) error {
	opts.Engine.Rate = s.Start
	opts.Engine.Duration, opts.Engine.Warmup = s.StepDuration, s.StepWarmup
	opts.Engine.MaxLag = min(s.StepDuration, engine.DefaultMaxLag)
	objective, err := s.Validate()
	if err != nil {
		return err
	}
	opts.Outputs = append(opts.Outputs, outfile.File{Flag: "--csv", Path: s.CSV}, outfile.File{Flag: "--chart", Path: s.Chart})
	search, err := slo.NewSearch(s.Start, s.Factor, s.Precision, s.MaxSteps)
	if err != nil {
		return Usage(err)
	}
	r, h, err := Prepare(m, g, target, &opts)
	if err != nil {
		return err
	}
	if h.Variants != nil {
		if vs := h.Variants(); vs != nil {
			if len(vs) != 1 {
				return Usagef("sweep measures one variant at a time; %s gives %d (%s, ...): choose one", m.Name, len(vs), LabelString(vs[0].Labels))
			}
			g = vs[0].Generator
		}
	}
	opts.Stderr = Locked(opts.Stderr)
	stopMetrics, err := StartMetrics(&opts, m.Name)
	if err != nil {
		return err
	}
	defer stopMetrics()
	conn, err := r.openChecked(ctx, h, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	load, err := Load(ctx, conn, g, opts, false)
	if se := SettingsErr(err); se != nil {
		return se
	}
	if err != nil {
		return errors.New(conn.Target.Scrub(err.Error()))
	}
	if load.Close != nil {
		defer load.Close()
	}
	w := opts.Stdout
	fmt.Fprintf(w, "sweep %s: SLO %s on response time, steps of %s (+%s warm-up), %s, %s arrivals\n",
		m.Name, objective, s.StepDuration, s.StepWarmup, report.Count(opts.Engine.Concurrency, "worker"), opts.Engine.Arrival)
	fmt.Fprintf(w, "%4s  %12s  %12s  %10s  %10s  %10s  %7s  %s\n",
		"step", "target/s", "achieved/s", "p50", "p99", "max", "errors", "result")

	var steps []sweepStep
	var outcomes []Outcome
	// committed is what every step ran, the drains and an interrupted
	// step's part included: the workload's audit ends the sweep over the
	// data all of them changed (Ops ran once, before the first step).
	var committed *metrics.Snapshot
	defer func() {
		for i := range outcomes {
			outcomes[i].Close()
		}
	}()
	var runErr error
	for next, ok := search.Next(); ok; next, ok = search.Next() {
		if next > engine.MaxRate {
			// Passing steps grew the target past what the schedule can
			// place: the search ends with what it found.
			fmt.Fprintf(w, "the next step, %s ops/s, would be more than one operation per nanosecond (the schedule's resolution): the sweep stops\n", fmtRate(next))
			break
		}
		step := opts
		step.Engine.Rate = next
		wd, err := wire(ctx, conn, load, step)
		if err != nil {
			runErr = err
			break
		}
		lsp := opts.Live.begin(conn, load, step, []workload.Line{{Label: "target", Value: fmtRate(next)}}, wd.intervals)
		res, err := engine.Run(ctx, wd.cfg, load)
		_ = wd.close() // the histogram's close: its writes failed loudly already
		if res != nil && opts.Metrics != nil {
			opts.Metrics.SetSaturated(res.Saturated)
		}
		if res != nil {
			// What ran is audited, an interrupted step's part included.
			if sum, addErr := addUp(committed, res); addErr != nil && err == nil {
				err = addErr
			} else if addErr == nil {
				committed = sum
			}
		}
		if err != nil || res == nil {
			// No step of the document: an error, or an interrupt before
			// the step's clients had started.
			opts.Live.end(nil)
			(&Outcome{Intervals: wd.intervals, live: lsp}).Close()
			if ctx.Err() == nil {
				runErr = errors.New(conn.Target.Scrub(err.Error()))
			}
			break
		}
		st := judge(res, next, objective, s.MaxErrorRate, len(steps)+1)
		outcomes = append(outcomes, Outcome{Labels: []workload.Line{{Label: "target", Value: fmtRate(next)}}, Result: res, Load: load, Intervals: wd.intervals, Engine: step.Engine, live: lsp})
		opts.Live.end(&outcomes[len(outcomes)-1])
		if res.Interrupted {
			// The part of the step that ran, in the document as an
			// interrupted run and in the text, never judged.
			st.cut = fmt.Sprintf("INTERRUPTED after %s of %s: not judged", res.Total.Elapsed.Round(time.Millisecond), s.StepDuration)
			printStep(w, st)
			break
		}
		steps = append(steps, st)
		printStep(w, st)
		search.Observe(next, st.pass)
		if ctx.Err() != nil {
			break
		}
	}
	found := search.Result()
	lo := found.Lo

	var outErr error
	// checked is the audit's verdict for --csv: ok, violation, error, or
	// "" with none (or one of figures, which audits nothing).
	checked := ""
	if load.Report != nil && committed != nil {
		actx, cancel := auditContext(ctx)
		conn.settle(actx)
		if load.Measured != nil && len(outcomes) > 0 {
			load.Measured(outcomes[len(outcomes)-1].Result.Total)
		}
		chk, err := load.Report(actx, committed)
		chk = chk.Printable()
		cancel()
		switch {
		case err != nil:
			outErr = fmt.Errorf("auditing the sweep: %w", err)
			checked = "error"
			if len(outcomes) > 0 {
				outcomes[len(outcomes)-1].AuditErr = pg.Printable(conn.Target.Scrub(outErr.Error()))
			}
		default:
			fmt.Fprintln(w)
			PrintCheck(w, chk)
			if len(outcomes) > 0 {
				outcomes[len(outcomes)-1].Check = chk
			}
			if len(chk.Violations) > 0 {
				outErr = &ViolationError{Violations: chk.Violations}
				checked = "violation"
			} else if !chk.Figures {
				checked = "ok"
			}
		}
	}
	interrupted := ""
	if ctx.Err() != nil {
		interrupted = InterruptedBy(context.Cause(ctx))
	}
	// An interrupted sweep's CSV has the steps judged before it, maybe
	// none: its header alone.
	if s.CSV != "" && (len(steps) > 0 || interrupted != "") {
		if err := WriteFile(ctx, opts.Stderr, s.CSV, func(f io.Writer) error { return writeSweepCSV(f, steps, checked) }); err != nil {
			outErr = errors.Join(outErr, fmt.Errorf("writing --csv: %w", err))
		}
	}
	if s.Chart != "" && len(steps) > 0 {
		pts := make([]chart.Point, len(steps))
		for i, st := range steps {
			pts[i] = chart.Point{Target: st.target, Throughput: st.achieved, P50: float64(st.p50) / 1000, P99: float64(st.p99) / 1000, Pass: st.pass, Why: st.why}
		}
		title := fmt.Sprintf("txload sweep %s — SLO %s", m.Name, objective)
		write := chart.WriteSVG
		if strings.EqualFold(filepath.Ext(s.Chart), ".png") {
			write = chart.WritePNG
		}
		err := WriteFile(ctx, opts.Stderr, s.Chart, func(w io.Writer) error { return write(w, title, chart.Curve{SLO: objective, Points: pts}) })
		if err != nil {
			outErr = errors.Join(outErr, fmt.Errorf("writing --chart: %w", err))
		}
	}
	if len(outcomes) > 0 {
		if err := writeDocument(ctx, conn, m, opts, outcomes, false, interrupted); err != nil {
			outErr = errors.Join(outErr, err)
		}
	}

	switch {
	case runErr != nil:
		return runErr
	case interrupted != "":
		fmt.Fprintf(w, "INTERRUPTED by %s after %s: the search had not ended\n", interrupted, report.Count(len(steps), "judged step"))
		return ErrInterrupted
	case lo == 0:
		fmt.Fprintln(w, found.Verdict(objective, s.Start, s.MaxSteps, s.Precision))
		if outErr != nil {
			return outErr
		}
		return fmt.Errorf("no sustainable rate: even --start %s ops/s fails", fmtRate(s.Start))
	}
	fmt.Fprintln(w, found.Verdict(objective, s.Start, s.MaxSteps, s.Precision))
	return outErr
}

// addUp adds what a step counted, its drain included, to what the steps
// before it counted (nil: none).
func addUp(sum *metrics.Snapshot, res *engine.Result) (*metrics.Snapshot, error) {
	all, err := res.All()
	if err != nil {
		return nil, fmt.Errorf("adding up the steps' figures: %w", err)
	}
	if sum == nil {
		return all, nil
	}
	out, err := sum.Plus(all)
	if err != nil {
		return nil, fmt.Errorf("adding up the steps' figures: %w", err)
	}
	out.Elapsed = sum.Elapsed + all.Elapsed
	return out, nil
}

// sweepStep is one measured step.
type sweepStep struct {
	n                 int
	target, achieved  float64
	p50, p99, maxResp int64 // µs
	ok, errors        int64
	pass              bool
	why               string
	// cut is the result of a step an interrupt cut short ("" for a
	// judged step).
	cut string
}

// latency is one of a step's latencies (µs) formatted, or none when
// nothing completed, which measured no latency.
func (s sweepStep) latency(us int64, format func(int64) string, none string) string {
	if s.ok == 0 {
		return none
	}
	return format(us)
}

// judge decides whether a step at target passed.
func judge(res *engine.Result, target float64, objective slo.SLO, maxErrorRate float64, n int) sweepStep {
	t := res.Total.Total("all")
	var drainOK int64
	if res.Drain != nil {
		drainOK = res.Drain.Total("all").OK
	}
	figures := slo.Step{
		Target: target, Elapsed: res.Total.Elapsed,
		OK: t.OK, DrainOK: drainOK, Failed: t.FailedTotal(), FailedAttempts: t.ErrorsTotal(),
		Saturated: res.Saturated, Unstarted: res.Unstarted, Offered: res.Offered,
		Response: t.Response,
	}
	why := slo.Judge(figures, objective, maxErrorRate)
	texts := make([]string, len(why))
	for i, r := range why {
		texts[i] = r.Text
	}
	return sweepStep{
		n: n, target: target, achieved: figures.Achieved(),
		p50: t.Response.ValueAtQuantile(50), p99: t.Response.ValueAtQuantile(99), maxResp: t.Response.Max(),
		ok: t.OK, errors: figures.Errors(),
		pass: len(why) == 0, why: strings.Join(texts, "; "),
	}
}

func printStep(w io.Writer, s sweepStep) {
	result := "PASS"
	switch {
	case s.cut != "":
		result = s.cut
	case !s.pass:
		result = "FAIL: " + s.why
	}
	micros := func(us int64) string { return slo.Micros(float64(us)) }
	fmt.Fprintf(w, "%4d  %12s  %12.1f  %10s  %10s  %10s  %7d  %s\n", s.n, fmtRate(s.target), s.achieved,
		s.latency(s.p50, micros, "—"), s.latency(s.p99, micros, "—"), s.latency(s.maxResp, micros, "—"), s.errors, result)
}

func fmtRate(r float64) string { return slo.FormatRate(r) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// writeSweepCSV writes the steps; a step where nothing completed has empty
// latencies. Every row's check is the verdict of the audit after the last
// step, over the data every step changed: data found wrong puts each
// step's figures in doubt.
func writeSweepCSV(f io.Writer, steps []sweepStep, checked string) error {
	w := csv.NewWriter(f)
	_ = w.Write([]string{"step", "target_ops", "achieved_ops", "p50_us", "p99_us", "max_us", "errors", "pass", "check"})
	for _, s := range steps {
		_ = w.Write([]string{
			strconv.Itoa(s.n), fmtRate(s.target), strconv.FormatFloat(s.achieved, 'f', 2, 64),
			s.latency(s.p50, itoa, ""), s.latency(s.p99, itoa, ""), s.latency(s.maxResp, itoa, ""),
			strconv.FormatInt(s.errors, 10), strconv.FormatBool(s.pass), checked,
		})
	}
	w.Flush()
	return w.Error()
}
