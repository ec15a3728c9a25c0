package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/internal/pg"
	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/pgbenchargs"
	"github.com/txload/txload/internal/pgbenchrun"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/pgbenchlog"
	"github.com/txload/txload/workload/pgbench"
)

// prog names the program in pgbench's messages: scripts that read
// pgbench's stderr find the lines they expect.
const prog = "pgbench"

// pgbenchCommand is `txload pgbench [OPTION]... [DBNAME]`: pgbench's own
// command line, parsed by pgbenchargs exactly as pgbench parses it, run
// through the same runner as `txload run`, with pgbench's output and exit
// codes.
func pgbenchCommand(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "pgbench [OPTION]... [DBNAME]",
		Short: "Run pgbench's command line: the same options, output and exit codes",
		Long: `pgbench takes pgbench's command line (PostgreSQL 15 to 18) as pgbench
itself reads it, connects the way libpq does (-h, -p, -U, DBNAME, PGHOST,
PGPORT, PGUSER, PGDATABASE, PGPASSWORD, PGSERVICE, ~/.pgpass) and prints
pgbench's lines. txload's --json, --html, --histogram, --metrics-addr,
--output, --url and --embedded-version may be given beside them. Without anything that names
a server it runs on an embedded PostgreSQL, and says so first.
"txload pgbench --help" prints pgbench's options.`,
		Example:            "  txload pgbench -i -s 10 bench\n  txload pgbench -c 8 -j 2 -T 60 -P 5 -M prepared -S bench",
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPgbench(cmd.Context(), env, args)
		},
	}
}

// pgbenchTxload are txload's own flags, given beside pgbench's.
type pgbenchTxload struct {
	fs              *pflag.FlagSet
	urls            []string
	embeddedVersion string
	pooler          string
	json, histogram string
	html            string
	metricsAddr     string
	output          string
	drainTimeout    time.Duration
	cpuprofile      string
}

func newPgbenchTxload() *pgbenchTxload {
	f := &pgbenchTxload{fs: pflag.NewFlagSet("txload", pflag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(io.Discard)
	fs.StringArrayVar(&f.urls, "url", nil, "database URL instead of libpq's connection options; repeat for the nodes of a cluster")
	fs.StringVar(&f.embeddedVersion, "embedded-version", embedded.DefaultMajor(), "PostgreSQL version of the embedded server: a major version, 12 to 18, or any release published as binaries, major.minor.patch (12.3.0)")
	fs.StringVar(&f.pooler, "pooler", "auto", "a connection pooler between txload and the server: auto | none | transaction | session")
	fs.StringVar(&f.json, "json", "", "write the configuration, server, results and encoded histograms to this file")
	fs.StringVar(&f.histogram, "histogram", "", "write interval histograms in HdrHistogram's log format (.hlog) to this file")
	fs.StringVar(&f.html, "html", "", "write the run's report as one self-contained HTML file")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve the run's metrics at http://HOST:PORT/metrics for Prometheus while it runs (a port alone listens on loopback)")
	fs.StringVar(&f.output, "output", "pgbench", "report format: pgbench (pgbench's lines) | text (txload's summary with percentiles)")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", engine.DefaultDrainTimeout, "how long transactions in flight at the end are waited for")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a Go CPU profile of txload itself to this file (for go tool pprof)")
	_ = fs.MarkHidden("cpuprofile")
	return f
}

// printed is an error whose lines were written on stderr already: the exit
// code alone is left to give.
func printed(code int, err error) error {
	return &ExitError{Code: code, Err: err, Printed: true}
}

// pgbenchFail prints pgbench's "pgbench: error: ..." line for err and
// exits with code.
func pgbenchFail(env Env, code int, err error) error {
	msg := strings.TrimRight(err.Error(), "\n")
	if !strings.HasPrefix(msg, prog+":") {
		msg = prog + ": error: " + msg
	}
	fmt.Fprintln(env.Stderr, msg)
	return printed(code, err)
}

func runPgbench(ctx context.Context, env Env, args []string) error {
	lookup := env.lookupEnv()
	tx := newPgbenchTxload()
	major, why := pgbenchMajor(args, lookup)
	o, err := pgbenchargs.Parse(args, pgbenchargs.Config{Prog: prog, Major: major, LookupEnv: lookup, Stdin: env.Stdin, Txload: tx.fs})
	var pe *pgbenchargs.Error
	switch {
	case errors.As(err, &pe):
		fmt.Fprintln(env.Stderr, strings.Join(pe.Lines, "\n"))
		return printed(pe.ExitCode(), err)
	case err != nil:
		return pgbenchFail(env, 1, err)
	}
	for _, n := range o.Notices {
		fmt.Fprintln(env.Stderr, n)
	}
	switch o.Mode {
	case pgbenchargs.Help:
		more := fmt.Sprintf("\ntxload's options, beside pgbench's (never abbreviated):\n%s", tx.fs.FlagUsages())
		fmt.Fprint(env.Stdout, pgbenchargs.Usage(prog, o.Major, why, more))
		return nil
	case pgbenchargs.Version:
		// The line version parsers read ("pgbench (PostgreSQL) 15.0"),
		// txload named after it as distributions name themselves.
		fmt.Fprintf(env.Stdout, "%s (PostgreSQL) %d.0 (txload %s)\n", prog, o.Major, env.Version)
		return nil
	case pgbenchargs.ListBuiltins, pgbenchargs.ShowScript:
		fmt.Fprint(env.Stderr, o.Output)
		return nil
	}
	if err := tx.fs.Parse(o.Txload); err != nil {
		return pgbenchFail(env, 1, fmt.Errorf("%v", err))
	}
	format, err := outputFormat(tx.output, &pgbenchrun.Format{FailuresDetailed: o.FailuresDetailed, ProgressTimestamp: o.ProgressTimestamp, OtherErrorsAbort: true})
	if err != nil {
		return pgbenchFail(env, 1, err)
	}
	sinks := runner.Options{JSON: tx.json, HTML: tx.html, Histogram: tx.histogram, MetricsAddr: tx.metricsAddr}
	for _, sc := range o.Scripts {
		if sc.File != "" && sc.File != "-" {
			sinks.Inputs = append(sinks.Inputs, outfile.File{Flag: "-f", Path: sc.File})
		}
	}
	if err := sinks.CheckSinks(); err != nil {
		return pgbenchFail(env, 1, err)
	}
	target, err := pgbenchTarget(env, o, tx, lookup)
	if err != nil {
		return pgbenchConnectFail(env, o, err)
	}
	if o.Mode == pgbenchargs.Init {
		return pgbenchInit(ctx, env, o, target)
	}
	return pgbenchRun(ctx, env, o, tx, format, target)
}

func (env Env) lookupEnv() func(string) (string, bool) {
	if env.LookupEnv != nil {
		return env.LookupEnv
	}
	return func(k string) (string, bool) {
		v := env.Getenv(k)
		return v, v != ""
	}
}

// pgbenchTarget chooses the server: --url, else what libpq would connect
// to when anything names a server (-h, -p, -U, DBNAME, PGHOST, PGPORT,
// PGUSER, PGDATABASE, PGSERVICE, PGHOSTADDR), else $DATABASE_URL, else the
// embedded server, announced on the first line of stderr.
func pgbenchTarget(env Env, o *pgbenchargs.Options, tx *pgbenchTxload, lookup func(string) (string, bool)) (runner.TargetOptions, error) {
	t := runner.TargetOptions{EmbeddedVersion: tx.embeddedVersion, EmbeddedVersionSet: tx.fs.Changed("embedded-version"),
		CacheDir: env.Getenv("TXLOAD_CACHE_DIR"), Pooler: tx.pooler, Quiet: true}
	params := pg.ConnParams{Host: o.Host, Port: o.Port, User: o.User, DBName: o.DBName, AppName: prog}
	named, _ := params.NamesServer(pg.LookupEnv(lookup))
	if len(tx.urls) > 0 {
		for _, f := range []struct{ flag, v string }{{"-h", o.Host}, {"-p", o.Port}, {"-U", o.User}, {"the database name", o.DBName}} {
			if f.v != "" {
				return t, fmt.Errorf("--url and %s both name the server: give one", f.flag)
			}
		}
		t.URLs = tx.urls
		return t, nil
	}
	if named {
		conn, warnings, err := params.ConnString(pg.LookupEnv(lookup))
		if err != nil {
			return t, err
		}
		for _, w := range warnings {
			fmt.Fprintln(env.Stderr, w)
		}
		t.URLs = []string{conn}
		return t, nil
	}
	if u := env.Getenv("DATABASE_URL"); u != "" {
		t.URLs = []string{u}
		return t, nil
	}
	fmt.Fprintf(env.Stderr, "txload pgbench: nothing names a server (no -h, -p, -U or database name, no PGHOST, PGHOSTADDR, PGPORT, PGUSER, PGDATABASE or PGSERVICE, no --url or DATABASE_URL): running on an embedded PostgreSQL %s, removed on exit\n", t.EmbeddedVersion)
	return t, nil
}

// open resolves and opens the target, with pgbench's exit code 1 on
// failure.
func openPgbench(ctx context.Context, env Env, o *pgbenchargs.Options, target runner.TargetOptions) (*runner.Conn, error) {
	r, err := target.Resolve()
	if err != nil {
		return nil, pgbenchConnectFail(env, o, err)
	}
	conn, err := r.Open(ctx, env.Stderr)
	if err != nil {
		return nil, pgbenchConnectFail(env, o, err)
	}
	return conn, nil
}

// pgbenchConnectFail prints what pgbench prints when it cannot connect:
// libpq's account of each attempt (or of the option libpq refused), then
// "could not create connection for setup" (for initialization under -i);
// exit 1. Other errors get pgbench's error line.
func pgbenchConnectFail(env Env, o *pgbenchargs.Options, err error) error {
	msg, ok := pg.LibpqConnectMessage(err)
	var oe *pg.ConnOptionError
	if !ok && errors.As(err, &oe) {
		msg, ok = oe.Msg+"\n", true
	}
	if !ok {
		return pgbenchFail(env, 1, err)
	}
	what := "setup"
	if o.Mode == pgbenchargs.Init {
		what = "initialization"
	}
	fmt.Fprintf(env.Stderr, "%s: error: %s%s: error: could not create connection for %s\n", prog, msg, prog, what)
	return printed(1, err)
}

func initConfig(o *pgbenchargs.Options) pgbench.InitConfig {
	return pgbench.InitConfig{Steps: o.InitSteps, Scale: o.Scale, Fillfactor: o.Fillfactor, Partitions: o.Partitions,
		PartitionMethod: o.PartitionMethod, UnloggedTables: o.UnloggedTables, Tablespace: o.Tablespace,
		IndexTablespace: o.IndexTablespace, Quiet: o.Quiet, Major: o.Major, Conns: 1}
}

// pgbenchInit is -i: pgbench's initialization steps, its lines on stderr.
func pgbenchInit(ctx context.Context, env Env, o *pgbenchargs.Options, target runner.TargetOptions) error {
	conn, err := openPgbench(ctx, env, o, target)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := pgbench.RunInitSteps(ctx, conn.Target, initConfig(o), env.Stderr); err != nil {
		if ctx.Err() != nil {
			return &ExitError{Code: ExitInterrupted, Err: runner.ErrInterrupted}
		}
		var qe *pgbench.QueryError
		if errors.As(err, &qe) {
			fmt.Fprint(env.Stderr, conn.Target.Scrub(qe.Pgbench(prog)))
			return printed(1, err)
		}
		return pgbenchFail(env, 1, errors.New(conn.Target.Scrub(err.Error())))
	}
	return nil
}

// pgbenchRun is a benchmark: runner.Run with pgbench's preamble (banner,
// table info, pre-run vacuum) before the load.
func pgbenchRun(ctx context.Context, env Env, o *pgbenchargs.Options, tx *pgbenchTxload, format runner.Format, target runner.TargetOptions) error {
	cc := pgbench.CommandConfig{Builtin: o.BuiltinUsed, Scale: o.Scale, Protocol: o.Protocol, RandomSeed: o.RandomSeed, Debug: o.Debug,
		Stdout: env.Stdout}
	for _, s := range o.Scripts {
		cc.Scripts = append(cc.Scripts, s.Parsed)
	}
	for _, d := range o.Defines {
		cc.Defines = append(cc.Defines, d.Name+"="+d.Value)
	}
	m, g := pgbench.Command(cc)

	// The runner records the run's settings (clients, threads, duration,
	// scale, ...) under the keys every reader knows; what only the report
	// reads is added here.
	config := map[string]string{report.KeyFailuresDetailed: strconv.FormatBool(o.FailuresDetailed)}
	opts := runner.Options{
		Command: "pgbench",
		Engine: engine.Config{
			Concurrency: o.Clients, Jobs: o.Threads, Arrival: engine.Poisson, MaxTries: pgbenchrun.MaxTries(o.MaxTries), StopOnAbort: o.ExitOnAbort,
			Duration: time.Duration(o.Duration) * time.Second, Transactions: o.Transactions,
			Progress: time.Duration(o.Progress) * time.Second, Seed: o.RandomSeed, Rate: o.Rate,
			LatencyLimit: time.Duration(o.LatencyLimitUS) * time.Microsecond,
			// pgbench never gives up on a schedule it cannot keep.
			MaxLag: 24 * time.Hour, DrainTimeout: tx.drainTimeout, Spin: engine.DefaultSpin,
			ConnectPerTxn: o.Connect,
			// pgbench's clock: -T and -P count from before its clients
			// connect, and its tps leaves the connecting out.
			ClockBeforeConnect: true,
		},
		Init: "skip", InitSet: true, Seed: o.RandomSeed, ClientErrorsAbort: true,
		PerStatement: o.PerCommand, VerboseErrors: o.VerboseErrors, Format: format,
		JSON: tx.json, HTML: tx.html, MetricsAddr: tx.metricsAddr, Histogram: tx.histogram, Config: config, Version: env.Version,
		Stdout: env.Stdout, Stderr: env.Stderr, CPUProfile: tx.cpuprofile,
	}
	if o.Transactions > 0 {
		opts.Engine.Duration = 0
	}
	if o.Log {
		opts.TxnLog = &pgbenchrun.TxnLog{Config: pgbenchlog.Config{Prefix: o.LogPrefix, PID: os.Getpid(), AggregateInterval: o.AggregateInterval,
			SamplingRate: o.SamplingRate, Throttled: o.Rate > 0, LatencyLimit: o.LatencyLimitUS > 0,
			MaxTries: o.MaxTries, FailuresDetailed: o.FailuresDetailed}}
	}
	opts.BeforeRun = func(ctx context.Context, conn *runner.Conn, opts *runner.Options) error {
		info, err := pgbenchPreamble(ctx, env, o, conn)
		if f, ok := opts.Format.(*pgbenchrun.Format); ok {
			f.PartitionMethod, f.Partitions = info.PartitionMethod, info.Partitions
		}
		return err
	}
	err := runner.Run(ctx, m, g, target, opts)
	var ee *ExitError
	var ae *runner.AbortedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return err
	case errors.As(err, &ae) && ae.Stopped:
		fmt.Fprintf(env.Stderr, "%s: error: Run was aborted due to an error in thread %d\n", prog, ae.Group)
		return printed(2, err)
	case errors.As(err, &ae):
		fmt.Fprintf(env.Stderr, "%s: error: Run was aborted; the above results are incomplete.\n", prog)
		return printed(2, err)
	case errors.Is(err, runner.ErrInterrupted):
		return &ExitError{Code: ExitInterrupted, Err: err}
	}
	return pgbenchConnectFail(env, o, err)
}

// pgbenchPreamble does what pgbench does once connected, before its
// clients start: the banner on stdout; for a builtin, the table info (its
// warning, or its error and exit 1); unless -n, the pre-run vacuum. On
// the embedded server, which holds nothing, a builtin's tables are first
// initialized, and that is said.
func pgbenchPreamble(ctx context.Context, env Env, o *pgbenchargs.Options, conn *runner.Conn) (pgbench.TableInfo, error) {
	var info pgbench.TableInfo
	if conn.Embedded && o.BuiltinUsed {
		fmt.Fprintf(env.Stderr, "txload pgbench: initializing pgbench's tables (scale %d) on the embedded server first\n", o.Scale)
		ic := initConfig(o)
		ic.Steps = pgbenchargs.DefaultInitSteps
		if err := pgbench.RunInitSteps(ctx, conn.Target, ic, env.Stderr); err != nil {
			return info, pgbenchFail(env, 1, err)
		}
	}
	c, err := conn.Target.Connect(ctx)
	if err != nil {
		return info, pgbenchFail(env, 1, errors.New(conn.Target.Scrub(err.Error())))
	}
	defer c.Close(context.WithoutCancel(ctx))
	var version string
	if err := c.QueryRow(ctx, "SHOW server_version", pgx.QueryExecModeSimpleProtocol).Scan(&version); err != nil {
		version = conn.Server.Version
	}
	fmt.Fprintf(env.Stdout, "pgbench (%d (txload %s), server %s)\n", o.Major, env.Version, version)
	if o.Debug {
		// pgbench's first -d line: where it connects and what it runs.
		cfg := c.Config()
		what := fmt.Sprintf("nxacts: %d", o.Transactions)
		if o.Duration > 0 {
			what = fmt.Sprintf("duration: %d", o.Duration)
		}
		fmt.Fprintf(env.Stderr, "%s: pghost: %s pgport: %d nclients: %d %s dbName: %s\n", prog, cfg.Host, cfg.Port, o.Clients, what, cfg.Database)
	}
	if o.BuiltinUsed {
		info, err = pgbench.ReadTableInfo(ctx, c, prog, o.ScaleGiven)
		var te *pgbench.TableInfoError
		if errors.As(err, &te) {
			fmt.Fprint(env.Stderr, te.Msg)
			return info, printed(1, err)
		}
		if err != nil {
			return info, pgbenchFail(env, 1, err)
		}
		if info.Warning != "" {
			fmt.Fprintln(env.Stderr, info.Warning)
		}
	}
	if !o.NoVacuum {
		if err := pgbench.PreRun(ctx, conn.Target, o.VacuumAll, prog, env.Stderr); err != nil {
			return info, pgbenchFail(env, 1, err)
		}
	}
	return info, nil
}
