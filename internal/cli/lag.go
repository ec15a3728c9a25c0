package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/txload/txload/internal/lagrun"
	"github.com/txload/txload/slo"
	"github.com/txload/txload/workload"
)

// lagFlags are lag's own flags; the run flags and the workload's come
// beside them.
type lagFlags struct {
	source, dest     string
	workload         string
	replication      string
	markInterval     time.Duration
	pollInterval     time.Duration
	markTransactions bool
	maps             []string
	tables           []string
	slo              string
}

func (f *lagFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.source, "source", "", "URL of the source database the workload writes to (with --dest); default: an embedded pair")
	fs.StringVar(&f.dest, "dest", "", "URL of the destination database the writes reach (with --source)")
	fs.StringVar(&f.workload, "workload", "tpcb-like", "workload run on the source: tpcb-like, simple-update, bank, vote, ...")
	fs.StringVar(&f.replication, "replication", "logical", "embedded pair only: logical (publication and subscription) | physical (a streaming standby)")
	fs.DurationVar(&f.markInterval, "mark-interval", 10*time.Millisecond, "write a marker on the source this often, each in its own transaction")
	fs.DurationVar(&f.pollInterval, "poll-interval", time.Millisecond, "look for new markers on the destination this often: the measurement's precision")
	fs.BoolVar(&f.markTransactions, "mark-transactions", false, "also write a marker inside every workload transaction (per-transaction lag)")
	fs.StringArrayVar(&f.maps, "map", nil, "SRC=DST: the destination holds source table SRC as DST; repeatable")
	fs.StringSliceVar(&f.tables, "tables", nil, "T[,T...]: the tables the workload writes, compared after the run (needed for --workload script, which names none; replaces a builtin's list)")
	fs.StringVar(&f.slo, "slo", "", "objective on the lag, comma-separated conditions "+slo.Grammar+"; exit 1 when broken")
}

const lagLong = `lag runs a workload on a source database and measures how long its writes
take to become visible on a destination (a replica, a subscriber, the far end
of a CDC pipeline), then proves that every row arrived.

A marker stream writes a row into txload_lag_marker on the source every
--mark-interval, each in its own transaction; a reader polls the destination
every --poll-interval for markers it has not seen. Lag = when the reader saw a
marker − when the source acknowledged its COMMIT, both on txload's own clock:
no clock skew between machines enters the figure. It is over-estimated by at
most one poll period plus one query round trip (the report measures both).
Progress lines (stderr) give lag p50/p99/max per interval, the age of the
oldest marker not seen yet, and the servers' own view (pg_stat_replication's
replay_lag, pg_stat_subscription's message delay) where there is one.

With --mark-transactions each client of the workload also writes a marker
inside each of its transactions, just before COMMIT (tpcb-like,
simple-update, bank; pgbench scripts whose statements all run in BEGIN ...
END blocks): the lag is then measured per transaction, reported apart from
the stream's, and a lost transaction shows as a marker gap.

When the load stops, lag waits (up to --drain-timeout) until the destination
has every marker, then compares each table the workload writes on both
sides: row counts and checksums by ranges of key hashes, then the rows of the
ranges that differ, reported as missing, extra or differing by key; and the
marker sequences, for gaps (lost transactions) and repeats (transactions
applied twice: the destination's marker table has no primary key for that).

With no --source and --dest, lag starts two embedded PostgreSQL servers and
connects them with logical replication of the workload's tables and the
marker table (the initial copy fills the destination), or with
--replication physical makes the second a streaming standby of the first.

With --source and --dest, the replication is yours: the destination must
hold the workload's tables (--map SRC=DST for other names) and carry
txload_lag_marker from the source (lag creates it on both sides if missing).
The source's tables are used as they are (--init skip) unless --init keep.

Exit status: 0 when the destination converged and the --slo holds; 1 when
rows are missing, extra or differ, markers are missing or repeated, the
--slo is broken, the source did not sustain --rate (BEHIND, SATURATED), or
the run failed; 2 for bad usage.`

func lagCommand(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "lag [--workload NAME] [--source URL --dest URL] [flags]",
		Short: "Measure replication lag under load, and prove every row arrived",
		Long:  lagLong,
		Example: `  txload lag --workload tpcb-like --scale 10 --partitions 10 --rate 2500 --duration 60s --slo "p99<=1s"
  txload lag --workload bank --replication physical --duration 30s
  txload lag --source postgres://src/db --dest postgres://dst/db --workload tpcb-like --rate 500 --slo "p99<=1s,max<5s"`,
		// The workload's flags depend on --workload: lag parses its
		// arguments itself.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, help, err := parseLag(env, args)
			if err != nil {
				return runErr(err)
			}
			if help != "" {
				_, err := fmt.Fprint(env.Stdout, cmd.Long+"\n\nUsage:\n  txload "+cmd.Use+"\n\nExamples:\n"+cmd.Example+"\n\nFlags:\n"+help)
				return err
			}
			_, err = lagrun.Run(cmd.Context(), *opts)
			return runErr(err)
		},
	}
}

// workloadArg finds --workload in args, before they can be parsed.
func workloadArg(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--workload="); ok {
			return v
		}
		if a == "--workload" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return "tpcb-like"
}

// parseLag parses lag's arguments into lagrun's options, without touching
// any server (lagrun.Run validates them). For --help it returns the
// flags' usage instead.
func parseLag(env Env, args []string) (*lagrun.Options, string, error) {
	m, err := env.Registry.Get(workloadArg(args))
	if err != nil {
		return nil, "", usagef("--workload: %v", err)
	}
	g := m.New()
	if g.Hooks().Ops == nil {
		// Refused before its flags are parsed, --help included: lag has
		// nothing to run.
		return nil, "", lagrun.Options{Workload: m, Generator: g, Registry: env.Registry}.Validate()
	}
	var f lagFlags
	var runf runFlags
	fs := lagFlagSet(&f, &runf, g)
	if err := fs.Parse(args); err != nil {
		return nil, "", flagError(err)
	}
	if h, _ := fs.GetBool("help"); h {
		return nil, fs.FlagUsages(), nil
	}
	if fs.NArg() > 0 {
		return nil, "", usagef("lag takes no arguments, got %q (the workload is --workload NAME)", fs.Arg(0))
	}
	run, err := runf.options(env)
	if err != nil {
		return nil, "", err
	}
	o := &lagrun.Options{Workload: m, Generator: g, Registry: env.Registry,
		Source: f.source, Dest: f.dest, Replication: f.replication, ReplicationSet: fs.Changed("replication"), InitSet: fs.Changed("init"),
		MarkInterval: f.markInterval, PollInterval: f.pollInterval, MarkTransactions: f.markTransactions, Maps: f.maps, Tables: f.tables, SLO: f.slo,
		EmbeddedVersion: runf.load.target.embeddedVersion, EmbeddedVersionSet: fs.Changed("embedded-version"), CacheDir: env.Getenv("TXLOAD_CACHE_DIR"),
		Pooler: runf.load.target.pooler, Env: env.LookupEnv,
		Run: run, Config: map[string]any{}}
	fs.VisitAll(func(fl *pflag.Flag) {
		switch fl.Name {
		case "help", "source", "dest", "url":
		default:
			o.Config[fl.Name] = fl.Value.String()
		}
	})
	return o, "", nil
}

// lagFlagSet is lag's flags, run's (less those that make no sense here)
// and the workload's, with the workload's defaults.
func lagFlagSet(f *lagFlags, runf *runFlags, g workload.Generator) *pflag.FlagSet {
	fs := pflag.NewFlagSet("lag", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	f.register(fs)
	rfs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	runf.register(rfs)
	rfs.VisitAll(func(fl *pflag.Flag) {
		switch fl.Name {
		case "url", "output", "failures-detailed", "report-per-statement", "connect-timeout":
			return
		}
		fs.AddFlag(fl)
	})
	fs.AddFlagSet(g.Flags())
	for name, v := range g.Hooks().RunDefaults.Flags() {
		if name != "init" {
			setDefault(fs, name, v)
		}
	}
	setDefault(fs, "drain-timeout", lagrun.DefaultDrainTimeout.String())
	fs.BoolP("help", "h", false, "help for lag")
	return fs
}
