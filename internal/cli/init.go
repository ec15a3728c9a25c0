package cli

import (
	"fmt"

	"github.com/spf13/cobra"

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
		func(m workload.Meta, g workload.Generator) *cobra.Command {
			var tf targetFlags
			var drop bool
			c := &cobra.Command{
				Use:     m.Name,
				Short:   "Create and load the " + m.Name + " schema",
				Example: m.Examples,
				RunE: func(cmd *cobra.Command, _ []string) error {
					conn, h, err := openFor(cmd, env, g, &tf)
					if err != nil {
						return err
					}
					defer conn.Close()
					if conn.Embedded {
						fmt.Fprintln(env.Stderr, "note: no --url: this loads a throwaway embedded server, removed when init ends; give --url to keep the data")
					}
					return runErr(h.Init(cmd.Context(), conn.Target, workload.InitOptions{Drop: drop, Log: env.Stderr}))
				},
			}
			tf.register(c.Flags())
			c.Flags().BoolVar(&drop, "drop", false, "drop and recreate the schema if it exists")
			return c
		})
	return cmd
}

// openFor validates a workload's flags and the target, then opens it.
func openFor(cmd *cobra.Command, env Env, g workload.Generator, tf *targetFlags) (*runner.Conn, workload.Hooks, error) {
	h := g.Hooks()
	if h.Validate != nil {
		if err := h.Validate(); err != nil {
			return nil, h, usageErr(err)
		}
	}
	r, err := tf.options(env).Resolve()
	if err != nil {
		return nil, h, runErr(err)
	}
	conn, err := r.Open(cmd.Context(), env.Stderr)
	return conn, h, runErr(err)
}
