package cli

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/htmlreport"
)

// readDocs reads the --json documents named in args, one value at a time
// (a day's document, hundreds of MB, in a few MB of memory), and names
// each by its file name; a file that cannot be read or is not a txload
// document is a usage error. The documents' intervals stay in their files,
// read from there when visited: close closes them (and removes what the
// documents made, merge's spools).
func readDocs(args []string) (docs []*report.Document, names []string, close func(), err error) {
	var files []*os.File
	docs, names = make([]*report.Document, 0, len(args)), make([]string, len(args))
	closeAll := func() {
		for _, d := range docs {
			d.Close()
		}
		for _, f := range files {
			f.Close()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	seen := map[[sha256.Size]byte]string{}
	for i, path := range args {
		f, size, err := openDoc(path)
		if err != nil {
			return nil, nil, nil, usagef("%s: %v", path, err)
		}
		files = append(files, f)
		h := sha256.New()
		doc, err := report.ReadJSONAt(f, size, h)
		if err != nil {
			return nil, nil, nil, usagef("%s: %v", path, err)
		}
		docs = append(docs, doc)
		// The same document twice (by any path): older documents have no
		// run id for merge to tell.
		var sum [sha256.Size]byte
		h.Sum(sum[:0])
		if prev, ok := seen[sum]; ok {
			return nil, nil, nil, usagef("%s and %s are the same document: give each run once", prev, path)
		}
		seen[sum] = path
		names[i] = filepath.Base(path)
	}
	return docs, names, closeAll, nil
}

// openDoc opens a document to read it at any offset: a regular file as it
// is; anything else (a pipe, as <(...) gives) copied first to a file of
// its own in $TMPDIR, removed as it is made.
func openDoc(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, errors.Unwrap(err)
	}
	st, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, 0, errors.Unwrap(err)
	case st.IsDir():
		f.Close()
		return nil, 0, errors.New("is a directory")
	case st.Mode().IsRegular():
		return f, st.Size(), nil
	}
	defer f.Close()
	tmp, err := os.CreateTemp("", "txload-document-*.json")
	if err != nil {
		return nil, 0, fmt.Errorf("copying it to read it again (set TMPDIR to a writable directory): %w", err)
	}
	os.Remove(tmp.Name())
	n, err := io.Copy(tmp, f)
	if err != nil {
		tmp.Close()
		return nil, 0, err
	}
	return tmp, n, nil
}

// documentErr is err, a usage error if it says what is wrong with a
// document read (report.InputError).
func documentErr(err error) error {
	var ie *report.InputError
	if errors.As(err, &ie) {
		return usageErr(err)
	}
	return err
}

// writeOut writes the output file path (runner.WriteFile), or to stdout
// when path is "".
func writeOut(env Env, path string, write func(io.Writer) error) error {
	if path == "" {
		return write(env.Stdout)
	}
	if err := runner.WriteFile(env.Stderr, path, write); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
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
have different settings, are refused (exit 2).`,
		Example: `  txload merge run-0.json run-1.json run-2.json
  txload merge run-*.json --output json -o merged.json
  txload merge run-*.json --output html -o merged.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			switch output {
			case "text", "pgbench", "json", "html":
			default:
				return usagef("--output %q is not allowed (allowed: text, pgbench, json, html)", output)
			}
			if err := checkOut("-o", out, args); err != nil {
				return err
			}
			docs, names, closeDocs, err := readDocs(args)
			if err != nil {
				return err
			}
			defer closeDocs()
			merged, err := report.Merge(docs, names)
			if me := (*report.MergeError)(nil); errors.As(err, &me) {
				return usageErr(err)
			} else if err != nil {
				return documentErr(err)
			}
			defer merged.Close()
			return documentErr(writeOut(env, out, func(w io.Writer) error {
				switch output {
				case "pgbench":
					return report.WritePgbench(w, merged)
				case "json":
					return report.WriteJSON(w, merged)
				case "html":
					return htmlreport.Write(w, []*report.Document{merged}, htmlreport.Options{Title: "txload merge " + merged.Workload, Names: []string{"merged"}, Version: env.Version})
				}
				return report.WriteSummary(w, merged)
			}))
		},
	}
	cmd.Flags().StringVar(&output, "output", "text", "format: text (run's summary) | pgbench (pgbench's report) | json (a merged --json document) | html (the report of txload report)")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write to this file instead of stdout")
	return cmd
}
