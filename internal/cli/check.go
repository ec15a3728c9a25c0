package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/txload/txload/history"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/workload"
)

func checkCommand(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check WORKLOAD",
		Short: "Audit the data a workload left behind, or a history of transactions",
		Long: `check audits a workload's data at any time, during or after a run. It
exits 1 when it finds an anomaly that the isolation level the transactions
ran at forbids, and 0 otherwise (anomalies that level allows are reported).

check history FILE checks a list-append history (JSON lines or Elle's EDN)
for the anomalies of Adya's isolation levels, as Elle does.`,
		Example: "  txload check bank --url postgres://localhost/bench\n  txload check history run.jsonl --isolation serializable",
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
each class of anomaly found (G0, G1a, G1b, G1c, G-single, G-nonadjacent,
G2-item, internal, incompatible-order, duplicate-elements, lost-append)
with a count and one example explained edge by edge, then the verdict at
--isolation: exit code 1 when a class that level forbids is there, 0
otherwise, 2 when the file cannot be read (its line is named).

Levels: read uncommitted forbids G0, duplicate elements, internal
inconsistencies and lost appends; read committed also G1a, G1b, G1c and
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
			return checkHistory(env, args[0], level)
		},
	}
	c.Flags().StringVar(&isolation, "isolation", "serializable",
		"the level the history ran at, whose forbidden anomalies fail the check: read uncommitted, read committed, repeatable read (snapshot isolation) or serializable (ru, rc, rr, ser)")
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	return c
}

// checkHistory reads the history at path (- for stdin) and checks it
// against level.
func checkHistory(env Env, path string, level history.Level) error {
	var in io.Reader
	format := history.FormatOf(path)
	if path == "-" {
		if env.Stdin == nil {
			return usagef("check history -: no standard input")
		}
		in, format = env.Stdin, history.Sniff
	} else {
		f, err := os.Open(path)
		if err != nil {
			return usagef("check history: %v", err)
		}
		defer f.Close()
		in = f
	}
	rd, err := history.NewReader(in, format)
	if err != nil {
		return usagef("check history: %s: %v", path, err)
	}
	c := history.NewChecker()
	var lines []int32 // attempt -> its line
	for {
		a, err := rd.Read()
		if err == io.EOF {
			break
		}
		if err == nil {
			err = c.Add(a)
		}
		if err != nil {
			return usagef("check history: %s, %v", path, lineError(err, rd.Line()))
		}
		lines = append(lines, int32(rd.Line()))
	}
	name := func(i int) string { return fmt.Sprintf("line %d", lines[i]) }
	res, err := c.Close()
	if err != nil {
		var dup *history.DuplicateAppendError
		if errors.As(err, &dup) {
			return usagef("check history: %s: %s", path, dup.Describe(name))
		}
		return fmt.Errorf("checking %s: %w", path, err)
	}
	if _, err := fmt.Fprintf(env.Stdout, "history %s (%s)\n", path, rd.Format()); err != nil {
		return err
	}
	if err := res.WriteText(env.Stdout, level, name); err != nil {
		return err
	}
	v := res.Verdict(level)
	switch {
	case v.Violation:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("the history shows anomalies %s forbids: %s", level, classNames(v.Forbidden))}
	case len(v.Undecided) > 0:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("the check could not rule out %s, which %s forbids: its search stopped at its budget", classNames(v.Undecided), level)}
	}
	return nil
}

// lineError names the line of an error that does not say it.
func lineError(err error, line int) error {
	var le *history.LineError
	if errors.As(err, &le) {
		return err
	}
	return &history.LineError{Line: line, Err: err}
}

func classNames(cs []history.Class) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return strings.Join(s, ", ")
}
