package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/txload/txload/report/htmlreport"
)

func reportCommand(env Env) *cobra.Command {
	var out, title string
	cmd := &cobra.Command{
		Use:   "report RUN.json [RUN2.json ...]",
		Short: "Write the HTML report of runs' --json results: charts, configuration, server",
		Long: `report draws runs' --json documents as one self-contained HTML file that
works offline: throughput and p50/p95/p99/max over time per operation, the
HDR percentile spectrum, failures and retries by class over time, sojourn
against remote time for open-loop runs, schedule lag, sweep curves, the
configuration (passwords redacted) and the server. Two or more runs (several
documents, or the variants of one) are drawn on the same charts.

Like merge, it exits 1 (the page written) when a run of the documents
failed: a violation its audit found, an audit that did not finish, clients
that aborted, a failover's lost commits.`,
		Example: `  txload run bank --isolation rc,serializable --json bank.json && txload report bank.json -o bank.html
  txload report before.json after.json -o compare.html
  txload report sweep.json -o sweep.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOut("-o", out, args); err != nil {
				return err
			}
			docs, names, closeDocs, err := openDocuments(cmd.Context(), args)
			if err != nil {
				return err
			}
			defer closeDocs()
			err = documentErr(writeOut(cmd.Context(), env, out, func(w io.Writer) error {
				return htmlreport.Write(w, docs, htmlreport.Options{Title: title, Names: names, Version: env.Version})
			}))
			if err != nil {
				return err
			}
			// The page drawn, the runs that failed fail the report, as
			// they fail a merge of their documents.
			return documentsFailed(docs...)
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "report.html", "the HTML file to write")
	cmd.Flags().StringVar(&title, "title", "", "the page's title (default: txload report)")
	return cmd
}
