// Package htmlreport writes the HTML report of one or more runs' --json
// documents: one self-contained file (inline CSS and SVG charts drawn by
// report/plot, no script, no request) that opens offline in any browser.
//
// The page: a summary per run and operation; with two or more runs, a
// comparison of each with the first (the ratio beside each figure); the
// figures a command measured over time (lag's replication lag); for each
// operation, throughput and response-time percentiles over time, the HDR
// percentile spectrum, sojourn against remote time for open-loop runs and
// the schedule lag when there was any; failed attempts by class and
// retries over time; for sweeps, each step's verdict, the maximum rate
// found and latency against achieved throughput; then the settings that
// shaped each run (passwords redacted) and the server's.
//
// Each run has its own colour and each statistic its own line style, the
// same in every chart (styleOf), and each chart's legend says which is
// which.
//
// Over-time charts show at most MaxPoints points per line: longer runs'
// intervals are merged in groups of consecutive ones (histograms added, so
// each point's percentiles are exact for its window). A last interval much
// shorter than the others (the few milliseconds in which the operations
// in flight at the end completed) is left out of them, and the page says
// so: drawn as a rate over a full interval it would show a spike that
// never happened.
package htmlreport

import (
	"errors"
	"fmt"
	"html"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/plot"
)

// MaxPoints bounds the points of a line over time.
const MaxPoints = 600

// Options are the report's own settings.
type Options struct {
	// Title heads the page; "" = "txload report".
	Title string
	// Names are the documents' names (file names), in the order of docs.
	Names []string
	// Version is the txload that wrote the page.
	Version string
}

// run is one run drawn: a RunDoc of a document.
type run struct {
	name    string
	doc     *report.Document
	docName string
	rd      *report.RunDoc
	total   *metrics.Snapshot
	windows []window
	// partial is the last interval, left out of the charts over time
	// because it is much shorter than the others; nil when there is none.
	partial *partial
	color   string
}

// partial describes an interval left out of the charts over time.
type partial struct {
	from, to float64 // seconds from the start of the measured period
	ok       int64
	why      string // what cut it short
}

// window is one point over time: intervals merged, then reduced to what
// the charts draw. It keeps no histogram, so that the report of a long run
// holds one window's histograms at a time, not the run's.
type window struct {
	at   float64 // seconds from the start of the measured period to the window's end
	secs float64
	ops  []point // by the run's operation index
	// errors and retries are every operation's failed attempts, by class,
	// and retries.
	errors  [metrics.NumClasses]int64
	retries int64
}

// point is one operation in one window.
type point struct {
	ok                     int64
	response, service, lag quantiles
}

// windowQs are the percentiles the charts over time draw (100: the
// maximum); quantiles holds a histogram's, in ms, in that order.
var windowQs = [...]float64{50, 95, 99, 100}

type quantiles [len(windowQs)]float64

func quantilesOf(h *hdr.Histogram) quantiles {
	var q quantiles
	for i, p := range windowQs {
		q[i] = quantile(h, p)
	}
	return q
}

// at is percentile p, one of windowQs.
func (q quantiles) at(p float64) float64 {
	i := slices.Index(windowQs[:], p)
	if i < 0 {
		panic(fmt.Sprintf("htmlreport: percentile %g is not drawn over time", p))
	}
	return q[i]
}

func windowOf(s *metrics.Snapshot, at, secs float64) window {
	w := window{at: at, secs: secs, ops: make([]point, len(s.Ops))}
	for i, o := range s.Ops {
		w.ops[i] = point{ok: o.OK, response: quantilesOf(o.Response), service: quantilesOf(o.Service), lag: quantilesOf(o.Lag)}
		for c, n := range o.Errors {
			w.errors[c] += n
		}
		w.retries += o.Retries
	}
	return w
}

// quantile is percentile q of h in ms (100: the maximum), NaN when h is
// empty: nothing to draw.
func quantile(h *hdr.Histogram, q float64) float64 {
	if h.TotalCount() == 0 {
		return math.NaN()
	}
	if q >= 100 {
		return ms(h.Max())
	}
	return ms(h.ValueAtQuantile(q))
}

func ms(us int64) float64 { return float64(us) / 1000 }

type page struct {
	b      strings.Builder
	charts int
	// runs is the number of runs on the page: with more than one, each
	// chart's legend names them by colour.
	runs int
	err  error
}

func (p *page) printf(format string, args ...any) { fmt.Fprintf(&p.b, format, args...) }

// Chart size in the page: two side by side.
const chartWidth, chartHeight = 570, 290

// chart writes c, with a legend of its runs and statistics unless it has
// one.
func (p *page) chart(c *plot.Chart) {
	p.charts++
	if c.Width == 0 {
		c.Width, c.Height = chartWidth, chartHeight
	}
	if c.Legend == nil {
		c.Legend = legend(c.Series, p.runs > 1)
	}
	c.ID = "c" + strconv.Itoa(p.charts)
	p.b.WriteString(`<figure class="chart">`)
	if err := c.SVG(&p.b); err != nil && p.err == nil {
		p.err = err
	}
	p.b.WriteString(`</figure>`)
}

func esc(s string) string { return html.EscapeString(s) }

// Write writes the report of docs to w.
func Write(w io.Writer, docs []*report.Document, opts Options) error {
	if len(docs) == 0 {
		return fmt.Errorf("html report: no document")
	}
	names := opts.Names
	if len(names) != len(docs) {
		names = make([]string, len(docs))
		for i := range docs {
			names[i] = "document " + strconv.Itoa(i+1)
		}
	}
	var runs []*run
	var sweeps []*sweep
	for i, d := range docs {
		if d.Command == "sweep" {
			sw, err := sweepOf(d, names[i], len(docs) > 1)
			if err != nil {
				return fmt.Errorf("%s: %w", names[i], err)
			}
			sweeps = append(sweeps, sw)
			continue
		}
		for r := range d.Runs {
			rd := &d.Runs[r]
			total, err := rd.Total()
			if err != nil {
				return fmt.Errorf("%s: %w", names[i], err)
			}
			warmup, _ := time.ParseDuration(d.ConfigString(report.KeyWarmup))
			ws, part, err := windows(rd, warmup)
			if err != nil {
				return fmt.Errorf("%s: %w", names[i], err)
			}
			runs = append(runs, &run{doc: d, docName: names[i], rd: rd, total: total, windows: ws, partial: part})
		}
	}
	nameRuns(runs)
	for i, r := range runs {
		r.color = plot.Color(i)
	}
	for i, sw := range sweeps {
		sw.color = plot.Color(len(runs) + i)
	}
	// A document's own figures (lag's) are drawn in its first run's colour.
	colors := make([]string, len(docs))
	next := len(runs) + len(sweeps)
	for i := range docs {
		for _, r := range runs {
			if r.doc == docs[i] {
				colors[i] = r.color
				break
			}
		}
		if colors[i] == "" {
			colors[i] = plot.Color(next)
			next++
		}
	}
	title := opts.Title
	if title == "" {
		title = "txload report"
	}
	p := &page{runs: len(runs) + len(sweeps)}
	p.printf("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">")
	p.printf("<title>%s</title><style>%s</style></head><body>", esc(title), css)
	p.printf("<h1>%s</h1>", esc(title))
	p.printf(`<p class="sub">%s</p>`, esc(subtitle(docs, names, opts.Version)))
	failedLines(p, docs)
	if len(runs) > 0 {
		summaryTable(p, runs)
		checkSection(p, runs)
		comparison(p, runs)
	}
	tablesSection(p, docs)
	seriesSection(p, docs, names, colors)
	if len(runs) > 0 {
		opSections(p, runs)
		failureSection(p, runs)
	}
	if len(sweeps) > 0 {
		sweepSection(p, sweeps)
	}
	configSection(p, docs, names)
	p.printf("</body></html>\n")
	if p.err != nil {
		return p.err
	}
	_, err := io.WriteString(w, p.b.String())
	return err
}

const css = `body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1180px;color:#222;padding:0 12px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}.sub{color:#666;margin:0 0 12px}
table{border-collapse:collapse;font-size:13px;margin:6px 0 12px}th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f6f6f6}td.l,th.l{text-align:left}
tr.group th{background:#fff;text-align:left;padding-top:10px;color:#555;border-bottom:1px solid #ccc}
tr.differs td{background:#fff8e1}td.ratio{color:#555}td.ratio.far{color:#222;font-weight:bold}
.swatch{display:inline-block;width:10px;height:10px;margin-right:6px;border-radius:2px}
.pass{color:#1a7f37;font-weight:bold}.fail{color:#b00;font-weight:bold}.verdict{font-size:15px;margin:8px 0}
figure.chart{display:inline-block;margin:4px 8px 8px 0;vertical-align:top}.note{color:#666;font-size:13px}
pre{background:#f6f6f6;padding:8px;font-size:12px;overflow:auto}`

func subtitle(docs []*report.Document, names []string, version string) string {
	var parts []string
	for i, d := range docs {
		s := fmt.Sprintf("%s: txload %s %s on %s", names[i], d.Command, d.Workload, d.ServerString())
		if t := startOf(d); !t.IsZero() {
			s += ", " + t.UTC().Format("2006-01-02 15:04:05 UTC")
		}
		if len(d.MergedFrom) > 0 {
			s += fmt.Sprintf(" (merged from %d)", len(d.MergedFrom))
		}
		parts = append(parts, s)
	}
	if version != "" {
		parts = append(parts, "report by txload "+version)
	}
	return strings.Join(parts, "; ")
}

// startOf is when the document's first run with intervals started (zero
// if none has any).
func startOf(d *report.Document) time.Time {
	for i := range d.Runs {
		var t time.Time
		stop := errors.New("stop")
		err := d.Runs[i].EachInterval(func(_ int, iv *report.IntervalDoc) error {
			t = iv.Start
			return stop
		})
		if err == stop {
			return t
		}
	}
	return time.Time{}
}

// nameRuns names each run by what tells it apart from the others: its
// document (when there are several) and the labels whose values differ.
func nameRuns(runs []*run) {
	docs := map[string]bool{}
	values := map[string]map[string]bool{}
	for _, r := range runs {
		docs[r.docName] = true
		for k, v := range r.rd.Labels {
			if values[k] == nil {
				values[k] = map[string]bool{}
			}
			values[k][v] = true
		}
	}
	for _, r := range runs {
		var parts []string
		if len(docs) > 1 {
			parts = append(parts, r.docName)
		}
		for _, k := range slices.Sorted(maps.Keys(r.rd.Labels)) {
			if len(values[k]) > 1 || len(runs) == 1 {
				parts = append(parts, k+"="+r.rd.Labels[k])
			}
		}
		r.name = strings.Join(parts, " ")
		if r.name == "" {
			r.name = r.doc.Workload
		}
	}
}

// windows adds up a run's measured intervals into at most MaxPoints
// windows, one window's histograms in memory at a time, reading the
// intervals twice, one at a time: for their times, then for their figures.
// A last interval shorter than half the others' median is left out and
// returned as partial. Where the warm-up ended inside an interval, the
// measured period (and the time axis) starts there, and that interval's
// rates are over its measured part: its warm-up's operations are not in
// its counts.
func windows(rd *report.RunDoc, warmup time.Duration) ([]window, *partial, error) {
	// The first pass: the measured intervals' number and lengths, the
	// first and the last.
	var (
		measured    int
		start       time.Time // of the first interval, warm-up included
		first, last report.IntervalDoc
		lastOK      int64
		lengths     report.LengthCounts
		lastLength  time.Duration
	)
	err := rd.EachInterval(func(n int, iv *report.IntervalDoc) error {
		if n == 0 {
			start = iv.Start
		}
		if iv.Warmup {
			return nil
		}
		if measured == 0 {
			first = report.IntervalDoc{Start: iv.Start, End: iv.End}
		}
		measured++
		last = report.IntervalDoc{Start: iv.Start, End: iv.End}
		lastLength = iv.End.Sub(iv.Start)
		lengths.Add(lastLength)
		lastOK = 0
		for _, o := range iv.Ops {
			lastOK += o.OK
		}
		return nil
	})
	if err != nil || measured == 0 {
		return nil, nil, err
	}
	t0 := first.Start
	if end := start.Add(warmup); warmup > 0 && end.After(t0) && end.Before(first.End) {
		t0 = end
	}
	var part *partial
	if measured >= 2 {
		lengths.Remove(lastLength)
		if lastLength.Seconds() < lengths.Median().Seconds()/2 {
			part = &partial{from: last.Start.Sub(t0).Seconds(), to: last.End.Sub(t0).Seconds(), why: "the measured window ended in it", ok: lastOK}
			switch {
			case rd.Interrupted:
				part.why = "the run was interrupted in it"
			case rd.Drain == nil: // a document that kept no drain apart: it is in the last interval
				part.why = "the operations in flight at the end completing"
			}
			measured--
		}
	}
	// The second pass: windows of group intervals each, added up.
	group := (measured + MaxPoints - 1) / MaxPoints
	out := make([]window, (measured+group-1)/group)
	wa := startWindows(rd, out, t0)
	var batch windowBatch
	m := 0 // measured intervals seen
	err = rd.EachInterval(func(n int, iv *report.IntervalDoc) error {
		if iv.Warmup || m >= measured {
			return nil
		}
		batch.n = append(batch.n, n)
		batch.ivs = append(batch.ivs, *iv)
		if m++; m%group == 0 || m == measured {
			batch.k = (m - 1) / group
			if !wa.add(batch) {
				return errStop
			}
			batch = windowBatch{}
		}
		return nil
	})
	if werr := wa.wait(); err == nil || err == errStop {
		err = werr
	}
	return out, part, err
}

// windowBatch is a window's intervals (their indexes n in the run), the
// k-th window.
type windowBatch struct {
	k   int
	n   []int
	ivs []report.IntervalDoc
}

var errStop = errors.New("stop")

// windowAdder adds up batches of intervals into windows with workers, as
// many as there are cores: decoding the intervals' histograms, what the
// report of a long run spends its time on, takes every core, one window
// per worker in memory.
type windowAdder struct {
	jobs  chan windowBatch
	wg    sync.WaitGroup
	mu    sync.Mutex
	first error
}

// startWindows starts the workers that fill out's windows.
func startWindows(rd *report.RunDoc, out []window, t0 time.Time) *windowAdder {
	workers := max(min(runtime.GOMAXPROCS(0), len(out)), 1)
	wa := &windowAdder{jobs: make(chan windowBatch, workers)}
	for range workers {
		wa.wg.Go(func() {
			snap := metrics.NewSnapshot(rd.Names())
			add := rd.Adder()
			for b := range wa.jobs {
				if wa.failed() != nil {
					continue
				}
				if err := addWindow(add, snap, b, out, t0); err != nil {
					wa.mu.Lock()
					if wa.first == nil {
						wa.first = err
					}
					wa.mu.Unlock()
				}
			}
		})
	}
	return wa
}

func (wa *windowAdder) failed() error {
	wa.mu.Lock()
	defer wa.mu.Unlock()
	return wa.first
}

// add hands a batch to a worker; false once one failed.
func (wa *windowAdder) add(b windowBatch) bool {
	if wa.failed() != nil {
		return false
	}
	wa.jobs <- b
	return true
}

// wait waits for the workers to finish, and returns the first one's
// error.
func (wa *windowAdder) wait() error {
	close(wa.jobs)
	wa.wg.Wait()
	return wa.first
}

// addWindow adds up batch b into window out[b.k].
func addWindow(add *report.IntervalAdder, snap *metrics.Snapshot, b windowBatch, out []window, t0 time.Time) error {
	snap.Reset()
	for j := range b.ivs {
		if err := add.Add(b.n[j], &b.ivs[j], snap); err != nil {
			return err
		}
	}
	if err := add.Flush(snap); err != nil {
		return err
	}
	from, end := b.ivs[0].Start, b.ivs[len(b.ivs)-1].End
	if from.Before(t0) {
		from = t0
	}
	out[b.k] = windowOf(snap, end.Sub(t0).Seconds(), end.Sub(from).Seconds())
	return nil
}

func opNames(runs []*run) []string {
	var names []string
	for _, r := range runs {
		for _, o := range r.total.Ops {
			if !slices.Contains(names, o.Name) {
				names = append(names, o.Name)
			}
		}
	}
	return names
}

func opIndex(s *metrics.Snapshot, name string) int {
	for i, o := range s.Ops {
		if o.Name == name {
			return i
		}
	}
	return -1
}

func swatch(color string) string {
	return fmt.Sprintf(`<span class="swatch" style="background:%s"></span>`, color)
}

func summaryTable(p *page, runs []*run) {
	p.printf("<h2>Summary</h2><table><tr><th>run</th><th>operation</th><th>ok</th><th>failed</th><th>ops/s</th><th>retries</th><th>p50</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th><th>measured</th></tr>")
	for _, r := range runs {
		secs := r.total.Elapsed.Seconds()
		for _, o := range r.total.Ops {
			rate := 0.0
			if secs > 0 {
				rate = float64(o.OK) / secs
			}
			h := o.Response
			p.printf(`<tr><td>%s%s</td><td class="l">%s</td><td>%d</td><td>%d</td><td>%.1f</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>`,
				swatch(r.color), esc(r.name), esc(o.Name), o.OK, o.FailedTotal(), rate, o.Retries,
				report.Micros(h.ValueAtQuantile(50)), report.Micros(h.ValueAtQuantile(95)), report.Micros(h.ValueAtQuantile(99)),
				report.Micros(h.ValueAtQuantile(99.9)), report.Micros(h.Max()), report.Seconds(r.total.Elapsed))
		}
	}
	p.printf("</table>")
	var none []string
	for _, r := range runs {
		if len(r.windows) == 0 {
			none = append(none, r.name)
		}
	}
	for _, r := range runs {
		drain, err := r.rd.DrainSnapshot()
		if err != nil {
			p.err = fmt.Errorf("%s: %w", r.docName, err)
			return
		}
		for _, line := range []string{r.doc.WarmupLine(r.rd), report.DrainLine(drain)} {
			if line == "" {
				continue
			}
			line = strings.Replace(line, "not in the figures below", "not in the figures of this page", 1)
			if len(runs) > 1 {
				line = r.name + ": " + line
			}
			p.printf(`<p class="note drain">%s</p>`, esc(line))
		}
	}
	if note := partialNote(runs); note != "" {
		p.printf(`<p class="note partial">%s</p>`, esc(note))
	}
	if len(none) > 0 {
		p.printf(`<p class="note">No intervals recorded for %s: the charts over time leave them out.</p>`, esc(strings.Join(none, ", ")))
	}
}

// failedLines says at the top of the page what a command's own figures
// found wrong (failover's lost commits): a red line each.
func failedLines(p *page, docs []*report.Document) {
	for _, d := range docs {
		for _, t := range d.Tables {
			if t.Failed != "" {
				p.printf(`<p class="verdict fail">%s</p>`, esc(t.Failed))
			}
		}
	}
}

// checkSection says, under the summary, what a reader must not miss of
// each run: an interrupt, a saturated open loop, and what the workload's
// audit found after the run: "check: ok" with its figures, or each
// VIOLATION, as the text report prints them.
func checkSection(p *page, runs []*run) {
	checked := false
	for _, r := range runs {
		checked = checked || r.rd.Check != nil
	}
	if checked {
		p.printf("<h2>Checks</h2>")
	}
	for _, r := range runs {
		name := ""
		if len(runs) > 1 {
			name = r.name + ": "
		}
		if r.rd.Interrupted {
			p.printf(`<p class="verdict fail">%s</p>`, esc(name+r.rd.InterruptedLine()))
		}
		if r.rd.Saturated {
			p.printf(`<p class="verdict fail">%s</p>`, esc(name+r.rd.SaturatedLine()))
		}
		c := r.rd.Check
		if c == nil {
			continue
		}
		if len(c.Violations) == 0 {
			p.printf(`<p class="verdict">%s%s</p>`, swatch(r.color), esc(name)+`<span class="pass">check: ok</span>`)
		}
		for _, v := range c.Violations {
			p.printf(`<p class="verdict">%s%s</p>`, swatch(r.color), esc(name)+`<span class="fail">VIOLATION: `+esc(v)+`</span>`)
		}
	}
	// The audits' figures: a row per figure, a column per run audited.
	keys := map[string]bool{}
	var audited []*run
	for _, r := range runs {
		if c := r.rd.Check; c != nil && len(c.Values) > 0 {
			audited = append(audited, r)
			for k := range c.Values {
				keys[k] = true
			}
		}
	}
	if len(audited) == 0 {
		return
	}
	p.printf(`<table class="check"><tr><th></th>`)
	for _, r := range audited {
		p.printf(`<th>%s%s</th>`, swatch(r.color), esc(r.name))
	}
	p.printf("</tr>")
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		p.printf(`<tr><td>%s</td>`, esc(strings.ReplaceAll(k, "_", " "))) // as the text report words them
		for _, r := range audited {
			if v, ok := r.rd.Check.Values[k]; ok {
				p.printf(`<td>%d</td>`, v)
			} else {
				p.printf(`<td></td>`)
			}
		}
		p.printf("</tr>")
	}
	p.printf("</table>")
}

// partialNote says which runs' last intervals the charts over time leave
// out, and why; "" when none.
func partialNote(runs []*run) string {
	var cut []*run
	for _, r := range runs {
		if r.partial != nil {
			cut = append(cut, r)
		}
	}
	switch {
	case len(cut) == 0:
		return ""
	case len(runs) == 1:
		pt := cut[0].partial
		return fmt.Sprintf("The charts over time end at %s: the last interval, %s, is much shorter than the others "+
			"and is left out of them: a rate over it would read as a spike. The totals include it.", plot.Duration(pt.from), pt)
	}
	var parts []string
	for _, r := range cut {
		parts = append(parts, r.name+" "+r.partial.String())
	}
	return fmt.Sprintf("The charts over time leave out these runs' last interval, much shorter than the others: "+
		"%s. A rate over it would read as a spike; the totals include it.", strings.Join(parts, "; "))
}

func (pt *partial) String() string {
	return fmt.Sprintf("%.3f s to %.3f s (%s, %d ok: %s)", pt.from, pt.to, report.Micros(int64(math.Round((pt.to-pt.from)*1e6))), pt.ok, pt.why)
}

// partialShort is the note under a rate chart of runs (named when the
// page has several); "" when no run's last interval is left out.
func partialShort(runs []*run, named bool) string {
	var parts []string
	for _, r := range runs {
		if pt := r.partial; pt != nil {
			part := fmt.Sprintf("%s, %d ok", report.Micros(int64(math.Round((pt.to-pt.from)*1e6))), pt.ok)
			if named {
				part = r.name + " " + part
			}
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("not drawn: the last, partial interval (%s); the totals include it", strings.Join(parts, "; "))
}

// tablesSection draws the documents' own tables (failover's figures), the
// first row of each as its header, the first column left-aligned.
func tablesSection(p *page, docs []*report.Document) {
	for _, d := range docs {
		for _, t := range d.Tables {
			if len(t.Rows) == 0 {
				continue
			}
			p.printf("<h2>%s</h2><table>", esc(t.Title))
			for i, row := range t.Rows {
				cell := "td"
				if i == 0 {
					cell = "th"
				}
				p.printf("<tr>")
				for j, c := range row {
					class := ""
					if j > 0 && i > 0 && len(row) == 2 {
						class = ` class="l"`
					}
					p.printf("<%s%s>%s</%s>", cell, class, esc(c), cell)
				}
				p.printf("</tr>")
			}
			p.printf("</table>")
		}
	}
}
