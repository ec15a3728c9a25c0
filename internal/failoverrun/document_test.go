package failoverrun

import (
	"bytes"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/htmlreport"
	"github.com/txload/txload/workload"
	"github.com/txload/txload/workload/all"
)

// The timeline marks each moment that happened, in seconds from the
// load's start: the promotion's request too (the embedded pair's), and
// nothing that did not happen.
func TestEvents(t *testing.T) {
	start := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name string
		r    Result
		want []report.SeriesEvent
	}{
		{"embedded, held", Result{HeldAt: at(2000), FaultSent: at(4000), PromoteRequested: at(4300), NewPrimary: at(4371), FirstNew: at(4365)},
			[]report.SeriesEvent{{At: 2, Label: "standby held"}, {At: 4, Label: "fault"}, {At: 4.3, Label: "promotion requested"},
				{At: 4.371, Label: "new primary"}, {At: 4.365, Label: "first commit"}}},
		{"cluster, command", Result{FaultSent: at(10000), NewPrimary: at(12500), FirstNew: at(12600)},
			[]report.SeriesEvent{{At: 10, Label: "fault"}, {At: 12.5, Label: "new primary"}, {At: 12.6, Label: "first commit"}}},
		{"interrupted before the fault", Result{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.startAt = start
			got := events(&tt.r)
			if !slices.EqualFunc(got, tt.want, func(a, b report.SeriesEvent) bool {
				return a.Label == b.Label && a.At > b.At-1e-9 && a.At < b.At+1e-9
			}) {
				t.Errorf("events = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Each mode's table in --json (and so the HTML report) carries a line
// that says what the failover found wrong: acknowledged commits lost,
// phantoms, the workload's check, the run's own failure; none when all
// was well, or when the run was interrupted and found nothing wrong.
func TestTableFailed(t *testing.T) {
	start := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		r    Result
		want string
	}{
		{"clean", Result{FaultSent: start, FirstNew: start.Add(time.Second)}, ""},
		{"lost", Result{FaultSent: start, FirstNew: start.Add(time.Second), Tally: Tally{Acked: 100, Lost: 3}},
			"FAILED (async): 3 acknowledged commits lost by the failover"},
		{"phantom and check", Result{FaultSent: start, FirstNew: start.Add(time.Second), Tally: Tally{Phantom: 2},
			Outcome: &runner.Outcome{Check: &workload.CheckResult{Violations: []string{"money drift: +10"}}}},
			"FAILED (async): 2 rolled-back transactions are on the new primary; bank's check found a violation"},
		{"the run failed", Result{FaultSent: start, Err: "--failover-command failed (exit status 1): no such node"},
			"FAILED (async): the run failed: --failover-command failed (exit status 1): no such node"},
		{"interrupted before the fault", Result{Interrupted: true}, ""},
	}
	m, err := all.Registry().Get("bank")
	if err != nil {
		t.Fatal(err)
	}
	p := &plan{o: Options{Workload: m}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.Mode, tt.r.Workload = "async", "bank"
			doc, err := p.newDocument([]*Result{&tt.r})
			if err != nil {
				t.Fatal(err)
			}
			if len(doc.Tables) != 1 || doc.Tables[0].Failed != tt.want {
				t.Errorf("tables %+v, want one failed %q", doc.Tables, tt.want)
			}
		})
	}
}

// The --html timeline says what it counts and per what on its y axis; its
// lines, of one colour, are told apart by plain line styles (commits
// solid), the legend's keys drawn as the lines are; besides the failed
// transactions (that gave up) it draws the failed attempts, retried or
// not, so that a run full of serialization errors does not look clean;
// and its last bucket, 3 ms of transactions in flight at the end, is a
// rate over those 3 ms at their end, not a drop at 10.1 s: the x axis
// ends at the data.
func TestTimelineChart(t *testing.T) {
	start := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	tl := newTimeline()
	if err := tl.Open(2); err != nil {
		t.Fatal(err)
	}
	tl.Start(start)
	var attempts, failed int64
	end := func(d time.Duration) time.Time { return start.Add(d) }
	for i := range 100 { // 10 s
		from := time.Duration(i) * bucket
		for g := range 2 {
			for k := range 30 {
				x := engine.Txn{Group: g, Outcome: engine.TxnOK, Tries: 1, End: end(from + time.Duration(k+1)*bucket/31)}
				if k%5 == 0 { // retried twice: two failed attempts
					x.Tries = 3
					attempts += 2
				}
				tl.Txn(x)
			}
		}
		if i%10 == 9 { // gave up after 10 attempts
			tl.Txn(engine.Txn{Group: 1, Outcome: engine.TxnSerialization, Tries: 10, End: end(from + bucket/2)})
			attempts += 10
			failed++
		}
	}
	for g := range 2 { // in flight at the end, done 3 ms after it
		for range 4 {
			tl.Txn(engine.Txn{Group: g, Outcome: engine.TxnOK, Tries: 1, End: end(10*time.Second + 3*time.Millisecond)})
		}
	}
	pts := tl.points()
	if len(pts) != 101 {
		t.Fatalf("%d points, want 100 buckets and the last 3 ms", len(pts))
	}
	// The lines add up to what was fed: each point's rate over its length.
	var got [3]float64
	prev := 0.0
	for _, p := range pts {
		for l := range got {
			got[l] += p.Values[l] * (p.At - prev)
		}
		prev = p.At
	}
	if want := [3]float64{100*60 + 8, float64(attempts), float64(failed)}; math.Abs(got[0]-want[0]) > 1e-6 || math.Abs(got[1]-want[1]) > 1e-6 || math.Abs(got[2]-want[2]) > 1e-6 {
		t.Errorf("commits, failed attempts, failed transactions add up to %v, want %v", got, want)
	}
	last := pts[len(pts)-1]
	if math.Abs(last.At-10.003) > 1e-9 || math.Abs(last.Values[0]-8/0.003) > 1e-6 {
		t.Errorf("the last point is %+v, want 8 commits over 3 ms at 10.003 s", last)
	}

	m, err := all.Registry().Get("bank")
	if err != nil {
		t.Fatal(err)
	}
	r := &Result{Mode: "async", Workload: "bank", Points: pts, startAt: start, FaultSent: end(4 * time.Second), FirstNew: end(4400 * time.Millisecond)}
	doc, err := (&plan{o: Options{Workload: m}}).newDocument([]*Result{r})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := htmlreport.Write(&b, []*report.Document{&doc.Document}, htmlreport.Options{Names: []string{"bank"}}); err != nil {
		t.Fatal(err)
	}
	svg := regexp.MustCompile(`(?s)<svg[^>]*><title>failover timeline[^<]*</title>.*?</svg>`).FindString(b.String())
	if svg == "" {
		t.Fatal("no timeline chart")
	}
	if y := regexp.MustCompile(`class="axis-y"[^>]*>([^<]*)<`).FindStringSubmatch(svg); y == nil || !strings.Contains(y[1], "per second") || strings.Contains(y[1], "timeline") {
		t.Errorf("the y axis reads %q, want what is counted per second", y)
	}
	dashOf := func(attrs string) string {
		if m := regexp.MustCompile(`stroke-dasharray="([^"]*)"`).FindStringSubmatch(attrs); m != nil {
			return m[1]
		}
		return ""
	}
	lines := map[string]string{}
	var order []string
	for _, m := range regexp.MustCompile(`<g class="series" data-name="[^"]*" data-run="[^"]*" data-stat="([^"]*)"[^>]*><polyline([^>]*)>`).FindAllStringSubmatch(svg, -1) {
		lines[m[1]] = dashOf(m[2])
		order = append(order, m[1])
	}
	if !slices.Equal(order, []string{"commits", "failed attempts", "failed transactions"}) {
		t.Errorf("lines %q, want commits, failed attempts, failed transactions", order)
	}
	seen := map[string]string{}
	for _, name := range order {
		d := lines[name]
		if o, ok := seen[d]; ok {
			t.Errorf("%s and %s are both drawn %q", o, name, d)
		}
		seen[d] = name
		if len(strings.Fields(d)) > 2 {
			t.Errorf("%s is drawn %q: a mixed dash, hard to tell from another", name, d)
		}
	}
	if lines["commits"] != "" {
		t.Errorf("commits are drawn %q, want solid", lines["commits"])
	}
	for _, m := range regexp.MustCompile(`<line([^>]*)/><text[^>]*class="key">([^<]*)</text>`).FindAllStringSubmatch(svg, -1) {
		if want, ok := lines[m[2]]; !ok || dashOf(m[1]) != want {
			t.Errorf("the legend's key %q is drawn %q, its line %q", m[2], dashOf(m[1]), want)
		}
	}
	// The x axis starts at the first point, 0.1 s, and ends at the last
	// point drawn, 10 s (the 3 ms after it are written under the chart),
	// not at 10.1 s.
	var ticks []float64 // px of 2s and 10s
	for _, m := range regexp.MustCompile(`<text x="([0-9.]+)"[^>]*class="tick-x"[^>]*>(2s|10s)<`).FindAllStringSubmatch(svg, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		ticks = append(ticks, v)
	}
	frame := regexp.MustCompile(`<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)" height="[0-9.]+" fill="none" stroke="#999"/>`).FindStringSubmatch(svg)
	if len(ticks) != 2 || frame == nil {
		t.Fatalf("ticks 2s and 10s at %v, frame %q", ticks, frame)
	}
	x0, _ := strconv.ParseFloat(frame[1], 64)
	w, _ := strconv.ParseFloat(frame[2], 64)
	perPx := 8 / (ticks[1] - ticks[0])
	if axisStart, axisEnd := 2+(x0-ticks[0])*perPx, 2+(x0+w-ticks[0])*perPx; math.Abs(axisStart-0.1) > 0.01 || math.Abs(axisEnd-10) > 0.01 {
		t.Errorf("the x axis runs from %.3f s to %.3f s, want 0.1 s to 10 s", axisStart, axisEnd)
	}
	if !strings.Contains(svg, "not drawn: the last 3.00ms") {
		t.Errorf("the chart does not say the last 3 ms are not drawn")
	}
}
