package htmlreport

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/plot"
)

// styleOf is the line style of a statistic, the same in every chart: the
// percentiles of response time (from the intended start: Noria's sojourn)
// from solid to long dashes, those of service time (from the send: its
// remote time) dash-dotted, retries thick. The page calls each quantity by
// one name.
func styleOf(stat string) (dash string, width float64) {
	switch stat {
	case "p50", "response p50", "lag p50", "response", "ok/s":
		return plot.Solid, 1.5
	case "p95":
		return plot.Dotted, 1.5
	case "p99", "response p99", "lag p99":
		return plot.Dashed, 1.5
	case "max", "lag max":
		return plot.Long, 1
	case "service p50", "service", "oldest pending":
		return plot.DashDot, 1.25
	case "service p99":
		return plot.DashDotDot, 1.25
	case "retries":
		return plot.Solid, 2.5
	}
	return "", 0
}

// classDashes are the failure classes' line styles, in metrics.Classes()
// order.
var classDashes = [...]string{plot.Dashed, plot.Long, plot.DashDot, plot.DashDotDot, plot.Dotted}

// line is a series of run r drawing stat in its style.
func line(r *run, stat string) plot.Series {
	dash, width := styleOf(stat)
	return plot.Series{Name: r.name + " " + stat, Run: r.name, Stat: stat, Color: r.color, Dash: dash, Width: width}
}

// legend names the runs by colour (when the page has several) and the
// statistics by line style: neutral when they stand for every run's lines,
// in the run's colour when there is one.
func legend(series []plot.Series, manyRuns bool) []plot.Key {
	var keys, stats []plot.Key
	runs := map[string]bool{}
	seen := map[string]bool{}
	color := ""
	for _, s := range series {
		if s.Run != "" && !runs[s.Run] {
			runs[s.Run] = true
			color = s.Color
			keys = append(keys, plot.Key{Name: s.Run, Color: s.Color, Width: 4})
		}
		if s.Stat != "" && !seen[s.Stat] {
			seen[s.Stat] = true
			stats = append(stats, plot.Key{Name: s.Stat, Dash: s.Dash, Width: s.Width})
		}
	}
	if len(runs) > 1 || manyRuns {
		return append(keys, stats...)
	}
	for i := range stats {
		stats[i].Color = color
	}
	return stats
}

// timeAxis is the x axis of the charts over time.
func timeAxis() plot.Axis {
	return plot.Axis{Label: "time from the start of the measured period", Time: true}
}

func latencyAxis(label string) plot.Axis {
	return plot.Axis{Label: label + " (log scale)", Log: true, Format: plot.Millis}
}

func opSections(p *page, runs []*run) {
	anyWindows := false
	for _, r := range runs {
		anyWindows = anyWindows || len(r.windows) > 0
	}
	for _, op := range opNames(runs) {
		p.printf("<h2>%s</h2>", esc(op))
		if anyWindows {
			tp := &plot.Chart{Title: op + ": throughput", X: timeAxis(), Y: plot.Axis{Label: "ok operations/s", Format: perSecond}}
			lat := &plot.Chart{Title: op + ": response time p50, p95, p99, max", X: timeAxis(), Y: latencyAxis("response time")}
			banded := map[*run]bool{}
			for _, r := range runs {
				i := opIndex(r.total, op)
				if i < 0 || len(r.windows) == 0 {
					continue
				}
				s := line(r, "ok/s")
				for _, w := range r.windows {
					s.X = append(s.X, w.at)
					s.Y = append(s.Y, float64(w.ops[i].ok)/w.secs)
					if b := w.ops[i].band; b != nil {
						banded[r] = true
						s.Lo, s.Hi = append(s.Lo, b.okLo), append(s.Hi, b.okHi)
					} else {
						s.Lo, s.Hi = append(s.Lo, math.NaN()), append(s.Hi, math.NaN())
					}
				}
				tp.Series = append(tp.Series, s)
				for _, pc := range []struct {
					name string
					q    float64
				}{{"p50", 50}, {"p95", 95}, {"p99", 99}, {"max", 100}} {
					s := line(r, pc.name)
					for _, w := range r.windows {
						s.X = append(s.X, w.at)
						s.Y = append(s.Y, w.ops[i].response.at(pc.q))
						if pc.q != 99 {
							continue
						}
						if b := w.ops[i].band; b != nil {
							s.Lo, s.Hi = append(s.Lo, b.p99Lo), append(s.Hi, b.p99Hi)
						} else {
							s.Lo, s.Hi = append(s.Lo, math.NaN()), append(s.Hi, math.NaN())
						}
					}
					lat.Series = append(lat.Series, s)
				}
				if ol, ok := openLoopOf(r); ok && ol.target > 0 && ranOps(r) == 1 {
					tp.Rules = append(tp.Rules, plot.Rule{V: ol.target, Label: targetLabel(r, ol, len(runs) > 1), Color: r.color, Dash: plot.Long})
				} else if ok && ol.target > 0 {
					tp.Notes = append(tp.Notes, fmt.Sprintf("%starget %s/s for every operation together: not drawn here", who(r.name, len(runs) > 1), fmtRate(ol.target)))
				}
			}
			if note := partialShort(runs, len(runs) > 1); note != "" {
				tp.Notes = append(tp.Notes, note)
			}
			if len(banded) > 0 {
				tp.Legend = append(legend(tp.Series, p.runs > 1), bandKey(runs, banded, "ok/s"))
				lat.Legend = append(legend(lat.Series, p.runs > 1), bandKey(runs, banded, "p99"))
			}
			p.chart(tp)
			p.chart(lat)
		}
		p.chart(spectrum(op, runs))
		openLoopChart(p, op, runs)
		lagChart(p, op, runs)
	}
}

// perSecond formats a rate's tick: 800/s, 1.5k/s.
func perSecond(v float64) string {
	if v == 0 {
		return "0"
	}
	return plot.Compact(v) + "/s"
}

// percent formats a share's tick, given in per cent: 99.9%.
func percent(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) + "%" }

// ranOps is the number of r's operations that ran.
func ranOps(r *run) int {
	n := 0
	for _, o := range r.total.Ops {
		if ran(o) {
			n++
		}
	}
	return n
}

// who is a run's name before a note, when the page has several.
func who(name string, named bool) string {
	if named {
		return name + ": "
	}
	return ""
}

// targetLabel labels an open loop's target rate on its throughput chart,
// saying when the run fell behind it.
func targetLabel(r *run, ol openLoopRates, named bool) string {
	l := who(r.name, named) + "target " + fmtRate(ol.target) + "/s"
	switch {
	case ol.behind:
		l += fmt.Sprintf(" (completed %.0f/s: fell behind)", ol.actual)
	case ol.late:
		l += " (behind schedule)"
	}
	return l
}

// bandKey is the legend's key of the bands drawn: the range of the
// intervals each point adds up.
func bandKey(runs []*run, banded map[*run]bool, stat string) plot.Key {
	color := ""
	var lengths []string
	for _, r := range runs {
		if banded[r] {
			if color == "" || len(banded) == 1 {
				color = r.color
			}
			if l := intervalLength(r); l != "" && !slices.Contains(lengths, l) {
				lengths = append(lengths, l)
			}
		}
	}
	if len(banded) > 1 {
		color = ""
	}
	what := "the intervals"
	if len(lengths) > 0 {
		what = "the " + strings.Join(lengths, ", ") + " intervals"
	}
	return plot.Key{Name: "band: " + stat + " of " + what + " of each point", Color: color, Band: true, NoLine: true}
}

// intervalLength is the length of r's intervals, as read from its first
// window: "100ms".
func intervalLength(r *run) string {
	var d time.Duration
	stop := errors.New("stop")
	err := r.rd.EachInterval(func(_ int, iv *report.IntervalDoc) error {
		d = iv.End.Sub(iv.Start)
		return stop
	})
	if err != stop || d <= 0 {
		return ""
	}
	return d.Round(time.Millisecond).String()
}

// spectrum is the HDR percentile spectrum: latency against percentile, the
// percentile on a log axis of 1/(1−q) so that the tail spreads out.
func spectrum(op string, runs []*run) *plot.Chart {
	c := &plot.Chart{Title: op + ": percentile spectrum",
		X: plot.Axis{Label: "percentile", Log: true, Ticks: []plot.Tick{{V: 1, Label: "0%"}, {V: 2, Label: "50%"}, {V: 10, Label: "90%"},
			{V: 100, Label: "99%"}, {V: 1e3, Label: "99.9%"}, {V: 1e4, Label: "99.99%"}, {V: 1e5, Label: "99.999%"}, {V: 1e6, Label: "99.9999%"}}},
		Y: latencyAxis("latency")}
	for _, r := range runs {
		i := opIndex(r.total, op)
		if i < 0 {
			continue
		}
		o := r.total.Ops[i]
		if !ran(o) {
			continue
		}
		kinds := []struct {
			name string
			h    *hdr.Histogram
		}{{"response", o.Response}}
		if openLoop(r) {
			kinds = append(kinds, struct {
				name string
				h    *hdr.Histogram
			}{"service", o.Service})
		}
		for _, k := range kinds {
			n := k.h.TotalCount()
			if n == 0 {
				continue
			}
			s := line(r, k.name)
			// Percentiles 1 − 10^(−j/20): 20 per decade, down to one
			// operation in n; then the maximum. A value of 0 µs (below
			// the histograms' resolution) is drawn at 1 µs.
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

// openLoop says whether r ran an open loop: it has a schedule (or, under
// way on the live page, a target).
func openLoop(r *run) bool { return r.rd.Offered > 0 || targetOf(r) > 0 }

// openLoopChart draws response time (from the intended start: Noria's sojourn)
// against service time (from the send: its remote time) over time, for
// open-loop runs: the gap between them is the wait for the schedule.
func openLoopChart(p *page, op string, runs []*run) {
	c := &plot.Chart{Title: op + ": response against service time", X: timeAxis(), Y: latencyAxis("latency")}
	for _, r := range runs {
		i := opIndex(r.total, op)
		if i < 0 || !openLoop(r) || len(r.windows) == 0 {
			continue
		}
		for _, k := range []struct {
			name string
			q    float64
			get  func(point) quantiles
		}{
			{"response p50", 50, func(p point) quantiles { return p.response }},
			{"response p99", 99, func(p point) quantiles { return p.response }},
			{"service p50", 50, func(p point) quantiles { return p.service }},
			{"service p99", 99, func(p point) quantiles { return p.service }},
		} {
			s := line(r, k.name)
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
	c := &plot.Chart{Title: op + ": schedule lag (actual start − intended start)", X: timeAxis(),
		Y: plot.Axis{Label: "schedule lag", Format: plot.Millis}}
	for _, r := range runs {
		i := opIndex(r.total, op)
		if i < 0 || r.total.Ops[i].Lag.Max() == 0 || len(r.windows) == 0 {
			continue
		}
		for _, k := range []struct {
			name string
			q    float64
		}{{"lag p50", 50}, {"lag p99", 99}, {"lag max", 100}} {
			s := line(r, k.name)
			for _, w := range r.windows {
				s.X = append(s.X, w.at)
				s.Y = append(s.Y, w.ops[i].lag.at(k.q))
			}
			c.Series = append(c.Series, s)
		}
	}
	if c.Points() > 0 {
		p.chart(c)
	}
}

// failureSection draws failed attempts by class and retries over time, all
// operations together.
func failureSection(p *page, runs []*run) {
	c := &plot.Chart{Title: "failed attempts by class, and retries", X: timeAxis(), Y: plot.Axis{Label: "per second"}}
	var lines []string
	var drawn []*run
	for _, r := range runs {
		all := r.total.Total("all")
		if all.ErrorsTotal() > 0 || all.Retries > 0 {
			drawn = append(drawn, r)
			lines = append(lines, fmt.Sprintf("%s: %s (%s), %s, %s failed", r.name, report.Count(all.ErrorsTotal(), "failed attempt"), report.ByClass(all.Errors), report.Count(all.Retries, "retry"), report.Count(all.FailedTotal(), "operation")))
		}
		if len(r.windows) == 0 {
			continue
		}
		for ci, class := range metrics.Classes() {
			if all.Errors[class] == 0 {
				continue
			}
			s := line(r, class.String())
			s.Dash, s.Width = classDashes[ci%len(classDashes)], 1.5
			for _, w := range r.windows {
				s.X = append(s.X, w.at)
				s.Y = append(s.Y, float64(w.errors[class])/w.secs)
			}
			c.Series = append(c.Series, s)
		}
		if all.Retries > 0 {
			s := line(r, "retries")
			for _, w := range r.windows {
				s.X = append(s.X, w.at)
				s.Y = append(s.Y, float64(w.retries)/w.secs)
			}
			c.Series = append(c.Series, s)
		}
	}
	if note := partialShort(drawn, len(runs) > 1); note != "" {
		c.Notes = append(c.Notes, note)
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

// seriesSection draws the documents' own figures over time (lag's
// replication lag), a chart per title with every document's lines on it,
// in the colour of the document's first run, its lines told apart by line
// style, the y axis labelled with the document's Axis. Values in µs are
// drawn in ms, on an axis whose ticks say so. A last point much closer to the one
// before than the others are to theirs (the few milliseconds after the
// last whole interval) is left out, like a run's partial interval, and
// its values are written under the chart.
func seriesSection(p *page, docs []*report.Document, names []string, colors []string, runs []*run) {
	var titles []string
	charts := map[string]*plot.Chart{}
	// Charts of one document on one axis (a failover's timelines, one per
	// replication mode) share their scales, to be compared by eye.
	type axisOf struct {
		doc  int
		axis string
	}
	alike := map[axisOf][]*plot.Chart{}
	var alikeOrder []axisOf
	for i, d := range docs {
		for _, sd := range d.Series {
			c := charts[sd.Title]
			if c == nil {
				label := sd.Axis
				if label == "" {
					label = sd.Title
				}
				c = &plot.Chart{Title: sd.Title, X: timeAxis(), Y: plot.Axis{Label: label, Log: sd.Log}}
				switch sd.Unit {
				case "us":
					c.Y.Format = plot.Millis
				case "/s":
					c.Y.Format = perSecond
				case "ratio":
					c.Y.Format = percent
				}
				charts[sd.Title] = c
				titles = append(titles, sd.Title)
				k := axisOf{i, label}
				if alike[k] == nil {
					alikeOrder = append(alikeOrder, k)
				}
				alike[k] = append(alike[k], c)
			}
			scale, format := 1.0, plot.Compact
			switch sd.Unit {
			case "us":
				scale, format = 1e-3, plot.Millis
			case "/s":
				format = perSecond
			case "ratio":
				scale, format = 100, percent
			}
			run := names[i]
			if len(docs) == 1 {
				run = d.Workload
			}
			color := colors[i]
			if r := runLabelled(runs, d, sd.Labels); r != nil {
				run, color = r.name, r.color
			}
			pts, err := readSeries(&sd)
			if err != nil {
				p.err = fmt.Errorf("%s: %s: %w", names[i], sd.Title, err)
				return
			}
			if pts.cut != nil {
				var vals []string
				for l, name := range sd.Lines {
					if l < len(pts.cut.Values) {
						vals = append(vals, name+" "+format(pts.cut.Values[l]*scale))
					}
				}
				c.Notes = append(c.Notes, fmt.Sprintf("%snot drawn: the last %s, much shorter than an interval: %s",
					who(run, len(docs) > 1), report.Micros(int64(math.Round(pts.cutGap*1e6))), strings.Join(vals, ", ")))
			}
			if pts.group > 1 {
				c.Notes = append(c.Notes, fmt.Sprintf("%seach point is the highest of %d consecutive ones (%d in all)", who(run, len(docs) > 1), pts.group, pts.n))
			}
			// Lines of no statistic of styleOf's (failover's commits and
			// failures) take the plain styles in turn, solid, dashed,
			// dotted, then the mixed ones: lines of one colour told apart
			// at a glance.
			others := []struct {
				dash  string
				width float64
			}{{plot.Solid, 1.5}, {plot.Dashed, 1.5}, {plot.Dotted, 2}, {plot.DashDot, 1.25}, {plot.DashDotDot, 1.25}}
			other := 0
			for l, name := range sd.Lines {
				dash, width := styleOf(name)
				if width == 0 {
					o := others[other%len(others)]
					dash, width = o.dash, o.width
					other++
				}
				s := plot.Series{Name: run + " " + name, Run: run, Stat: name, Color: color, Dash: dash, Width: width}
				zeros := 0
				for _, pt := range pts.drawn {
					if l < len(pt.Values) {
						s.X = append(s.X, pt.At)
						s.Y = append(s.Y, pt.Values[l]*scale)
						if pt.Values[l] <= 0 {
							zeros++
						}
					}
				}
				switch {
				case !sd.Log || zeros == 0:
				case zeros == len(s.X):
					c.Notes = append(c.Notes, fmt.Sprintf("%s%s: 0 at every point, not drawn (a log scale has no 0)", who(run, len(docs) > 1), name))
					continue
				default:
					c.Notes = append(c.Notes, fmt.Sprintf("%s%s: 0 at %d of %d points, where its line stops (a log scale has no 0)", who(run, len(docs) > 1), name, zeros, len(s.X)))
				}
				c.Series = append(c.Series, s)
				if sd.Unit == "ratio" { // a share near 100%: the axis from just under the lowest
					lo := 100.0
					for _, v := range s.Y {
						lo = math.Min(lo, v)
					}
					if c.Y.Max == 100 { // another run's share on the chart
						lo = math.Min(lo, c.Y.Min+1)
					}
					c.Y.Min, c.Y.Max = math.Max(0, math.Floor(lo)-1), 100
				}
			}
			for _, ev := range sd.Events {
				c.Rules = append(c.Rules, plot.Rule{Vertical: true, V: ev.At, Label: ev.Label, Color: color, Dash: plot.Dashed})
			}
			if end, ok := windowEnd(runs, d); ok && len(pts.drawn) > 0 && pts.drawn[len(pts.drawn)-1].At > end*1.01 {
				c.Rules = append(c.Rules, plot.Rule{Vertical: true, V: end, Label: "load ended", Color: plot.Neutral, Dash: plot.Dotted})
				c.Notes = append(c.Notes, fmt.Sprintf("%sthe load ended at %s, the end of its measured window (the charts of its operations end there); the points after it were measured after the load stopped", who(run, len(docs) > 1), plot.Duration(end)))
			}
		}
	}
	if len(titles) == 0 {
		return
	}
	for _, k := range alikeOrder {
		plot.ShareAxes(alike[k]...)
	}
	p.printf("<h2>Over time</h2>")
	for _, t := range titles {
		if c := charts[t]; c.Points() > 0 {
			p.chart(c)
		}
	}
}

// runLabelled is the run of d whose labels are labels; nil when labels
// are none or no run has them.
func runLabelled(runs []*run, d *report.Document, labels map[string]string) *run {
	if len(labels) == 0 {
		return nil
	}
	for _, r := range runs {
		if r.doc == d && maps.Equal(r.rd.Labels, labels) {
			return r
		}
	}
	return nil
}

// windowEnd is where the measured window of d's runs ended, in seconds
// from its start: the longest of them.
func windowEnd(runs []*run, d *report.Document) (float64, bool) {
	end, ok := 0.0, false
	for _, r := range runs {
		if r.doc == d && r.total.Elapsed > 0 {
			end, ok = math.Max(end, r.total.Elapsed.Seconds()), true
		}
	}
	return end, ok
}

// seriesPoints are a figure's points as drawn.
type seriesPoints struct {
	n int // points in all
	// drawn are at most MaxPoints points: with more, each is a group of
	// group consecutive ones, at the group's last time, each of its values
	// the highest of the group's.
	drawn []report.SeriesPoint
	group int
	// cut is a last point much closer to the one before than the others
	// are to theirs (the few milliseconds after the last whole interval),
	// left out; cutGap is how close, in seconds.
	cut    *report.SeriesPoint
	cutGap float64
}

// readSeries reads a figure's points twice, one at a time: for their
// number and spacing, then to draw them.
func readSeries(sd *report.SeriesDoc) (seriesPoints, error) {
	var out seriesPoints
	var gaps report.LengthCounts
	var prev, lastGap float64
	var last report.SeriesPoint
	err := sd.EachPoint(func(n int, pt *report.SeriesPoint) error {
		lastGap = pt.At - prev
		gaps.Add(seconds(lastGap))
		prev = pt.At
		last = report.SeriesPoint{At: pt.At, Values: slices.Clone(pt.Values)}
		out.n++
		return nil
	})
	if err != nil {
		return out, err
	}
	keep := out.n
	if out.n >= 3 {
		gaps.Remove(seconds(lastGap))
		if lastGap < gaps.Median().Seconds()/2 {
			out.cut, out.cutGap = &last, lastGap
			keep--
		}
	}
	out.group = max((keep+MaxPoints-1)/MaxPoints, 1)
	var g report.SeriesPoint
	in := 0
	err = sd.EachPoint(func(n int, pt *report.SeriesPoint) error {
		if n >= keep {
			return nil
		}
		if in == 0 {
			g = report.SeriesPoint{Values: slices.Clone(pt.Values)}
		}
		for l, v := range pt.Values {
			if l < len(g.Values) && (v > g.Values[l] || math.IsNaN(g.Values[l])) {
				g.Values[l] = v
			}
		}
		g.At = pt.At
		if in++; in == out.group || n == keep-1 {
			out.drawn = append(out.drawn, g)
			in = 0
		}
		return nil
	})
	return out, err
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
