// Package chart draws the sweep's latency-throughput chart, as PNG or SVG,
// with the same plotting code as the HTML report (report/plot).
package chart

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/txload/txload/report/plot"
	"github.com/txload/txload/slo"
)

// Point is one measured step: the rate it targeted, the throughput it
// achieved, its latencies and whether it passed.
type Point struct {
	Target     float64 // operations per second asked for
	Throughput float64 // ok operations per second achieved
	P50, P99   float64 // milliseconds
	Pass       bool
	// Why a failing step failed, as sweep printed it.
	Why string
}

// keptUp says whether the step completed at least keptShare of its
// target (or had none given).
func (p Point) keptUp() bool { return p.Target <= 0 || p.Throughput >= keptShare*p.Target }

// keptShare is the share of its target rate a step that kept up achieved:
// below it, the step fell behind its schedule.
const keptShare = 0.95

// completed says whether any operation of the step succeeded: a step where
// none did has no throughput and no latency to draw.
func (p Point) completed() bool { return p.Throughput > 0 }

// Curve is one sweep: its steps in the order they ran, the objective they
// were judged on, and (for several on one chart) a name and colour.
type Curve struct {
	Name   string
	Color  string // "" = the first series colour
	SLO    slo.SLO
	Points []Point
}

// Formats are the file extensions a chart is written in: WritePNG's and
// WriteSVG's.
var Formats = []string{".png", ".svg"}

// Supported tells whether path's extension is one of Formats.
func Supported(path string) bool {
	return slices.Contains(Formats, strings.ToLower(filepath.Ext(path)))
}

// Unsupported is the one line that says why path cannot be drawn.
func Unsupported(path string) string {
	return fmt.Sprintf("--chart %s: the file name must end in .png or .svg", path)
}

// The statistics drawn, each in its own line style and mark whatever the
// sweep's colour (the HTML report's p50 and p99 are drawn the same way):
// p50 a paler solid line with squares, p99 a dashed one with circles, so
// that the two are told apart where they cross or meet (a single step).
var (
	p50Style = plot.Key{Name: "p50", Dash: plot.Solid, Mark: true, Square: true}
	p99Style = plot.Key{Name: "p99", Dash: plot.Dashed, Mark: true}
)

// p50Tint is how much paler p50 is drawn than the sweep's colour.
const p50Tint = 0.45

// Sweep returns the chart of p50 and p99 latency (log scale) against
// achieved throughput: the steps joined in order of achieved throughput
// (a bisection's steps come out of order, and a step that fell behind
// achieved less than a lower target: joined in any other order the line
// would turn back), passing steps as filled marks and failing ones hollow,
// each labelled with its target; the objective's limits on p50 and p99 as
// horizontal lines; the maximum sustainable rate found as a vertical one.
// A step in which nothing completed has no latency: it is not drawn, and
// a note under the chart says so.
func Sweep(title string, curves ...Curve) *plot.Chart {
	c := &plot.Chart{
		ID:    "sweep",
		Title: title,
		X:     plot.Axis{Label: "achieved throughput (ok operations/s)"},
		Y:     plot.Axis{Label: "response time (log scale)", Log: true, Format: plot.Millis},
	}
	var slos []string
	behind := false
	for k, cv := range curves {
		color := cv.Color
		if color == "" {
			color = plot.Color(k)
		}
		prefix := ""
		if cv.Name != "" && len(curves) > 1 {
			prefix = cv.Name + ": "
			c.Legend = append(c.Legend, plot.Key{Name: cv.Name, Color: color})
		}
		// The steps that kept up with their target are joined in order of
		// throughput; those that fell behind stand apart, a dotted line
		// from what they achieved to their target.
		var kept, short []Point
		for _, p := range cv.Points {
			switch {
			case !p.completed():
			case p.keptUp():
				kept = append(kept, p)
			default:
				short = append(short, p)
			}
		}
		slices.SortStableFunc(kept, func(a, b Point) int {
			if a.Throughput == b.Throughput {
				return cmp(a.Target, b.Target)
			}
			return cmp(a.Throughput, b.Throughput)
		})
		for _, st := range []struct {
			key    plot.Key
			get    func(Point) float64
			labels bool
			color  string
		}{{p50Style, func(p Point) float64 { return p.P50 }, false, plot.Tint(color, p50Tint)}, {p99Style, func(p Point) float64 { return p.P99 }, true, color}} {
			for k, pts := range [][]Point{kept, short} {
				ser := plot.Series{Name: strings.TrimSpace(cv.Name + " " + st.key.Name), Run: cv.Name, Stat: st.key.Name,
					Color: st.color, Dash: st.key.Dash, Marks: true, Square: st.key.Square, NoLine: k == 1}
				if k == 1 {
					if len(pts) == 0 {
						continue
					}
					ser.Name = "" // in the legend once
				}
				for _, p := range pts {
					ser.X = append(ser.X, p.Throughput)
					ser.Y = append(ser.Y, st.get(p))
					ser.Hollow = append(ser.Hollow, !p.Pass)
					label := ""
					if st.labels {
						label = slo.FormatRate(p.Target) + "/s"
					}
					ser.Labels = append(ser.Labels, label)
				}
				c.Series = append(c.Series, ser)
			}
		}
		for _, p := range short {
			c.Series = append(c.Series, plot.Series{Run: cv.Name, Stat: "short of target", Color: color, Dash: plot.Dotted, Width: 1,
				X: []float64{p.Throughput, p.Target}, Y: []float64{p.P99, p.P99}})
		}
		behind = behind || len(short) > 0
		for _, p := range cv.Points {
			if !p.completed() {
				why := ""
				if p.Why != "" {
					why = ": " + p.Why
				}
				c.Notes = append(c.Notes, fmt.Sprintf("%snot drawn: the step at %s/s, where no operation succeeded (FAIL%s)", prefix, slo.FormatRate(p.Target), why))
			}
		}
		if best := maxPassed(cv.Points); best > 0 {
			label := "max " + slo.FormatRate(best) + "/s"
			if !slices.ContainsFunc(cv.Points, func(p Point) bool { return !p.Pass }) {
				label = "max ≥ " + slo.FormatRate(best) + "/s (no step failed)"
			}
			c.Rules = append(c.Rules, plot.Rule{Vertical: true, V: best, Label: prefix + label, Color: color, Dash: plot.Dotted})
		} else if len(cv.Points) > 0 {
			c.Notes = append(c.Notes, prefix+"no step passed: no sustainable rate found")
		}
		if s := cv.SLO.String(); s != "" && !slices.Contains(slos, s) {
			slos = append(slos, s)
			for _, cond := range cv.SLO.Conditions() {
				if cond.Metric != slo.P50 && cond.Metric != slo.P99 {
					c.Notes = append(c.Notes, fmt.Sprintf("SLO %s: %s is not drawn (the chart shows p50 and p99)", cond, cond.Metric))
					continue
				}
				c.Rules = append(c.Rules, plot.Rule{V: float64(cond.Limit.Microseconds()) / 1000, Label: "SLO " + cond.String(), Color: "#b00", Dash: plot.Long})
			}
		}
	}
	p50, p99 := p50Style, p99Style
	if len(curves) == 1 {
		color := curves[0].Color
		if color == "" {
			color = plot.Color(0)
		}
		p50.Color, p99.Color = plot.Tint(color, p50Tint), color
	}
	c.Legend = append(c.Legend, p50, p99, plot.Key{Name: "hollow: step failed", Mark: true, Hollow: true, NoLine: true})
	if behind {
		c.Legend = append(c.Legend, plot.Key{Name: "fell behind: dotted to its target", Dash: plot.Dotted, Width: 1})
	}
	c.Legend = append(c.Legend, plot.Key{Name: "4000/s: the step's target rate", NoLine: true})
	return c
}

// maxPassed is the highest target of a passing step: the maximum
// sustainable rate the search reports.
func maxPassed(points []Point) float64 {
	best := 0.0
	for _, p := range points {
		if p.Pass {
			best = math.Max(best, p.Target)
		}
	}
	return best
}

func cmp(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// chartFor is the file's chart: 800×480.
func chartFor(title string, curve Curve) *plot.Chart {
	c := Sweep(title, curve)
	c.Width, c.Height = 800, 480
	return c
}

// WriteSVG writes the Sweep chart to w as a standalone SVG file.
func WriteSVG(w io.Writer, title string, curve Curve) error {
	if _, err := io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"); err != nil {
		return err
	}
	return chartFor(title, curve).SVG(w)
}

// WritePNG writes the Sweep chart to w as a PNG image.
func WritePNG(w io.Writer, title string, curve Curve) error {
	return chartFor(title, curve).PNG(w)
}
