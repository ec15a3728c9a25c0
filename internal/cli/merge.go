package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/printable"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/htmlreport"
)

// openDocuments is report.OpenDocuments, its errors usage errors; a stop
// signal while it waits for a pipe or copies one is runner.ErrInterrupted.
func openDocuments(ctx context.Context, args []string) ([]*report.Document, []string, func(), error) {
	docs, names, closeDocs, err := report.OpenDocuments(ctx, args)
	if err != nil && ctx.Err() != nil {
		return nil, nil, nil, runner.ErrInterrupted
	}
	return docs, names, closeDocs, documentErr(err)
}

// documentErr is err, a usage error if it says what is wrong with a
// document read (report.InputError), exit 130 if a stop signal cut it
// short (runner.ErrInterrupted).
func documentErr(err error) error {
	var ie *report.InputError
	if errors.As(err, &ie) {
		return usageErr(err)
	}
	return runErr(err) // interrupted: 130
}

// writeOut writes the output file path (runner.WriteFile), or to stdout
// when path is "". A stop signal abandons the write (a file written
// through a temporary one is left as it was): runner.ErrInterrupted.
func writeOut(ctx context.Context, env Env, path string, write func(io.Writer) error) error {
	cw := func(w io.Writer) error { return write(ctxWriter{ctx, w}) }
	if path == "" {
		return interrupted(ctx, cw(env.Stdout))
	}
	if err := runner.WriteFile(ctx, env.Stderr, path, cw); err != nil {
		return interrupted(ctx, fmt.Errorf("writing %s: %w", path, err))
	}
	return nil
}

// interrupted is err, or runner.ErrInterrupted if ctx ended (err is then
// what the stop cut short).
func interrupted(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return runner.ErrInterrupted
	}
	return err
}

// checkOut checks the output file out ("" = none) of a command that reads
// the documents args, before reading them.
func checkOut(flag, out string, args []string) error {
	var inputs []outfile.File
	for _, a := range args {
		inputs = append(inputs, outfile.File{Path: a})
	}
	return runErr(runner.CheckFiles([]outfile.File{{Flag: flag, Path: out}}, inputs))
}

func mergeCommand(env Env) *cobra.Command {
	var output, out string
	cmd := &cobra.Command{
		Use:   "merge A.json B.json ...",
		Short: "Merge the --json results of several load generators into one report",
		Long: `merge adds up the --json documents of load generators that ran one workload
together (txload run ... --instance i/N --json FILE on each) and prints the
report one process would have printed: counts summed, histograms added (so
percentiles and maxima are exact, not averaged), the measured period the
longest of theirs, progress intervals aligned on the wall clock.

Documents of different workloads, commands or variants, or whose histograms
have different settings, are refused (exit 2). A run of the documents that
failed (a violation its audit found, an audit that did not finish, clients
that aborted, a failover's lost commits) fails the merge, exit 1, as it
failed the run.`,
		Example: `  txload merge run-0.json run-1.json run-2.json
  txload merge run-*.json --output json -o merged.json
  txload merge run-*.json --output html -o merged.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			switch output {
			case "text", "pgbench", "json", "html":
			default:
				return usagef("--output %q is not allowed (allowed: text, pgbench, json, html)", output)
			}
			if err := checkOut("-o", out, args); err != nil {
				return err
			}
			docs, names, closeDocs, err := openDocuments(ctx, args)
			if err != nil {
				return err
			}
			merged, err := untilDone(ctx, func() (*report.Document, error) { return report.Merge(docs, names) })
			if errors.Is(err, runner.ErrInterrupted) {
				return err // the merge runs on: its documents stay open until the exit
			}
			defer closeDocs()
			if me := (*report.MergeError)(nil); errors.As(err, &me) {
				return usageErr(err)
			} else if err != nil {
				return documentErr(err)
			}
			defer merged.Close()
			unrelated, err := report.Unrelated(docs, names)
			if err != nil {
				return documentErr(err)
			}
			for _, why := range unrelated {
				fmt.Fprintf(env.Stderr, "txload: merge: warning: %s; the figures below add up runs that were not one\n", why)
			}
			if v := report.VersionsDiffer(docs, names); v != "" {
				fmt.Fprintf(env.Stderr, "txload: merge: warning: %s: versions may measure or audit differently\n", v)
			}
			err = documentErr(writeOut(ctx, env, out, func(w io.Writer) error {
				switch output {
				case "json":
					return report.WriteJSON(w, merged)
				case "html":
					return htmlreport.Write(w, []*report.Document{merged}, htmlreport.Options{Title: "txload merge " + merged.Workload, Names: []string{"merged"}, Version: env.Version})
				}
				// The documents' text (workload, server, labels, notes,
				// tables) is what their runs said, or what an editor made
				// of it: quoted for a terminal.
				pw := printable.NewWriter(w)
				write := report.WriteSummary
				if output == "pgbench" {
					write = report.WritePgbench
				}
				if err := write(pw, merged); err != nil {
					return err
				}
				return pw.Flush()
			}))
			if err != nil {
				return err
			}
			return documentsFailed(merged)
		},
	}
	cmd.Flags().StringVar(&output, "output", "text", "format: text (run's summary) | pgbench (pgbench's report) | json (a merged --json document) | html (the report of txload report)")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write to this file instead of stdout")
	return cmd
}

// documentsFailed is what the documents' runs found wrong, as it failed
// them (exit 1), or nil: a violation any audit found, an audit that did
// not finish, clients that aborted, a --rate not kept (SATURATED,
// BEHIND) or nothing committed, and what a command's own figures
// found (a failover's lost commits, a split brain). merge and report
// fail with it, after their output.
func documentsFailed(docs ...*report.Document) error {
	var violations, failed []string
	for _, d := range docs {
		for _, rd := range d.Runs {
			if c := rd.Check; c != nil {
				violations = append(violations, c.Violations...)
				if line := c.FailedLine(); line != "" {
					failed = append(failed, line)
				}
			}
			failed = append(failed, rd.AbortedNotes()...)
			if rd.RunFailed != "" {
				failed = append(failed, rd.RunFailed)
			}
		}
		failed = append(failed, d.Failures()...)
	}
	if len(violations) > 0 {
		failed = append([]string{(&runner.ViolationError{Violations: violations}).Error()}, failed...)
	}
	if len(failed) == 0 {
		return nil
	}
	return &ExitError{Code: ExitFailed, Err: errors.New(strings.Join(failed, "; "))}
}
