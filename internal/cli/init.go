package cli

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/workload"
)

func initCommand(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "init WORKLOAD",
		Short: "Create and load a workload's schema",
		Long: `init creates a workload's tables and loads them, set-based on the server.
It is re-runnable: an existing schema with the same settings is kept;
--drop recreates it. An init that is interrupted leaves the schema marked
incomplete: runs and checks refuse it until init is run again.`,
		Example: "  txload init bank --accounts 1000000 --url postgres://localhost/bench\n  txload init bank --drop --url postgres://localhost/bench",
	}
	subcommands(env, cmd, "init", func(h workload.Hooks) bool { return h.Init != nil },
		func(m workload.Meta, g workload.Generator) leaf {
			var tf targetFlags
			var drop bool
			flags := func(fs *pflag.FlagSet) {
				tf.register(fs)
				fs.BoolVar(&drop, "drop", false, "drop and recreate the schema if it exists")
			}
			return leaf{"Create and load the " + m.Name + " schema", m.Examples, flags, func(ctx context.Context) error {
				return runner.Init(ctx, g, tf.options(env), drop, env.Stderr)
			}}
		})
	return cmd
}
