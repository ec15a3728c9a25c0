package htmlreport

import (
	"bytes"
	"html"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/report"
)

// pageText is a page's text as a reader sees it: tags out, entities read.
func pageText(page string) string {
	page = regexp.MustCompile(`(?s)<(style|title|script)>.*?</(style|title|script)>`).ReplaceAllString(page, " ")
	return html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(page, " "))
}

// figureRE is a number as the text report writes it, with its unit.
var figureRE = regexp.MustCompile(`[+-]?\d+(?:\.\d+)?(?:µs|ms|s|%|/s)?`)

// missingFigures are the figures of text (the text report) that the page
// does not show: each line's, its tables' cells included, but the open
// loop's table of the same percentiles in µs ("# op pct sojourn remote").
func missingFigures(text, page string) []string {
	shown := map[string]bool{}
	for _, f := range figureRE.FindAllString(pageText(page), -1) {
		shown[f] = true
	}
	var missing []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "# op ") || strings.HasSuffix(line, "(all µs)") {
			continue
		}
		for _, f := range figureRE.FindAllString(line, -1) {
			if !shown[f] && !slices.Contains(missing, f+" ("+strings.TrimSpace(line)+")") {
				missing = append(missing, f+" ("+strings.TrimSpace(line)+")")
			}
		}
	}
	return missing
}

// An open-loop run with an audit: the page shows every figure the text
// summary prints (txload report --output text), mean and p90, service and
// schedule lag included, the notes under its header, the open loop's
// rates and the audit's lines as the run printed them. The page used to
// show p50…max of response time alone, and the audit as raw values.
func TestPageSaysWhatTheTextSays(t *testing.T) {
	rd := runOf(t, fiveSeconds(), true)
	rd.EmissionLag = &report.HistDoc{Count: 500, P50: 57, P99: 10999, Max: 71551}
	rd.Notes = []string{"connected 8 clients in 26ms, before the measured window", "offered 1500 operations, 0 never started"}
	rd.Check = &report.CheckDoc{Values: map[string]int64{"mismatched_articles": 115, "counted_votes": 0}, Violations: []string{},
		Lines: []report.CheckLine{{Label: "articles", Value: "1000"}, {Label: "votes counted per article", Value: "not maintained (join/matview variant)"}}}
	doc := runDocument(rd)
	doc.Config["rate"] = "300"
	var text bytes.Buffer
	if err := report.WriteSummary(&text, doc); err != nil {
		t.Fatal(err)
	}
	page := render(t, doc)
	if m := missingFigures(text.String(), page); len(m) > 0 {
		t.Errorf("figures of the text not on the page:\n%s\n\nthe text:\n%s", strings.Join(m, "\n"), text.String())
	}
	pt := pageText(page)
	for _, want := range []string{"votes counted per article", "not maintained (join/matview variant)", "check: ok"} {
		if !strings.Contains(pt, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(pt, "mismatched articles") {
		t.Error("the page shows the audit's raw values, not its lines")
	}
}

// An operation that did not run (pgio's updates at --update-pct 0) has no
// charts and no invented figures: its summary line says it did not run.
// A block of figures that audits nothing (pgio's) has no "check: ok".
func TestOperationThatDidNotRun(t *testing.T) {
	rd := runOf(t, fiveSeconds(), false)
	rd.Ops = append(rd.Ops, report.OpDoc{Name: "update", Failed: map[string]int64{}, Errors: map[string]int64{}})
	for i := range rd.Intervals {
		rd.Intervals[i].Ops = append(rd.Intervals[i].Ops, report.IntervalOpDoc{Name: "update"})
	}
	rd.Check = &report.CheckDoc{Figures: true, Violations: []string{}, Lines: []report.CheckLine{{Label: "headline", Value: "LIOPS 31723/s, PIOPS 22/s, hit ratio 99.93%"}}}
	page := render(t, runDocument(rd))
	for _, c := range charts(t, page) {
		if strings.HasPrefix(c.title, "update") {
			t.Errorf("a chart %q of an operation that did not run", c.title)
		}
	}
	pt := pageText(page)
	if !strings.Contains(pt, "update : 0 ok, 0 failed, 0.0 ops/s: did not run") {
		t.Errorf("the page does not say update did not run")
	}
	if strings.Contains(pt, "check: ok") || !strings.Contains(pt, "LIOPS 31723/s, PIOPS 22/s, hit ratio 99.93%") {
		t.Errorf("a block of figures: want its lines and no check: ok")
	}
}

// An open loop that fell behind says so in red, with what it completed of
// what was offered and its schedule lag, and its throughput chart draws
// the target rate: a serializable run that delivered 553/s of 800/s used
// to show a green check and no target. One name for one quantity: the
// page says response and service time, not sojourn and remote.
func TestOpenLoopTold(t *testing.T) {
	var specs []ivSpec
	for range 5 {
		specs = append(specs, ivSpec{length: time.Second, us: spread(553, 200_000, 1_800_000)})
	}
	rd := runOf(t, specs, true)
	rd.Offered = 4000
	doc := runDocument(rd)
	doc.Config["rate"] = "800"
	page := render(t, doc)
	if !regexp.MustCompile(`<p class="verdict fail behind">FELL BEHIND: completed 553.0/s of the 800.0/s offered \(69%\); schedule lag \(actual start − intended start\) p50 \S+, p99 \S+`).MatchString(page) {
		t.Errorf("no red line saying the run fell behind")
	}
	c := chartTitled(t, charts(t, page), "op: throughput")
	y := readAxis(t, c.yticks, "", false)
	found := false
	for _, tx := range c.texts {
		found = found || (tx.class == "rule" && strings.HasPrefix(tx.s, "target 800/s"))
	}
	if !found {
		t.Errorf("the throughput chart has no target line: texts %v", c.texts)
	}
	if top := y.last(); top < 800 {
		t.Errorf("the throughput axis ends at %g: the target 800/s is not drawn", top)
	}
	pt := pageText(page)
	for _, old := range []string{"sojourn", "remote"} {
		if strings.Contains(pt, old) {
			t.Errorf("the page calls a quantity %q", old)
		}
	}
	// A run that kept up says so, quietly.
	ok := runOf(t, fiveSeconds()[:5], true)
	doc = runDocument(ok)
	doc.Config["rate"] = "300"
	if p := render(t, doc); strings.Contains(p, "FELL BEHIND") || !strings.Contains(pageText(p), "kept up: completed 300.0/s") {
		t.Errorf("a run that kept up: %q", regexp.MustCompile(`(?s)open loop at.*?</p>.*?</p>`).FindString(p))
	}
	// Under way (the live page's: nothing offered yet), the run falling
	// behind says so in red too, against its target so far; the live page
	// of a run at 216/s of 300/s with a schedule lag of 8 s said only
	// "actual ops/s 215.92 so far".
	rd.Offered = 0
	doc = runDocument(rd)
	doc.Config["rate"] = "800"
	if p := render(t, doc); !regexp.MustCompile(`<p class="verdict fail behind">FALLING BEHIND so far: completed 553.0/s of the 800/s target; schedule lag \(actual start − intended start\) p50 \S+, p99 \S+`).MatchString(p) {
		t.Errorf("a run under way falling behind: %q", regexp.MustCompile(`(?s)open loop at.*?</p>.*?</p>`).FindString(p))
	}
	ok.Offered = 0
	doc = runDocument(ok)
	doc.Config["rate"] = "300"
	if p := render(t, doc); strings.Contains(p, "BEHIND") || !strings.Contains(pageText(p), "open loop at 300/s: actual ops/s 300.00 so far") {
		t.Errorf("a run under way keeping up: %q", regexp.MustCompile(`(?s)open loop at.*?</p>.*?</p>`).FindString(p))
	}
}

// A failover's timelines, one per replication mode, are drawn in their
// runs' colours and named by them (both were blue and named after the
// workload), on the same scales (they were 0–500 and 0–300), their rates
// in /s; the modes are filed under failover, not replication lag.
func TestFailoverTimelinesComparable(t *testing.T) {
	async, sync := runOf(t, fiveSeconds()[:5], false), runOf(t, fiveSeconds()[:5], false)
	async.Labels, sync.Labels = map[string]string{"replication": "async"}, map[string]string{"replication": "sync"}
	doc := runDocument(async)
	doc.Command, doc.Runs = "failover", []report.RunDoc{async, sync}
	doc.Config["replication"] = []any{"async", "sync"}
	for i, mode := range []string{"async", "sync"} {
		sd := report.SeriesDoc{Title: "failover timeline (" + mode + ")", Axis: "transactions and attempts per second", Unit: "/s",
			Labels: map[string]string{"replication": mode}, Lines: []string{"commits", "failed attempts"}}
		for k := 1; k <= 50; k++ {
			sd.Points = append(sd.Points, report.SeriesPoint{At: float64(k) / 10, Values: []float64{float64(300 + 200*(1-i)), float64(k % 3)}})
		}
		doc.Series = append(doc.Series, sd)
	}
	page := render(t, doc)
	cs := charts(t, page)
	a, s := chartTitled(t, cs, "failover timeline (async)"), chartTitled(t, cs, "failover timeline (sync)")
	if len(a.yticks) == 0 || !slices.EqualFunc(a.yticks, s.yticks, func(p, q tick) bool { return p.label == q.label && p.px == q.px }) {
		t.Errorf("the timelines' y axes differ: %v and %v", a.yticks, s.yticks)
	}
	if !strings.HasSuffix(a.yticks[len(a.yticks)-1].label, "/s") {
		t.Errorf("the rates' ticks lack /s: %v", a.yticks)
	}
	if a.series[0].stroke == s.series[0].stroke || a.series[0].run != "replication=async" || s.series[0].run != "replication=sync" {
		t.Errorf("async drawn %s as %q, sync %s as %q: want each run's colour and name", a.series[0].stroke, a.series[0].run, s.series[0].stroke, s.series[0].run)
	}
	groups := regexp.MustCompile(`<tr class="group"><th[^>]*>([^<]*)</th></tr>(?:<tr><td>([^<]*)</td>)?`).FindAllStringSubmatch(page, -1)
	for _, g := range groups {
		if g[2] == "replication" && g[1] != "failover" {
			t.Errorf("replication is filed under %q", g[1])
		}
	}
}

// A long run at 100 ms intervals: a line over time holds at most one point
// per 3 px of its plot, the first interval is at the axis's start (not
// after a blank), and where the windows add intervals up, a band shows the
// range of their values.
func TestLongRunLegible(t *testing.T) {
	var specs []ivSpec
	for i := range 900 {
		specs = append(specs, ivSpec{length: 100 * time.Millisecond, us: spread(30+i%7, 300, int64(900+(i%11)*400))})
	}
	page := render(t, runDocument(runOf(t, specs, false)))
	c := chartTitled(t, charts(t, page), "op: throughput")
	plot := c.right - c.left
	for _, s := range c.series {
		if float64(len(s.points)) > plot/3+1 {
			t.Errorf("%s: %d points in a plot %g px wide", s.name, len(s.points), plot)
		}
		if len(s.points) > 0 && math.Abs(s.points[0].x-c.left) > 1 {
			t.Errorf("%s: the first point is at %g px, the plot starts at %g px", s.name, s.points[0].x, c.left)
		}
	}
	if !strings.Contains(page, `<polygon class="band"`) || !strings.Contains(pageText(page), "band: ok/s of the 100ms intervals of each point") {
		t.Error("no band of the intervals' range, or no key saying what it is")
	}
}

// Lines of one run that lie on each other (max = p99 in windows of few
// operations) are named under the chart: one would hide the other.
func TestCoincidingLinesSaid(t *testing.T) {
	var specs []ivSpec
	for range 5 {
		specs = append(specs, ivSpec{length: time.Second, us: []int64{900, 1000, 50_000}})
	}
	page := render(t, runDocument(runOf(t, specs, false)))
	if !strings.Contains(pageText(page), "max = p99 at every point: the max line lies on the p99 one") {
		t.Errorf("the page does not say max = p99")
	}
}

// A command's figures measured after its load (lag's catch-up) run past
// the workload's window: the window's end is marked on their chart.
func TestWindowEndMarked(t *testing.T) {
	doc := runDocument(runOf(t, fiveSeconds()[:5], false))
	sd := report.SeriesDoc{Title: "replication lag", Unit: "us", Lines: []string{"p50", "p99"}}
	for k := 1; k <= 15; k++ {
		sd.Points = append(sd.Points, report.SeriesPoint{At: float64(k), Values: []float64{1000, 3000}})
	}
	doc.Series = []report.SeriesDoc{sd}
	c := chartTitled(t, charts(t, render(t, doc)), "replication lag")
	found := false
	for _, tx := range c.texts {
		found = found || (tx.class == "rule" && tx.s == "load ended")
	}
	if !found {
		t.Error("the lag chart does not mark where the load's window ended")
	}
}
