package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/txload/txload/history"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/report"
	"github.com/txload/txload/workload"
)

func checkCommand(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check WORKLOAD",
		Short: "Audit the data a workload left behind, or a history of transactions",
		Long: `check audits a workload's data at any time, during or after a run. It
exits 1 when it finds an anomaly that the isolation level the transactions
ran at forbids, or data that no transaction of the workload wrote (a
balance changed, a row deleted or added), and 0 otherwise (anomalies that
level allows are reported).

check history FILE checks a list-append history (JSON lines or Elle's EDN)
for the anomalies of Adya's isolation levels, as Elle does; check append
--history FILE reads the append tables and holds them to the history a run
wrote (the run's final read, later).`,
		Example: "  txload check bank --url postgres://localhost/bench\n  txload check history run.jsonl --isolation serializable\n" +
			"  txload check append --url postgres://localhost/bench --history run.jsonl",
	}
	subcommands(env, cmd, "check", func(h workload.Hooks) bool { return h.Check != nil },
		func(m workload.Meta, g workload.Generator) leaf {
			var tf targetFlags
			return leaf{"Audit the " + m.Name + " data", m.Examples, tf.register, func(ctx context.Context) error {
				return runner.Check(ctx, g, tf.options(env), env.Stdout, env.Stderr)
			}}
		})
	cmd.AddCommand(checkHistoryCommand(env))
	return cmd
}

func checkHistoryCommand(env Env) *cobra.Command {
	var isolation string
	c := &cobra.Command{
		Use:   "history FILE",
		Short: "Check a list-append history (JSON lines or EDN) for isolation anomalies",
		Long: `history checks a list-append history, written as JSON lines (one attempt
per line) or as Elle's EDN (the format is taken from the extension, .jsonl
or .edn, else from the contents; FILE - reads standard input). It prints
each class of anomaly found (G0, G1a, garbage-read, future-read, G1b, G1c, G-single,
G-nonadjacent, G2-item, internal, incompatible-order, duplicate-elements,
lost-append)
with a count and one example explained edge by edge, then the verdict at
--isolation: exit code 1 when a class that level forbids is there, 0
otherwise, 2 when the file cannot be read (its line is named).

Levels: read uncommitted forbids G0, garbage reads (a value no attempt
appended), future reads (a value appended by an attempt invoked after the
read completed), duplicate elements, internal inconsistencies and lost appends; read committed also G1a, G1b, G1c and
incompatible orders; repeatable read (PostgreSQL's: snapshot isolation)
also G-single and G-nonadjacent, and allows G2-item (write skew);
serializable forbids every class.`,
		Example: "  txload check history run.jsonl\n  txload check history run.edn --isolation repeatable-read",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("check history needs one history file (JSON lines or EDN; - for standard input), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			level, err := history.ParseLevel(isolation)
			if err != nil {
				return usagef("--isolation: %v", err)
			}
			return checkHistory(cmd.Context(), env, args[0], level, cmd.Flags().Changed("isolation"))
		},
	}
	c.Flags().StringVar(&isolation, "isolation", "serializable",
		"the level the history ran at, whose forbidden anomalies fail the check: read uncommitted, read committed, repeatable read (snapshot isolation) or serializable (ru, rc, rr, ser); default: the level the history records, else serializable")
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
	return c
}

// checkHistory reads the history at path (- for stdin) and checks it
// against level if given, else the level it records (history.File.JudgedAt).
// A stop signal ends it at once, wherever it is (waiting
// for a FIFO's writer, reading, checking): runner.ErrInterrupted.
func checkHistory(ctx context.Context, env Env, path string, level history.Level, given bool) error {
	in, format := env.Stdin, history.Sniff
	if path != "-" {
		f, err := report.OpenInput(ctx, path)
		if ctx.Err() != nil {
			return runner.ErrInterrupted
		}
		if err != nil {
			return usagef("check history: open %s: %v", path, err)
		}
		defer f.Close()
		in, format = f, history.FormatOf(path)
	} else if in == nil {
		return usagef("check history -: no standard input")
	}
	file, err := untilDone(ctx, func() (*history.File, error) { return history.CheckFile(in, path, format) })
	if ie := (*history.InputError)(nil); errors.As(err, &ie) {
		return usagef("check history: %v", ie)
	} else if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(env.Stdout, "history %s (%s)\n", path, file.Format); err != nil {
		return err
	}
	level, note := file.JudgedAt(level, given)
	if note != "" {
		if _, err := fmt.Fprintf(env.Stdout, "level: %s\n", note); err != nil {
			return err
		}
	}
	if err := file.Result.WriteText(env.Stdout, level, file.Name); err != nil {
		return err
	}
	// A history that records its run's clients holds no other's attempt.
	b := file.Beyond()
	if b != "" {
		if _, err := fmt.Fprintf(env.Stdout, "VIOLATION: attempts %s\n", b); err != nil {
			return err
		}
	}
	if err := file.Result.Verdict(level).Err(); err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	if b != "" {
		return &ExitError{Code: ExitFailed, Err: errors.New("the history holds attempts by a client its run did not have")}
	}
	return nil
}
