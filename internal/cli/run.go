package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/pgbenchrun"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/report/prom"
	"github.com/txload/txload/workload"
)

// targetFlags choose the database: --url (repeatable), DATABASE_URL, or an
// embedded server.
type targetFlags struct {
	urls            []string
	embeddedVersion string
	pooler          string
	connectTimeout  time.Duration
	fs              *pflag.FlagSet
}

func (f *targetFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringArrayVar(&f.urls, "url", nil, "database URL; repeat for the nodes of a cluster (connections go round-robin). Default: $DATABASE_URL, else an embedded PostgreSQL")
	fs.StringVar(&f.embeddedVersion, "embedded-version", embedded.DefaultMajor(), "PostgreSQL version of the embedded server: a major version, 12 to 18, or any release published as binaries, major.minor.patch (12.3.0)")
	fs.StringVar(&f.pooler, "pooler", "auto", "a connection pooler between txload and the server: auto (detect one) | none | transaction | session (its pool mode)")
	fs.DurationVar(&f.connectTimeout, "connect-timeout", pg.DefaultConnectTimeout, "bound on each step of a connection (TCP connect, startup and authentication, the workload's setup statements); a URL's connect_timeout wins for its URL, as in libpq")
}

func (f *targetFlags) options(env Env) runner.TargetOptions {
	o := runner.TargetOptions{URLs: f.urls, EmbeddedVersion: f.embeddedVersion, EmbeddedVersionSet: f.fs.Changed("embedded-version"),
		CacheDir: env.Getenv("TXLOAD_CACHE_DIR"), Pooler: f.pooler,
		ConnectTimeout: f.connectTimeout, ConnectTimeoutSet: f.fs.Changed("connect-timeout"), Env: env.LookupEnv}
	if !f.fs.Changed("url") {
		if u := env.Getenv("DATABASE_URL"); u != "" {
			o.URLs = []string{u}
		}
	}
	return o
}

// loadFlags are the flags of every command that runs load: run, sweep and
// (most of them) lag.
type loadFlags struct {
	target          targetFlags
	concurrency     int
	jobs            int
	arrival         string
	maxTries        int
	progress        time.Duration
	verboseErrors   bool
	continueOnError bool
	drainTimeout    time.Duration
	json            string
	html            string
	histogram       string
	seed            uint64
	init            string
	cpuprofile      string
	instance        string
	instances       int
	metricsAddr     string
	live            string
	fs              *pflag.FlagSet
}

func (f *loadFlags) register(fs *pflag.FlagSet, progress time.Duration) {
	f.fs = fs
	f.target.register(fs)
	fs.IntVarP(&f.concurrency, "concurrency", "c", 8, "clients, each on its own connection")
	fs.IntVarP(&f.jobs, "jobs", "j", 0, "I/O loops driving the clients (pgbench's --jobs); 0 = one per core txload may use")
	fs.StringVar(&f.arrival, "arrival", "poisson", "open-loop arrivals: poisson | uniform")
	fs.IntVar(&f.maxTries, "max-tries", 10, "attempts per transaction for retryable errors (serialization, deadlock, lost connection); 1 = no retry")
	fs.DurationVar(&f.progress, "progress", progress, "progress line interval on stderr (0 = off)")
	fs.BoolVar(&f.verboseErrors, "verbose-errors", false, "print every failed attempt on stderr")
	fs.BoolVar(&f.continueOnError, "continue-on-error", false, "keep a client running after an error no retry cures (by default it ends the client, as pgbench does, and the run exits 1)")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", engine.DefaultDrainTimeout, "how long operations in flight at the end are waited for; then they are cancelled and their answers read for up to 5s more")
	fs.StringVar(&f.json, "json", "", "write the configuration, server, results and encoded histograms to this file")
	fs.StringVar(&f.html, "html", "", "write the run's report as one self-contained HTML file (charts over time, percentile spectrum, configuration)")
	fs.StringVar(&f.histogram, "histogram", "", "write interval histograms (sojourn, remote, lag per operation) in HdrHistogram's log format (.hlog) to this file")
	fs.Uint64Var(&f.seed, "seed", 1, "seed for the workload's random choices and the arrival schedule")
	fs.StringVar(&f.init, "init", "fresh", "schema before the run: fresh (drop and reload) | keep (load if missing) | skip")
	fs.StringVar(&f.instance, "instance", "", "i/N: this process is load generator i (from 0) of N driving one database: it takes its share of --rate and --concurrency; merge their --json with txload merge")
	fs.IntVar(&f.instances, "instances", 0, "N load generators, this one numbered by $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job); see --instance")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve the run's metrics at http://HOST:PORT/metrics for Prometheus while it runs; a port alone (9090 or :9090) listens on loopback, port 0 on any free port (the URL is printed on stderr). Default: off")
	fs.StringVar(&f.live, "live", "", "serve the run's HTML report at http://HOST:PORT/ while it runs, drawn again at every progress interval (1 s when --progress is 0), and the page --html writes once it ends; a port alone (8080 or :8080) listens on loopback, port 0 on any free port (the URL is printed on stderr). The --metrics-addr server serves it too. Default: off")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a Go CPU profile of txload itself to this file (for go tool pprof)")
	_ = fs.MarkHidden("cpuprofile")
}

// options builds the runner's options from the flags.
func (f *loadFlags) options(env Env, command string) (runner.Options, error) {
	arrival, err := engine.ParseArrival(f.arrival)
	if err != nil {
		return runner.Options{}, usagef("--arrival: %v", err)
	}
	if f.fs.Changed("metrics-addr") && f.metricsAddr == "" {
		_, err := prom.ListenAddress("")
		return runner.Options{}, usageErr(err)
	}
	if f.fs.Changed("live") && f.live == "" {
		_, err := prom.ListenAddressOf("--live", "")
		return runner.Options{}, usageErr(err)
	}
	config := map[string]string{}
	f.fs.VisitAll(func(fl *pflag.Flag) {
		if fl.Name != "url" {
			config[fl.Name] = fl.Value.String()
		}
	})
	o := runner.Options{
		Command: command,
		Engine: engine.Config{
			Concurrency: f.concurrency, Jobs: f.jobs, Arrival: arrival, MaxTries: f.maxTries,
			Progress: f.progress, Seed: f.seed, DrainTimeout: f.drainTimeout, ContinueOnError: f.continueOnError,
			Spin: engine.DefaultSpin,
		},
		Init: f.init, InitSet: f.fs.Changed("init"), Seed: f.seed, ConcurrencySet: f.fs.Changed("concurrency"),
		VerboseErrors: f.verboseErrors, MetricsAddr: f.metricsAddr, LiveAddr: f.live, JSON: f.json, HTML: f.html, Histogram: f.histogram, CPUProfile: f.cpuprofile,
		Config: config, Version: env.Version, Stdout: env.Stdout, Stderr: env.Stderr,
	}
	i, n, err := runner.Instance(f.instance, f.instances, env.Getenv("JOB_COMPLETION_INDEX"))
	if err != nil || n == 0 {
		return o, runErr(err)
	}
	return o, runErr(o.Share(i, n))
}

// runFlags are run's own flags, beside the load flags.
type runFlags struct {
	load         loadFlags
	rate         float64
	duration     time.Duration
	transactions int
	warmup       time.Duration
	maxLag       time.Duration
	latencyLimit time.Duration
	output       string
	failDetailed bool
	perStatement bool
	spin         time.Duration
}

func (f *runFlags) register(fs *pflag.FlagSet) {
	f.load.register(fs, time.Second)
	fs.Float64Var(&f.rate, "rate", 0, "open loop: operations per second on an absolute schedule (0 = closed loop)")
	fs.DurationVarP(&f.duration, "duration", "d", 10*time.Second, "measured period")
	fs.IntVarP(&f.transactions, "transactions", "t", 0, "instead of --duration: each client runs this many operations (committed or failed for good), and the run ends when every client has (pgbench's -t); with --rate, their schedule spans the time they take at that rate")
	fs.DurationVar(&f.warmup, "warmup", 0, "run this long first, excluded from the results")
	fs.DurationVar(&f.maxLag, "max-lag", engine.DefaultMaxLag, "open loop: stop when operations start this far behind schedule")
	fs.DurationVar(&f.latencyLimit, "latency-limit", 0, "count transactions slower than this as late; with --rate, skip those that would start this late (0 = off)")
	fs.StringVar(&f.output, "output", "text", "report format: text (txload's summary) | pgbench (pgbench's progress lines and report, line for line)")
	fs.BoolVar(&f.failDetailed, "failures-detailed", false, "--output pgbench: break failures down into serialization and deadlock")
	fs.BoolVarP(&f.perStatement, "report-per-statement", "r", false, "report each statement's latency, failures and retries")
	fs.DurationVar(&f.spin, "spin", engine.DefaultSpin, "open loop: for this long before each intended start a waiting client yields in a loop instead of sleeping (Go's timers wake up to 1ms late); costs CPU at high rates; 0 = sleep only")
}

func (f *runFlags) options(env Env) (runner.Options, error) {
	o, err := f.load.options(env, "run")
	if err != nil {
		return o, err
	}
	e := &o.Engine
	e.Rate, e.Duration, e.Warmup, e.MaxLag, e.LatencyLimit, e.Spin = f.rate, f.duration, f.warmup, f.maxLag, f.latencyLimit, f.spin
	if f.load.fs.Changed("transactions") {
		if f.load.fs.Changed("duration") {
			return o, usagef("give --duration or --transactions, not both")
		}
		if f.transactions < 1 {
			return o, usagef("--transactions must be a positive number of operations per client, got %d", f.transactions)
		}
		e.Duration, e.Transactions = 0, f.transactions
	}
	o.PerStatement = f.perStatement
	o.Format, err = outputFormat(f.output, &pgbenchrun.Format{FailuresDetailed: f.failDetailed})
	return o, err
}

// outputFormat is the format --output names: nil for txload's own (text),
// pgbench's as given.
func outputFormat(name string, pgbench *pgbenchrun.Format) (runner.Format, error) {
	switch name {
	case "text":
		return nil, nil
	case "pgbench":
		return pgbench, nil
	}
	return nil, usagef("--output %q is not allowed (allowed: text, pgbench)", name)
}

func runCommand(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run WORKLOAD",
		Short: "Run a workload and report what it measured",
		Long: `run loads the workload's schema (see --init), drives it closed loop
(--concurrency clients back to back) or open loop (--rate operations per
second, latency measured from each operation's intended start), then prints
a summary per operation on stdout. Progress lines go to stderr.`,
		Example: "  txload run bank --isolation rc --duration 5s\n  txload run bank --rate 500 --duration 1m --json bank.json",
	}
	subcommands(env, cmd, "run", func(h workload.Hooks) bool { return h.Ops != nil },
		func(m workload.Meta, g workload.Generator) leaf {
			f := &runFlags{}
			return leaf{m.Description, m.Examples, f.register, func(ctx context.Context) error {
				opts, err := f.options(env)
				if err != nil {
					return err
				}
				return runner.Run(ctx, m, g, f.load.target.options(env), opts)
			}}
		})
	return cmd
}
