package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/txload/txload/report"
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
	subcommands(env, cmd, func(g workload.Generator) bool { _, ok := g.(workload.Checker); return ok },
		func(m workload.Meta, g workload.Generator) *cobra.Command {
			var tf targetFlags
			c := &cobra.Command{
				Use:     m.Name,
				Short:   "Audit the " + m.Name + " data",
				Example: m.Examples,
				RunE: func(cmd *cobra.Command, _ []string) error {
					if err := g.Validate(); err != nil {
						return usageErr(err)
					}
					r, err := tf.resolve(env)
					if err != nil {
						return err
					}
					conn, err := r.open(cmd.Context(), env.Stderr)
					if err != nil {
						return err
					}
					defer conn.close()
					res, err := g.(workload.Checker).Check(cmd.Context(), conn.target)
					if err != nil {
						return err
					}
					printCheck(env, res)
					return violationErr(res)
				},
			}
			tf.register(c.Flags())
			return c
		})
	return cmd
}

func printCheck(env Env, res *workload.CheckResult) {
	report.Lines(env.Stdout, lines(res.Lines))
	if len(res.Violations) == 0 {
		fmt.Fprintln(env.Stdout, "check: ok")
		return
	}
	for _, v := range res.Violations {
		fmt.Fprintf(env.Stdout, "VIOLATION: %s\n", v)
	}
}

func violationErr(res *workload.CheckResult) error {
	if res == nil || len(res.Violations) == 0 {
		return nil
	}
	return &ExitError{Code: ExitFailed, Err: errors.New("check found anomalies the isolation level forbids: " + strings.Join(res.Violations, "; "))}
}

func lines(ls []workload.Line) []report.Line {
	out := make([]report.Line, len(ls))
	for i, l := range ls {
		out[i] = report.Line{Label: l.Label, Value: l.Value}
	}
	return out
}

// auditCtx is for the audit after a run: it must run even after Ctrl-C.
func auditCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}
