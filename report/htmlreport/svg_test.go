package htmlreport

import (
	"encoding/xml"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file reads the charts of a page back from their SVG, as a reader
// of the page would: the tick labels as written, and each point's value
// from where it is drawn between them.

type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []node     `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n node) num(name string) float64 {
	v, _ := strconv.ParseFloat(n.attr(name), 64)
	return v
}

// walk calls f on n and every node under it, with the series node (class
// "series") each is in, if any.
func (n node) walk(series *node, f func(n, series *node)) {
	f(&n, series)
	if n.attr("class") == "series" {
		series = &n
	}
	for _, c := range n.Nodes {
		c.walk(series, f)
	}
}

// tick is an axis tick read back: its label, the value the label says and
// the pixel it is at.
type tick struct {
	label string
	v, px float64
}

type xy struct{ x, y float64 }

// drawnSeries is a series read back: its attributes and its points in px.
type drawnSeries struct {
	name, run, stat     string
	stroke, dash, width string
	points              []xy // the polyline's, else the marks'
	marks               []xy
	hollow              int // marks drawn as rings
	hasLine             bool
	dataPoints          int
}

type text struct {
	class, anchor, s string
	x, y, size       float64
}

// drawnChart is one <svg class="plot"> read back.
type drawnChart struct {
	title                    string
	width, height            float64
	left, top, right, bottom float64 // the plot's frame
	xLabel, yLabel           string
	xticks, yticks           []tick
	series                   []*drawnSeries
	texts                    []text
}

var svgElem = regexp.MustCompile(`(?s)<svg [^>]*class="plot".*?</svg>`)

// charts reads every chart of an HTML page (or of one SVG file).
func charts(t *testing.T, page string) []*drawnChart {
	t.Helper()
	var out []*drawnChart
	for _, s := range svgElem.FindAllString(page, -1) {
		var root node
		if err := xml.Unmarshal([]byte(s), &root); err != nil {
			t.Fatalf("an SVG does not parse: %v\n%.300s", err, s)
		}
		c := &drawnChart{}
		vb := strings.Fields(root.attr("viewBox"))
		if len(vb) == 4 {
			c.width, _ = strconv.ParseFloat(vb[2], 64)
			c.height, _ = strconv.ParseFloat(vb[3], 64)
		}
		bySeries := map[*node]*drawnSeries{}
		var order []*drawnSeries
		var xt, yt []text
		root.walk(nil, func(n, series *node) {
			switch n.XMLName.Local {
			case "title":
				if c.title == "" {
					c.title = n.Text
				}
			case "rect":
				if n.attr("stroke") == "#999" {
					c.left, c.top = n.num("x"), n.num("y")
					c.right, c.bottom = c.left+n.num("width"), c.top+n.num("height")
				}
			case "text":
				tx := text{class: n.attr("class"), anchor: n.attr("text-anchor"), s: n.Text, x: n.num("x"), y: n.num("y"), size: 11}
				if v := n.attr("font-size"); v != "" {
					tx.size, _ = strconv.ParseFloat(v, 64)
				}
				c.texts = append(c.texts, tx)
				switch tx.class {
				case "tick-x":
					xt = append(xt, tx)
				case "tick-y":
					yt = append(yt, tx)
				case "axis-x":
					c.xLabel = tx.s
				case "axis-y":
					c.yLabel = tx.s
				}
			}
			if series == nil {
				return
			}
			ds := bySeries[series]
			if ds == nil {
				ds = &drawnSeries{name: series.attr("data-name"), run: series.attr("data-run"), stat: series.attr("data-stat")}
				ds.dataPoints, _ = strconv.Atoi(series.attr("data-points"))
				bySeries[series] = ds
				order = append(order, ds)
			}
			switch n.XMLName.Local {
			case "polyline":
				ds.hasLine = true
				ds.stroke, ds.dash, ds.width = n.attr("stroke"), n.attr("stroke-dasharray"), n.attr("stroke-width")
				for _, p := range strings.Fields(n.attr("points")) {
					x, y, _ := strings.Cut(p, ",")
					px, _ := strconv.ParseFloat(x, 64)
					py, _ := strconv.ParseFloat(y, 64)
					ds.points = append(ds.points, xy{px, py})
				}
			case "circle", "rect": // a mark: a circle, or a square
				if n.XMLName.Local == "rect" {
					ds.marks = append(ds.marks, xy{n.num("x") + n.num("width")/2, n.num("y") + n.num("height")/2})
				} else {
					ds.marks = append(ds.marks, xy{n.num("cx"), n.num("cy")})
				}
				if ds.stroke == "" {
					ds.stroke = n.attr("stroke")
				}
				if n.attr("fill") == "#fff" {
					ds.hollow++
				}
			}
		})
		for _, ds := range order {
			if !ds.hasLine {
				ds.points = ds.marks
			}
		}
		c.series = order
		for _, tx := range xt {
			c.xticks = append(c.xticks, tick{label: tx.s, px: tx.x})
		}
		for _, tx := range yt {
			c.yticks = append(c.yticks, tick{label: tx.s, px: tx.y - 4}) // the label's baseline is 4 px below its tick
		}
		out = append(out, c)
	}
	return out
}

// chartTitled is the first chart whose title starts with prefix.
func chartTitled(t *testing.T, cs []*drawnChart, prefix string) *drawnChart {
	t.Helper()
	for _, c := range cs {
		if strings.HasPrefix(c.title, prefix) {
			return c
		}
	}
	var titles []string
	for _, c := range cs {
		titles = append(titles, c.title)
	}
	t.Fatalf("no chart %q among %q", prefix, titles)
	return nil
}

// labelValue is what a tick label says, in unit: "ms" or "s" for
// durations (a bare 0 is 0 of any unit), "" for plain numbers (1.5k =
// 1500, 2M) and rates (1.5k/s).
func labelValue(label, unit string) (float64, bool) {
	if unit == "" {
		label = strings.TrimSuffix(label, "/s")
		mult := 1.0
		switch {
		case strings.HasSuffix(label, "k"):
			mult, label = 1e3, strings.TrimSuffix(label, "k")
		case strings.HasSuffix(label, "M"):
			mult, label = 1e6, strings.TrimSuffix(label, "M")
		}
		v, err := strconv.ParseFloat(label, 64)
		return v * mult, err == nil
	}
	if label == "0" {
		return 0, true
	}
	d, err := time.ParseDuration(strings.ReplaceAll(label, "µs", "us"))
	if err != nil {
		return 0, false
	}
	if unit == "ms" {
		return float64(d) / float64(time.Millisecond), true
	}
	return d.Seconds(), true
}

// axis maps pixels back to values through an axis's ticks.
type axis struct {
	ticks []tick
	log   bool
}

// readAxis parses the ticks' labels in unit; log when the axis label says
// "log scale".
func readAxis(t *testing.T, ticks []tick, unit string, log bool) axis {
	t.Helper()
	a := axis{log: log}
	for _, tk := range ticks {
		v, ok := labelValue(tk.label, unit)
		if !ok {
			t.Fatalf("tick label %q is not a value in %q", tk.label, unit)
		}
		tk.v = v
		a.ticks = append(a.ticks, tk)
	}
	if len(a.ticks) < 2 {
		t.Fatalf("%d ticks: cannot read the axis", len(a.ticks))
	}
	return a
}

// value is the value at pixel px, from the first and last ticks.
func (a axis) value(px float64) float64 {
	lo, hi := a.ticks[0], a.ticks[len(a.ticks)-1]
	f := (px - lo.px) / (hi.px - lo.px)
	if a.log {
		return math.Pow(10, math.Log10(lo.v)+f*(math.Log10(hi.v)-math.Log10(lo.v)))
	}
	return lo.v + f*(hi.v-lo.v)
}

// last is the highest tick's value.
func (a axis) last() float64 { return a.ticks[len(a.ticks)-1].v }

// values reads back a series' points through the chart's axes.
func (c *drawnChart) values(s *drawnSeries, x, y axis) []xy {
	out := make([]xy, len(s.points))
	for i, p := range s.points {
		out[i] = xy{x.value(p.x), y.value(p.y)}
	}
	return out
}

func (c *drawnChart) seriesNamed(t *testing.T, name string) *drawnSeries {
	t.Helper()
	for _, s := range c.series {
		if s.name == name {
			return s
		}
	}
	var names []string
	for _, s := range c.series {
		names = append(names, s.name)
	}
	t.Fatalf("chart %q: no series %q among %q", c.title, name, names)
	return nil
}

// near says a read-back value is v, within the precision of pixels
// (rel of the axis's span).
func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), 1e-9)
}
