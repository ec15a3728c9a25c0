// Package plot draws txload's charts as SVG: line charts with linear, log
// and time axes, marks, a legend. It is small on purpose (no dependency, a
// few hundred lines): the HTML report and the sweep chart use it, and the
// files it writes open in any browser, offline.
package plot

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Palette is the series colours in order (Tableau 10).
var Palette = []string{"#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// Dash patterns, for telling apart series of one colour.
const (
	Solid  = ""
	Dashed = "6 3"
	Dotted = "2 3"
	Long   = "12 4"
)

// Series is one line of a chart.
type Series struct {
	Name string
	X, Y []float64
	// Color is a CSS colour; "" takes the palette's next.
	Color string
	// Dash is an SVG stroke-dasharray (Solid, Dashed, ...).
	Dash string
	// Width of the line in px; 0 = 1.5.
	Width float64
	// Marks draws a circle at each point; Hollow[i] draws point i's as a
	// ring (a failing sweep step) where given.
	Marks  bool
	Hollow []bool
	// NoLine draws the marks only.
	NoLine bool
	// Labels, where given, are written beside the points.
	Labels []string
}

// Tick is an axis tick at V labelled Label.
type Tick struct {
	V     float64
	Label string
}

// Axis describes one axis.
type Axis struct {
	Label string
	// Log makes the scale logarithmic (values <= 0 are left out).
	Log bool
	// Time formats values as durations in seconds (90s, 2m, 1h30m).
	Time bool
	// Ticks, if set, replace the computed ticks.
	Ticks []Tick
	// Min and Max, if set (non-NaN and Min < Max), fix the range.
	Min, Max float64
	// Format formats a tick value; nil = compact decimal.
	Format func(float64) string
}

// Chart is a chart of series against two axes.
type Chart struct {
	// ID names the chart's clip path: unique within one HTML page.
	ID            string
	Title         string
	X, Y          Axis
	Series        []Series
	Width, Height int // px; 0 = 760×300
}

// Points is the number of points that would be drawn.
func (c *Chart) Points() int {
	n := 0
	for _, s := range c.Series {
		for i := range s.X {
			if i < len(s.Y) && c.drawable(s.X[i], s.Y[i]) {
				n++
			}
		}
	}
	return n
}

func (c *Chart) drawable(x, y float64) bool {
	ok := func(a Axis, v float64) bool {
		return !math.IsNaN(v) && !math.IsInf(v, 0) && (!a.Log || v > 0)
	}
	return ok(c.X, x) && ok(c.Y, y)
}

const (
	padLeft, padRight, padTop, padBottom = 64, 28, 30, 42
	legendLine                           = 16
)

type scale struct {
	lo, hi   float64 // in data units
	log      bool
	from, to float64 // in px
}

func (s scale) at(v float64) float64 {
	a, b, x := s.lo, s.hi, v
	if s.log {
		a, b, x = math.Log10(a), math.Log10(b), math.Log10(v)
	}
	if b == a {
		return (s.from + s.to) / 2
	}
	return s.from + (x-a)/(b-a)*(s.to-s.from)
}

// dataRange is the range of the drawable values on one axis.
func (c *Chart) dataRange(x bool) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for i := range s.X {
			if i >= len(s.Y) || !c.drawable(s.X[i], s.Y[i]) {
				continue
			}
			v := s.Y[i]
			if x {
				v = s.X[i]
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	return lo, hi, lo <= hi
}

func axisRange(a Axis, lo, hi float64, ok bool, zero bool) (float64, float64) {
	if !math.IsNaN(a.Min) && !math.IsNaN(a.Max) && a.Min < a.Max && (a.Min != 0 || a.Max != 0) {
		return a.Min, a.Max
	}
	if !ok {
		if a.Log {
			return 1, 10
		}
		return 0, 1
	}
	if a.Log {
		lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
		if lo == hi {
			hi = lo * 10
		}
		return lo, hi
	}
	if zero && lo > 0 {
		lo = 0
	}
	if lo == hi {
		if lo == 0 {
			return 0, 1
		}
		return lo - math.Abs(lo)/2, hi + math.Abs(hi)/2
	}
	step := niceStep((hi-lo)/6, a.Time)
	return math.Floor(lo/step) * step, math.Ceil(hi/step) * step
}

// niceStep rounds a step up to 1, 2 or 5 times a power of ten, or for
// times to a round number of seconds, minutes or hours.
func niceStep(raw float64, time bool) float64 {
	if raw <= 0 || math.IsNaN(raw) {
		return 1
	}
	if time && raw >= 1 {
		for _, s := range []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400} {
			if s >= raw {
				return s
			}
		}
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func ticks(a Axis, lo, hi float64) []Tick {
	if a.Ticks != nil {
		var out []Tick
		for _, t := range a.Ticks {
			if t.V >= lo*(1-1e-9) && t.V <= hi*(1+1e-9) {
				out = append(out, t)
			}
		}
		return out
	}
	format := a.Format
	if format == nil {
		format = Compact
		if a.Time {
			format = Duration
		}
	}
	var out []Tick
	if a.Log {
		decades := math.Log10(hi / lo)
		mults := []float64{1}
		if decades <= 2 {
			mults = []float64{1, 2, 5}
		}
		for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
			for _, m := range mults {
				v := m * math.Pow(10, e)
				if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
					out = append(out, Tick{v, format(v)})
				}
			}
		}
		return out
	}
	step := niceStep((hi-lo)/6, a.Time)
	for v := math.Ceil(lo/step-1e-9) * step; v <= hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		out = append(out, Tick{v, format(v)})
	}
	return out
}

// Compact formats a number in few characters: 0.25, 12, 1.5k, 2M.
func Compact(v float64) string {
	av := math.Abs(v)
	switch {
	case av >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case av >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// Duration formats seconds: 45s, 2m, 1m30s, 1h.
func Duration(v float64) string {
	s := int64(math.Round(v))
	if math.Abs(v-float64(s)) > 1e-6 {
		return strconv.FormatFloat(v, 'g', 3, 64) + "s"
	}
	var b strings.Builder
	if s < 0 {
		b.WriteByte('-')
		s = -s
	}
	h, m, sec := s/3600, s/60%60, s%60
	if h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if sec > 0 || s == 0 {
		fmt.Fprintf(&b, "%ds", sec)
	}
	return b.String()
}

// Millis formats milliseconds: 0.25ms, 12ms, 1.2s.
func Millis(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v/1000, 'g', 3, 64) + "s"
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + "ms"
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// canvas is what a chart is drawn on: SVG text or a raster image.
type canvas interface {
	rect(x, y, w, h float64, fill, stroke string)
	line(x1, y1, x2, y2 float64, stroke string, width float64, dash string)
	polyline(xs, ys []float64, stroke string, width float64, dash string)
	circle(cx, cy, r float64, fill, stroke string)
	// text at x, y (baseline); anchor start, middle or end; vertical
	// turns it 90° counter-clockwise about x, y.
	text(x, y float64, s, anchor string, size float64, color string, bold, vertical bool)
	// clip limits what follows to the rectangle, until unclip.
	clip(x, y, w, h float64)
	unclip()
	// series brackets one series' shapes.
	series(name string, points int)
	endSeries()
}

// size is the chart's width and height with its legend.
func (c *Chart) size() (width, height, total int, legend []legendItem) {
	width, height = c.Width, c.Height
	if width <= 0 {
		width = 760
	}
	if height <= 0 {
		height = 300
	}
	// The legend sits under the plot, as many lines as it needs.
	legend = legendLayout(c.Series, width-padLeft-padRight)
	rows := 0
	for _, r := range legend {
		rows = max(rows, r.row+1)
	}
	return width, height, height + rows*legendLine, legend
}

// draw lays the chart out on cv. Series with no drawable point are left out
// of the plot but kept in the legend.
func (c *Chart) draw(cv canvas) {
	width, height, total, legend := c.size()
	xlo, xhi, xok := c.dataRange(true)
	ylo, yhi, yok := c.dataRange(false)
	xlo, xhi = axisRange(c.X, xlo, xhi, xok, c.X.Time)
	ylo, yhi = axisRange(c.Y, ylo, yhi, yok, true)
	xs := scale{lo: xlo, hi: xhi, log: c.X.Log, from: padLeft, to: float64(width - padRight)}
	ys := scale{lo: ylo, hi: yhi, log: c.Y.Log, from: float64(height - padBottom), to: padTop}
	left, right, top, bottom := float64(padLeft), float64(width-padRight), float64(padTop), float64(height-padBottom)

	cv.rect(0, 0, float64(width), float64(total), "#fff", "")
	cv.text(left, 18, c.Title, "start", 13, "#222", true, false)
	for _, t := range ticks(c.Y, ylo, yhi) {
		y := ys.at(t.V)
		cv.line(left, y, right, y, "#e5e5e5", 1, "")
		cv.text(left-4, y+4, t.Label, "end", 11, "#555", false, false)
	}
	for _, t := range ticks(c.X, xlo, xhi) {
		x := xs.at(t.V)
		cv.line(x, top, x, bottom, "#e5e5e5", 1, "")
		cv.text(x, bottom+14, t.Label, "middle", 11, "#555", false, false)
	}
	cv.rect(left, top, right-left, bottom-top, "", "#999")
	cv.text((left+right)/2, float64(height-8), c.X.Label, "middle", 11, "#333", false, false)
	cv.text(14, (top+bottom)/2, c.Y.Label, "middle", 11, "#333", false, true)

	cv.clip(left-4, top-4, right-left+8, bottom-top+8)
	for i, s := range c.Series {
		color := seriesColor(s, i)
		sw := s.Width
		if sw <= 0 {
			sw = 1.5
		}
		var px, py []float64
		var idx []int
		for j := range s.X {
			if j >= len(s.Y) || !c.drawable(s.X[j], s.Y[j]) {
				continue
			}
			px, py, idx = append(px, xs.at(s.X[j])), append(py, ys.at(s.Y[j])), append(idx, j)
		}
		cv.series(s.Name, len(px))
		if len(px) > 1 && !s.NoLine {
			cv.polyline(px, py, color, sw, s.Dash)
		}
		if s.Marks || len(px) == 1 {
			for k, j := range idx {
				fill := color
				if j < len(s.Hollow) && s.Hollow[j] {
					fill = "#fff"
				}
				cv.circle(px[k], py[k], 3.5, fill, color)
				if j < len(s.Labels) && s.Labels[j] != "" {
					cv.text(px[k]+5, py[k]-5, s.Labels[j], "start", 9, "#555", false, false)
				}
			}
		}
		cv.endSeries()
	}
	cv.unclip()
	for _, l := range legend {
		s := c.Series[l.i]
		x, y := float64(padLeft+l.x), float64(height+l.row*legendLine+4)
		color := seriesColor(s, l.i)
		if s.NoLine {
			cv.circle(x+9, y-4, 3.5, color, color)
		} else {
			cv.line(x, y-4, x+18, y-4, color, 2, s.Dash)
		}
		cv.text(x+22, y, l.text, "start", 11, "#333", false, false)
	}
}

// SVG writes the chart as one <svg> element.
func (c *Chart) SVG(w io.Writer) error {
	width, _, total, _ := c.size()
	cv := &svgCanvas{id: c.ID}
	if cv.id == "" {
		cv.id = "plot"
	}
	fmt.Fprintf(&cv.b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" class="plot" data-points="%d" font-family="sans-serif" font-size="11">`,
		width, total, width, total, c.Points())
	fmt.Fprintf(&cv.b, `<title>%s</title>`, esc(c.Title))
	c.draw(cv)
	cv.b.WriteString(`</svg>`)
	_, err := io.WriteString(w, cv.b.String())
	return err
}

type svgCanvas struct {
	b     strings.Builder
	id    string
	clips int
}

func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%s"`, dash)
}

func (s *svgCanvas) rect(x, y, w, h float64, fill, stroke string) {
	if fill == "" {
		fill = "none"
	}
	st := ""
	if stroke != "" {
		st = fmt.Sprintf(` stroke="%s"`, stroke)
	}
	fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s/>`, num(x), num(y), num(w), num(h), fill, st)
}

func (s *svgCanvas) line(x1, y1, x2, y2 float64, stroke string, width float64, dash string) {
	fmt.Fprintf(&s.b, `<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`, num(x1), num(x2), num(y1), num(y2), stroke, num(width), dashAttr(dash))
}

func (s *svgCanvas) polyline(xs, ys []float64, stroke string, width float64, dash string) {
	s.b.WriteString(`<polyline fill="none" stroke="` + stroke + `" stroke-width="` + num(width) + `"` + dashAttr(dash) + ` stroke-linejoin="round" points="`)
	for i := range xs {
		if i > 0 {
			s.b.WriteByte(' ')
		}
		s.b.WriteString(num(xs[i]) + "," + num(ys[i]))
	}
	s.b.WriteString(`"/>`)
}

func (s *svgCanvas) circle(cx, cy, r float64, fill, stroke string) {
	fmt.Fprintf(&s.b, `<circle cx="%s" cy="%s" r="%s" fill="%s" stroke="%s" stroke-width="1.5"/>`, num(cx), num(cy), num(r), fill, stroke)
}

func (s *svgCanvas) text(x, y float64, t, anchor string, size float64, color string, bold, vertical bool) {
	attrs := ""
	if anchor != "start" {
		attrs += ` text-anchor="` + anchor + `"`
	}
	if size != 11 {
		attrs += ` font-size="` + num(size) + `"`
	}
	if bold {
		attrs += ` font-weight="bold"`
	}
	if vertical {
		fmt.Fprintf(&s.b, `<text transform="translate(%s,%s) rotate(-90)" fill="%s"%s>%s</text>`, num(x), num(y), color, attrs, esc(t))
		return
	}
	fmt.Fprintf(&s.b, `<text x="%s" y="%s" fill="%s"%s>%s</text>`, num(x), num(y), color, attrs, esc(t))
}

func (s *svgCanvas) clip(x, y, w, h float64) {
	s.clips++
	id := fmt.Sprintf("clip-%s-%d", s.id, s.clips)
	fmt.Fprintf(&s.b, `<clipPath id="%s"><rect x="%s" y="%s" width="%s" height="%s"/></clipPath><g clip-path="url(#%s)">`, id, num(x), num(y), num(w), num(h), id)
}

func (s *svgCanvas) unclip() { s.b.WriteString(`</g>`) }

func (s *svgCanvas) series(name string, points int) {
	fmt.Fprintf(&s.b, `<g class="series" data-name="%s" data-points="%d">`, esc(name), points)
}

func (s *svgCanvas) endSeries() { s.b.WriteString(`</g>`) }

func seriesColor(s Series, i int) string {
	if s.Color != "" {
		return s.Color
	}
	return Palette[i%len(Palette)]
}

type legendItem struct {
	i, x, row int
	text      string
}

// legendLayout places the legend's entries in rows of at most width px,
// counting 7 px per character (the bitmap font's; wider than the SVG's).
func legendLayout(series []Series, width int) []legendItem {
	var out []legendItem
	x, row := 0, 0
	for i, s := range series {
		text := s.Name
		if text == "" {
			continue
		}
		w := 22 + 7*len([]rune(text)) + 14
		if x > 0 && x+w > width {
			x, row = 0, row+1
		}
		out = append(out, legendItem{i: i, x: x, row: row, text: text})
		x += w
	}
	return out
}

func esc(s string) string { return html.EscapeString(s) }
