// Package htmlreport writes the HTML report of one or more runs' --json
// documents: one self-contained file (inline CSS and SVG charts drawn by
// report/plot, no script, no request) that opens offline in any browser.
//
// Charts, for each operation: throughput and response-time percentiles
// (p50, p95, p99, max) over time, the HDR percentile spectrum on a log axis,
// sojourn against remote time for open-loop runs, schedule lag over time
// when there was any; for the whole run: failed attempts by class and
// retries over time; for sweeps: latency against achieved throughput, the
// steps in order of target rate. Then the configuration (passwords
// redacted) and the server. Several runs (variants of one document, or
// several documents) are drawn on the same charts, one colour each.
//
// Over-time charts show at most MaxPoints points per line: longer runs'
// intervals are merged in groups of consecutive ones (histograms added, so
// each point's percentiles are exact for its window).
package htmlreport

import (
	"fmt"
	"html"
	"io"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/chart"
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
	color   string
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

// sweep is one sweep document drawn as a curve.
type sweep struct {
	name   string
	points []chart.Point
}

type page struct {
	b      strings.Builder
	charts int
	err    error
}

func (p *page) printf(format string, args ...any) { fmt.Fprintf(&p.b, format, args...) }

// Chart size in the page: two side by side.
const chartWidth, chartHeight = 570, 290

func (p *page) chart(c *plot.Chart) {
	p.charts++
	if c.Width == 0 {
		c.Width, c.Height = chartWidth, chartHeight
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
	var sweeps []sweep
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
			ws, err := windows(rd)
			if err != nil {
				return fmt.Errorf("%s: %w", names[i], err)
			}
			runs = append(runs, &run{doc: d, docName: names[i], rd: rd, total: total, windows: ws})
		}
	}
	nameRuns(runs)
	for i, r := range runs {
		r.color = plot.Palette[i%len(plot.Palette)]
	}
	title := opts.Title
	if title == "" {
		title = "txload report"
	}
	p := &page{}
	p.printf("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">")
	p.printf("<title>%s</title><style>%s</style></head><body>", esc(title), css)
	p.printf("<h1>%s</h1>", esc(title))
	p.printf(`<p class="sub">%s</p>`, esc(subtitle(docs, names, opts.Version)))
	if len(runs) > 0 {
		summaryTable(p, runs)
		opSections(p, runs)
		failureSection(p, runs)
	}
	if len(sweeps) > 0 {
		sweepSection(p, sweeps)
	}
	seriesSection(p, docs, names)
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
th:first-child,td:first-child{text-align:left}th{background:#f6f6f6}td.l{text-align:left}
.swatch{display:inline-block;width:10px;height:10px;margin-right:6px;border-radius:2px}
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

func startOf(d *report.Document) time.Time {
	for _, r := range d.Runs {
		if len(r.Intervals) > 0 {
			return r.Intervals[0].Start
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
// windows, one window's histograms in memory at a time.
func windows(rd *report.RunDoc) ([]window, error) {
	var measured []int
	for n, iv := range rd.Intervals {
		if !iv.Warmup {
			measured = append(measured, n)
		}
	}
	if len(measured) == 0 {
		return nil, nil
	}
	t0 := rd.Intervals[measured[0]].Start
	group := (len(measured) + MaxPoints - 1) / MaxPoints
	var out []window
	snap := metrics.NewSnapshot(rd.Names())
	for i := 0; i < len(measured); i += group {
		j := min(i+group, len(measured))
		snap.Reset()
		for _, n := range measured[i:j] {
			if err := rd.AddInterval(n, snap); err != nil {
				return nil, err
			}
		}
		first, last := rd.Intervals[measured[i]], rd.Intervals[measured[j-1]]
		out = append(out, windowOf(snap, last.End.Sub(t0).Seconds(), last.End.Sub(first.Start).Seconds()))
	}
	return out, nil
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

func ms(us int64) float64 { return float64(us) / 1000 }

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
			p.printf(`<tr><td><span class="swatch" style="background:%s"></span>%s</td><td class="l">%s</td><td>%d</td><td>%d</td><td>%.1f</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>`,
				r.color, esc(r.name), esc(o.Name), o.OK, o.FailedTotal(), rate, o.Retries,
				report.Micros(h.ValueAtQuantile(50)), report.Micros(h.ValueAtQuantile(95)), report.Micros(h.ValueAtQuantile(99)),
				report.Micros(h.ValueAtQuantile(99.9)), report.Micros(h.Max()), report.Seconds(r.total.Elapsed))
		}
	}
	p.printf("</table>")
	var notes []string
	for _, r := range runs {
		if len(r.windows) == 0 {
			notes = append(notes, r.name)
		}
	}
	if len(notes) > 0 {
		p.printf(`<p class="note">No intervals recorded for %s: the charts over time leave them out.</p>`, esc(strings.Join(notes, ", ")))
	}
}

// percentile is one line of the latency-over-time charts.
type percentile struct {
	name string
	q    float64 // 100 = max
	dash string
	wid  float64
}

var overTime = []percentile{{"p50", 50, plot.Solid, 1.5}, {"p95", 95, plot.Dotted, 1.5}, {"p99", 99, plot.Dashed, 1.5}, {"max", 100, plot.Long, 1}}

func quantile(h *hdr.Histogram, q float64) float64 {
	if h.TotalCount() == 0 {
		return math.NaN()
	}
	if q >= 100 {
		return ms(h.Max())
	}
	return ms(h.ValueAtQuantile(q))
}

func opSections(p *page, runs []*run) {
	anyWindows := false
	for _, r := range runs {
		anyWindows = anyWindows || len(r.windows) > 0
	}
	for _, op := range opNames(runs) {
		p.printf("<h2>%s</h2>", esc(op))
		if anyWindows {
			tp := &plot.Chart{Title: op + ": throughput", X: plot.Axis{Label: "time", Time: true}, Y: plot.Axis{Label: "ok operations/s"}}
			lat := &plot.Chart{Title: op + ": response time p50, p95, p99, max", X: plot.Axis{Label: "time", Time: true},
				Y: plot.Axis{Label: "response time (log scale)", Log: true, Format: plot.Millis}}
			for _, r := range runs {
				i := opIndex(r.total, op)
				if i < 0 || len(r.windows) == 0 {
					continue
				}
				s := plot.Series{Name: r.name, Color: r.color}
				for _, w := range r.windows {
					s.X = append(s.X, w.at)
					s.Y = append(s.Y, float64(w.ops[i].ok)/w.secs)
				}
				tp.Series = append(tp.Series, s)
				for _, pc := range overTime {
					s := plot.Series{Name: r.name + " " + pc.name, Color: r.color, Dash: pc.dash, Width: pc.wid}
					for _, w := range r.windows {
						s.X = append(s.X, w.at)
						s.Y = append(s.Y, w.ops[i].response.at(pc.q))
					}
					lat.Series = append(lat.Series, s)
				}
			}
			p.chart(tp)
			p.chart(lat)
		}
		p.chart(spectrum(op, runs))
		openLoop(p, op, runs)
		lagChart(p, op, runs)
	}
}

// spectrum is the HDR percentile spectrum: latency against percentile, the
// percentile on a log axis of 1/(1−q) so that the tail spreads out.
func spectrum(op string, runs []*run) *plot.Chart {
	c := &plot.Chart{Title: op + ": percentile spectrum",
		X: plot.Axis{Label: "percentile", Log: true, Ticks: []plot.Tick{{V: 1, Label: "0%"}, {V: 2, Label: "50%"}, {V: 10, Label: "90%"},
			{V: 100, Label: "99%"}, {V: 1e3, Label: "99.9%"}, {V: 1e4, Label: "99.99%"}, {V: 1e5, Label: "99.999%"}, {V: 1e6, Label: "99.9999%"}}},
		Y: plot.Axis{Label: "latency (log scale)", Log: true, Format: plot.Millis}}
	for _, r := range runs {
		i := opIndex(r.total, op)
		if i < 0 {
			continue
		}
		o := r.total.Ops[i]
		kinds := []struct {
			name string
			h    *hdr.Histogram
			dash string
		}{{"response", o.Response, plot.Solid}}
		if r.rd.Offered > 0 {
			kinds = append(kinds, struct {
				name string
				h    *hdr.Histogram
				dash string
			}{"service", o.Service, plot.Dashed})
		}
		for _, k := range kinds {
			n := k.h.TotalCount()
			if n == 0 {
				continue
			}
			s := plot.Series{Name: r.name + " " + k.name, Color: r.color, Dash: k.dash}
			// Percentiles 1 − 10^(−j/20): 20 per decade, down to one
			// operation in n; then the maximum.
			for j := 0; ; j++ {
				tail := math.Pow(10, -float64(j)/20)
				if tail < 1/float64(n) {
					break
				}
				s.X = append(s.X, 1/tail)
				s.Y = append(s.Y, math.Max(ms(k.h.ValueAtQuantile(100*(1-tail))), 0.001))
			}
			s.X = append(s.X, float64(n))
			s.Y = append(s.Y, math.Max(ms(k.h.Max()), 0.001))
			c.Series = append(c.Series, s)
		}
	}
	return c
}

// openLoop draws sojourn time (from the intended start) against remote time
// (from the send) over time, for open-loop runs.
func openLoop(p *page, op string, runs []*run) {
	c := &plot.Chart{Title: op + ": sojourn against remote time", X: plot.Axis{Label: "time", Time: true},
		Y: plot.Axis{Label: "latency (log scale)", Log: true, Format: plot.Millis}}
	for _, r := range runs {
		i := opIndex(r.total, op)
		if i < 0 || r.rd.Offered == 0 || len(r.windows) == 0 {
			continue
		}
		for _, k := range []struct {
			name string
			q    float64
			wid  float64
			dash string
			get  func(point) quantiles
		}{
			{"sojourn p50", 50, 1, plot.Solid, func(p point) quantiles { return p.response }},
			{"remote p50", 50, 1, plot.Dashed, func(p point) quantiles { return p.service }},
			{"sojourn p99", 99, 2.5, plot.Solid, func(p point) quantiles { return p.response }},
			{"remote p99", 99, 2.5, plot.Dashed, func(p point) quantiles { return p.service }},
		} {
			s := plot.Series{Name: r.name + " " + k.name, Color: r.color, Dash: k.dash, Width: k.wid}
			for _, w := range r.windows {
				s.X = append(s.X, w.at)
				s.Y = append(s.Y, k.get(w.ops[i]).at(k.q))
			}
			c.Series = append(c.Series, s)
		}
	}
	if c.Points() > 0 {
		p.chart(c)
	}
}

// lagChart draws the schedule lag (actual − intended start) over time when
// some operation started late.
func lagChart(p *page, op string, runs []*run) {
	c := &plot.Chart{Title: op + ": schedule lag", X: plot.Axis{Label: "time", Time: true},
		Y: plot.Axis{Label: "lag"}}
	for _, r := range runs {
		i := opIndex(r.total, op)
		if i < 0 || r.total.Ops[i].Lag.Max() == 0 || len(r.windows) == 0 {
			continue
		}
		for _, k := range []struct {
			name string
			q    float64
			dash string
		}{{"p99", 99, plot.Solid}, {"max", 100, plot.Dashed}} {
			s := plot.Series{Name: r.name + " lag " + k.name, Color: r.color, Dash: k.dash}
			for _, w := range r.windows {
				s.X = append(s.X, w.at)
				s.Y = append(s.Y, w.ops[i].lag.at(k.q))
			}
			c.Series = append(c.Series, s)
		}
	}
	c.Y.Format = plot.Millis
	if c.Points() > 0 {
		p.chart(c)
	}
}

// failureSection draws failed attempts by class and retries over time, all
// operations together.
func failureSection(p *page, runs []*run) {
	c := &plot.Chart{Title: "failed attempts by class, and retries", X: plot.Axis{Label: "time", Time: true}, Y: plot.Axis{Label: "per second"}}
	dashes := []string{plot.Solid, plot.Dashed, plot.Dotted, plot.Long, "8 2 2 2", "1 2"}
	var lines []string
	for _, r := range runs {
		all := r.total.Total("all")
		if all.ErrorsTotal() > 0 || all.Retries > 0 {
			lines = append(lines, fmt.Sprintf("%s: %d failed attempts (%s), %d retries, %d operations failed", r.name, all.ErrorsTotal(), byClass(all.Errors), all.Retries, all.FailedTotal()))
		}
		if len(r.windows) == 0 {
			continue
		}
		for ci, class := range metrics.Classes() {
			if all.Errors[class] == 0 {
				continue
			}
			s := plot.Series{Name: r.name + " " + class.String(), Color: r.color, Dash: dashes[ci%len(dashes)]}
			for _, w := range r.windows {
				s.X = append(s.X, w.at)
				s.Y = append(s.Y, float64(w.errors[class])/w.secs)
			}
			c.Series = append(c.Series, s)
		}
		if all.Retries > 0 {
			s := plot.Series{Name: r.name + " retries", Color: r.color, Width: 2.5}
			for _, w := range r.windows {
				s.X = append(s.X, w.at)
				s.Y = append(s.Y, float64(w.retries)/w.secs)
			}
			c.Series = append(c.Series, s)
		}
	}
	p.printf("<h2>Failures and retries</h2>")
	if len(lines) == 0 {
		p.printf(`<p class="note">No failed attempt and no retry.</p>`)
		return
	}
	p.printf("<ul>")
	for _, l := range lines {
		p.printf("<li>%s</li>", esc(l))
	}
	p.printf("</ul>")
	if c.Points() > 0 {
		p.chart(c)
	}
}

func byClass(counts [metrics.NumClasses]int64) string {
	var parts []string
	for _, c := range metrics.Classes() {
		if counts[c] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, counts[c]))
		}
	}
	return strings.Join(parts, ", ")
}

// sweepOf reads a sweep document: one point per step, its target from the
// step's label.
func sweepOf(d *report.Document, name string, manyDocs bool) (sweep, error) {
	sw := sweep{name: d.Workload}
	if manyDocs {
		sw.name = name
	}
	for i := range d.Runs {
		rd := &d.Runs[i]
		total, err := rd.Total()
		if err != nil {
			return sw, err
		}
		target, _ := strconv.ParseFloat(rd.Labels["target"], 64)
		all := total.Total("all")
		achieved := 0.0
		if secs := total.Elapsed.Seconds(); secs > 0 {
			achieved = float64(all.OK) / secs
		}
		sw.points = append(sw.points, chart.Point{Target: target, Throughput: achieved,
			P50: ms(all.Response.ValueAtQuantile(50)), P99: ms(all.Response.ValueAtQuantile(99)), Pass: true})
	}
	return sw, nil
}

func sweepSection(p *page, sweeps []sweep) {
	p.printf("<h2>Sweep</h2>")
	var c *plot.Chart
	for i, sw := range sweeps {
		one := chart.Sweep("", sw.points)
		if c == nil {
			c = &plot.Chart{Title: "sweep: latency against throughput", X: one.X, Y: one.Y}
		}
		color := plot.Palette[i%len(plot.Palette)]
		for j, s := range one.Series {
			s.Name = sw.name + " " + strings.Fields(s.Name)[0]
			s.Color = color
			if j == 0 {
				s.Labels = nil
			}
			c.Series = append(c.Series, s)
		}
		p.printf("<h3>%s</h3><table><tr><th>target/s</th><th>achieved/s</th><th>p50</th><th>p99</th></tr>", esc(sw.name))
		pts := slices.Clone(sw.points)
		slices.SortStableFunc(pts, func(a, b chart.Point) int { return cmpFloat(a.Target, b.Target) })
		for _, pt := range pts {
			p.printf("<tr><td>%g</td><td>%.1f</td><td>%s</td><td>%s</td></tr>", pt.Target, pt.Throughput, plot.Millis(pt.P50), plot.Millis(pt.P99))
		}
		p.printf("</table>")
	}
	p.chart(c)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func configSection(p *page, docs []*report.Document, names []string) {
	p.printf("<h2>Configuration and server</h2>")
	for i, d := range docs {
		p.printf("<h3>%s</h3><table><tr><th>setting</th><th>value</th></tr>", esc(names[i]))
		p.printf(`<tr><td>command</td><td class="l">txload %s %s (txload %s)</td></tr>`, esc(d.Command), esc(d.Workload), esc(d.Version))
		for _, k := range slices.Sorted(maps.Keys(d.Config)) {
			v := Redact(d.Config[k])
			if strings.Contains(strings.ToLower(k), "password") {
				v = "xxxxx"
			}
			p.printf(`<tr><td>%s</td><td class="l">%s</td></tr>`, esc(k), esc(valueText(v)))
		}
		p.printf("</table>")
		if m, ok := d.Server.(map[string]any); ok {
			p.printf("<table><tr><th>server</th><th></th></tr>")
			for _, k := range slices.Sorted(maps.Keys(m)) {
				p.printf(`<tr><td>%s</td><td class="l">%s</td></tr>`, esc(k), esc(valueText(Redact(m[k]))))
			}
			p.printf("</table>")
		}
		if len(d.MergedFrom) > 0 {
			p.printf(`<p class="note">merged from %s</p>`, esc(strings.Join(d.MergedFrom, ", ")))
		}
	}
}

func valueText(v any) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = valueText(e)
		}
		return strings.Join(parts, ", ")
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

var dsnPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// Redact hides passwords in a configuration value: in URLs
// (postgres://user:secret@host) and in key=value connection strings. The
// runs write their configuration redacted already; this is for documents
// edited or written by others.
func Redact(v any) any {
	switch x := v.(type) {
	case string:
		if u, err := url.Parse(x); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
				x = u.String()
			}
		}
		if q, err := url.Parse(x); err == nil && q.RawQuery != "" {
			vals := q.Query()
			changed := false
			for k := range vals {
				if strings.Contains(strings.ToLower(k), "password") {
					vals.Set(k, "xxxxx")
					changed = true
				}
			}
			if changed {
				q.RawQuery = vals.Encode()
				x = q.String()
			}
		}
		if strings.Contains(x, "://") {
			return x
		}
		return dsnPassword.ReplaceAllString(x, "${1}xxxxx")
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Redact(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if strings.Contains(strings.ToLower(k), "password") {
				out[k] = "xxxxx"
				continue
			}
			out[k] = Redact(e)
		}
		return out
	}
	return v
}

// seriesSection draws the documents' own figures over time (lag's
// replication lag), a chart per title with every document's lines on it.
func seriesSection(p *page, docs []*report.Document, names []string) {
	var titles []string
	charts := map[string]*plot.Chart{}
	for i, d := range docs {
		for _, sd := range d.Series {
			c := charts[sd.Title]
			if c == nil {
				c = &plot.Chart{Title: sd.Title, X: plot.Axis{Label: "time", Time: true}, Y: plot.Axis{Label: sd.Title}}
				if sd.Unit == "us" {
					c.Y.Format = plot.Millis
				}
				charts[sd.Title] = c
				titles = append(titles, sd.Title)
			}
			dashes := []string{plot.Solid, plot.Dashed, plot.Dotted, plot.Long}
			for l, line := range sd.Lines {
				s := plot.Series{Name: line, Color: plot.Palette[i%len(plot.Palette)], Dash: dashes[l%len(dashes)]}
				if len(docs) > 1 {
					s.Name = names[i] + " " + line
				}
				for _, pt := range sd.Points {
					if l < len(pt.Values) {
						s.X = append(s.X, pt.At)
						s.Y = append(s.Y, pt.Values[l])
					}
				}
				c.Series = append(c.Series, s)
			}
		}
	}
	if len(titles) == 0 {
		return
	}
	p.printf("<h2>Over time</h2>")
	for _, t := range titles {
		if c := charts[t]; c.Points() > 0 {
			p.chart(c)
		}
	}
}
