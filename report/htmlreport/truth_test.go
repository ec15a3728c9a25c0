package htmlreport

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
)

// These tests read the charts back from the page's SVG (svg_test.go) and
// check them against the documents: every axis labelled in its data's
// unit, no partial interval drawn as a spike, no sweep step drawn where it
// measured nothing, and the sweep's verdict on the page.

// ivSpec is one interval of a made-up run: its length, its operations'
// response times in µs, and its serialization failures.
type ivSpec struct {
	length time.Duration
	us     []int64
	errors int
	// warmup operations (of 1 ms) before us; all warm-up marks the
	// interval as the warm-up's.
	warmup int
	all    bool
}

// spread is n response times from lo to hi µs.
func spread(n int, lo, hi int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = lo + (hi-lo)*int64(i)/int64(max(n-1, 1))
	}
	return out
}

// runOf records specs as a run of one operation, "op": service time half
// the response time, the rest schedule lag.
func runOf(t *testing.T, specs []ivSpec, offered bool) report.RunDoc {
	t.Helper()
	start := time.Unix(1_800_000_000, 0)
	g := metrics.NewRegistry([]string{"op"}, start)
	r := g.NewRecorder()
	ivs := newIntervals(t)
	end := start
	for _, s := range specs {
		for range s.warmup {
			r.Success(0, false, time.Millisecond, time.Millisecond, 0, 1)
		}
		for _, us := range s.us {
			d := time.Duration(us) * time.Microsecond
			r.Success(0, true, d, d/2, d/2, 1)
		}
		for range s.errors {
			r.Error(0, true, metrics.Serialization)
		}
		end = end.Add(s.length)
		iv, err := g.Tick(end)
		if err != nil {
			t.Fatal(err)
		}
		ivs.Add(iv, end, s.all)
	}
	total := g.Total()
	total.Elapsed = end.Sub(start)
	rd, err := report.NewRunDoc(total)
	if err != nil {
		t.Fatal(err)
	}
	rd.Intervals = collected(t, ivs)
	if offered {
		rd.Offered = total.Ops[0].OK
	}
	return rd
}

// fiveSeconds is a 5 s run of 1 s intervals at rising rates and
// latencies, then the 10 ms in which the one operation still in flight
// completed (slowly).
func fiveSeconds() []ivSpec {
	var specs []ivSpec
	for i := range 5 {
		specs = append(specs, ivSpec{length: time.Second, us: spread(100*(i+1), 200, int64(2000*(i+1))), errors: 3 * i})
	}
	return append(specs, ivSpec{length: 10 * time.Millisecond, us: []int64{40_000}, errors: 2})
}

func runDocument(rd report.RunDoc) *report.Document {
	return &report.Document{Version: "test", Command: "run", Workload: "w", Runs: []report.RunDoc{rd},
		Config: map[string]any{"concurrency": "8", "rate": "0", "duration": "5s"},
		Server: map[string]any{"dialect": "PostgreSQL", "version": "18.3"}}
}

func render(t *testing.T, docs ...*report.Document) string {
	t.Helper()
	names := make([]string, len(docs))
	for i := range docs {
		names[i] = fmt.Sprintf("run%d.json", i+1)
	}
	var b bytes.Buffer
	if err := Write(&b, docs, Options{Names: names}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// p99 is what HDR says the 99th percentile of us is, in ms.
func p99(t *testing.T, us []int64) float64 {
	h := metrics.NewHistogram()
	for _, v := range us {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	return float64(h.ValueAtQuantile(99)) / 1000
}

// Each axis's ticks are in its data's unit: read back through its tick
// labels, every point is the value the document holds. The replication
// lag (recorded in µs, peaking at 17.44 ms) reads 17.44 ms, not 17.44 s;
// throughput reads each interval's operations per second; the p99 line
// each interval's p99.
func TestTicksInTheDataUnit(t *testing.T) {
	lagDoc := &report.Document{Version: "test", Command: "lag", Workload: "tpcb-like",
		Series: []report.SeriesDoc{{Title: "replication lag", Unit: "us", Lines: []string{"p50", "p99", "max"}}}}
	maxes := []float64{3100, 17440, 5200, 4100, 2900}
	for i, m := range maxes {
		lagDoc.Series[0].Points = append(lagDoc.Series[0].Points, report.SeriesPoint{At: float64(i + 1), Values: []float64{m / 4, m / 2, m}})
	}
	specs := fiveSeconds()
	cs := charts(t, render(t, lagDoc, runDocument(runOf(t, specs, true))))

	lag := chartTitled(t, cs, "replication lag")
	y := readAxis(t, lag.yticks, "ms", false)
	if top := y.last(); top < 17.44 || top > 2*17.44 {
		t.Errorf("replication lag: the y axis's ticks run to %q for a maximum of 17.44 ms: ticks %v", lag.yticks[len(lag.yticks)-1].label, lag.yticks)
	}
	x := readAxis(t, lag.xticks, "s", false)
	for i, p := range lag.values(lag.seriesNamed(t, "run1.json max"), x, y) {
		if want := maxes[i] / 1000; !near(p.y, want, 0.02) || !near(p.x, float64(i+1), 0.01) {
			t.Errorf("replication lag max, point %d reads (%.3f s, %.3f ms), want (%d s, %.3f ms)", i, p.x, p.y, i+1, want)
		}
	}

	tp := chartTitled(t, cs, "op: throughput")
	x, y = readAxis(t, tp.xticks, "s", false), readAxis(t, tp.yticks, "", false)
	for i, p := range tp.values(tp.series[0], x, y) {
		if want := float64(len(specs[i].us)); !near(p.y, want, 0.02) {
			t.Errorf("throughput, point %d reads %.1f ops/s, want %.0f", i, p.y, want)
		}
	}

	lat := chartTitled(t, cs, "op: response time")
	if !strings.Contains(lat.yLabel, "log scale") {
		t.Fatalf("response time axis %q", lat.yLabel)
	}
	x, y = readAxis(t, lat.xticks, "s", false), readAxis(t, lat.yticks, "ms", true)
	for i, p := range lat.values(lat.seriesNamed(t, "w p99"), x, y) {
		if want := p99(t, specs[i].us); !near(p.y, want, 0.03) {
			t.Errorf("response time p99, point %d reads %.3f ms, want %.3f ms", i, p.y, want)
		}
	}
}

// A run's last interval, 10 ms long (the operation in flight at the end),
// is not drawn as a full interval: every chart over time ends at the
// measured 5 s, no point lies beyond it, and the page says what was left
// out.
func TestPartialIntervalIsNotASpike(t *testing.T) {
	specs := fiveSeconds()
	html := render(t, runDocument(runOf(t, specs, true)))
	cs := charts(t, html)
	overTime := 0
	for _, c := range cs {
		if !strings.HasPrefix(c.xLabel, "time") {
			continue
		}
		overTime++
		x := readAxis(t, c.xticks, "s", false)
		if end := x.value(c.right); end > 5.001 {
			t.Errorf("%s: the x axis runs to %.3f s (ticks %v), past the measured 5 s", c.title, end, c.xticks)
		}
		for _, s := range c.series {
			for _, p := range s.points {
				if at := x.value(p.x); at > 5.001 {
					t.Errorf("%s: %s has a point at %.3f s, past the measured 5 s", c.title, s.name, at)
				}
			}
		}
	}
	if overTime < 4 {
		t.Fatalf("%d charts over time, want throughput, response time, sojourn, lag, failures", overTime)
	}
	tp := chartTitled(t, cs, "op: throughput")
	x, y := readAxis(t, tp.xticks, "s", false), readAxis(t, tp.yticks, "", false)
	vs := tp.values(tp.series[0], x, y)
	if last := vs[len(vs)-1]; !near(last.y, 500, 0.02) {
		t.Errorf("the last throughput point reads %.1f ops/s, want the 5th second's 500", last.y)
	}
	if !strings.Contains(html, "the last interval, 5.000 s to 5.010 s") || !strings.Contains(html, "left out") {
		t.Errorf("the page does not say that the last 10 ms are left out")
	}
}

// A document that keeps the drain apart (what was in flight when the
// window ended) has no partial interval to leave out: the page says what
// the drain held, as the text summary does, and draws the window alone.
func TestDrainApart(t *testing.T) {
	rd := runOf(t, fiveSeconds(), true)
	n := len(rd.Intervals)
	rd.Drain, rd.Intervals = &rd.Intervals[n-1], rd.Intervals[:n-1]
	html := render(t, runDocument(rd))
	if want := "drain: 1 operation in flight when the window ended, not in the figures of this page: 1 committed and 0 failed in the 10ms after it, 0 abandoned"; !strings.Contains(html, want) {
		t.Errorf("the page lacks %q", want)
	}
	if strings.Contains(html, "left out of them") || strings.Contains(html, "not drawn") {
		t.Errorf("the page says an interval is left out: there is none")
	}
	c := chartTitled(t, charts(t, html), "op: throughput")
	if end := readAxis(t, c.xticks, "s", false).value(c.right); !near(end, 5, 0.001) {
		t.Errorf("the axis ends at %.3f s, want the window's 5 s", end)
	}
}

// A warm-up of 1.5 s ends in the middle of the second interval: the time
// axis starts there, and that interval's throughput is over its measured
// half second (not 250 ok over the whole second: a dip that was not).
func TestWarmupEndsInsideAnInterval(t *testing.T) {
	specs := []ivSpec{{length: time.Second, warmup: 500, all: true}, {length: time.Second, warmup: 250, us: spread(250, 300, 900)}}
	for range 3 {
		specs = append(specs, ivSpec{length: time.Second, us: spread(500, 300, 900)})
	}
	specs = append(specs, ivSpec{length: 500 * time.Millisecond, us: spread(250, 300, 900)})
	d := runDocument(runOf(t, specs, false))
	d.Config["warmup"] = "1.5s"
	c := chartTitled(t, charts(t, render(t, d)), "op: throughput")
	x, y := readAxis(t, c.xticks, "s", false), readAxis(t, c.yticks, "", false)
	vs := c.values(c.series[0], x, y)
	want := []xy{{0.5, 500}, {1.5, 500}, {2.5, 500}, {3.5, 500}, {4, 500}}
	if len(vs) != len(want) {
		t.Fatalf("%d points %v, want %v", len(vs), vs, want)
	}
	for i, p := range vs {
		if !near(p.x, want[i].x, 0.01) || !near(p.y, want[i].y, 0.02) {
			t.Errorf("point %d reads (%.2f s, %.1f ops/s), want (%g s, %g ops/s)", i, p.x, p.y, want[i].x, want[i].y)
		}
	}
	if end := x.value(c.right); !near(end, 4, 0.001) {
		t.Errorf("the axis ends at %.3f s, want the measured 4 s", end)
	}
}

// A command's own figures over time (lag's) follow the same rule: a last
// point 30 ms after the one before is not drawn as a whole interval, and
// its values are written under the chart.
func TestSeriesPartialPoint(t *testing.T) {
	d := &report.Document{Version: "test", Command: "lag", Workload: "tpcb-like",
		Series: []report.SeriesDoc{{Title: "replication lag", Unit: "us", Lines: []string{"p50", "max"}}}}
	for i := range 5 {
		d.Series[0].Points = append(d.Series[0].Points, report.SeriesPoint{At: float64(i + 1), Values: []float64{1000, 4000}})
	}
	d.Series[0].Points = append(d.Series[0].Points, report.SeriesPoint{At: 5.03, Values: []float64{700, 1200}})
	c := chartTitled(t, charts(t, render(t, d)), "replication lag")
	x := readAxis(t, c.xticks, "s", false)
	if end := x.value(c.right); end > 5.001 {
		t.Errorf("the x axis runs to %.3f s, past the last whole interval", end)
	}
	var notes []string
	for _, tx := range c.texts {
		if tx.class == "note" {
			notes = append(notes, tx.s)
		}
	}
	if n := strings.Join(notes, " "); !strings.Contains(n, "not drawn: the last 30.00ms") || !strings.Contains(n, "p50 700µs, max 1.2ms") {
		t.Errorf("notes %q", notes)
	}
}

// sweepStep is a made-up sweep step: the target, and either response
// times or nothing started.
func sweepStep(t *testing.T, target string, us []int64) report.RunDoc {
	t.Helper()
	var rd report.RunDoc
	if us == nil { // nothing started: saturated
		rd = runOf(t, []ivSpec{{length: 2 * time.Second}}, false)
		rd.Offered, rd.Unstarted, rd.Saturated = 4000, 4000, true
	} else {
		rd = runOf(t, []ivSpec{{length: time.Second, us: us}}, true)
	}
	rd.Labels = map[string]string{"target": target}
	return rd
}

// sweepDoc is a sweep of 4 steps: 1000/s passes, 2000/s starts nothing
// (saturated), 1410/s passes, 1680/s breaks the SLO with a p99 just under
// 100 ms (drawn at the top of the chart).
func sweepDoc(t *testing.T) *report.Document {
	t.Helper()
	return &report.Document{Version: "test", Command: "sweep", Workload: "select-only",
		Config: map[string]any{"slo": "p99<=50ms", "max-error-rate": "0.01", "start": "1000", "factor": "2", "precision": "0.02", "max-steps": "4", "concurrency": "8"},
		Runs: []report.RunDoc{
			sweepStep(t, "1000", spread(1000, 500, 8000)),
			sweepStep(t, "2000", nil),
			sweepStep(t, "1410", spread(1410, 700, 30000)),
			sweepStep(t, "1680", spread(1680, 900, 96000)),
		}}
}

// A step where nothing completed is not drawn at (0 ops/s, 0.001 ms), and
// the chart says so; the page gives each step's verdict, the maximum rate
// found and the SLO; failing steps are hollow marks; the labels are
// within the chart.
func TestSweepPage(t *testing.T) {
	html := render(t, sweepDoc(t))
	c := chartTitled(t, charts(t, html), "sweep")
	x, y := readAxis(t, c.xticks, "", false), readAxis(t, c.yticks, "ms", true)
	marks, hollow := 0, 0
	for _, s := range c.series {
		hollow += s.hollow
		for _, m := range s.marks {
			marks++
			if v := x.value(m.x); v < 100 {
				t.Errorf("%s: a step is drawn at %.1f ops/s (y %.4f ms): nothing completed in it", s.name, v, y.value(m.y))
			}
		}
	}
	if marks != 6 || hollow != 2 {
		t.Errorf("%d marks, %d hollow; want 3 steps drawn × (p50, p99), the failing 1680/s hollow on both", marks, hollow)
	}
	notes := ""
	for _, tx := range c.texts {
		if tx.class == "note" {
			notes += tx.s + " "
		}
		// The labels are within the plot (and not under its clip's edge).
		if tx.class == "label" || tx.class == "rule" {
			w := 0.6 * tx.size * float64(len([]rune(tx.s)))
			x0 := tx.x
			switch tx.anchor {
			case "end":
				x0 -= w
			case "middle":
				x0 -= w / 2
			}
			if x0 < c.left || x0+w > c.right || tx.y-tx.size < c.top || tx.y > c.bottom {
				t.Errorf("label %q at (%.0f, %.0f) is outside the plot [%.0f, %.0f]×[%.0f, %.0f]", tx.s, tx.x, tx.y, c.left, c.right, c.top, c.bottom)
			}
		}
	}
	if !strings.Contains(notes, "2000/s") {
		t.Errorf("the chart does not say that the 2000/s step is not drawn: notes %q", notes)
	}
	for _, want := range []string{
		"p99&lt;=50ms",
		"maximum sustainable rate: 1410 ops/s (SLO p99&lt;=50ms) (between 1410 and 1680: stopped after --max-steps 4 before --precision 0.02)",
		"FAIL</span>: saturated: 4000 of 4000 never started; completed 0.0% of the 4000 offered; no operation completed",
		"FAIL</span>: p99 95.039ms violates p99&lt;=50ms",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the sweep's page lacks %q", want)
		}
	}
	// A step's latencies read as its verdict's: the p99 cell of the
	// failing step is the figure its reason gives (95.039ms), not a
	// rounding of it.
	rows := regexp.MustCompile(`<tr><td>\d+</td><td>[^<]*</td><td>[^<]*</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td><td>\d+</td><td class="l">(.*?)</td></tr>`).FindAllStringSubmatch(html, -1)
	if len(rows) != 4 {
		t.Fatalf("%d step rows, want 4", len(rows))
	}
	violated := 0
	for _, r := range rows {
		if m := regexp.MustCompile(`p99 (\S+) violates`).FindStringSubmatch(r[4]); m != nil {
			violated++
			if r[2] != m[1] {
				t.Errorf("the step's p99 cell reads %s beside a reason that says %s", r[2], m[1])
			}
		}
	}
	if violated != 1 {
		t.Errorf("%d steps fail on p99, want 1", violated)
	}
	if n := strings.Count(html, `<span class="pass">PASS</span>`); n != 2 {
		t.Errorf("%d steps PASS, want 2", n)
	}
	if !regexp.MustCompile(`max 1410/s`).MatchString(html) {
		t.Errorf("the chart does not mark the maximum found, 1410/s")
	}
}

// Two runs on one page: a comparison table gives each figure of the
// second beside the first's and their ratio.
func TestComparison(t *testing.T) {
	a := runOf(t, fiveSeconds()[:5], false)
	var slower []ivSpec
	for _, s := range fiveSeconds()[:5] {
		us := make([]int64, len(s.us)/2)
		for i := range us {
			us[i] = 3 * s.us[2*i]
		}
		slower = append(slower, ivSpec{length: s.length, us: us, errors: s.errors * 4})
	}
	b := runOf(t, slower, false)
	html := render(t, runDocument(a), runDocument(b))
	table := regexp.MustCompile(`(?s)<h2>Comparison</h2>.*?</table>`).FindString(html)
	if table == "" {
		t.Fatal("no comparison table")
	}
	ta, _ := a.Total()
	tb, _ := b.Total()
	oa, ob := ta.Ops[0], tb.Ops[0]
	for _, row := range []struct {
		name string
		a, b float64
	}{
		{"ok operations/s", float64(oa.OK) / ta.Elapsed.Seconds(), float64(ob.OK) / tb.Elapsed.Seconds()},
		{"p50", float64(oa.Response.ValueAtQuantile(50)), float64(ob.Response.ValueAtQuantile(50))},
		{"p99", float64(oa.Response.ValueAtQuantile(99)), float64(ob.Response.ValueAtQuantile(99))},
		{"p99.9", float64(oa.Response.ValueAtQuantile(99.9)), float64(ob.Response.ValueAtQuantile(99.9))},
		{"failed attempts", float64(oa.ErrorsTotal()), float64(ob.ErrorsTotal())},
	} {
		re := regexp.MustCompile(`<tr><td>` + regexp.QuoteMeta(row.name) + `</td><td>[^<]*</td><td>[^<]*</td><td class="[^"]*">([^<]*)</td></tr>`)
		m := re.FindStringSubmatch(table)
		if want := fmt.Sprintf("%.2f×", row.b/row.a); m == nil || m[1] != want {
			t.Errorf("comparison %s: %q, want the ratio %s\n%s", row.name, m, want, table)
		}
	}
	for _, row := range []string{"failed operations", "retries"} {
		if !strings.Contains(table, "<td>"+row+"</td>") {
			t.Errorf("comparison lacks %s", row)
		}
	}
}

// The configuration shows the settings that shaped the run, in groups,
// and the server's identity and settings; not the outputs, nor switches
// left off, nor what does not apply (the embedded server's version with
// --url, the throwaway server's URL).
func TestConfiguration(t *testing.T) {
	settings := map[string]any{"default_transaction_isolation": "read committed", "synchronous_commit": "off", "max_connections": "300", "shared_buffers": "1GB", "fsync": "off"}
	for _, tc := range []struct {
		name      string
		embedded  bool
		want, not []string
	}{
		{"by url", false,
			[]string{`<td>server</td><td class="l">PostgreSQL 18.3</td>`, "<td>urls</td><td class=\"l\">postgres://u:xxxxx@h/db</td>"},
			[]string{"<td>embedded-version</td>", "secret"}},
		{"embedded", true,
			[]string{`<td>server</td><td class="l">PostgreSQL 18.3 (embedded, started by txload)</td>`, `<td>embedded-version</td><td class="l">18</td>`},
			[]string{"<td>urls</td>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := runDocument(runOf(t, fiveSeconds()[:2], false))
			d.Config = map[string]any{"concurrency": "8", "rate": "500", "arrival": "poisson", "duration": "5s", "help": "false", "cpuprofile": "",
				"json": "out.json", "latency-limit": "0s", "isolation": "serializable", "accounts": "1000", "embedded-version": "18",
				"urls": []any{"postgres://u:secret@h/db"}}
			d.Server = map[string]any{"dialect": "PostgreSQL", "version": "18.3", "banner": "PostgreSQL 18.3 on x86_64", "embedded": tc.embedded, "settings": settings}
			html := render(t, d)
			table := regexp.MustCompile(`(?s)<table class="config">.*?</table>`).FindString(html)
			for _, want := range append([]string{"<th colspan=\"2\">load</th>", "<th colspan=\"2\">workload</th>", "<th colspan=\"2\">target</th>", "<th colspan=\"2\">server</th>",
				`<td>mode</td><td class="l">open loop at 500 ops/s (poisson), 8 workers</td>`, `<td>isolation</td><td class="l">serializable</td>`,
				`<td>default isolation</td><td class="l">read committed</td>`, `<td>synchronous_commit</td><td class="l">off</td>`,
				`<td>max_connections</td><td class="l">300</td>`, `<td>shared_buffers</td><td class="l">1GB</td>`}, tc.want...) {
				if !strings.Contains(table, want) {
					t.Errorf("the configuration lacks %q", want)
				}
			}
			for _, not := range append([]string{"<td>help</td>", "<td>cpuprofile</td>", "<td>json</td>", "<td>latency-limit</td>"}, tc.not...) {
				if strings.Contains(table, not) {
					t.Errorf("the configuration shows %q", not)
				}
			}
		})
	}
}

// Each run has one colour in every chart, each statistic one line style in
// every chart and run, and within a chart no two statistics of a run look
// alike.
func TestStyles(t *testing.T) {
	html := render(t, runDocument(runOf(t, fiveSeconds(), true)), runDocument(runOf(t, fiveSeconds(), true)))
	runColor, statStyle := map[string]string{}, map[string]string{}
	for _, c := range charts(t, html) {
		if strings.HasPrefix(c.title, "sweep") {
			continue
		}
		seen := map[string]string{}
		for _, s := range c.series {
			if s.run == "" || s.stat == "" {
				t.Fatalf("%s: series %q does not say its run and statistic", c.title, s.name)
			}
			if prev, ok := runColor[s.run]; ok && prev != s.stroke {
				t.Errorf("%s: run %s drawn in %s here, %s elsewhere", c.title, s.run, s.stroke, prev)
			}
			runColor[s.run] = s.stroke
			style := s.dash + "/" + s.width
			if prev, ok := statStyle[s.stat]; ok && prev != style {
				t.Errorf("%s: %s drawn %q here, %q elsewhere", c.title, s.stat, style, prev)
			}
			statStyle[s.stat] = style
			if other, ok := seen[s.run+" "+s.dash]; ok && other != s.stat {
				t.Errorf("%s: %s and %s of %s have the same dashes %q", c.title, other, s.stat, s.run, s.dash)
			}
			seen[s.run+" "+s.dash] = s.stat
		}
	}
	if len(runColor) != 2 || runColor["run1.json"] == runColor["run2.json"] {
		t.Errorf("run colours %v: want two distinct", runColor)
	}
}

// What the workload's audit found is on the page, as the text report
// prints it: each VIOLATION in red, or "check: ok", with the audit's
// lines; an interrupted run and a saturated open loop say so in red under
// their headers. (The page used to show none of it: a run whose check
// failed looked like any other.)
func TestChecksShown(t *testing.T) {
	bad := runOf(t, fiveSeconds(), true)
	bad.Interrupted, bad.InterruptedBy = true, "SIGINT"
	bad.Check = &report.CheckDoc{Values: map[string]int64{"rows": 5023, "committed": 5021, "lost_updates": 7},
		Violations: []string{"the server holds 5023 rows, 2 more than txload saw commit <&>"}}
	good := runOf(t, fiveSeconds(), true)
	good.Offered, good.Unstarted, good.Saturated = 100, 40, true
	good.Check = &report.CheckDoc{Values: map[string]int64{"total balance": 100000}, Violations: []string{},
		Lines: []report.CheckLine{{Label: "total balance", Value: "100000 (as expected)"}}}
	html := render(t, runDocument(bad), runDocument(good))
	run1, run2 := strings.Index(html, "run1.json</h3>"), strings.Index(html, "run2.json</h3>")
	if run1 < 0 || run2 < run1 {
		t.Fatalf("no block per run: run1.json at %d, run2.json at %d", run1, run2)
	}
	for _, want := range []struct {
		s     string
		inRun int // 1, 2, or 0: after both
	}{
		{`<li class="fail">INTERRUPTED: the figures cover what ran before SIGINT</li>`, 1},
		{`<span class="fail">VIOLATION: the server holds 5023 rows, 2 more than txload saw commit &lt;&amp;&gt;</span>`, 1},
		{`<tr><td>committed</td><td class="l">5021</td></tr>`, 1},
		{`<li class="fail">SATURATED: 40 of 100 scheduled operations never started</li>`, 2},
		{`<tr><td>total balance</td><td class="l">100000 (as expected)</td></tr>`, 2},
		{`<span class="pass">check: ok</span>`, 2},
		{`<tr><td>committed</td><td>5021</td><td></td></tr><tr><td>lost updates</td><td>7</td><td></td></tr><tr><td>rows</td><td>5023</td><td></td></tr><tr><td>total balance</td><td></td><td>100000</td></tr>`, 0},
	} {
		at := strings.Index(html, want.s)
		switch {
		case at < 0:
			t.Errorf("the page lacks %s", want.s)
		case want.inRun == 1 && (at < run1 || at > run2), want.inRun == 2 && at < run2:
			t.Errorf("%s is not in run%d.json's block", want.s, want.inRun)
		}
	}
	if strings.Contains(html[run1:run2], `check: ok`) {
		t.Error("the run with a violation says check: ok")
	}
	if plain := render(t, runDocument(runOf(t, fiveSeconds(), true))); strings.Contains(plain, "check: ok") || strings.Contains(plain, `class="fail`) {
		t.Error("a run with no audit and nothing wrong shows a verdict")
	}
}

// A command's own verdict on its figures (failover's lost commits) heads
// the page in red, above the summary.
func TestFailedLineOnTop(t *testing.T) {
	doc := runDocument(runOf(t, fiveSeconds(), true))
	doc.Tables = []report.TableDoc{{Title: "Failover (async)", Rows: [][]string{{"", ""}, {"lost", "3"}},
		Failed: "FAILED (async): 3 acknowledged commits lost by the failover"}}
	html := render(t, doc)
	line := `<p class="verdict fail">FAILED (async): 3 acknowledged commits lost by the failover</p>`
	at, summary := strings.Index(html, line), strings.Index(html, "<h2>Summary")
	if at < 0 || summary < 0 || at > summary {
		t.Errorf("the failed line at %d, the summary at %d: want the line above the summary", at, summary)
	}
	doc.Tables[0].Failed = ""
	if strings.Contains(render(t, doc), `<p class="verdict fail">`) {
		t.Error("a red line with nothing failed")
	}
}
