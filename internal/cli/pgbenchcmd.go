package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/pgbenchargs"
	"github.com/txload/txload/internal/pgbenchrun"
	"github.com/txload/txload/internal/runner"
)

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

// pgbenchErr maps pgbenchrun's errors to exit codes: an *Exit's lines
// are on stderr already.
func pgbenchErr(err error) error {
	var pe *pgbenchrun.Exit
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		return &ExitError{Code: pe.Code, Err: pe.Err, Printed: true}
	case errors.Is(err, runner.ErrInterrupted):
		return &ExitError{Code: ExitInterrupted, Err: err}
	}
	return err
}

func runPgbench(ctx context.Context, env Env, args []string) error {
	lookup := env.lookupEnv()
	tx := newPgbenchTxload()
	major, why := pgbenchargs.Follow(args, lookup)
	o, err := pgbenchargs.Parse(args, pgbenchargs.Config{Prog: pgbenchrun.Prog, Major: major, LookupEnv: lookup, Stdin: env.Stdin, Txload: tx.fs})
	var pe *pgbenchargs.Error
	switch {
	case errors.As(err, &pe):
		fmt.Fprintln(env.Stderr, strings.Join(pe.Lines, "\n"))
		return &ExitError{Code: pe.ExitCode(), Err: err, Printed: true}
	case err != nil:
		return pgbenchErr(pgbenchrun.Fail(env.Stderr, 1, err))
	}
	for _, n := range o.Notices {
		fmt.Fprintln(env.Stderr, n)
	}
	switch o.Mode {
	case pgbenchargs.Help:
		more := fmt.Sprintf("\ntxload's options, beside pgbench's (never abbreviated):\n%s", tx.fs.FlagUsages())
		fmt.Fprint(env.Stdout, pgbenchargs.Usage(pgbenchrun.Prog, o.Major, why, more))
		return nil
	case pgbenchargs.Version:
		// The line version parsers read ("pgbench (PostgreSQL) 15.0"),
		// txload named after it as distributions name themselves.
		fmt.Fprintf(env.Stdout, "%s (PostgreSQL) %d.0 (txload %s)\n", pgbenchrun.Prog, o.Major, env.Version)
		return nil
	case pgbenchargs.ListBuiltins, pgbenchargs.ShowScript:
		fmt.Fprint(env.Stderr, o.Output)
		return nil
	}
	if err := tx.fs.Parse(o.Txload); err != nil {
		return pgbenchErr(pgbenchrun.Fail(env.Stderr, 1, fmt.Errorf("%v", err)))
	}
	format, err := outputFormat(tx.output, &pgbenchrun.Format{FailuresDetailed: o.FailuresDetailed, ProgressTimestamp: o.ProgressTimestamp, OtherErrorsAbort: true})
	if err != nil {
		return pgbenchErr(pgbenchrun.Fail(env.Stderr, 1, err))
	}
	sinks := runner.Options{JSON: tx.json, HTML: tx.html, Histogram: tx.histogram, MetricsAddr: tx.metricsAddr}
	for _, sc := range o.Scripts {
		if sc.File != "" && sc.File != "-" {
			sinks.Inputs = append(sinks.Inputs, outfile.File{Flag: "-f", Path: sc.File})
		}
	}
	if err := sinks.CheckSinks(); err != nil {
		return pgbenchErr(pgbenchrun.Fail(env.Stderr, 1, err))
	}
	c := &pgbenchrun.Command{
		Args: o,
		Target: runner.TargetOptions{URLs: tx.urls, EmbeddedVersion: tx.embeddedVersion, EmbeddedVersionSet: tx.fs.Changed("embedded-version"),
			CacheDir: env.Getenv("TXLOAD_CACHE_DIR"), Pooler: tx.pooler, Quiet: true},
		LookupEnv: lookup, DatabaseURL: env.Getenv("DATABASE_URL"), Format: format,
		JSON: tx.json, HTML: tx.html, Histogram: tx.histogram, MetricsAddr: tx.metricsAddr, CPUProfile: tx.cpuprofile,
		DrainTimeout: tx.drainTimeout, Stdout: env.Stdout, Stderr: env.Stderr, Version: env.Version, PID: os.Getpid(),
	}
	return pgbenchErr(c.Run(ctx))
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
