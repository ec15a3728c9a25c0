package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/slo"
	"github.com/txload/txload/workload"
)

// sweepFlags are the load flags (sweep chooses --rate, --duration, --warmup
// and --max-lag itself), plus the search's own.
type sweepFlags struct {
	load  loadFlags
	sweep runner.SweepOptions
}

func (f *sweepFlags) register(fs *pflag.FlagSet) {
	f.load.register(fs, 0)
	s := &f.sweep
	fs.StringVar(&s.SLO, "slo", "", "required: the latency objective on response time from intended start, comma-separated conditions "+slo.Grammar)
	fs.Float64Var(&s.Start, "start", 100, "first target rate, operations per second")
	fs.Float64Var(&s.Factor, "factor", 2, "multiply the target by this after each passing step until one fails (> 1)")
	fs.DurationVar(&s.StepDuration, "step-duration", 10*time.Second, "measured period of each step")
	fs.DurationVar(&s.StepWarmup, "step-warmup", 2*time.Second, "run each step this long first, excluded from its results")
	fs.Float64Var(&s.MaxErrorRate, "max-error-rate", 0.01, "a step fails when (failed attempts + failed operations) / (ok + failed operations) exceeds this, in [0,1]")
	fs.IntVar(&s.MaxSteps, "max-steps", 20, "stop after this many steps")
	fs.Float64Var(&s.Precision, "precision", 0.02, "bisect until failing/passing − 1 is at most this")
	fs.StringVar(&s.CSV, "csv", "", "write one row per step to this CSV file")
	fs.StringVar(&s.Chart, "chart", "", "draw latency against achieved throughput to this file (.png or .svg)")
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

A workload's audit (its check) runs once, after the last step, over what
every step committed.

Exit status: 0 when a maximum was found, 1 when even --start fails or the
audit found a violation, 2 for bad usage.`,
		Example: `  txload sweep select-only --slo "p99<=5ms"
  txload sweep bank --isolation rc --slo "p99<=50ms,max<1s" --start 500 --csv sweep.csv --chart sweep.png
  txload sweep tpcb-like --slo "p95<10ms" --step-duration 30s --precision 0.05 --chart sweep.svg`,
	}
	subcommands(env, cmd, "sweep", func(h workload.Hooks) bool { return h.Ops != nil },
		func(m workload.Meta, g workload.Generator) leaf {
			f := &sweepFlags{}
			example := fmt.Sprintf("  txload sweep %s --slo \"p99<=50ms\" --csv sweep.csv --chart sweep.png", m.Name)
			return leaf{m.Description, example, f.register, func(ctx context.Context) error {
				opts, err := f.load.options(env, "sweep")
				if err != nil {
					return err
				}
				return runner.Sweep(ctx, m, g, f.load.target.options(env), opts, f.sweep)
			}}
		})
	return cmd
}
