package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
)

// Quantiles printed in the summary.
var summaryQuantiles = []float64{50, 90, 95, 99, 99.9}

// Progress writes one progress line for an interval.
func Progress(w io.Writer, elapsed time.Duration, warmup bool, iv *metrics.Snapshot) {
	t := iv.Total("all")
	secs := iv.Elapsed.Seconds()
	done := t.OK + t.Warmup + t.FailedTotal()
	rate := 0.0
	if secs > 0 {
		rate = float64(done) / secs
	}
	phase := ""
	if warmup {
		phase = " (warm-up)"
	}
	// Failed reconnection attempts show an outage as it happens.
	if iv.Reconnects > 0 {
		phase = fmt.Sprintf("  reconnects %d", iv.Reconnects) + phase
	}
	r := t.Response
	if t.OK == 0 {
		fmt.Fprintf(w, "%6.1fs %9.1f ops/s  errors %d  retries %d%s\n", elapsed.Seconds(), rate, t.ErrorsTotal(), t.Retries, phase)
		return
	}
	fmt.Fprintf(w, "%6.1fs %9.1f ops/s  errors %d  retries %d  p50 %s  p95 %s  p99 %s  max %s%s\n",
		elapsed.Seconds(), rate, t.ErrorsTotal(), t.Retries,
		Micros(r.ValueAtQuantile(50)), Micros(r.ValueAtQuantile(95)), Micros(r.ValueAtQuantile(99)), Micros(r.Max()), phase)
}

// Header describes a run in the summary's first line.
type Header struct {
	Workload string
	Server   string
	Mode     string // "closed loop, 8 workers" or "open loop at 500 ops/s (poisson), 8 workers"
	Labels   []string
	// Statements, if set, are the statements of each operation: the summary
	// then lists each one's mean latency, failures and retries.
	Statements [][]string
}

// Loop is how a run drove its operations, for Header.Mode: a closed loop
// of Workers, or an open loop at Rate; of several load generators
// (Instances > 1), this one's share.
type Loop struct {
	// Rate is the whole run's, of every instance (0: a closed loop);
	// Arrival its process.
	Rate    float64
	Arrival string
	// Workers are this process's clients; AllWorkers those of every
	// instance.
	Workers, AllWorkers int
	// Each is a number of operations per client (0: a duration).
	Each int
	// Instance of Instances: this process's share (Instances 0 or 1: the
	// only one).
	Instance, Instances int
}

// String says the loop: "open loop at 500 ops/s (poisson), 8 workers",
// "closed loop, 1 worker, 10 operations each", and of an instance "open
// loop at 200 ops/s (poisson), 2 workers (instance 0 of 2: its share of
// 400 ops/s and 4 workers)". An instance offers its share of a timed
// schedule; with Each, every one of its clients' operations at Rate.
func (l Loop) String() string {
	shared := l.Instances > 1
	timed := l.Each == 0
	s := "closed loop, "
	if l.Rate > 0 {
		rate := l.Rate
		switch {
		case shared && timed:
			rate /= float64(l.Instances)
		case shared && l.AllWorkers > 0:
			// Each client runs the same number of operations: the
			// instance's share is its clients'.
			rate *= float64(l.Workers) / float64(l.AllWorkers)
		}
		s = fmt.Sprintf("open loop at %.6g ops/s (%s), ", rate, l.Arrival)
	}
	s += Count(l.Workers, "worker")
	if !timed {
		s += ", " + Count(l.Each, "operation") + " each"
	}
	if shared {
		whole := Count(l.AllWorkers, "worker")
		if l.Rate > 0 {
			whole = fmt.Sprintf("%.6g ops/s and %s", l.Rate, whole)
		}
		s += fmt.Sprintf(" (instance %d of %d: its share of %s)", l.Instance, l.Instances, whole)
	}
	return s
}

// InstanceClients is instance i's share of c clients split between n
// instances: c/n each, and one more for each of the first c%n.
func InstanceClients(c, i, n int) int {
	if i < c%n {
		return c/n + 1
	}
	return c / n
}

// Summary writes the per-operation summary of a run.
func Summary(w io.Writer, h Header, s *metrics.Snapshot, extra []string) {
	fmt.Fprintf(w, "%s on %s: %s, %s measured\n", h.Workload, h.Server, h.Mode, Seconds(s.Elapsed))
	for _, l := range h.Labels {
		fmt.Fprintf(w, "  %s\n", l)
	}
	for _, e := range extra {
		fmt.Fprintf(w, "  %s\n", e)
	}
	for i, o := range s.Ops {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "%s: %d ok, %d failed, %.1f ops/s\n", o.Name, o.OK, o.FailedTotal(), rate(o.OK, s.Elapsed))
		t := &table{}
		head := []string{"", "mean"}
		for _, q := range summaryQuantiles {
			head = append(head, "p"+strconv.FormatFloat(q, 'f', -1, 64))
		}
		t.add(append(head, "max")...)
		if o.OK > 0 {
			t.add(histRow("response", o.Response)...)
			t.add(histRow("service", o.Service)...)
			t.add(histRow("lag", o.Lag)...)
		}
		fmt.Fprint(w, indent(t.String(), "  "))
		if o.FailedTotal() > 0 {
			fmt.Fprintf(w, "  failed by class: %s\n", ByClass(o.Failed))
		}
		if o.ErrorsTotal() > 0 {
			fmt.Fprintf(w, "  errors by class: %s\n", ByClass(o.Errors))
		}
		fmt.Fprintf(w, "  retried: %s, %s\n", Count(o.Retried, "transaction"), Count(o.Retries, "retry"))
		if o.Skipped > 0 || o.Late > 0 {
			fmt.Fprintf(w, "  latency limit: %d skipped, %d late\n", o.Skipped, o.Late)
		}
		if i < len(h.Statements) && len(o.Stmts) > 0 {
			st := &table{}
			st.add("statement", "mean", "count", "failures", "retries")
			for j, text := range h.Statements[i] {
				if j < len(o.Stmts) {
					s := o.Stmts[j]
					st.add(text, Micros(s.Mean().Microseconds()), strconv.FormatInt(s.Count, 10),
						strconv.FormatInt(s.Failures, 10), strconv.FormatInt(s.Retries, 10))
				}
			}
			fmt.Fprint(w, indent(st.String(), "  "))
		}
	}
}

func histRow(name string, h *hdr.Histogram) []string {
	row := []string{name, MicrosF(h.Mean())}
	for _, q := range summaryQuantiles {
		row = append(row, Micros(h.ValueAtQuantile(q)))
	}
	return append(row, Micros(h.Max()))
}

// ByClass lists the non-zero counts by class: "serialization 3, deadlock 1".
func ByClass(counts [metrics.NumClasses]int64) string {
	var parts []string
	for _, c := range metrics.Classes() {
		if counts[c] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, counts[c]))
		}
	}
	return strings.Join(parts, ", ")
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}

// Line is a labelled figure.
type Line struct{ Label, Value string }

// Lines writes labelled figures aligned like iso-load's report.
func Lines(w io.Writer, lines []Line) {
	width := 0
	for _, l := range lines {
		width = max(width, len(l.Label))
	}
	for _, l := range lines {
		fmt.Fprintf(w, "%-*s %s\n", width+1, l.Label+":", l.Value)
	}
}

// Row is one line of a comparison table.
type Row struct {
	Labels []string
	Total  *metrics.Snapshot
	Values map[string]int64
}

// Comparison writes one table comparing the variants of a run. valueCols
// names figures from Row.Values, with their headings.
func Comparison(w io.Writer, labelCols []string, valueCols [][2]string, rows []Row) {
	t := &table{}
	head := append([]string(nil), labelCols...)
	head = append(head, "ops/s", "p50", "p99", "retries", "failed")
	for _, c := range valueCols {
		head = append(head, c[1])
	}
	t.add(head...)
	for _, r := range rows {
		all := r.Total.Total("all")
		cells := append([]string(nil), r.Labels...)
		cells = append(cells,
			strconv.FormatFloat(rate(all.OK, r.Total.Elapsed), 'f', 1, 64),
			Micros(all.Response.ValueAtQuantile(50)),
			Micros(all.Response.ValueAtQuantile(99)),
			strconv.FormatInt(all.Retries, 10),
			strconv.FormatInt(all.FailedTotal(), 10))
		for _, c := range valueCols {
			cells = append(cells, strconv.FormatInt(r.Values[c[0]], 10))
		}
		t.add(cells...)
	}
	fmt.Fprint(w, t.String())
}

// OpenLoop writes an open-loop run the way Noria's vote benchmark reports
// it: the rate operations were generated at (started, per second of the
// measured period), the rate they completed at, and for each operation the
// 50th, 95th, 99th and 100th percentiles of sojourn time (from the intended
// start) and remote time (from the send), in µs.
//
// Generation is divided by the scheduled window (or the measured period,
// when the run stopped before the window's end), completion by the
// measured period, which runs past the window when the system lagged
// behind.
func OpenLoop(w io.Writer, s *metrics.Snapshot, started int64, window time.Duration) {
	secs := s.Elapsed.Seconds()
	if secs <= 0 || window <= 0 {
		return
	}
	all := s.Total("all")
	// A run that stopped early (saturated, interrupted) generated for
	// the time it ran, not the window it was given.
	gen := min(window, s.Elapsed)
	fmt.Fprintf(w, "# generated ops/s: %.2f\n", float64(started)/gen.Seconds())
	fmt.Fprintf(w, "# actual ops/s: %.2f\n", float64(all.OK+all.FailedTotal())/secs)
	t := &table{}
	t.add("# op", "pct", "sojourn", "remote", "")
	for _, q := range []float64{50, 95, 99, 100} {
		for _, o := range s.Ops {
			if o.OK == 0 {
				continue
			}
			t.add(o.Name, strconv.FormatFloat(q, 'f', -1, 64),
				strconv.FormatInt(o.Response.ValueAtQuantile(q), 10), strconv.FormatInt(o.Service.ValueAtQuantile(q), 10), "(all µs)")
		}
	}
	fmt.Fprint(w, t.String())
}

// ConnectLine says how long the clients took to connect: the ramp before
// the measured window, which starts once every client is connected.
func ConnectLine(clients int, took time.Duration) string {
	return fmt.Sprintf("connected %s in %s, before the measured window", Count(clients, "client"), took.Round(time.Millisecond))
}

// DrainLine says what was in flight when the measured window ended and how
// it ended in the drain after it ("" if nothing was), and what the drain
// skipped (later than --latency-limit): with the window's figures and the
// operations never started, every operation offered.
func DrainLine(drain *metrics.Snapshot) string {
	if drain == nil {
		return ""
	}
	d := drain.Total("all")
	inFlight := d.OK + d.FailedTotal() + d.Abandoned + d.Warmup
	if inFlight == 0 && d.Skipped == 0 {
		return ""
	}
	ok := d.OK + d.WarmupOK
	line := fmt.Sprintf("drain: %s in flight when the window ended, not in the figures below: %d committed and %d failed in the %s after it, %d abandoned (outcome unknown)",
		Count(inFlight, "operation"), ok, inFlight-ok-d.Abandoned, roundShort(drain.Elapsed), d.Abandoned)
	if d.Skipped > 0 {
		line += fmt.Sprintf("; %s skipped after it, later than --latency-limit", Count(d.Skipped, "operation"))
	}
	return line
}

// OfferedLine says how many operations an open loop's schedule offered in
// the window, and how many of them never started.
func OfferedLine(offered, unstarted int64) string {
	return fmt.Sprintf("offered %s, %d never started", Count(offered, "operation"), unstarted)
}

// WarmupLine says what the warm-up ran (total is the run's figures, which
// count the operations begun in it apart): "" if nothing. With the
// window's figures and the drain's, every operation the run sent.
func WarmupLine(total *metrics.Snapshot, warmup time.Duration) string {
	w := total.Total("all")
	if w.Warmup == 0 {
		return ""
	}
	return WarmupText(w.Warmup, w.WarmupOK, warmup)
}

// WarmupText is WarmupLine of operations begun in the warm-up, committed
// of them committed.
func WarmupText(operations, committed int64, warmup time.Duration) string {
	return fmt.Sprintf("warm-up: %s begun in the %s before the window, not in the figures below: %d committed and %d failed",
		Count(operations, "operation"), Seconds(warmup), committed, operations-committed)
}

// roundShort rounds a short time to the millisecond, or below one
// millisecond to the microsecond (never "0s" for a drain that took 300µs).
func roundShort(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
