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
	"reflect"
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

// MaxPoints bounds the points of a line over time: one point per 3 px of
// a chart's plot, so that a line's points stay apart and its statistics
// can be told from each other. Where a window holds several intervals,
// the range of their values is drawn as a band (bandStats).
const MaxPoints = (chartWidth - 92) / 3

// Options are the report's own settings.
type Options struct {
	// Title heads the page; "" = "txload report".
	Title string
	// Names are the documents' names (file names), in the order of docs.
	Names []string
	// Version is the txload that wrote the page.
	Version string
	// Live, when set, makes the page a live one, served while the run
	// goes (package live): a status line under the title, and a script
	// that asks the server for the page twice a second and shows it when
	// it changed. The page is otherwise the one --html writes.
	Live *Live
	// Cache, when set, keeps what the page drew of its runs' intervals for
	// the next drawing of the same runs (a live page, drawn again at each
	// interval: the new intervals are added up, not the run's all over
	// again).
	Cache *Cache
}

// Cache keeps the windows drawn of runs whose intervals come from a
// Source that is a comparable value (a pointer: a live run's spool), by
// that source: the windows that hold a whole group of intervals do not
// change as the run goes on, as long as the group does not. The zero
// value is ready; one drawing may use it at a time.
type Cache struct {
	runs map[any]*cachedRun
}

// cachedRun is what a drawing kept of one run.
type cachedRun struct {
	group   int
	t0      time.Time
	windows []window // the whole ones, from the first
}

// lookup is what c holds of rd for windows of group intervals from t0:
// the whole windows first, and where to put the new ones; nil c, or an
// rd it cannot key, holds nothing.
func (c *Cache) lookup(rd *report.RunDoc, group int, t0 time.Time) (ws []window, keep func([]window)) {
	if c == nil || rd.Spooled == nil || !reflect.TypeOf(rd.Spooled).Comparable() {
		return nil, func([]window) {}
	}
	if c.runs == nil {
		c.runs = map[any]*cachedRun{}
	}
	key := any(rd.Spooled)
	cr := c.runs[key]
	if cr != nil && (cr.group != group || !cr.t0.Equal(t0)) {
		cr = nil
	}
	keep = func(out []window) {
		whole := len(out)
		if whole > 0 && out[whole-1].intervals < group {
			whole--
		}
		c.runs[key] = &cachedRun{group: group, t0: t0, windows: out[:whole]}
	}
	if cr == nil {
		return nil, keep
	}
	return cr.windows, keep
}

// Live is what a live page says of itself.
type Live struct {
	// Version is the page's: the server sends a page again only when its
	// version differs from the one the browser has.
	Version uint64
	// Status says where the run is, under the title.
	Status string
	// Final: the run has ended and this is its last page; the script
	// stops asking.
	Final bool
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
	// intervals is the number of intervals it adds up.
	intervals int
	ops       []point // by the run's operation index
	// errors and retries are every operation's failed attempts, by class,
	// and retries.
	errors  [metrics.NumClasses]int64
	retries int64
}

// point is one operation in one window.
type point struct {
	ok                     int64
	response, service, lag quantiles
	// band is the range of the window's intervals' own values, when it
	// holds several: ok/s and response p99.
	band *band
}

// band is the lowest and highest of a window's intervals' values.
type band struct {
	okLo, okHi   float64 // ok operations per second
	p99Lo, p99Hi float64 // ms; NaN where no interval had an ok operation
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

// fail keeps the page's first error.
func (p *page) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

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
	c.Notes = append(c.Notes, coincide(c, p.runs > 1)...)
	c.ID = "c" + strconv.Itoa(p.charts)
	p.b.WriteString(`<figure class="chart">`)
	if err := c.SVG(&p.b); err != nil && p.err == nil {
		p.err = err
	}
	p.b.WriteString(`</figure>`)
}

func esc(s string) string { return html.EscapeString(s) }

// coincide says which lines of one run lie on each other at half their
// points or more (a max equal to the p99 in windows of few operations, a
// service time equal to the response time where nothing waited): the line
// drawn last hides the other there.
func coincide(c *plot.Chart, named bool) []string {
	var out []string
	for i, a := range c.Series {
		for _, b := range c.Series[i+1:] {
			if a.Run != b.Run || a.Stat == "" || b.Stat == "" || len(a.X) != len(b.X) {
				continue
			}
			same, both := 0, 0
			for k := range a.X {
				if k >= len(a.Y) || k >= len(b.Y) || math.IsNaN(a.Y[k]) || math.IsNaN(b.Y[k]) || a.X[k] != b.X[k] {
					continue
				}
				both++
				if a.Y[k] != 0 && math.Abs(a.Y[k]-b.Y[k]) <= 0.005*math.Max(math.Abs(a.Y[k]), math.Abs(b.Y[k])) {
					same++
				}
			}
			if both < 2 || 2*same < both {
				continue
			}
			who := ""
			if named {
				who = a.Run + ": "
			}
			at := "at every point"
			if same < both {
				at = fmt.Sprintf("at %d of %d points", same, both)
			}
			out = append(out, fmt.Sprintf("%s%s = %s %s: the %s line lies on the %s one", who, b.Stat, a.Stat, at, b.Stat, a.Stat))
		}
	}
	return out
}

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
			ws, part, err := windows(rd, warmup, opts.Cache)
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
	p.printf("<title>%s</title><style>%s</style>", esc(title), css)
	if l := opts.Live; l != nil {
		p.printf(`<style>%s</style><script>%s</script></head><body data-live-version="%d">`, liveCSS, liveScript(l), l.Version)
	} else {
		p.printf("</head><body>")
	}
	p.printf("<h1>%s</h1>", esc(title))
	if l := opts.Live; l != nil {
		p.printf(`<p id="live-status" class="live">%s</p>`, esc(l.Status))
	}
	p.printf(`<p class="sub">%s</p>`, esc(subtitle(docs, names, opts.Version)))
	failedLines(p, docs)
	if len(runs) > 0 {
		summarySection(p, runs)
		comparison(p, runs)
	}
	tablesSection(p, docs)
	seriesSection(p, docs, names, colors, runs)
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

// liveCSS styles a live page's status line.
const liveCSS = `p.live{background:#eef4fb;border-left:4px solid #4e79a7;padding:6px 10px;margin:4px 0 12px;font-size:14px}`

// liveScript asks the server for the page twice a second ("live?v=N": the
// server answers 204 when its page is still version N), and shows a new
// one in place of the body; it stops once the page is final, and says so
// when the server is gone. No library, no request but to the page's own
// server.
func liveScript(l *Live) string {
	return fmt.Sprintf(`(function(){var v=%d,fin=%t,id=Math.random().toString(36).slice(2);
function say(t){var e=document.getElementById("live-status");if(e)e.textContent=t;}
function poll(){if(fin)return;fetch("live?v="+v+"&id="+id,{cache:"no-store"}).then(function(r){
if(!r.ok)throw new Error("HTTP "+r.status);fin=r.headers.get("X-Live-Final")==="1";if(r.status===204)return null;
v=+r.headers.get("X-Live-Version");return r.text();}).then(function(t){if(t!==null){var d=new DOMParser().parseFromString(t,"text/html");
document.title=d.title;document.body.replaceWith(d.body);}setTimeout(poll,500);}).catch(function(e){
say("The run's server does not answer ("+e.message+"): this is the last state it sent.");});}
setTimeout(poll,500);})();`, l.Version, l.Final)
}

const css = `body{font-family:system-ui,sans-serif;margin:16px auto;max-width:1180px;color:#222;padding:0 12px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}.sub{color:#666;margin:0 0 12px;overflow-wrap:anywhere}
table{border-collapse:collapse;font-size:13px;margin:6px 0 12px}th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f6f6f6}td.l,th.l{text-align:left;overflow-wrap:anywhere}
tr.group th{background:#fff;text-align:left;padding-top:10px;color:#555;border-bottom:1px solid #ccc}
tr.differs td{background:#fff8e1}td.ratio{color:#555}td.ratio.far{color:#222;font-weight:bold}
.swatch{display:inline-block;width:10px;height:10px;margin-right:6px;border-radius:2px}
.pass{color:#1a7f37;font-weight:bold}.fail{color:#b00;font-weight:bold}.verdict{font-size:15px;margin:8px 0}
figure.chart{display:inline-block;margin:4px 8px 8px 0;vertical-align:top;max-width:100%}svg.plot{max-width:100%;height:auto;display:block}
.note{color:#666;font-size:13px}p,li{overflow-wrap:anywhere}ul.notes{margin:4px 0;padding-left:20px;font-size:14px}
div.runs{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(560px,100%),1fr));gap:0 28px}section.run{min-width:0}section.run th,section.run td{padding:3px 5px}p.head{margin:6px 0}p.openloop{font-size:14px;margin:8px 0 2px}p.op{margin:12px 0 2px}p.opnote{margin:0 0 8px;font-size:13px;color:#444}p.tline{margin:3px 0;font-size:14px}
pre{background:#f6f6f6;padding:8px;font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}
@media (max-width:900px){body{padding:0 8px}th,td{padding:2px 5px;font-size:12px}}`

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
func windows(rd *report.RunDoc, warmup time.Duration, cache *Cache) ([]window, *partial, error) {
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
	cached, keep := cache.lookup(rd, group, t0)
	done := copy(out, cached) // windows drawn before, whole: their intervals are skipped
	wa := startWindows(rd, out, len(out)-done, t0)
	var batch windowBatch
	m := 0 // measured intervals seen
	err = rd.EachInterval(func(n int, iv *report.IntervalDoc) error {
		if iv.Warmup || m >= measured {
			return nil
		}
		if m < done*group {
			m++
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
	if err == nil {
		keep(out)
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

// startWindows starts the workers that fill out's windows, todo of them.
func startWindows(rd *report.RunDoc, out []window, todo int, t0 time.Time) *windowAdder {
	workers := max(min(runtime.GOMAXPROCS(0), todo), 1)
	wa := &windowAdder{jobs: make(chan windowBatch, workers)}
	for range workers {
		wa.wg.Go(func() {
			snap := metrics.NewSnapshot(rd.Names())
			add := rd.Adder()
			bands := newBandScratch()
			for b := range wa.jobs {
				if wa.failed() != nil {
					continue
				}
				if err := addWindow(add, snap, b, out, t0, bands); err != nil {
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

// addWindow adds up batch b into window out[b.k], and the range of its
// intervals' own values when it holds several (bands: a Sum and a
// histogram to decode them in).
func addWindow(add *report.IntervalAdder, snap *metrics.Snapshot, b windowBatch, out []window, t0 time.Time, bands *bandScratch) error {
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
	w := windowOf(snap, end.Sub(t0).Seconds(), end.Sub(from).Seconds())
	w.intervals = len(b.ivs)
	if len(b.ivs) > 1 {
		if err := bands.add(&w, b.ivs, t0); err != nil {
			return err
		}
	}
	out[b.k] = w
	return nil
}

// bandScratch decodes one interval's histogram at a time, for bands.
type bandScratch struct {
	sum *metrics.Sum
	h   *hdr.Histogram
}

func newBandScratch() *bandScratch {
	return &bandScratch{sum: metrics.NewSum(), h: metrics.NewHistogram()}
}

// add sets w's bands: the lowest and highest ok/s and response p99 of its
// intervals ivs, each operation's.
func (bs *bandScratch) add(w *window, ivs []report.IntervalDoc, t0 time.Time) error {
	for i := range w.ops {
		bd := &band{okLo: math.Inf(1), okHi: math.Inf(-1), p99Lo: math.NaN(), p99Hi: math.NaN()}
		for j := range ivs {
			iv := &ivs[j]
			if i >= len(iv.Ops) {
				continue
			}
			from := iv.Start
			if from.Before(t0) {
				from = t0
			}
			if secs := iv.End.Sub(from).Seconds(); secs > 0 {
				r := float64(iv.Ops[i].OK) / secs
				bd.okLo, bd.okHi = math.Min(bd.okLo, r), math.Max(bd.okHi, r)
			}
			enc := iv.Ops[i].Response
			if enc == "" || iv.Ops[i].OK == 0 {
				continue
			}
			bs.sum.Reset()
			bs.h.Reset()
			if err := bs.sum.Add(enc); err != nil {
				return fmt.Errorf("interval at %s, %s response: %w", iv.End.UTC().Format(time.RFC3339Nano), iv.Ops[i].Name, err)
			}
			if err := bs.sum.AddTo(bs.h); err != nil {
				return err
			}
			q := quantile(bs.h, 99)
			if math.IsNaN(bd.p99Lo) || q < bd.p99Lo {
				bd.p99Lo = q
			}
			if math.IsNaN(bd.p99Hi) || q > bd.p99Hi {
				bd.p99Hi = q
			}
		}
		if bd.okLo <= bd.okHi {
			w.ops[i].band = bd
		}
	}
	return nil
}

func opNames(runs []*run) []string {
	var names []string
	for _, r := range runs {
		for _, o := range r.total.Ops {
			if ran(o) && !slices.Contains(names, o.Name) {
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
			if len(t.Rows) == 0 && len(t.Lines) == 0 {
				continue
			}
			p.printf("<h2>%s</h2>", esc(t.Title))
			for _, l := range t.Lines {
				if failing(l) || strings.Contains(l, "FAILED") || strings.Contains(l, ": FAIL (") {
					p.printf(`<p class="tline fail">%s</p>`, esc(l))
				} else {
					p.printf(`<p class="tline">%s</p>`, esc(l))
				}
			}
			p.printf("<table>")
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
