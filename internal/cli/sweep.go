package cli

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/pg"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/chart"
	"github.com/txload/txload/workload"
)

// sweepFlags are run's flags minus those sweep chooses itself (--rate,
// --duration, --warmup, --max-lag), plus the sweep's own.
type sweepFlags struct {
	target        targetFlags
	concurrency   int
	arrival       string
	maxTries      int
	progress      time.Duration
	verboseErrors bool
	seed          uint64
	init          string

	slo          string
	start        float64
	factor       float64
	stepDuration time.Duration
	stepWarmup   time.Duration
	maxErrorRate float64
	maxSteps     int
	precision    float64
	csv          string
	chart        string
}

func (f *sweepFlags) register(fs *pflag.FlagSet) {
	f.target.register(fs)
	fs.IntVarP(&f.concurrency, "concurrency", "c", 8, "workers, each on its own connection")
	fs.StringVar(&f.arrival, "arrival", "poisson", "open-loop arrivals: poisson | uniform")
	fs.IntVar(&f.maxTries, "max-tries", 10, "attempts per transaction for retryable errors (serialization, deadlock, lost connection); 1 = no retry")
	fs.DurationVar(&f.progress, "progress", 0, "progress line interval on stderr during each step (0 = off)")
	fs.BoolVar(&f.verboseErrors, "verbose-errors", false, "print every failed attempt on stderr")
	fs.Uint64Var(&f.seed, "seed", 1, "seed for the workload's random choices and the arrival schedule")
	fs.StringVar(&f.init, "init", "fresh", "schema before the first step: fresh (drop and reload) | keep (load if missing) | skip")

	fs.StringVar(&f.slo, "slo", "", "required: the latency objective on response time from intended start, comma-separated conditions "+sloGrammar)
	fs.Float64Var(&f.start, "start", 100, "first target rate, operations per second")
	fs.Float64Var(&f.factor, "factor", 2, "multiply the target by this after each passing step until one fails (> 1)")
	fs.DurationVar(&f.stepDuration, "step-duration", 10*time.Second, "measured period of each step")
	fs.DurationVar(&f.stepWarmup, "step-warmup", 2*time.Second, "run each step this long first, excluded from its results")
	fs.Float64Var(&f.maxErrorRate, "max-error-rate", 0.01, "a step fails when (failed attempts + failed operations) / (ok + failed operations) exceeds this, in [0,1]")
	fs.IntVar(&f.maxSteps, "max-steps", 20, "stop after this many steps")
	fs.Float64Var(&f.precision, "precision", 0.02, "bisect until failing/passing − 1 is at most this")
	fs.StringVar(&f.csv, "csv", "", "write one row per step to this CSV file")
	fs.StringVar(&f.chart, "chart", "", "draw latency against achieved throughput to this file (.png or .svg)")
}

const sloGrammar = "METRIC<=DURATION or METRIC<DURATION, METRIC one of p50, p90, p95, p99, p99.9, max, mean (e.g. \"p99<=50ms,max<1s\")"

// sloCond is one condition of an SLO.
type sloCond struct {
	metric string
	strict bool // < rather than <=
	limit  time.Duration
}

func (c sloCond) String() string {
	op := "<="
	if c.strict {
		op = "<"
	}
	return c.metric + op + c.limit.String()
}

// value is the metric of h in µs.
func (c sloCond) value(h *metrics.OpStats) float64 {
	switch c.metric {
	case "max":
		return float64(h.Response.Max())
	case "mean":
		return h.Response.Mean()
	}
	q, _ := strconv.ParseFloat(strings.TrimPrefix(c.metric, "p"), 64)
	return float64(h.Response.ValueAtQuantile(q))
}

func (c sloCond) holds(v float64) bool {
	limit := float64(c.limit / time.Microsecond)
	if c.strict {
		return v < limit
	}
	return v <= limit
}

var sloRe = regexp.MustCompile(`^(p50|p90|p95|p99|p99\.9|max|mean)\s*(<=|<)\s*(\S+)$`)

// parseSLO reads --slo.
func parseSLO(s string) ([]sloCond, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--slo is required: %s", sloGrammar)
	}
	var conds []sloCond
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		m := sloRe.FindStringSubmatch(part)
		if m == nil {
			return nil, fmt.Errorf("--slo %q: cannot read %q; want %s", s, part, sloGrammar)
		}
		d, err := time.ParseDuration(m[3])
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("--slo %q: %q is not a positive duration; want %s", s, m[3], sloGrammar)
		}
		conds = append(conds, sloCond{metric: m[1], strict: m[2] == "<", limit: d})
	}
	return conds, nil
}

func sloString(conds []sloCond) string {
	var parts []string
	for _, c := range conds {
		parts = append(parts, c.String())
	}
	return strings.Join(parts, ",")
}

// validate checks the flags before anything touches the database.
func (f *sweepFlags) validate() ([]sloCond, engine.Config, error) {
	conds, err := parseSLO(f.slo)
	if err != nil {
		return nil, engine.Config{}, err
	}
	switch {
	case !(f.start > 0) || math.IsInf(f.start, 0):
		return nil, engine.Config{}, fmt.Errorf("--start must be a positive number of operations per second, got %g", f.start)
	case !(f.factor > 1) || math.IsInf(f.factor, 0):
		return nil, engine.Config{}, fmt.Errorf("--factor must be greater than 1, got %g", f.factor)
	case f.stepDuration <= 0:
		return nil, engine.Config{}, fmt.Errorf("--step-duration must be positive (for example 10s), got %s", f.stepDuration)
	case f.stepWarmup < 0:
		return nil, engine.Config{}, fmt.Errorf("--step-warmup must not be negative, got %s", f.stepWarmup)
	case !(f.maxErrorRate >= 0 && f.maxErrorRate <= 1):
		return nil, engine.Config{}, fmt.Errorf("--max-error-rate must be in [0,1], got %g", f.maxErrorRate)
	case f.maxSteps < 1:
		return nil, engine.Config{}, fmt.Errorf("--max-steps must be at least 1, got %d", f.maxSteps)
	case !(f.precision > 0) || math.IsInf(f.precision, 0):
		return nil, engine.Config{}, fmt.Errorf("--precision must be positive, got %g", f.precision)
	case f.start*f.stepDuration.Seconds() < 1:
		return nil, engine.Config{}, fmt.Errorf("--start %g over --step-duration %s schedules no operation", f.start, f.stepDuration)
	}
	if f.chart != "" && !chart.Supported(f.chart) {
		return nil, engine.Config{}, fmt.Errorf("--chart %s: the file name must end in .png or .svg", f.chart)
	}
	for _, p := range []struct{ flag, path string }{{"--csv", f.csv}, {"--chart", f.chart}} {
		if p.path == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(p.path)); err != nil || !st.IsDir() {
			return nil, engine.Config{}, fmt.Errorf("%s %s: directory %s does not exist", p.flag, p.path, filepath.Dir(p.path))
		}
	}
	switch f.init {
	case "fresh", "keep", "skip":
	default:
		return nil, engine.Config{}, fmt.Errorf("--init %q is not allowed (allowed: fresh, keep, skip)", f.init)
	}
	arrival, err := engine.ParseArrival(f.arrival)
	if err != nil {
		return nil, engine.Config{}, fmt.Errorf("--arrival: %w", err)
	}
	cfg := engine.Config{
		Concurrency: f.concurrency, Rate: f.start, Arrival: arrival,
		Duration: f.stepDuration, Warmup: f.stepWarmup, MaxTries: f.maxTries,
		MaxLag:   min(f.stepDuration, engine.DefaultMaxLag),
		Progress: f.progress, Seed: f.seed, Classify: pg.Classify,
	}
	if err := cfg.Validate(); err != nil {
		return nil, cfg, err
	}
	return conds, cfg, nil
}

func sweepCommand(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep WORKLOAD",
		Short: "Find the highest rate a workload sustains within a latency SLO",
		Long: `sweep runs the workload open loop in steps of --step-duration (after
--step-warmup each), raising the target rate geometrically from --start by
--factor until a step fails, then bisecting between the last passing and the
first failing rate until they are within --precision (or --max-steps ran).

A step passes when
  - the completed rate (ok operations / measured seconds) is at least 99%
    of the target,
  - every --slo condition holds on the response time (from each operation's
    intended start, all operations merged),
  - (failed attempts + failed operations) / (ok + failed operations) is at
    most --max-error-rate, and
  - the schedule did not fall more than min(--step-duration, 10s) behind.

The schema is loaded once, before the first step (see --init). One line per
step goes to stdout as it ends, then the maximum sustainable rate.
--rate, --duration and --warmup are run's; sweep chooses the rates itself.

Exit status: 0 when a maximum was found, 1 when even --start fails,
2 for bad usage.`,
		Example: `  txload sweep select-only --slo "p99<=5ms"
  txload sweep bank --isolation rc --slo "p99<=50ms,max<1s" --start 500 --csv sweep.csv --chart sweep.png
  txload sweep tpcb-like --slo "p95<10ms" --step-duration 30s --precision 0.05 --chart sweep.svg`,
	}
	subcommands(env, cmd, func(g workload.Generator) bool { _, ok := g.(workload.Opser); return ok },
		func(m workload.Meta, g workload.Generator) *cobra.Command {
			f := &sweepFlags{}
			c := &cobra.Command{
				Use:     m.Name,
				Short:   m.Description,
				Example: fmt.Sprintf("  txload sweep %s --slo \"p99<=50ms\" --csv sweep.csv --chart sweep.png", m.Name),
				RunE: func(cmd *cobra.Command, _ []string) error {
					return sweepWorkload(cmd.Context(), env, m, g, f)
				},
			}
			f.register(c.Flags())
			return c
		})
	return cmd
}

// sweepStep is one measured step.
type sweepStep struct {
	n                 int
	target, achieved  float64
	p50, p99, maxResp int64 // µs
	errors            int64
	pass              bool
	why               string
}

func sweepWorkload(ctx context.Context, env Env, m workload.Meta, g workload.Generator, f *sweepFlags) error {
	conds, cfg, err := f.validate()
	if err != nil {
		return usageErr(err)
	}
	if err := g.Validate(); err != nil {
		return usageErr(err)
	}
	if v, ok := g.(workload.Varianter); ok && v.Variants() != nil {
		vs := v.Variants()
		if len(vs) != 1 {
			return usagef("sweep measures one variant at a time; %s gives %d (%s, ...): choose one", m.Name, len(vs), labelString(vs[0].Labels))
		}
		g = vs[0].Generator
	}
	r, err := f.target.resolve(env)
	if err != nil {
		return err
	}
	stderr := &lockedWriter{w: env.Stderr}
	conn, err := r.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer conn.close()

	if f.progress > 0 {
		cfg.OnTick = func(t engine.Tick) { report.Progress(stderr, t.Elapsed, t.Warmup, t.Interval) }
	}
	if f.verboseErrors {
		cfg.OnError = func(e engine.ErrorEvent) {
			next := "gave up"
			if e.Retry {
				next = "retrying"
			}
			fmt.Fprintf(stderr, "error: worker %d %s attempt %d: %s: %s (%s)\n", e.Worker, e.Op, e.Attempt, e.Class, conn.target.Scrub(e.Err.Error()), next)
		}
	}

	if in, ok := g.(workload.Initer); ok && f.init != "skip" {
		if err := in.Init(ctx, conn.target, workload.InitOptions{Drop: f.init == "fresh", Log: stderr}); err != nil {
			return errors.New(conn.target.Scrub(err.Error()))
		}
	}
	load, err := g.(workload.Opser).Ops(ctx, conn.target, workload.RunOptions{Seed: f.seed, Concurrency: f.concurrency, MaxTries: f.maxTries})
	if err != nil {
		return errors.New(conn.target.Scrub(err.Error()))
	}
	if load.Close != nil {
		defer load.Close()
	}
	if load.BlockingIO && env.Getenv("GOMAXPROCS") == "" {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2 * runtime.NumCPU()))
	}

	slo := sloString(conds)
	fmt.Fprintf(env.Stdout, "sweep %s: SLO %s on response time, steps of %s (+%s warm-up), %d workers, %s arrivals\n",
		m.Name, slo, f.stepDuration, f.stepWarmup, f.concurrency, f.arrival)
	fmt.Fprintf(env.Stdout, "%4s  %12s  %12s  %10s  %10s  %10s  %7s  %s\n",
		"step", "target/s", "achieved/s", "p50", "p99", "max", "errors", "result")

	var steps []sweepStep
	lo, hi := 0.0, 0.0 // best passing, lowest failing (0 = none yet)
	next := f.start
	var runErr error
	stopReason := ""
	for n := 1; ; n++ {
		if n > f.maxSteps {
			stopReason = fmt.Sprintf("stopped after --max-steps %d", f.maxSteps)
			break
		}
		cfg.Rate = next
		st, err := sweepOne(ctx, cfg, load, conds, f, n)
		if err != nil {
			runErr = errors.New(conn.target.Scrub(err.Error()))
			break
		}
		if ctx.Err() != nil { // interrupted: this step's figures are partial
			break
		}
		steps = append(steps, st)
		printStep(env.Stdout, st)
		if st.pass {
			lo = max(lo, st.target)
		} else if hi == 0 || st.target < hi {
			hi = st.target
		}
		if hi == 0 {
			next = lo * f.factor
			continue
		}
		if lo == 0 || hi/lo-1 <= f.precision {
			break
		}
		next = roundRate(math.Sqrt(lo*hi), lo, hi) // geometric midpoint: the search is in ratios
	}

	var outErr error
	if f.csv != "" && len(steps) > 0 {
		outErr = writeSweepCSV(f.csv, steps)
		if outErr == nil {
			fmt.Fprintf(env.Stderr, "wrote %s\n", f.csv)
		}
	}
	if f.chart != "" && len(steps) > 0 {
		pts := make([]chart.Point, len(steps))
		for i, s := range steps {
			pts[i] = chart.Point{Throughput: s.achieved, P50: float64(s.p50) / 1000, P99: float64(s.p99) / 1000, Pass: s.pass}
		}
		title := fmt.Sprintf("txload sweep %s — SLO %s", m.Name, slo)
		if err := chart.LatencyThroughput(f.chart, title, pts); err != nil {
			if outErr == nil {
				outErr = err
			}
		} else {
			fmt.Fprintf(env.Stderr, "wrote %s\n", f.chart)
		}
	}

	switch {
	case runErr != nil:
		return runErr
	case ctx.Err() != nil:
		return &ExitError{Code: ExitInterrupted, Err: errors.New("interrupted: the steps above are what ran")}
	case lo == 0:
		fmt.Fprintf(env.Stdout, "no sustainable rate: even --start %s ops/s fails (SLO %s)\n", fmtRate(f.start), slo)
		if outErr != nil {
			return outErr
		}
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("no sustainable rate: even --start %s ops/s fails", fmtRate(f.start))}
	}
	var bound string
	switch {
	case hi == 0:
		bound = fmt.Sprintf(" (a lower bound: no step failed; %s)", stopReason)
	case hi/lo-1 > f.precision:
		bound = fmt.Sprintf(" (between %s and %s: %s before --precision %g)", fmtRate(lo), fmtRate(hi), stopReason, f.precision)
	default:
		bound = fmt.Sprintf(" (%s fails)", fmtRate(hi))
	}
	fmt.Fprintf(env.Stdout, "maximum sustainable rate: %s ops/s (SLO %s)%s\n", fmtRate(lo), slo, bound)
	return outErr
}

// sweepOne runs one step at cfg.Rate and judges it.
func sweepOne(ctx context.Context, cfg engine.Config, load *workload.QueryLoad, conds []sloCond, f *sweepFlags, n int) (sweepStep, error) {
	st := sweepStep{n: n, target: cfg.Rate}
	res, err := engine.Run(ctx, cfg, load)
	if err != nil {
		return st, err
	}
	t := res.Total.Total("all")
	secs := res.Total.Elapsed.Seconds()
	if secs > 0 {
		st.achieved = float64(t.OK) / secs
	}
	st.p50 = t.Response.ValueAtQuantile(50)
	st.p99 = t.Response.ValueAtQuantile(99)
	st.maxResp = t.Response.Max()
	failed := t.FailedTotal()
	st.errors = t.ErrorsTotal() + failed
	var why []string
	if res.Saturated {
		why = append(why, fmt.Sprintf("saturated: %d of %d never started", res.Unstarted, res.Offered))
	}
	if st.achieved < 0.99*st.target {
		why = append(why, fmt.Sprintf("achieved %.1f%% of target", 100*st.achieved/st.target))
	}
	if done := t.OK + failed; done == 0 {
		why = append(why, "no operation completed")
	} else if er := float64(st.errors) / float64(done); er > f.maxErrorRate {
		why = append(why, fmt.Sprintf("error rate %.3g > %g", er, f.maxErrorRate))
	}
	if t.OK > 0 {
		for _, c := range conds {
			if v := c.value(t); !c.holds(v) {
				why = append(why, fmt.Sprintf("%s %s violates %s", c.metric, fmtMicros(v), c))
			}
		}
	}
	st.pass = len(why) == 0
	st.why = strings.Join(why, "; ")
	return st, nil
}

func printStep(w io.Writer, s sweepStep) {
	result := "PASS"
	if !s.pass {
		result = "FAIL: " + s.why
	}
	fmt.Fprintf(w, "%4d  %12s  %12.1f  %10s  %10s  %10s  %7d  %s\n", s.n, fmtRate(s.target), s.achieved,
		fmtMicros(float64(s.p50)), fmtMicros(float64(s.p99)), fmtMicros(float64(s.maxResp)), s.errors, result)
}

// roundRate rounds r to three significant digits when that keeps it
// strictly between lo and hi, for readable targets.
func roundRate(r, lo, hi float64) float64 {
	if r <= 0 {
		return r
	}
	scale := math.Pow(10, math.Floor(math.Log10(r))-2)
	if x := math.Round(r/scale) * scale; x > lo && x < hi {
		// Pow of a negative exponent is inexact: print through 'g'.
		x, _ = strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
		return x
	}
	return r
}

func fmtRate(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }

func fmtMicros(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.3fs", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.3fms", us/1e3)
	}
	return fmt.Sprintf("%.0fµs", us)
}

func writeSweepCSV(path string, steps []sweepStep) error {
	tmp := path + ".tmp"
	file, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("writing --csv: %w", err)
	}
	w := csv.NewWriter(file)
	_ = w.Write([]string{"step", "target_ops", "achieved_ops", "p50_us", "p99_us", "max_us", "errors", "pass"})
	for _, s := range steps {
		_ = w.Write([]string{
			strconv.Itoa(s.n), fmtRate(s.target), strconv.FormatFloat(s.achieved, 'f', 2, 64),
			strconv.FormatInt(s.p50, 10), strconv.FormatInt(s.p99, 10), strconv.FormatInt(s.maxResp, 10),
			strconv.FormatInt(s.errors, 10), strconv.FormatBool(s.pass),
		})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		file.Close()
		os.Remove(tmp)
		return fmt.Errorf("writing --csv: %w", err)
	}
	if err := file.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing --csv: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing --csv: %w", err)
	}
	return nil
}
