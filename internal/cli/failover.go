package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/txload/txload/internal/failoverrun"
	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/workload"
)

// failoverFlags are failover's own flags; the run flags and the
// workload's come beside them.
type failoverFlags struct {
	replication   []string
	fault         string
	at            time.Duration
	promoteAfter  time.Duration
	holdStandby   time.Duration
	command       string
	timeout       time.Duration
	probeInterval time.Duration
}

func (f *failoverFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.replication, "replication", []string{"async"}, "embedded pair: async | sync | async,sync (each run in turn, then compared)")
	fs.StringVar(&f.fault, "fault", "immediate", "embedded pair: how the primary dies: immediate (SIGQUIT, pg_ctl stop -m immediate) | kill (SIGKILL of every process) | fast (pg_ctl stop -m fast)")
	fs.DurationVar(&f.at, "at", failoverrun.DefaultAt, "cause the failover this long after the load starts (the fault, or --failover-command)")
	fs.DurationVar(&f.promoteAfter, "promote-after", failoverrun.DefaultPromoteAfter, "embedded pair: promote the standby this long after the fault (the detection time an HA manager would need)")
	fs.DurationVar(&f.holdStandby, "hold-standby", 0, "embedded pair: pause the standby's replication link this long before the fault (async: what it misses is lost)")
	fs.StringVar(&f.command, "failover-command", "", "with --url: run this shell command at --at to fail the cluster over (pg_autoctl perform failover, patronictl failover ...); without it txload waits for a failover")
	fs.DurationVar(&f.timeout, "failover-timeout", failoverrun.DefaultFailoverTimeout, "how long the failover command, and the new primary's appearance, may take")
	fs.DurationVar(&f.probeInterval, "probe-interval", failoverrun.DefaultProbeInterval, "the probe commits a marker this often (and the cluster's nodes are probed): the precision of the write unavailability")
}

const failoverLong = `failover runs a workload against a primary with a standby, causes or waits
for one failover, and reports what it cost: the write unavailability (the
last commit the old primary acknowledged, the first on the new one), what the
clients saw meanwhile (errors by class, reconnection attempts, the latency of
the operations that straddled it), the replication lag just before the
fault, and every acknowledged commit the new primary lacks, by id.

Every workload transaction writes a marker row (txload_lag_marker) before
its COMMIT, and a probe commits one every --probe-interval on a connection
of its own, reconnecting as often: after the run, the markers on the new
primary are compared with those txload saw acknowledged. Ambiguous commits
(the connection lost while COMMIT was in flight) are counted apart, with how
many of them the new primary holds. The workload's own check runs on the new
primary afterwards.

With no --url, txload starts an embedded primary and a streaming standby
(--replication async or sync, or async,sync: both, then a comparison),
brings the primary down at --at (--fault) and promotes the standby
--promote-after later; the clients reach the new primary through the pair's
multi-host URL (target_session_attrs=read-write).

With --url, give every node of the cluster in one URL (host=a,b or
postgres://a,b/db) with target_session_attrs=read-write. --failover-command
runs your own trigger at --at; without it, txload waits for the cluster to
fail over and detects it (the writable node changes: address, system
identifier, timeline).

Exit status: 0 when no acknowledged commit was lost and the workload's check
is clean; 1 when commits were lost, the check found violations, the
failover did not happen or its command failed; 2 for bad usage.`

func failoverCommand(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "failover WORKLOAD",
		Short: "Fail a primary over under load: write unavailability and lost commits",
		Long:  failoverLong,
		Example: `  txload failover bank --replication async,sync --duration 10s --at 4s
  txload failover tpcb-like --fault kill --hold-standby 2s --duration 10s --at 5s
  txload failover bank --init fresh --url 'postgres://app@a:5432,b:5432/app?target_session_attrs=read-write' --failover-command 'pg_autoctl perform failover' --at 10s --duration 40s`,
	}
	subcommands(env, cmd, "failover", func(h workload.Hooks) bool { return h.Ops != nil && h.MarkTransactions != nil },
		func(m workload.Meta, g workload.Generator) leaf {
			var f failoverFlags
			var runf runFlags
			var fs *pflag.FlagSet
			register := func(set *pflag.FlagSet) {
				fs = set
				f.register(fs)
				rfs := pflag.NewFlagSet("run", pflag.ContinueOnError)
				runf.register(rfs)
				rfs.VisitAll(func(fl *pflag.Flag) {
					switch fl.Name {
					case "output", "failures-detailed", "report-per-statement", "transactions", "instance", "instances", "pooler", "connect-timeout":
						return
					}
					fs.AddFlag(fl)
				})
				if fl := fs.Lookup("duration"); fl != nil {
					_ = fl.Value.Set(failoverrun.DefaultDuration.String())
					fl.DefValue = failoverrun.DefaultDuration.String()
				}
			}
			return leaf{m.Description, m.Examples, register, func(ctx context.Context) error {
				o, err := failoverOptions(env, fs, m, g, &f, &runf)
				if err != nil {
					return err
				}
				_, err = failoverrun.Run(ctx, *o)
				return err
			}}
		})
	return cmd
}

// failoverOptions maps the flags to failoverrun's options, without
// touching any server (failoverrun.Run validates them).
func failoverOptions(env Env, fs *pflag.FlagSet, m workload.Meta, g workload.Generator, f *failoverFlags, runf *runFlags) (*failoverrun.Options, error) {
	run, err := runf.options(env)
	if err != nil {
		return nil, err
	}
	target := runf.load.target.options(env)
	if len(target.URLs) > 1 {
		return nil, usagef("--url: give the cluster's nodes in one URL (host=a,b or postgres://a,b/db), not one --url each: the clients must find the writable node themselves")
	}
	o := &failoverrun.Options{Workload: m, Generator: g, Registry: env.Registry,
		Replications: f.replication, Fault: f.fault, At: f.at, PromoteAfter: f.promoteAfter, HoldStandby: f.holdStandby,
		ReplicationSet: fs.Changed("replication"), FaultSet: fs.Changed("fault"), PromoteSet: fs.Changed("promote-after"), HoldSet: fs.Changed("hold-standby"),
		FailoverCommand: f.command, FailoverTimeout: f.timeout, ProbeInterval: f.probeInterval,
		EmbeddedVersion: runf.load.target.embeddedVersion, EmbeddedVersionSet: fs.Changed("embedded-version"), CacheDir: env.Getenv("TXLOAD_CACHE_DIR"),
		Run: run, Config: map[string]any{}}
	if len(target.URLs) == 1 {
		o.URL, o.Env = target.URLs[0], target.Env
	}
	if g.Hooks().Init == nil {
		o.Schema = schemaFor(env, g)
	}
	if o.EmbeddedVersion == "" {
		o.EmbeddedVersion = embedded.DefaultMajor()
	}
	fs.VisitAll(func(fl *pflag.Flag) {
		switch fl.Name {
		case "help", "url", "failover-command":
		default:
			o.Config[fl.Name] = fl.Value.String()
		}
	})
	return o, nil
}

// schemaFor is the generator that loads the tables of a workload that
// creates none on the embedded pair: pgbench's (tpcb), given the
// workload's own values of the flags they share (--scale, --partitions).
func schemaFor(env Env, g workload.Generator) workload.Generator {
	m, err := env.Registry.Get("tpcb")
	if err != nil {
		return nil
	}
	s := m.New()
	own := g.Flags()
	s.Flags().VisitAll(func(fl *pflag.Flag) {
		if o := own.Lookup(fl.Name); o != nil && o.Changed {
			_ = fl.Value.Set(o.Value.String()) // the same flag, validated by the workload
		}
	})
	return s
}
