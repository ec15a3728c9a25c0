package pgbenchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/pgbenchargs"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/pgbenchlog"
	"github.com/txload/txload/workload/pgbench"
)

// Prog names the program in pgbench's messages: scripts that read
// pgbench's stderr find the lines they expect.
const Prog = "pgbench"

// Exit is an error whose lines are on stderr already, pgbench's own: the
// exit code alone is left to give.
type Exit struct {
	Code int
	Err  error
}

func (e *Exit) Error() string { return e.Err.Error() }
func (e *Exit) Unwrap() error { return e.Err }

// Fail prints pgbench's "pgbench: error: ..." line for err on w and
// returns the *Exit with code.
func Fail(w io.Writer, code int, err error) error {
	msg := strings.TrimRight(err.Error(), "\n")
	if !strings.HasPrefix(msg, Prog+":") {
		msg = Prog + ": error: " + msg
	}
	fmt.Fprintln(w, msg)
	return &Exit{Code: code, Err: err}
}

// Command is `txload pgbench` once its command line is parsed: pgbench's
// options and txload's beside them, with the streams and the environment
// it may use.
type Command struct {
	// Args are pgbench's options (-i or a benchmark).
	Args *pgbenchargs.Options
	// Target is the server as txload's flags give it (--url,
	// --embedded-version, --pooler, the cache); Run completes it from
	// libpq's options and environment.
	Target runner.TargetOptions
	// LookupEnv reads libpq's environment (PGHOST, PGPORT, ...).
	LookupEnv func(string) (string, bool)
	// DatabaseURL is $DATABASE_URL: the server when nothing else names one.
	DatabaseURL string
	// Format is the report's format (nil: txload's summary).
	Format runner.Format
	// The output files and the rest of txload's flags.
	JSON, HTML, Histogram, MetricsAddr, CPUProfile string
	DrainTimeout                                   time.Duration
	Stdout, Stderr                                 io.Writer
	Version                                        string
	// PID names -l's log files, as pgbench's process id does.
	PID int
}

// Run runs the command: pgbench's initialization (-i) or a benchmark. Its
// errors are an *Exit, their lines printed on Stderr, or an interruption
// (runner.ErrInterrupted).
func (c *Command) Run(ctx context.Context) error {
	target, err := c.target()
	if err != nil {
		return c.connectFail(err)
	}
	if c.Args.Mode == pgbenchargs.Init {
		return c.init(ctx, target)
	}
	return c.run(ctx, target)
}

// target chooses the server: --url, else what libpq would connect to
// when anything names a server (-h, -p, -U, DBNAME, PGHOST, PGPORT,
// PGUSER, PGDATABASE, PGSERVICE, PGHOSTADDR), else $DATABASE_URL, else
// the embedded server, announced on the first line of stderr.
func (c *Command) target() (runner.TargetOptions, error) {
	o, t := c.Args, c.Target
	params := pg.ConnParams{Host: o.Host, Port: o.Port, User: o.User, DBName: o.DBName, AppName: Prog}
	named, _ := params.NamesServer(pg.LookupEnv(c.LookupEnv))
	if len(t.URLs) > 0 {
		for _, f := range []struct{ flag, v string }{{"-h", o.Host}, {"-p", o.Port}, {"-U", o.User}, {"the database name", o.DBName}} {
			if f.v != "" {
				return t, fmt.Errorf("--url and %s both name the server: give one", f.flag)
			}
		}
		return t, nil
	}
	if named {
		conn, warnings, err := params.ConnString(pg.LookupEnv(c.LookupEnv))
		if err != nil {
			return t, err
		}
		for _, w := range warnings {
			fmt.Fprintln(c.Stderr, w)
		}
		t.URLs = []string{conn}
		return t, nil
	}
	if c.DatabaseURL != "" {
		t.URLs = []string{c.DatabaseURL}
		return t, nil
	}
	fmt.Fprintf(c.Stderr, "txload pgbench: nothing names a server (no -h, -p, -U or database name, no PGHOST, PGHOSTADDR, PGPORT, PGUSER, PGDATABASE or PGSERVICE, no --url or DATABASE_URL): running on an embedded PostgreSQL %s, removed on exit\n", t.EmbeddedVersion)
	return t, nil
}

// open resolves and opens the target, with pgbench's exit code 1 on
// failure.
func (c *Command) open(ctx context.Context, target runner.TargetOptions) (*runner.Conn, error) {
	r, err := target.Resolve()
	if err != nil {
		return nil, c.connectFail(err)
	}
	conn, err := r.Open(ctx, c.Stderr)
	if err != nil {
		return nil, c.connectFail(err)
	}
	return conn, nil
}

// connectFail prints what pgbench prints when it cannot connect: libpq's
// account of each attempt (or of the option libpq refused), then "could
// not create connection for setup" (for initialization under -i); exit 1.
// Other errors get pgbench's error line.
func (c *Command) connectFail(err error) error {
	msg, ok := pg.LibpqConnectMessage(err)
	var oe *pg.ConnOptionError
	if !ok && errors.As(err, &oe) {
		msg, ok = oe.Msg+"\n", true
	}
	if !ok {
		return Fail(c.Stderr, 1, err)
	}
	what := "setup"
	if c.Args.Mode == pgbenchargs.Init {
		what = "initialization"
	}
	fmt.Fprintf(c.Stderr, "%s: error: %s%s: error: could not create connection for %s\n", Prog, msg, Prog, what)
	return &Exit{Code: 1, Err: err}
}

// InitConfig is pgbench's initialization as the options give it.
func InitConfig(o *pgbenchargs.Options) pgbench.InitConfig {
	return pgbench.InitConfig{Steps: o.InitSteps, Scale: o.Scale, Fillfactor: o.Fillfactor, Partitions: o.Partitions,
		PartitionMethod: o.PartitionMethod, UnloggedTables: o.UnloggedTables, Tablespace: o.Tablespace,
		IndexTablespace: o.IndexTablespace, Quiet: o.Quiet, Major: o.Major, Conns: 1}
}

// init is -i: pgbench's initialization steps, its lines on stderr.
func (c *Command) init(ctx context.Context, target runner.TargetOptions) error {
	conn, err := c.open(ctx, target)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := pgbench.RunInitSteps(ctx, conn.Target, InitConfig(c.Args), c.Stderr); err != nil {
		if ctx.Err() != nil {
			return runner.ErrInterrupted
		}
		var qe *pgbench.QueryError
		if errors.As(err, &qe) {
			fmt.Fprint(c.Stderr, conn.Target.Scrub(qe.Pgbench(Prog)))
			return &Exit{Code: 1, Err: err}
		}
		return Fail(c.Stderr, 1, errors.New(conn.Target.Scrub(err.Error())))
	}
	return nil
}

// run is a benchmark: runner.Run with pgbench's preamble (banner, table
// info, pre-run vacuum) before the load.
func (c *Command) run(ctx context.Context, target runner.TargetOptions) error {
	o := c.Args
	cc := pgbench.CommandConfig{Builtin: o.BuiltinUsed, Scale: o.Scale, Protocol: o.Protocol, RandomSeed: o.RandomSeed, Debug: o.Debug,
		Stdout: c.Stdout}
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
			Concurrency: o.Clients, Jobs: o.Threads, Arrival: engine.Poisson, MaxTries: MaxTries(o.MaxTries), StopOnAbort: o.ExitOnAbort,
			Duration: time.Duration(o.Duration) * time.Second, Transactions: o.Transactions,
			Progress: time.Duration(o.Progress) * time.Second, Seed: o.RandomSeed, Rate: o.Rate,
			LatencyLimit: time.Duration(o.LatencyLimitUS) * time.Microsecond,
			// pgbench never gives up on a schedule it cannot keep.
			MaxLag: 24 * time.Hour, DrainTimeout: c.DrainTimeout, Spin: engine.DefaultSpin,
			ConnectPerTxn: o.Connect,
			// pgbench's clock: -T and -P count from before its clients
			// connect, and its tps leaves the connecting out.
			ClockBeforeConnect: true,
		},
		Init: "skip", InitSet: true, Seed: o.RandomSeed, ClientErrorsAbort: true,
		PerStatement: o.PerCommand, VerboseErrors: o.VerboseErrors, Format: c.Format, PgbenchExit: true,
		JSON: c.JSON, HTML: c.HTML, MetricsAddr: c.MetricsAddr, Histogram: c.Histogram, Config: config, Version: c.Version,
		Stdout: c.Stdout, Stderr: c.Stderr, CPUProfile: c.CPUProfile,
	}
	if o.Transactions > 0 {
		opts.Engine.Duration = 0
	}
	if o.Log {
		opts.TxnLog = &TxnLog{Config: pgbenchlog.Config{Prefix: o.LogPrefix, PID: c.PID, AggregateInterval: o.AggregateInterval,
			SamplingRate: o.SamplingRate, Seed: o.RandomSeed, Throttled: o.Rate > 0, LatencyLimit: o.LatencyLimitUS > 0,
			MaxTries: o.MaxTries, FailuresDetailed: o.FailuresDetailed}}
	}
	opts.BeforeRun = func(ctx context.Context, conn *runner.Conn, opts *runner.Options) error {
		info, err := c.preamble(ctx, conn)
		if f, ok := opts.Format.(*Format); ok {
			f.PartitionMethod, f.Partitions = info.PartitionMethod, info.Partitions
		}
		return err
	}
	err := runner.Run(ctx, m, g, target, opts)
	var ee *Exit
	var ae *runner.AbortedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return err
	case errors.As(err, &ae) && ae.Stopped:
		fmt.Fprintf(c.Stderr, "%s: error: Run was aborted due to an error in thread %d\n", Prog, ae.Group)
		return &Exit{Code: 2, Err: err}
	case errors.As(err, &ae):
		fmt.Fprintf(c.Stderr, "%s: error: Run was aborted; the above results are incomplete.\n", Prog)
		return &Exit{Code: 2, Err: err}
	case errors.Is(err, runner.ErrInterrupted):
		return err
	}
	return c.connectFail(err)
}

// preamble does what pgbench does once connected, before its clients
// start: the banner on stdout; for a builtin, the table info (its
// warning, or its error and exit 1); unless -n, the pre-run vacuum. On
// the embedded server, which holds nothing, a builtin's tables are first
// initialized, and that is said.
func (c *Command) preamble(ctx context.Context, conn *runner.Conn) (pgbench.TableInfo, error) {
	o := c.Args
	var info pgbench.TableInfo
	if conn.Embedded && o.BuiltinUsed {
		fmt.Fprintf(c.Stderr, "txload pgbench: initializing pgbench's tables (scale %d) on the embedded server first\n", o.Scale)
		ic := InitConfig(o)
		ic.Steps = pgbenchargs.DefaultInitSteps
		if err := pgbench.RunInitSteps(ctx, conn.Target, ic, c.Stderr); err != nil {
			return info, Fail(c.Stderr, 1, err)
		}
	}
	pc, err := conn.Target.Connect(ctx)
	if err != nil {
		return info, Fail(c.Stderr, 1, errors.New(conn.Target.Scrub(err.Error())))
	}
	defer pc.Close(context.WithoutCancel(ctx))
	var version string
	if err := pc.QueryRow(ctx, "SHOW server_version", pgx.QueryExecModeSimpleProtocol).Scan(&version); err != nil {
		version = conn.Server.Version
	}
	fmt.Fprintf(c.Stdout, "pgbench (%d (txload %s), server %s)\n", o.Major, c.Version, version)
	if o.Debug {
		// pgbench's first -d line: where it connects and what it runs.
		cfg := pc.Config()
		what := fmt.Sprintf("nxacts: %d", o.Transactions)
		if o.Duration > 0 {
			what = fmt.Sprintf("duration: %d", o.Duration)
		}
		fmt.Fprintf(c.Stderr, "%s: pghost: %s pgport: %d nclients: %d %s dbName: %s\n", Prog, cfg.Host, cfg.Port, o.Clients, what, cfg.Database)
	}
	if o.BuiltinUsed {
		info, err = pgbench.ReadTableInfo(ctx, pc, Prog, o.ScaleGiven)
		var te *pgbench.TableInfoError
		if errors.As(err, &te) {
			fmt.Fprint(c.Stderr, te.Msg)
			return info, &Exit{Code: 1, Err: err}
		}
		if err != nil {
			return info, Fail(c.Stderr, 1, err)
		}
		if info.Warning != "" {
			fmt.Fprintln(c.Stderr, info.Warning)
		}
	}
	if !o.NoVacuum {
		if err := pgbench.PreRun(ctx, conn.Target, o.VacuumAll, Prog, c.Stderr); err != nil {
			return info, Fail(c.Stderr, 1, err)
		}
	}
	return info, nil
}
