package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/pg"
	"github.com/txload/txload/report"
	"github.com/txload/txload/workload"
)

// runFlags are the engine's and the output's flags, shared by every workload.
type runFlags struct {
	target        targetFlags
	concurrency   int
	rate          float64
	arrival       string
	duration      time.Duration
	warmup        time.Duration
	maxTries      int
	maxLag        time.Duration
	progress      time.Duration
	verboseErrors bool
	json          string
	seed          uint64
	init          string
	latencyLimit  time.Duration
	output        string
	failDetailed  bool
	perStatement  bool
	cpuprofile    string
	histogram     string
	spin          time.Duration
}

func (f *runFlags) register(fs *pflag.FlagSet) {
	f.target.register(fs)
	fs.IntVarP(&f.concurrency, "concurrency", "c", 8, "workers, each on its own connection")
	fs.Float64Var(&f.rate, "rate", 0, "open loop: operations per second on an absolute schedule (0 = closed loop)")
	fs.StringVar(&f.arrival, "arrival", "poisson", "open-loop arrivals: poisson | uniform")
	fs.DurationVarP(&f.duration, "duration", "d", 10*time.Second, "measured period")
	fs.DurationVar(&f.warmup, "warmup", 0, "run this long first, excluded from the results")
	fs.IntVar(&f.maxTries, "max-tries", 10, "attempts per transaction for retryable errors (serialization, deadlock, lost connection); 1 = no retry")
	fs.DurationVar(&f.maxLag, "max-lag", engine.DefaultMaxLag, "open loop: stop when operations start this far behind schedule")
	fs.DurationVar(&f.progress, "progress", time.Second, "progress line interval on stderr (0 = off)")
	fs.BoolVar(&f.verboseErrors, "verbose-errors", false, "print every failed attempt on stderr")
	fs.StringVar(&f.json, "json", "", "write the configuration, server, results and encoded histograms to this file")
	fs.Uint64Var(&f.seed, "seed", 1, "seed for the workload's random choices and the arrival schedule")
	fs.StringVar(&f.init, "init", "fresh", "schema before the run: fresh (drop and reload) | keep (load if missing) | skip")
	fs.DurationVar(&f.latencyLimit, "latency-limit", 0, "count transactions slower than this as late; with --rate, skip those that would start this late (0 = off)")
	fs.StringVar(&f.output, "output", "text", "report format: text (txload's summary) | pgbench (pgbench's progress lines and report, line for line)")
	fs.BoolVar(&f.failDetailed, "failures-detailed", false, "--output pgbench: break failures down into serialization and deadlock")
	fs.BoolVarP(&f.perStatement, "report-per-statement", "r", false, "report each statement's latency, failures and retries")
	fs.DurationVar(&f.spin, "spin", engine.DefaultSpin, "open loop: for this long before each intended start the scheduler yields in a loop instead of sleeping (Go's timers wake up to 1ms late); costs CPU at high rates; 0 = sleep only")
	fs.StringVar(&f.histogram, "histogram", "", "write interval histograms (sojourn, remote, lag per operation) in HdrHistogram's log format (.hlog) to this file")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a Go CPU profile of txload itself to this file (for go tool pprof)")
	_ = fs.MarkHidden("cpuprofile")
}

func (f *runFlags) engineConfig() (engine.Config, error) {
	arrival, err := engine.ParseArrival(f.arrival)
	if err != nil {
		return engine.Config{}, fmt.Errorf("--arrival: %w", err)
	}
	cfg := engine.Config{
		Concurrency: f.concurrency, Rate: f.rate, Arrival: arrival,
		Duration: f.duration, Warmup: f.warmup, MaxTries: f.maxTries, MaxLag: f.maxLag,
		Progress: f.progress, Seed: f.seed, Classify: pg.Classify, LatencyLimit: f.latencyLimit,
		Spin: f.spin,
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	switch f.init {
	case "fresh", "keep", "skip":
	default:
		return cfg, fmt.Errorf("--init %q is not allowed (allowed: fresh, keep, skip)", f.init)
	}
	switch f.output {
	case "text", "pgbench":
	default:
		return cfg, fmt.Errorf("--output %q is not allowed (allowed: text, pgbench)", f.output)
	}
	for _, out := range []struct{ flag, path string }{{"--json", f.json}, {"--histogram", f.histogram}} {
		if out.path == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(out.path)); err != nil || !st.IsDir() {
			return cfg, fmt.Errorf("%s %s: directory %s does not exist", out.flag, out.path, filepath.Dir(out.path))
		}
	}
	return cfg, nil
}

func (f *runFlags) mode() string {
	if f.rate > 0 {
		return fmt.Sprintf("open loop at %g ops/s (%s), %d workers", f.rate, f.arrival, f.concurrency)
	}
	return fmt.Sprintf("closed loop, %d workers", f.concurrency)
}

func runCommand(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run WORKLOAD",
		Short: "Run a workload and report what it measured",
		Long: `run loads the workload's schema (see --init), drives it closed loop
(--concurrency workers back to back) or open loop (--rate operations per
second, latency measured from each operation's intended start), then prints
a summary per operation on stdout. Progress lines go to stderr.`,
		Example: "  txload run bank --isolation rc --duration 5s\n  txload run bank --rate 500 --duration 1m --json bank.json",
	}
	subcommands(env, cmd, func(g workload.Generator) bool { _, ok := g.(workload.Opser); return ok },
		func(m workload.Meta, g workload.Generator) *cobra.Command {
			f := &runFlags{}
			c := &cobra.Command{
				Use:     m.Name,
				Short:   m.Description,
				Example: m.Examples,
				RunE: func(cmd *cobra.Command, _ []string) error {
					return runWorkload(cmd.Context(), env, cmd, m, g, f)
				},
			}
			f.register(c.Flags())
			return c
		})
	return cmd
}

// outcome of one variant.
type outcome struct {
	labels []workload.Line
	res    *engine.Result
	check  *workload.CheckResult
}

func runWorkload(ctx context.Context, env Env, cmd *cobra.Command, m workload.Meta, g workload.Generator, f *runFlags) error {
	cfg, err := f.engineConfig()
	if err != nil {
		return usageErr(err)
	}
	if err := g.Validate(); err != nil {
		return usageErr(err)
	}
	r, err := f.target.resolve(env)
	if err != nil {
		return err
	}
	stderr := &lockedWriter{w: env.Stderr}
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return usagef("--cpuprofile: %v", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	conn, err := r.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer conn.close()

	// The final interval is the sliver while in-flight operations drain:
	// printed only after Ctrl-C, as what ran last.
	show := func(t engine.Tick) bool { return f.progress > 0 && (!t.Final || ctx.Err() != nil) }
	if f.output == "text" {
		cfg.OnTick = func(t engine.Tick) {
			if show(t) {
				report.Progress(stderr, t.Elapsed, t.Warmup, t.Interval)
			}
		}
	}
	var hlog *report.Hlog
	if f.histogram != "" {
		hf, err := os.Create(f.histogram)
		if err != nil {
			return fmt.Errorf("--histogram: %w", err)
		}
		defer hf.Close()
		if cfg.Progress <= 0 {
			cfg.Progress = time.Second // intervals for the log, no progress lines
		}
		progress := cfg.OnTick
		cfg.Start = func(start time.Time) {
			if hlog == nil {
				var err error
				if hlog, err = report.NewHlog(hf, start); err != nil {
					fmt.Fprintln(stderr, err)
				}
			}
		}
		cfg.OnTick = func(t engine.Tick) {
			if progress != nil {
				progress(t)
			}
			if hlog != nil {
				if err := hlog.Interval(t.Interval, t.End); err != nil {
					fmt.Fprintln(stderr, err)
				}
			}
		}
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

	variants := []workload.Variant{{Generator: g}}
	if v, ok := g.(workload.Varianter); ok && v.Variants() != nil {
		variants = v.Variants()
	}
	var outcomes []outcome
	var runErr error
	for i, v := range variants {
		if len(variants) > 1 {
			fmt.Fprintf(stderr, "variant %d/%d: %s\n", i+1, len(variants), labelString(v.Labels))
		}
		o, err := runOne(ctx, env, stderr, conn, cfg, f, m, v, len(variants) > 1, show)
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
		printComparison(env.Stdout, outcomes)
	}
	if f.json != "" && len(outcomes) > 0 {
		if err := writeJSON(env, cmd, m, conn, f, outcomes); err != nil && runErr == nil {
			runErr = err
		}
	}
	if runErr != nil {
		return runErr
	}
	if ctx.Err() != nil {
		return &ExitError{Code: ExitInterrupted, Err: errors.New("interrupted: the summary covers what ran")}
	}
	for _, o := range outcomes {
		if err := violationErr(o.check); err != nil {
			return err
		}
	}
	return nil
}

func runOne(ctx context.Context, env Env, stderr io.Writer, conn *connected, cfg engine.Config, f *runFlags,
	m workload.Meta, v workload.Variant, multi bool, show func(engine.Tick) bool) (*outcome, error) {
	g := v.Generator
	if in, ok := g.(workload.Initer); ok && f.init != "skip" {
		drop := f.init == "fresh" || multi
		if err := in.Init(ctx, conn.target, workload.InitOptions{Drop: drop, Log: stderr}); err != nil {
			return nil, err
		}
	}
	load, err := g.(workload.Opser).Ops(ctx, conn.target, workload.RunOptions{Seed: f.seed, Concurrency: f.concurrency, MaxTries: f.maxTries})
	if err != nil {
		return nil, err
	}
	if load.Close != nil {
		defer load.Close()
	}
	if load.BlockingIO && env.Getenv("GOMAXPROCS") == "" {
		// Measured on 2 cores: tpcb-like +30%, select-only unchanged.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2 * runtime.NumCPU()))
	}
	var prun report.PgbenchRun
	if f.output == "pgbench" {
		prun = pgbenchRun(g, load, f)
		logTick := cfg.OnTick
		cfg.OnTick = func(t engine.Tick) {
			if show(t) {
				report.PgbenchProgress(stderr, t.Elapsed, t.Interval, prun)
			}
			if logTick != nil {
				logTick(t)
			}
		}
	}
	res, runErr := engine.Run(ctx, cfg, load)
	if res == nil {
		return nil, runErr
	}
	if f.output == "pgbench" {
		prun.ConnectTime = res.ConnectTime
		report.PgbenchReport(env.Stdout, res.Total, prun)
		if runErr != nil {
			runErr = errors.New(conn.target.Scrub(runErr.Error()))
		}
		return &outcome{labels: v.Labels, res: res}, runErr
	}
	o := &outcome{labels: v.Labels, res: res}
	var extra []string
	if res.Interrupted {
		extra = append(extra, "INTERRUPTED: the figures cover what ran before Ctrl-C")
	}
	if res.Saturated {
		all := res.Total.Total("all")
		extra = append(extra, fmt.Sprintf("SATURATED: the target of %g ops/s is beyond what the database sustains: operations fell more than %s behind schedule and the run stopped; it sustained %.1f ops/s; %d of %d scheduled never started",
			f.rate, f.maxLag, float64(all.OK+all.FailedTotal())/res.Total.Elapsed.Seconds(), res.Unstarted, res.Offered))
	} else if res.Offered > 0 {
		extra = append(extra, fmt.Sprintf("offered %d operations, %d never started", res.Offered, res.Unstarted))
	}
	var labels []string
	for _, l := range v.Labels {
		labels = append(labels, l.Label+": "+l.Value)
	}
	h := report.Header{Workload: m.Name, Server: conn.server.String(), Mode: f.mode(), Labels: labels}
	if f.perStatement {
		if d, ok := g.(workload.PgbenchDescriber); ok {
			for _, s := range d.PgbenchInfo().Scripts {
				h.Statements = append(h.Statements, s.Statements)
			}
		}
	}
	report.Summary(env.Stdout, h, res.Total, extra)
	if res.Offered > 0 {
		fmt.Fprintln(env.Stdout)
		report.OpenLoop(env.Stdout, res.Total, res.Offered-res.Unstarted, f.duration)
		if h := res.EmitLag; h != nil && h.TotalCount() > 0 {
			fmt.Fprintf(env.Stdout, "# generator emission lag: p50 %d, p99 %d, max %d (µs)\n", h.ValueAtQuantile(50), h.ValueAtQuantile(99), h.Max())
		}
	}
	if rr, ok := g.(workload.RunReporter); ok {
		actx, cancel := auditCtx(ctx)
		defer cancel()
		chk, err := rr.RunReport(actx, conn.target, res.Total)
		if err != nil {
			if runErr == nil {
				runErr = err
			}
		} else {
			o.check = chk
			fmt.Fprintln(env.Stdout)
			printCheck(env, chk)
		}
	}
	fmt.Fprintln(env.Stdout)
	if runErr != nil {
		runErr = errors.New(conn.target.Scrub(runErr.Error()))
	}
	return o, runErr
}

// pgbenchRun describes the run for pgbench's report format.
func pgbenchRun(g workload.Generator, load *workload.QueryLoad, f *runFlags) report.PgbenchRun {
	r := report.PgbenchRun{
		Scale: 1, QueryMode: "simple", Clients: f.concurrency, Threads: f.concurrency, MaxTries: f.maxTries,
		Duration: f.duration, Rate: f.rate, LatencyLimit: f.latencyLimit,
		FailuresDetailed: f.failDetailed, PerStatement: f.perStatement, Progress: f.progress,
	}
	if d, ok := g.(workload.PgbenchDescriber); ok {
		info := d.PgbenchInfo()
		r.Scale, r.QueryMode = info.Scale, info.QueryMode
		for _, s := range info.Scripts {
			r.Scripts = append(r.Scripts, report.PgbenchScript{Title: s.Title, Weight: s.Weight, Statements: s.Statements})
		}
		return r
	}
	for _, op := range load.Ops {
		r.Scripts = append(r.Scripts, report.PgbenchScript{Title: op, Weight: 1})
	}
	return r
}

func labelString(ls []workload.Line) string {
	var parts []string
	for _, l := range ls {
		parts = append(parts, l.Label+"="+l.Value)
	}
	return strings.Join(parts, " ")
}

func printComparison(w io.Writer, outcomes []outcome) {
	var labelCols []string
	for _, l := range outcomes[0].labels {
		labelCols = append(labelCols, l.Label)
	}
	var rows []report.Row
	for _, o := range outcomes {
		row := report.Row{Total: o.res.Total}
		for _, l := range o.labels {
			row.Labels = append(row.Labels, l.Value)
		}
		if o.check != nil {
			row.Values = o.check.Values
		}
		rows = append(rows, row)
	}
	fmt.Fprintln(w, "comparison:")
	report.Comparison(w, labelCols, [][2]string{{"lost_updates", "lost updates"}, {"drift", "drift"}}, rows)
}

func writeJSON(env Env, cmd *cobra.Command, m workload.Meta, conn *connected, f *runFlags, outcomes []outcome) error {
	config := map[string]any{}
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Name != "url" {
			config[fl.Name] = fl.Value.String()
		}
	})
	config["urls"] = conn.target.URLs()
	doc := &report.Document{Version: env.Version, Command: "run", Workload: m.Name, Config: config, Server: conn.server}
	for _, o := range outcomes {
		rd, err := report.NewRunDoc(o.res.Total)
		if err != nil {
			return err
		}
		rd.Offered, rd.Unstarted, rd.Saturated, rd.Interrupted = o.res.Offered, o.res.Unstarted, o.res.Saturated, o.res.Interrupted
		if o.res.EmitLag != nil {
			el, err := report.HistogramDoc(o.res.EmitLag)
			if err != nil {
				return err
			}
			rd.EmissionLag = &el
		}
		if len(o.labels) > 0 {
			rd.Labels = map[string]string{}
			for _, l := range o.labels {
				rd.Labels[l.Label] = l.Value
			}
		}
		if o.check != nil {
			rd.Check = &report.CheckDoc{Values: o.check.Values, Violations: o.check.Violations}
			if rd.Check.Violations == nil {
				rd.Check.Violations = []string{}
			}
		}
		doc.Runs = append(doc.Runs, rd)
	}
	tmp := f.json + ".tmp"
	file, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("writing --json: %w", err)
	}
	if err := report.WriteJSON(file, doc); err != nil {
		file.Close()
		os.Remove(tmp)
		return err
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("writing --json: %w", err)
	}
	if err := os.Rename(tmp, f.json); err != nil {
		return fmt.Errorf("writing --json: %w", err)
	}
	fmt.Fprintf(env.Stderr, "wrote %s\n", f.json)
	return nil
}
