package lagrun

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
)

// writeLag writes the lag block of the report: the markers' counts, the
// lag's histograms, the measurement's precision and what went wrong with
// it, the catch-up, the servers' views and the SLO's verdicts.
func writeLag(w io.Writer, r *Result) {
	writeCounts(w, r)
	writeHistograms(w, r)
	writeNotes(w, r)
	writeViews(w, r)
	for _, l := range sloLines(r) {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
}

// sloLines are the SLO's verdicts, a line each.
func sloLines(r *Result) []string {
	var out []string
	for _, v := range r.SLO {
		verdict := "PASS"
		if !v.Pass {
			verdict = "FAIL"
		}
		of := ""
		if r.Marked {
			of = " (every marker, stream and transactions)"
		}
		out = append(out, fmt.Sprintf("slo %s on lag%s: %s (%s)", v.Cond, of, verdict, report.MicrosF(v.Value)))
	}
	return out
}

// how says what fed the destination.
func how(r *Result) string {
	switch r.Mode {
	case "logical":
		return "logical replication between two embedded servers"
	case "physical":
		return "a streaming standby of an embedded server"
	}
	if r.Same {
		return "the source itself"
	}
	return "your replication"
}

// writeCounts writes the markers' counts: the stream's, and the
// transactions' with --mark-transactions.
func writeCounts(w io.Writer, r *Result) {
	n := r.Stream
	fmt.Fprintf(w, "replication lag (%s): %s written every %s, %d acknowledged, %d seen on the destination\n",
		how(r), report.Count(n.Sent, "marker"), r.MarkInterval, n.Acked, n.Measured)
	if !r.Marked {
		return
	}
	t := r.Tx
	line := fmt.Sprintf("  and a marker inside every transaction: %d written, %d committed, %d rolled back", t.Sent, t.Acked, t.Failed+t.Ambiguous)
	if t.Ambiguous > 0 {
		line += fmt.Sprintf(" (%d with their COMMIT's outcome unknown, %d of those arrived)", t.Ambiguous, t.AmbiguousSeen)
	}
	if open := t.Sent - t.Acked - t.Failed - t.Ambiguous; open > 0 {
		line += fmt.Sprintf(", %d in flight when the load stopped", open)
	}
	fmt.Fprintf(w, "%s, %d seen on the destination\n", line, t.Measured)
}

// writeHistograms writes the lag's percentiles: every marker's, or the
// stream's and the transactions' apart.
func writeHistograms(w io.Writer, r *Result) {
	report.Table(w, "  ", histRows(r))
}

// histRows are the lag's percentiles as the report's table: a header,
// then a row per histogram.
func histRows(r *Result) [][]string {
	rows := [][]string{report.HistHeader()}
	switch {
	case r.Marked:
		if r.StreamLag.TotalCount() > 0 {
			rows = append(rows, report.HistRow("lag (stream)", r.StreamLag))
		}
		if r.TxLag.TotalCount() > 0 {
			rows = append(rows, report.HistRow("lag per transaction", r.TxLag))
		}
	case r.Lag.TotalCount() > 0:
		rows = append(rows, report.HistRow("lag", r.Lag))
	}
	return rows
}

// writeNotes writes the measurement's precision, what went wrong with the
// markers, the polls and the writes, and how the drain ended.
func writeNotes(w io.Writer, r *Result) {
	rs := r.Reader
	if rs.Polls > 0 {
		fmt.Fprintf(w, "  precision: a marker is seen at most one poll after it became visible: polls every %s (p99 %s), each taking %s (p99 %s)\n",
			report.MicrosF(rs.Period.Mean()), report.Micros(rs.Period.ValueAtQuantile(99)),
			report.MicrosF(rs.RoundTrip.Mean()), report.Micros(rs.RoundTrip.ValueAtQuantile(99)))
	}
	n := r.Stream
	if r.Marked {
		n.Early += r.Tx.Early
		n.Late += r.Tx.Late
		n.Expired += r.Tx.Expired
	}
	if n.Early > 0 {
		fmt.Fprintf(w, "  %s %s visible before their COMMIT's acknowledgement reached txload (recorded as 0)\n", report.Count(n.Early, "marker"), metrics.Were(n.Early))
	}
	if n.Failed+n.Ambiguous > 0 {
		fmt.Fprintf(w, "  %s failed, %d of them with their COMMIT's outcome unknown (%d of those arrived)\n", report.Count(n.Failed+n.Ambiguous, "marker write"), n.Ambiguous, n.AmbiguousSeen)
	}
	if n.Late+n.Expired > 0 {
		fmt.Fprintf(w, "  the destination reordered markers: %d found late, %d never seen while later ones were\n", n.Late, n.Expired)
	}
	if rs.Errors > 0 {
		fmt.Fprintf(w, "  %s of the destination failed; the first: %s\n", report.Count(rs.Errors, "poll"), flat(rs.FirstErr.Error()))
	}
	if r.Writes.Errors > 0 {
		fmt.Fprintf(w, "  %s on the source failed; the first: %s\n", report.Count(r.Writes.Errors, "marker write"), flat(r.Writes.FirstErr.Error()))
	}
	switch {
	case r.Interrupted:
		fmt.Fprintf(w, "  INTERRUPTED: %d acknowledged markers not seen on the destination yet; convergence not checked\n", r.Pending)
	case r.CaughtUp:
		fmt.Fprintf(w, "  the destination had every marker %s after the load stopped\n", report.Micros(r.CatchUp.Microseconds()))
	default:
		fmt.Fprintf(w, "  DRAIN TIMEOUT: %d acknowledged markers had not reached the destination %s after the load stopped\n", r.Pending, r.DrainTimeout)
	}
}

// writeViews writes what the servers said of the replication themselves.
func writeViews(w io.Writer, r *Result) {
	for _, s := range r.Senders {
		line := fmt.Sprintf("  server: pg_stat_replication %s: %s", s.Name, report.Count(s.Samples, "sample"))
		if s.Replay.TotalCount() > 0 {
			line += fmt.Sprintf(", replay_lag p50 %s p99 %s max %s", report.Micros(s.Replay.ValueAtQuantile(50)),
				report.Micros(s.Replay.ValueAtQuantile(99)), report.Micros(s.Replay.Max()))
		}
		if s.Idle > 0 {
			line += fmt.Sprintf(", %d with replay_lag NULL", s.Idle)
		}
		if s.Behind.TotalCount() > 0 {
			line += fmt.Sprintf("; replay_lsn behind the source's WAL p50 %s p99 %s max %s", bytesString(s.Behind.ValueAtQuantile(50)),
				bytesString(s.Behind.ValueAtQuantile(99)), bytesString(s.Behind.Max()))
		}
		fmt.Fprintln(w, line)
	}
	for _, s := range r.Subscriptions {
		line := fmt.Sprintf("  server: pg_stat_subscription %s: %s", s.Name, report.Count(s.Samples, "sample"))
		if s.Delay.TotalCount() > 0 {
			line += fmt.Sprintf(", last message sent → received p50 %s p99 %s max %s", report.Micros(s.Delay.ValueAtQuantile(50)),
				report.Micros(s.Delay.ValueAtQuantile(99)), report.Micros(s.Delay.Max()))
		}
		fmt.Fprintln(w, line)
	}
}

// writeConvergence writes the comparison of the two sides: a row per
// table, the keys that differ, the markers' gaps and repeats, the verdict.
func writeConvergence(w io.Writer, conv *Convergence) {
	report.Table(w, "", convergenceRows(conv))
	for _, l := range convergenceLines(conv) {
		fmt.Fprintln(w, l)
	}
}

// convergenceRows are the comparison's table: a header, then a row per
// table.
func convergenceRows(conv *Convergence) [][]string {
	rows := [][]string{{"table", "source rows", "dest rows", "missing", "extra", "differing", "ranges"}}
	for _, d := range conv.Tables {
		name := d.Source
		if d.Dest != d.Source {
			name += " → " + d.Dest
		}
		rows = append(rows, []string{name, itoa(d.SourceRows), itoa(d.DestRows), itoa(d.Missing), itoa(d.Extra), itoa(d.Differing), strconv.Itoa(d.Ranges)})
	}
	return rows
}

// convergenceLines are the lines under the comparison's table: the keys
// that differ, the markers' gaps and repeats, the verdict.
func convergenceLines(conv *Convergence) []string {
	var out []string
	for i, d := range conv.Tables {
		for _, k := range []struct {
			what string
			keys []string
			n    int64
		}{{"MISSING", d.MissingKeys, d.Missing}, {"EXTRA", d.ExtraKeys, d.Extra}, {"DIFFERING", d.DifferingKeys, d.Differing}} {
			for _, key := range k.keys {
				out = append(out, fmt.Sprintf("%s %s: %s", k.what, d.Source, key))
			}
			if more := k.n - int64(len(k.keys)); more > 0 {
				out = append(out, fmt.Sprintf("%s %s: ... and %d more", k.what, d.Source, more))
			}
		}
		if len(d.MissingColumns) > 0 {
			out = append(out, fmt.Sprintf("MISSING COLUMNS %s: %s", d.Dest, strings.Join(d.MissingColumns, ", ")))
		}
		if n := conv.Compared[i]; n > 1 && !d.OK() {
			out = append(out, fmt.Sprintf("%s still differed after %d comparisons a second apart", d.Source, n))
		}
	}
	m := conv.Markers
	out = append(out, fmt.Sprintf("markers: %d on the source, %d on the destination: %s", m.Source, m.Dest, markerFaults(*m)))
	for _, k := range []struct {
		what string
		keys []string
	}{{"GAP (lost)", m.GapKeys}, {"REPEAT (applied twice)", m.RepeatKeys}, {"EXTRA marker", m.ExtraKeys}} {
		for _, key := range k.keys {
			out = append(out, fmt.Sprintf("%s: %s", k.what, key))
		}
	}
	if f := conv.Failures(); len(f) > 0 {
		out = append(out, fmt.Sprintf("convergence: FAILED: %s (compared in %s)", strings.Join(f, "; "), report.Seconds(conv.Took)))
	} else {
		out = append(out, fmt.Sprintf("convergence: ok, the destination holds exactly the source's rows (compared in %s)", report.Seconds(conv.Took)))
	}
	return out
}

// flat puts a message on one line.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// bytesString formats a WAL distance.
func bytesString(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%dB", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1fkB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1fMB", float64(n)/(1<<20))
}
