package cli

import (
	"github.com/spf13/cobra"

	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/workload"
)

func checkCommand(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check WORKLOAD",
		Short: "Audit the data a workload left behind",
		Long: `check audits a workload's data at any time, during or after a run. It
exits 1 when it finds an anomaly that the isolation level the transactions
ran at forbids, and 0 otherwise (anomalies that level allows are reported).`,
		Example: "  txload check bank --url postgres://localhost/bench",
	}
	subcommands(env, cmd, "check", func(h workload.Hooks) bool { return h.Check != nil },
		func(m workload.Meta, g workload.Generator) *cobra.Command {
			var tf targetFlags
			c := &cobra.Command{
				Use:     m.Name,
				Short:   "Audit the " + m.Name + " data",
				Example: m.Examples,
				RunE: func(cmd *cobra.Command, _ []string) error {
					conn, h, err := openFor(cmd, env, g, &tf)
					if err != nil {
						return err
					}
					defer conn.Close()
					res, err := h.Check(cmd.Context(), conn.Target)
					if err != nil {
						return err
					}
					runner.PrintCheck(env.Stdout, res)
					if len(res.Violations) > 0 {
						return &runner.ViolationError{Violations: res.Violations}
					}
					return nil
				},
			}
			tf.register(c.Flags())
			return c
		})
	return cmd
}
