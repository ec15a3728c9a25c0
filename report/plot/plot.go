// Package plot draws txload's charts as SVG and PNG: line charts with
// linear, log and time axes, marks, reference lines, a legend and notes. It
// is small on purpose (no dependency but golang.org/x/image for the PNG):
// the HTML report and the sweep chart use it, and the files it writes open
// in any browser, offline.
//
// The SVG is meant to be read back: tick labels carry class="tick-x" or
// "tick-y", point labels "label", notes "note"; each series is a
// <g class="series"> with data-name, data-run, data-stat and data-points.
package plot

import (
	"cmp"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// palette is the series colours in order (Tableau 10).
var palette = [...]string{"#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// Color is the i-th series colour: ten distinct ones, then again.
func Color(i int) string { return palette[i%len(palette)] }

// Tint mixes a #rrggbb colour with white: f = 0 keeps it, 1 is white. A
// colour it cannot read is returned as it is.
func Tint(color string, f float64) string {
	c, ok := parseColor(color)
	if !ok {
		return color
	}
	mix := func(v uint8) uint8 { return uint8(math.Round(float64(v) + (255-float64(v))*f)) }
	return fmt.Sprintf("#%02x%02x%02x", mix(c.R), mix(c.G), mix(c.B))
}

// Neutral is the colour of legend keys that stand for a line style rather
// than for one series ("dashed: p99", whatever the run's colour).
const Neutral = "#444"

// Dash patterns (SVG stroke-dasharray), for telling apart series of one
// colour.
const (
	Solid      = ""
	Dotted     = "2 3"
	Dashed     = "7 4"
	Long       = "14 4"
	DashDot    = "8 3 2 3"
	DashDotDot = "8 3 2 3 2 3"
)

// Series is one line of a chart.
type Series struct {
	Name string
	// Run and Stat say what the line is (written as data-run and
	// data-stat): the run it belongs to, and the statistic it draws.
	Run, Stat string
	X, Y      []float64
	// Color is a CSS colour; "" takes the palette's next.
	Color string
	// Dash is an SVG stroke-dasharray (Solid, Dashed, ...).
	Dash string
	// Width of the line in px; 0 = 1.5.
	Width float64
	// Marks draws a circle at each point (a square with Square); Hollow[i]
	// draws point i's as a ring (a failing sweep step) where given.
	Marks  bool
	Square bool
	Hollow []bool
	// Lo and Hi, where given, are a band drawn under the line, from Lo[i]
	// to Hi[i] at X[i], in the line's colour, pale: the range of the
	// finer values a point stands for (the intervals of a window).
	Lo, Hi []float64
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
	// Time formats values as durations in seconds (90s, 2m, 1h30m); a
	// time axis starts at 0 and ends at the last value drawn (not at the
	// next round tick: the axis ends where the measurement did), or at a
	// round tick less than 1% of the range beyond it.
	Time bool
	// Ticks, if set, replace the computed ticks.
	Ticks []Tick
	// Min and Max, if set (Min < Max, not both 0), fix the range.
	Min, Max float64
	// Format formats a tick value; nil = compact decimal (Duration on a
	// time axis). It must be the format of the values' unit: Millis for
	// values in milliseconds.
	Format func(float64) string
}

// Key is one entry of a legend.
type Key struct {
	Name string
	// Color is the line's colour; "" = Neutral.
	Color string
	Dash  string
	Width float64
	// Mark draws a circle (hollow with Hollow, a square with Square)
	// instead of, or with, the line; NoLine leaves the line out; Band
	// draws a pale box, as a band is drawn.
	Mark, Hollow, NoLine, Square, Band bool
}

// Rule is a reference line across the plot: horizontal at Y = V, or
// vertical at X = V, labelled.
type Rule struct {
	Vertical bool
	V        float64
	Label    string
	// Color "" = Neutral.
	Color string
	Dash  string
}

// Chart is a chart of series against two axes.
type Chart struct {
	// ID names the chart's clip path: unique within one HTML page.
	ID     string
	Title  string
	X, Y   Axis
	Series []Series
	// Legend, when set, replaces the legend made of the series' names.
	Legend []Key
	// Rules are reference lines (an objective, a maximum found); their
	// values are kept within the axes' ranges.
	Rules []Rule
	// Notes are lines of text under the legend: what the chart leaves out
	// and why.
	Notes         []string
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
	return valid(c.X, x) && valid(c.Y, y)
}

func valid(a Axis, v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (!a.Log || v > 0)
}

const (
	padLeft, padRight, padTop, padBottom = 64, 28, 30, 42
	legendLine                           = 16
	legendGap                            = 6  // between the x axis's label and the legend
	keyLine                              = 30 // the length of a legend key's line: long enough to show its dashes
	// charWidth is the width of a character of the PNG's bitmap font,
	// wider than the SVG's at 11 px: text laid out with it fits both.
	charWidth = 7
)

// TextWidth is the width in px the layout gives a text at a font size (px):
// per character, an em for the widest letters (m, w, M, W, @, %), 0.8 em
// for other capitals, 0.64 em for the rest, and never less than a
// character of the PNG's bitmap font. It is at least the width of DejaVu
// Sans (the sans-serif of Debian's browsers), whose lower case letters
// are at most 0.64 em wide.
func TextWidth(text string, size float64) float64 {
	w := 0.0
	for _, r := range text {
		em := 0.64
		switch {
		case strings.ContainsRune("mwMW@%", r):
			em = 1
		case unicode.IsUpper(r):
			em = 0.8
		}
		w += math.Max(em*size, charWidth)
	}
	return w
}

// ruleOrder is the order in which the rules' labels are placed: as
// given, but the vertical rules, in their places among the others, from
// left to right.
func ruleOrder(rules []Rule) []int {
	order := make([]int, len(rules))
	var vertical []int
	for i, r := range rules {
		order[i] = i
		if r.Vertical {
			vertical = append(vertical, i)
		}
	}
	sorted := slices.Clone(vertical)
	slices.SortStableFunc(sorted, func(a, b int) int { return cmp.Compare(rules[a].V, rules[b].V) })
	for k, i := range vertical {
		order[i] = sorted[k]
	}
	return order
}

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

// dataRange is the range of the drawable values on one axis, rules
// included.
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
			if !x && i < len(s.Lo) && i < len(s.Hi) && c.drawable(s.X[i], s.Lo[i]) && c.drawable(s.X[i], s.Hi[i]) {
				lo, hi = math.Min(lo, s.Lo[i]), math.Max(hi, s.Hi[i])
			}
		}
	}
	a := c.Y
	if x {
		a = c.X
	}
	for _, r := range c.Rules {
		if r.Vertical == x && valid(a, r.V) {
			lo, hi = math.Min(lo, r.V), math.Max(hi, r.V)
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
	if a.Time { // the axis starts and ends where the data do
		// or at the round tick a hair beyond them, within 1% of the
		// range: a run measured for 4.9967 s of its 5 s (an open loop's
		// window cut at the clock's end) keeps its 5s label.
		if end := math.Ceil(hi/step) * step; end-hi < (hi-lo)/100 {
			hi = end
		}
		return lo, hi
	}
	return math.Floor(lo/step) * step, math.Ceil(hi/step) * step
}

// ShareAxes gives the charts the same ranges, those that hold every
// chart's data on each axis, so that they can be compared by eye: the same
// scale and tick spacing. The charts must have like axes (all linear or all
// log, time or not).
func ShareAxes(charts ...*Chart) {
	if len(charts) < 2 {
		return
	}
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, c := range charts {
		if lo, hi, ok := c.dataRange(true); ok {
			xlo, xhi = math.Min(xlo, lo), math.Max(xhi, hi)
		}
		if lo, hi, ok := c.dataRange(false); ok {
			ylo, yhi = math.Min(ylo, lo), math.Max(yhi, hi)
		}
	}
	xl, xh := axisRange(charts[0].X, xlo, xhi, xlo <= xhi, false)
	yl, yh := axisRange(charts[0].Y, ylo, yhi, ylo <= yhi, true)
	for _, c := range charts {
		c.X.Min, c.X.Max, c.Y.Min, c.Y.Max = xl, xh, yl, yh
	}
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

func (a Axis) format() func(float64) string {
	switch {
	case a.Format != nil:
		return a.Format
	case a.Time:
		return Duration
	}
	return Compact
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
	format := a.format()
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
	// A tick a hair beyond the end (a run's 4.9999 s) is kept.
	for i := math.Ceil(lo/step - 1e-9); i*step <= hi+step*1e-3; i++ {
		v := i * step // not a running sum: no drift
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

// Duration formats seconds: 45s, 2m, 1m30s, 1h, 0.5s.
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

// Millis formats a duration given in milliseconds, in the unit that reads
// best: 250µs, 12ms, 1.2s (and 0 as 0).
func Millis(v float64) string {
	av := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case av >= 1000:
		return strconv.FormatFloat(v/1000, 'g', 3, 64) + "s"
	case av < 1:
		return strconv.FormatFloat(v*1000, 'g', 3, 64) + "µs"
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + "ms"
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// textStyle is how a text is drawn.
type textStyle struct {
	anchor   string // start, middle or end
	size     float64
	color    string
	bold     bool
	vertical bool   // turned 90° counter-clockwise about its origin
	class    string // the SVG's class attribute, for readers of the SVG
}

// canvas is what a chart is drawn on: SVG text or a raster image.
type canvas interface {
	rect(x, y, w, h float64, fill, stroke string)
	line(x1, y1, x2, y2 float64, stroke string, width float64, dash string)
	polyline(xs, ys []float64, stroke string, width float64, dash string)
	circle(cx, cy, r float64, fill, stroke string)
	// square is a mark of half-width r.
	square(cx, cy, r float64, fill, stroke string)
	// band fills the area between lo and hi along xs, pale.
	band(xs, lo, hi []float64, fill string)
	// text at x, y (the baseline's start, middle or end).
	text(x, y float64, s string, st textStyle)
	// clip limits what follows to the rectangle, until unclip.
	clip(x, y, w, h float64)
	unclip()
	// series brackets one series' shapes.
	series(s Series, points int)
	endSeries()
}

// layout is where a chart's parts go.
type layout struct {
	width, height, total int
	legend               []legendItem
	notesAt              int // baseline of the first note
}

func (c *Chart) layout() layout {
	width, height := c.Width, c.Height
	if width <= 0 {
		width = 760
	}
	if height <= 0 {
		height = 300
	}
	// The legend sits under the plot, as many lines as it needs, then the
	// notes.
	legend := legendLayout(c.keys(), width-padLeft-padRight)
	rows := 0
	for _, r := range legend {
		rows = max(rows, r.row+1)
	}
	// The legend's first line is legendGap below the axis's label.
	notesAt := height + legendGap + rows*legendLine + 4
	var notes int
	for _, n := range c.Notes {
		notes += len(wrap(n, (width-padLeft-padRight)/charWidth))
	}
	total := height + rows*legendLine
	if rows > 0 {
		total += legendGap
	}
	if notes > 0 { // room for the last line's descenders
		total = notesAt + notes*legendLine + 2
	}
	return layout{width: width, height: height, total: total, legend: legend, notesAt: notesAt}
}

// keys is the legend: Legend, or one key per named series.
func (c *Chart) keys() []Key {
	if c.Legend != nil {
		return c.Legend
	}
	var out []Key
	for i, s := range c.Series {
		if s.Name == "" {
			continue
		}
		out = append(out, Key{Name: s.Name, Color: seriesColor(s, i), Dash: s.Dash, Width: s.Width, Mark: s.NoLine, NoLine: s.NoLine})
	}
	return out
}

// wrap cuts s into lines of at most n characters, at spaces.
func wrap(s string, n int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len([]rune(line))+1+len([]rune(w)) > n {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// draw lays the chart out on cv. Series with no drawable point are left out
// of the plot but kept in the legend.
func (c *Chart) draw(cv canvas) {
	l := c.layout()
	width, height := l.width, l.height
	xlo, xhi, xok := c.dataRange(true)
	ylo, yhi, yok := c.dataRange(false)
	xlo, xhi = axisRange(c.X, xlo, xhi, xok, false)
	ylo, yhi = axisRange(c.Y, ylo, yhi, yok, true)
	xs := scale{lo: xlo, hi: xhi, log: c.X.Log, from: padLeft, to: float64(width - padRight)}
	ys := scale{lo: ylo, hi: yhi, log: c.Y.Log, from: float64(height - padBottom), to: padTop}
	left, right, top, bottom := float64(padLeft), float64(width-padRight), float64(padTop), float64(height-padBottom)
	small := textStyle{anchor: "start", size: 11, color: "#555"}

	cv.rect(0, 0, float64(width), float64(l.total), "#fff", "")
	cv.text(left, 18, c.Title, textStyle{anchor: "start", size: 13, color: "#222", bold: true, class: "title"})
	for _, t := range ticks(c.Y, ylo, yhi) {
		y := ys.at(t.V)
		cv.line(left, y, right, y, "#e5e5e5", 1, "")
		st := small
		st.anchor, st.class = "end", "tick-y"
		cv.text(left-4, y+4, t.Label, st)
	}
	lastRight := math.Inf(-1) // of the x tick labels written
	for _, t := range ticks(c.X, xlo, xhi) {
		x := xs.at(t.V)
		cv.line(x, top, x, bottom, "#e5e5e5", 1, "")
		st := small
		st.anchor, st.class = "middle", "tick-x"
		// A label at the plot's left or right edge is set inside the
		// plot's width, off the y axis's labels at the corner; one that
		// would touch the label before it is left out (its grid line
		// stays).
		w := TextWidth(t.Label, st.size)
		x0 := x - w/2
		if x0 < left {
			st.anchor, x0 = "start", x
		} else if x+w/2 > right {
			st.anchor, x0 = "end", x-w
		}
		if x0 < lastRight+3 {
			continue
		}
		lastRight = x0 + w
		cv.text(x, bottom+14, t.Label, st)
	}
	cv.rect(left, top, right-left, bottom-top, "", "#999")
	axisLabel := textStyle{anchor: "middle", size: 11, color: "#333", class: "axis-x"}
	cv.text((left+right)/2, float64(height-8), c.X.Label, axisLabel)
	axisLabel.vertical, axisLabel.class = true, "axis-y"
	cv.text(14, (top+bottom)/2, c.Y.Label, axisLabel)

	type label struct {
		x, y float64
		text string
	}
	var labels []label
	type point struct{ x, y float64 }
	var marks []point
	var segments [][2]point // the lines drawn, which labels keep off
	cv.clip(left-4, top-4, right-left+8, bottom-top+8)
	for _, r := range c.Rules {
		color := r.Color
		if color == "" {
			color = Neutral
		}
		if r.Vertical && valid(c.X, r.V) {
			x := xs.at(r.V)
			cv.line(x, top, x, bottom, color, 1, r.Dash)
			segments = append(segments, [2]point{{x, top}, {x, bottom}})
		} else if !r.Vertical && valid(c.Y, r.V) {
			y := ys.at(r.V)
			cv.line(left, y, right, y, color, 1, r.Dash)
			segments = append(segments, [2]point{{left, y}, {right, y}})
		}
	}
	for i, s := range c.Series {
		color := seriesColor(s, i)
		sw := s.Width
		if sw <= 0 {
			sw = 1.5
		}
		// A value that cannot be drawn (NaN: nothing measured there) breaks
		// the line: a gap, not a line across it. A point alone between gaps
		// is drawn as a mark.
		var px, py []float64
		var idx []int
		var pieces [][2]int // [from, to) in px
		from := 0
		for j := range s.X {
			if j >= len(s.Y) || !c.drawable(s.X[j], s.Y[j]) {
				if len(px) > from {
					pieces = append(pieces, [2]int{from, len(px)})
				}
				from = len(px)
				continue
			}
			px, py, idx = append(px, xs.at(s.X[j])), append(py, ys.at(s.Y[j])), append(idx, j)
		}
		if len(px) > from {
			pieces = append(pieces, [2]int{from, len(px)})
		}
		cv.series(s, len(px))
		c.drawBand(cv, s, xs, ys, color)
		alone := map[int]bool{}
		for _, pc := range pieces {
			if pc[1]-pc[0] == 1 {
				alone[pc[0]] = true
			} else if !s.NoLine {
				cv.polyline(px[pc[0]:pc[1]], py[pc[0]:pc[1]], color, sw, s.Dash)
				for k := pc[0] + 1; k < pc[1]; k++ {
					segments = append(segments, [2]point{{px[k-1], py[k-1]}, {px[k], py[k]}})
				}
			}
		}
		for k := range px {
			if !s.Marks && alone[k] {
				cv.circle(px[k], py[k], 2, color, color)
			}
		}
		if s.Marks {
			for k, j := range idx {
				fill := color
				if j < len(s.Hollow) && s.Hollow[j] {
					fill = "#fff"
				}
				if s.Square {
					cv.square(px[k], py[k], 3.5, fill, color)
				} else {
					cv.circle(px[k], py[k], 3.5, fill, color)
				}
				marks = append(marks, point{px[k], py[k]})
				if j < len(s.Labels) && s.Labels[j] != "" {
					labels = append(labels, label{px[k], py[k], s.Labels[j]})
				}
			}
		}
		cv.endSeries()
	}
	cv.unclip()

	// Point labels, then rule labels, outside the clip: a point's beside
	// it (above right, below right, above left, below left), a rule's
	// along its line; each at the first place inside the plot that covers
	// no mark and no label already written.
	const labelSize = 9
	type box struct{ x0, y0, x1, y1 float64 }
	taken := make([]box, 0, len(marks)+len(labels))
	for _, m := range marks {
		taken = append(taken, box{m.x - 4, m.y - 4, m.x + 4, m.y + 4})
	}
	// free says a box covers no mark and no label, nor, with lines, a
	// line drawn.
	free := func(b box, lines bool) bool {
		for _, t := range taken {
			if b.x0 < t.x1 && t.x0 < b.x1 && b.y0 < t.y1 && t.y0 < b.y1 {
				return false
			}
		}
		for _, sg := range segments {
			if !lines {
				break
			}
			if segmentCrosses(sg[0].x, sg[0].y, sg[1].x, sg[1].y, b.x0, b.y0, b.x1, b.y1) {
				return false
			}
		}
		return true
	}
	// spot is where a text may go: its baseline's start (or end).
	type spot struct {
		x, y float64
		end  bool
		far  bool // a row away from its line: taken only when no near spot is free
	}
	// place writes text at the first spot that covers nothing (with
	// avoidLines, no line either), else the first that covers no text and
	// no mark, the near spots before the far ones; else the first inside
	// the plot.
	place := func(spots []spot, text string, st textStyle, avoidLines bool) {
		w, h := TextWidth(text, st.size), st.size
		boxOf := func(s spot) box {
			if s.end {
				return box{s.x - w, s.y - h, s.x, s.y + 2}
			}
			return box{s.x, s.y - h, s.x + w, s.y + 2}
		}
		inside := func(b box) bool { return b.x0 >= left+2 && b.x1 <= right-2 && b.y0 >= top+2 && b.y1 <= bottom-1 }
		chosen := -1
		for _, far := range []bool{false, true} {
			for _, lines := range []bool{avoidLines, false} {
				for k, s := range spots {
					if b := boxOf(s); chosen < 0 && (far || !s.far) && inside(b) && free(b, lines) {
						chosen = k
					}
				}
			}
		}
		for k, s := range spots {
			if chosen < 0 && inside(boxOf(s)) {
				chosen = k
			}
		}
		sp := spots[0]
		if chosen >= 0 {
			sp = spots[chosen]
		} else { // wider or taller than the plot allows: as near as it fits
			sp = spot{x: math.Max(left+2, math.Min(sp.x, right-2-w)), y: math.Max(top+2+h, math.Min(sp.y, bottom-1))}
		}
		taken = append(taken, boxOf(sp))
		st.anchor = "start"
		if sp.end {
			st.anchor = "end"
		}
		cv.text(sp.x, sp.y, text, st)
	}
	for _, lb := range labels {
		// Beside the point first, then a line further away each time
		// (the close steps of a bisection).
		x, y, h := lb.x, lb.y, float64(labelSize)
		var spots []spot
		for k := range 8 {
			d := float64(k) * (h + 2)
			spots = append(spots, spot{x: x + 5, y: y - 5 - d}, spot{x: x + 5, y: y + 5 + h + d}, spot{x: x - 5, y: y - 5 - d, end: true}, spot{x: x - 5, y: y + 5 + h + d, end: true})
		}
		place(spots, lb.text, textStyle{size: labelSize, color: "#555", class: "label"}, true)
	}
	// Rule labels: a horizontal rule's along its line; a vertical rule's
	// beside its line, right of it where it fits, else left, on the first
	// row from the top where it covers no label already written. The
	// vertical rules are taken from left to right, so that the labels of
	// moments close together (a failover's fault, promotion, new primary)
	// stack down in their order.
	for _, i := range ruleOrder(c.Rules) {
		r := c.Rules[i]
		if r.Label == "" {
			continue
		}
		color := r.Color
		if color == "" {
			color = Neutral
		}
		st := textStyle{size: labelSize + 1, color: color, class: "rule"}
		var spots []spot
		switch {
		case r.Vertical && valid(c.X, r.V):
			x := xs.at(r.V)
			for _, end := range []bool{false, true} {
				for y := top + st.size + 4; y < bottom; y += 6 {
					if end {
						spots = append(spots, spot{x: x - 4, y: y, end: true})
					} else {
						spots = append(spots, spot{x: x + 4, y: y})
					}
				}
			}
		case !r.Vertical && valid(c.Y, r.V):
			// Along the line, above or below it, then a row further
			// away each time: the labels of rules at one rate (two
			// runs' targets) stack instead of overlapping.
			y := ys.at(r.V)
			for k := range 4 {
				d := float64(k) * (st.size + 2)
				for x := left + 4; x < right; x += 12 {
					spots = append(spots, spot{x: x, y: y - 4 - d, far: k > 0}, spot{x: x, y: y + 4 + st.size + d, far: k > 0})
				}
			}
		}
		if len(spots) > 0 {
			// A horizontal rule's label (a target rate, an SLO) keeps off
			// the data where it can; a vertical one's stack in the order
			// of their lines, read across the data.
			place(spots, r.Label, st, !r.Vertical)
		}
	}

	keys := c.keys()
	for _, it := range l.legend {
		k := keys[it.i]
		x, y := float64(padLeft+it.x), float64(height+legendGap+it.row*legendLine+4)
		color := k.Color
		if color == "" {
			color = Neutral
		}
		w := k.Width
		if w <= 0 {
			w = 2
		}
		if k.Band {
			cv.band([]float64{x, x + keyLine}, []float64{y, y}, []float64{y - 8, y - 8}, color)
		}
		if !k.NoLine {
			cv.line(x, y-4, x+keyLine, y-4, color, w, k.Dash)
		}
		if k.Mark {
			fill := color
			if k.Hollow {
				fill = "#fff"
			}
			if k.Square {
				cv.square(x+keyLine/2, y-4, 3.5, fill, color)
			} else {
				cv.circle(x+keyLine/2, y-4, 3.5, fill, color)
			}
		}
		cv.text(x+keyLine+6, y, it.text, textStyle{anchor: "start", size: 11, color: "#333", class: "key"})
	}
	y := float64(l.notesAt + legendLine - 4)
	for _, n := range c.Notes {
		for _, line := range wrap(n, (width-padLeft-padRight)/charWidth) {
			cv.text(left, y, line, textStyle{anchor: "start", size: 11, color: "#555", class: "note"})
			y += legendLine
		}
	}
}

// drawBand draws s's band, where it has one: pieces between the points
// whose three values can be drawn.
func (c *Chart) drawBand(cv canvas, s Series, xs, ys scale, color string) {
	if len(s.Lo) == 0 || len(s.Hi) == 0 {
		return
	}
	var bx, blo, bhi []float64
	flush := func() {
		if len(bx) > 1 {
			cv.band(bx, blo, bhi, color)
		}
		bx, blo, bhi = nil, nil, nil
	}
	for j := range s.X {
		if j >= len(s.Lo) || j >= len(s.Hi) || !c.drawable(s.X[j], s.Lo[j]) || !c.drawable(s.X[j], s.Hi[j]) {
			flush()
			continue
		}
		bx, blo, bhi = append(bx, xs.at(s.X[j])), append(blo, ys.at(s.Lo[j])), append(bhi, ys.at(s.Hi[j]))
	}
	flush()
}

// segmentCrosses says whether the segment from (ax, ay) to (bx, by)
// passes through the box (x0, y0)–(x1, y1).
func segmentCrosses(ax, ay, bx, by, x0, y0, x1, y1 float64) bool {
	_, _, ok := clipT(pt{ax, ay}, pt{bx, by}, x0, y0, x1, y1)
	return ok
}

// clipT is the part [t0, t1] of the segment a + t·(b−a), t from 0 to 1,
// inside the box (x0, y0)–(x1, y1) (Liang-Barsky); ok is false when none
// is.
func clipT(a, b pt, x0, y0, x1, y1 float64) (t0, t1 float64, ok bool) {
	t0, t1 = 0, 1
	dx, dy := b.x-a.x, b.y-a.y
	for _, e := range [4][2]float64{{-dx, a.x - x0}, {dx, x1 - a.x}, {-dy, a.y - y0}, {dy, y1 - a.y}} {
		p, q := e[0], e[1]
		if p == 0 {
			if q < 0 {
				return 0, 0, false
			}
			continue
		}
		t := q / p
		if p < 0 {
			t0 = math.Max(t0, t)
		} else {
			t1 = math.Min(t1, t)
		}
		if t0 > t1 {
			return 0, 0, false
		}
	}
	return t0, t1, true
}

// SVG writes the chart as one <svg> element.
func (c *Chart) SVG(w io.Writer) error {
	l := c.layout()
	cv := &svgCanvas{id: c.ID}
	if cv.id == "" {
		cv.id = "plot"
	}
	fmt.Fprintf(&cv.b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" class="plot" data-points="%d" font-family="sans-serif" font-size="11">`,
		l.width, l.total, l.width, l.total, c.Points())
	fmt.Fprintf(&cv.b, `<title>%s</title>`, esc(c.Title))
	// Labels over lines are read through a white halo.
	cv.b.WriteString(`<style>text.label,text.rule{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}</style>`)
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

func (s *svgCanvas) square(cx, cy, r float64, fill, stroke string) {
	fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="%s" stroke-width="1.5"/>`, num(cx-r), num(cy-r), num(2*r), num(2*r), fill, stroke)
}

// bandOpacity is how strongly a band is filled with its line's colour.
const bandOpacity = 0.18

func (s *svgCanvas) band(xs, lo, hi []float64, fill string) {
	s.b.WriteString(`<polygon class="band" fill="` + fill + `" fill-opacity="` + strconv.FormatFloat(bandOpacity, 'g', -1, 64) + `" stroke="none" points="`)
	for i := range xs {
		s.b.WriteString(num(xs[i]) + "," + num(hi[i]) + " ")
	}
	for i := len(xs) - 1; i >= 0; i-- {
		s.b.WriteString(num(xs[i]) + "," + num(lo[i]))
		if i > 0 {
			s.b.WriteByte(' ')
		}
	}
	s.b.WriteString(`"/>`)
}

func (s *svgCanvas) text(x, y float64, t string, st textStyle) {
	attrs := ""
	if st.class != "" {
		attrs += ` class="` + st.class + `"`
	}
	if st.anchor != "start" && st.anchor != "" {
		attrs += ` text-anchor="` + st.anchor + `"`
	}
	if st.size != 11 {
		attrs += ` font-size="` + num(st.size) + `"`
	}
	if st.bold {
		attrs += ` font-weight="bold"`
	}
	if st.vertical {
		fmt.Fprintf(&s.b, `<text transform="translate(%s,%s) rotate(-90)" fill="%s"%s>%s</text>`, num(x), num(y), st.color, attrs, esc(t))
		return
	}
	fmt.Fprintf(&s.b, `<text x="%s" y="%s" fill="%s"%s>%s</text>`, num(x), num(y), st.color, attrs, esc(t))
}

func (s *svgCanvas) clip(x, y, w, h float64) {
	s.clips++
	id := fmt.Sprintf("clip-%s-%d", s.id, s.clips)
	fmt.Fprintf(&s.b, `<clipPath id="%s"><rect x="%s" y="%s" width="%s" height="%s"/></clipPath><g clip-path="url(#%s)">`, id, num(x), num(y), num(w), num(h), id)
}

func (s *svgCanvas) unclip() { s.b.WriteString(`</g>`) }

func (s *svgCanvas) series(ser Series, points int) {
	fmt.Fprintf(&s.b, `<g class="series" data-name="%s" data-run="%s" data-stat="%s" data-points="%d">`, esc(ser.Name), esc(ser.Run), esc(ser.Stat), points)
}

func (s *svgCanvas) endSeries() { s.b.WriteString(`</g>`) }

func seriesColor(s Series, i int) string {
	if s.Color != "" {
		return s.Color
	}
	return Color(i)
}

type legendItem struct {
	i, x, row int
	text      string
}

// legendLayout places the legend's keys in rows of at most width px,
// counting charWidth px per character.
func legendLayout(keys []Key, width int) []legendItem {
	var out []legendItem
	x, row := 0, 0
	for i, k := range keys {
		if k.Name == "" {
			continue
		}
		w := keyLine + 6 + charWidth*len([]rune(k.Name)) + 14
		if x > 0 && x+w > width {
			x, row = 0, row+1
		}
		out = append(out, legendItem{i: i, x: x, row: row, text: k.Name})
		x += w
	}
	return out
}

func esc(s string) string { return html.EscapeString(s) }
