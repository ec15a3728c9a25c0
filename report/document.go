package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/txload/txload/printable"
)

// ServerString names the server like the summary's first line:
// "PostgreSQL 18.3".
func (d *Document) ServerString() string {
	m, ok := d.Server.(map[string]any)
	if !ok {
		if d.Server == nil {
			return "an unknown server"
		}
		return fmt.Sprint(d.Server)
	}
	s := strings.TrimSpace(fmt.Sprint(m["dialect"]) + " " + fmt.Sprint(m["version"]))
	return strings.ReplaceAll(s, "<nil>", "?")
}

// Mode describes the document's loop for the summary's header, as the run
// printed it: of one instance of several (--instance), its share.
func (d *Document) Mode() string { return d.loop().String() }

// loop is the document's loop: of an instance (KeyInstance "i/N"), its
// share of the workers.
func (d *Document) loop() Loop {
	l := Loop{Rate: d.configFloat(KeyRate), Arrival: d.ConfigString(KeyArrival), AllWorkers: d.configInt(KeyConcurrency),
		Each: d.configInt(KeyTransactions)}
	if l.Arrival == "" {
		l.Arrival = "poisson"
	}
	l.Workers = l.AllWorkers
	var i, n int
	if _, err := fmt.Sscanf(d.ConfigString(KeyInstance), "%d/%d", &i, &n); err == nil && n > 1 && i >= 0 && i < n && l.AllWorkers >= n {
		l.Instance, l.Instances, l.Workers = i, n, InstanceClients(l.AllWorkers, i, n)
	}
	return l
}

// InterruptedLine is the note of an interrupted run: what interrupted it.
func (r *RunDoc) InterruptedLine() string {
	by := r.InterruptedBy
	if by == "" {
		by = "an interrupt"
	}
	return "INTERRUPTED: the figures cover what ran before " + by
}

// WarmupLine is the note of what run's warm-up ran ("" if nothing).
func (d *Document) WarmupLine(run *RunDoc) string {
	w := run.Warmup
	if w == nil || w.Operations == 0 {
		return ""
	}
	return WarmupText(w.Operations, w.Committed, d.configDuration(KeyWarmup))
}

// SaturatedLine is the note of an open loop that fell behind and stopped.
func (r *RunDoc) SaturatedLine() string {
	return fmt.Sprintf("SATURATED: %d of %d scheduled operations never started", r.Unstarted, r.Offered)
}

// FailedLine is the line of an audit that did not finish, in red on the
// page ("" for one that did).
func (c *CheckDoc) FailedLine() string {
	if c.Error == "" {
		return ""
	}
	return "AUDIT FAILED: " + c.Error
}

// abortedPrefix begins the note of a run whose clients ended on an error
// no retry cures (runner.Notes).
const abortedPrefix = "ABORTED: "

// AbortedNotes are the run's ABORTED notes: its clients that ended on an
// error no retry cures, which failed the run.
func (r *RunDoc) AbortedNotes() []string {
	var out []string
	for _, n := range r.Notes {
		if strings.HasPrefix(n, abortedPrefix) {
			out = append(out, n)
		}
	}
	return out
}

// ReportLines are the audit's lines as the run printed them, or for a
// document that lacks them (a merged one), its values by key.
func (c *CheckDoc) ReportLines() []Line {
	var lines []Line
	for _, l := range c.Lines {
		lines = append(lines, Line(l))
	}
	if len(lines) > 0 {
		return lines
	}
	for _, k := range slices.Sorted(maps.Keys(c.Values)) {
		lines = append(lines, Line{Label: k, Value: strconv.FormatInt(c.Values[k], 10)})
	}
	return lines
}

// LabelLines are the run's labels as the summary's header lists them:
// "isolation: serializable".
func (r *RunDoc) LabelLines() []string {
	var labels []string
	for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
		labels = append(labels, k+": "+r.Labels[k])
	}
	return labels
}

// SummaryNotes are the lines under run's summary header, as far as the
// document tells them: how its clients connected, what it was merged
// from, how it ended, what was in flight at its end, what its open loop
// offered, and its clients that aborted.
func (d *Document) SummaryNotes(run *RunDoc) ([]string, error) {
	var notes []string
	if run.ConnectSec > 0 {
		notes = append(notes, ConnectLine(d.loop().Workers, time.Duration(run.ConnectSec*float64(time.Second))))
	}
	if n := len(d.MergedFrom); n > 0 {
		notes = append(notes, fmt.Sprintf("merged from %s: %s", Count(n, "document"), strings.Join(d.MergedFrom, ", ")))
	}
	if run.Interrupted {
		notes = append(notes, run.InterruptedLine())
	}
	if line := d.WarmupLine(run); line != "" {
		notes = append(notes, line)
	}
	if run.Saturated {
		notes = append(notes, run.SaturatedLine())
	} else if run.Offered > 0 {
		notes = append(notes, OfferedLine(run.Offered, run.Unstarted))
	}
	drain, err := run.DrainSnapshot()
	if err != nil {
		return nil, err
	}
	if line := DrainLine(drain); line != "" {
		notes = append(notes, line)
	}
	return append(notes, run.AbortedNotes()...), nil
}

// WriteSummary writes the summary that a run prints (Summary, and for an
// open loop the OpenLoop block) for each run of doc, from its totals: for a
// merged document, the report one process would have printed.
func WriteSummary(w io.Writer, doc *Document) error {
	for i, run := range doc.Runs {
		total, err := run.Total()
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		labels := run.LabelLines()
		notes, err := doc.SummaryNotes(&run)
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		h := Header{Workload: doc.Workload, Server: doc.ServerString(), Mode: doc.Mode(), Labels: labels}
		Summary(w, h, total, notes)
		if run.Offered > 0 {
			fmt.Fprintln(w)
			window := doc.configDuration(KeyDuration)
			if window <= 0 {
				window = total.Elapsed
			}
			OpenLoop(w, total, run.Offered-run.Unstarted, window)
			if e := run.EmissionLag; e != nil && e.Count > 0 {
				fmt.Fprintf(w, "# generator emission lag: p50 %d, p99 %d, max %d (µs)\n", e.P50, e.P99, e.Max)
			}
		}
		if c := run.Check; c != nil {
			// A document's text is what its run said, or what an editor
			// made of it: quoted, as a run quotes the database's names.
			fmt.Fprintln(w)
			lines := c.ReportLines()
			for i := range lines {
				lines[i].Label, lines[i].Value = printable.OneLine(lines[i].Label), printable.OneLine(lines[i].Value)
			}
			Lines(w, lines)
			if line := c.FailedLine(); line != "" {
				fmt.Fprintln(w, printable.Text(line))
			} else if len(c.Violations) == 0 && !c.Figures {
				fmt.Fprintln(w, "check: ok")
			}
			for _, v := range c.Violations {
				fmt.Fprintf(w, "VIOLATION: %s\n", printable.Block(v))
			}
		}
		fmt.Fprintln(w)
	}
	// A command's own figures (failover's), and what they found wrong.
	for _, t := range doc.Tables {
		fmt.Fprintln(w, t.Title)
		if rows := t.Rows; len(rows) > 0 && strings.Join(rows[0], "") == "" {
			// No header: (what, value) rows, as the command printed them.
			var lines []Line
			for _, r := range rows[1:] {
				lines = append(lines, Line{Label: "  " + r[0], Value: strings.Join(r[1:], " ")})
			}
			Lines(w, lines)
		} else {
			Table(w, "  ", rows)
		}
		if t.Failed != "" {
			fmt.Fprintln(w, t.Failed)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// builtinTitles are pgbench's names for its builtin scripts.
var builtinTitles = map[string]string{
	"tpcb-like":     "<builtin: TPC-B (sort of)>",
	"simple-update": "<builtin: simple update>",
	"select-only":   "<builtin: select only>",
}

// PgbenchRunOf describes doc's run for PgbenchReport from its
// configuration. Per-statement figures are not in documents: -r is left out.
// A document of `txload pgbench` counts failures as pgbench does
// (OtherErrorsAbort).
func PgbenchRunOf(doc *Document) PgbenchRun {
	clients := doc.configInt(KeyConcurrency)
	r := PgbenchRun{
		Scale: max(doc.configInt(KeyScale), 1), QueryMode: doc.ConfigString(KeyProtocol),
		Clients: clients, Threads: doc.configInt(KeyThreads), MaxTries: doc.configInt(KeyMaxTries),
		Duration: doc.configDuration(KeyDuration), Transactions: doc.configInt(KeyTransactions), Rate: doc.configFloat(KeyRate),
		LatencyLimit: doc.configDuration(KeyLatencyLimit), Progress: doc.configDuration(KeyProgress),
		FailuresDetailed: doc.ConfigString(KeyFailuresDetailed) == "true", Connect: doc.ConfigString(KeyConnect) == "true",
		OtherErrorsAbort: doc.Command == "pgbench",
	}
	if r.Threads <= 0 { // documents written before "threads" was recorded
		r.Threads = clients
	}
	if r.QueryMode == "" {
		r.QueryMode = "simple"
	}
	if len(doc.Runs) > 0 {
		for _, name := range doc.Runs[0].Names() {
			title := name
			if t, ok := builtinTitles[name]; ok {
				title = t
			}
			r.Scripts = append(r.Scripts, PgbenchScript{Title: title, Weight: 1})
		}
	}
	return r
}

// WritePgbench writes each run of doc in pgbench's report format, as the
// run printed it: its transactions are those of the measured window and
// of the drain after it (RunDoc.All), as pgbench counts every transaction
// it waited for. The connection time is the run's, as pgbench computes
// it: the time the clients took to connect (of several load generators
// merged, the longest: pgbench's threads start together once the last
// has connected its clients), or with a connection per transaction the
// connections' time over the window's committed and failed transactions.
func WritePgbench(w io.Writer, doc *Document) error {
	for i, rd := range doc.Runs {
		total, err := rd.Total()
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		withDrain, err := rd.All()
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		run := PgbenchRunOf(doc)
		if rd.Interrupted {
			run.Interrupted = cmp.Or(rd.InterruptedBy, "an interrupt")
		}
		run.ConnectTime = seconds(rd.ConnectSec)
		if run.Connect {
			run.ConnectTime = 0
			all := total.Total("all")
			if n := all.OK + all.FailedTotal(); n > 0 {
				run.ConnectTime = seconds(rd.ConnectionSec) / time.Duration(n)
			}
		}
		PgbenchReport(w, withDrain, run)
	}
	return nil
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
