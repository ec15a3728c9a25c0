package plot

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image"
	"image/png"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func testChart() *Chart {
	return &Chart{
		ID: "t", Title: "latency — µs", X: Axis{Label: "time", Time: true}, Y: Axis{Label: "ms", Log: true, Format: Millis},
		Series: []Series{
			{Name: "p50", X: []float64{1, 2, 3, 4}, Y: []float64{1, 2, math.NaN(), 4}},
			{Name: "p99", X: []float64{1, 2, 3, 4}, Y: []float64{10, 0, 30, 40}, Dash: Dashed, Marks: true, Hollow: []bool{false, false, true, false}},
			{Name: "empty"},
		},
	}
}

// The SVG is well-formed XML, says how many points it draws (NaN and, on a
// log axis, zero are left out) and draws them.
func TestSVG(t *testing.T) {
	c := testChart()
	if got := c.Points(); got != 6 {
		t.Fatalf("Points() = %d, want 6", got)
	}
	var b bytes.Buffer
	if err := c.SVG(&b); err != nil {
		t.Fatal(err)
	}
	var root struct{ XMLName xml.Name }
	if err := xml.Unmarshal(b.Bytes(), &root); err != nil || root.XMLName.Local != "svg" {
		t.Fatalf("not an SVG document: %v\n%s", err, b.String())
	}
	s := b.String()
	for _, want := range []string{`data-points="6"`, `data-name="p50" data-run="" data-stat="" data-points="3"`, `data-name="p99" data-run="" data-stat="" data-points="3"`,
		`data-name="empty" data-run="" data-stat="" data-points="0"`, `stroke-dasharray="7 4"`, `fill="#fff" stroke="#e15759"`, ">latency — µs<", ">10ms<", ">1s<"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if n := strings.Count(s, "<polyline"); n != 2 {
		t.Errorf("%d polylines, want 2", n)
	}
}

// The PNG has the chart's size and shows the series' colours.
func TestPNG(t *testing.T) {
	c := testChart()
	var b bytes.Buffer
	if err := c.PNG(&b); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Bounds(); got.Dx() != 760 || got.Dy() < 300 {
		t.Fatalf("image %v, want 760 wide and at least 300 high", got)
	}
	colours := map[[3]uint32]int{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, b >> 8}]++
		}
	}
	for _, want := range []string{Color(0), Color(1)} {
		c, _ := parseColor(want)
		if colours[[3]uint32{uint32(c.R), uint32(c.G), uint32(c.B)}] < 20 {
			t.Errorf("the image has few pixels of %s: %d", want, colours[[3]uint32{uint32(c.R), uint32(c.G), uint32(c.B)}])
		}
	}
}

func TestTicks(t *testing.T) {
	for _, tt := range []struct {
		a      Axis
		lo, hi float64
		want   string
	}{
		{Axis{}, 0, 1000, "0 200 400 600 800 1k"},
		{Axis{Time: true}, 0, 3600, "0s 10m 20m 30m 40m 50m 1h"},
		{Axis{Log: true, Format: Millis}, 1, 1000, "1ms 10ms 100ms 1s"},
		{Axis{Log: true}, 1, 10, "1 2 5 10"},
		// A time axis ends where the data do, not at the next round tick.
		{Axis{Time: true}, 0, 5.01, "0s 1s 2s 3s 4s 5s"},
		{Axis{Time: true}, 0, 4.9999, "0s 1s 2s 3s 4s 5s"},
		// Milliseconds read in the unit that suits them.
		{Axis{Format: Millis}, 0, 20, "0 5ms 10ms 15ms 20ms"},
		{Axis{Log: true, Format: Millis}, 0.1, 10, "100µs 200µs 500µs 1ms 2ms 5ms 10ms"},
	} {
		var got []string
		for _, tk := range ticks(tt.a, tt.lo, tt.hi) {
			got = append(got, tk.Label)
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("ticks(%+v, %g, %g) = %v, want %s", tt.a, tt.lo, tt.hi, got, tt.want)
		}
	}
}

// A time axis ends at the last value drawn; a linear one at a round tick.
func TestAxisRange(t *testing.T) {
	for _, tt := range []struct {
		a              Axis
		lo, hi         float64
		wantLo, wantHi float64
	}{
		{Axis{Time: true}, 0, 5.01, 0, 5.01},
		// A 5 s run whose open-loop window ended 3.3 ms early keeps its
		// 5s tick; one 100 ms short ends where it did.
		{Axis{Time: true}, 0, 4.9967, 0, 5},
		{Axis{Time: true}, 0, 4.9, 0, 4.9},
		{Axis{}, 0, 5.01, 0, 6},
		{Axis{Log: true}, 0.3, 17, 0.1, 100},
	} {
		lo, hi := axisRange(tt.a, tt.lo, tt.hi, true, true)
		if lo != tt.wantLo || hi != tt.wantHi {
			t.Errorf("axisRange(%+v, %g, %g) = %g, %g; want %g, %g", tt.a, tt.lo, tt.hi, lo, hi, tt.wantLo, tt.wantHi)
		}
		if tt.a.Time && tt.wantHi == 5 { // its last tick labels the end
			if ts := ticks(tt.a, lo, hi); len(ts) == 0 || ts[len(ts)-1].Label != "5s" {
				t.Errorf("ticks(0, %g) = %v, want the last 5s", hi, ts)
			}
		}
	}
}

// Point labels near the plot's top or right edge are moved inside it,
// rules widen the range to be seen, and notes are written under the
// legend, the image growing to hold them.
func TestLabelsRulesNotes(t *testing.T) {
	c := &Chart{ID: "t", X: Axis{}, Y: Axis{Log: true, Format: Millis},
		Series: []Series{{Name: "p99", X: []float64{10, 100}, Y: []float64{1, 99}, Marks: true, Labels: []string{"10/s", "a long label 100/s"}}},
		Rules:  []Rule{{V: 500, Label: "SLO p99<=500ms"}, {Vertical: true, V: 60, Label: "max 60/s"}},
		Notes:  []string{"not drawn: the step at 200/s"}}
	var b bytes.Buffer
	if err := c.SVG(&b); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if !strings.Contains(s, `>1s</text>`) {
		t.Errorf("the y axis does not reach the rule at 500ms:\n%s", s)
	}
	label := regexp.MustCompile(`<text x="([0-9.]+)" y="([0-9.]+)" fill="#555" class="label" text-anchor="end" font-size="9.0">a long label 100/s</text>`).FindStringSubmatch(s)
	if label == nil {
		t.Fatalf("the label at the top right is not anchored at its end:\n%s", s)
	}
	if y, _ := strconv.ParseFloat(label[2], 64); y-9 < padTop {
		t.Errorf("the label at the top is drawn at y %g, above the plot (%d)", y, padTop)
	}
	for _, want := range []string{`class="rule"`, ">SLO p99&lt;=500ms<", ">max 60/s<", `class="note">not drawn: the step at 200/s<`} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if l := c.layout(); l.total <= l.height {
		t.Errorf("the notes take no room: %+v", l)
	}
}

func TestMillis(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.25: "250µs", 1: "1ms", 17.44: "17.4ms", 1500: "1.5s", 0.001: "1µs"} {
		if got := Millis(v); got != want {
			t.Errorf("Millis(%g) = %q, want %q", v, got, want)
		}
	}
}

func TestDashes(t *testing.T) {
	segs := dashes([]pt{{0, 0}, {20, 0}}, "6 3")
	// 0-6 on, 6-9 off, 9-15 on, 15-18 off, 18-20 on
	if len(segs) != 3 || segs[1][0].x != 9 || segs[2][1].x != 20 {
		t.Fatalf("dashes = %v", segs)
	}
}

// A value that cannot be drawn (NaN: an interval where nothing was
// measured) breaks the line instead of being bridged; a point alone
// between gaps is a mark.
func TestGaps(t *testing.T) {
	c := &Chart{ID: "g", X: Axis{Time: true}, Y: Axis{},
		Series: []Series{{Name: "p99", X: []float64{1, 2, 3, 4, 5, 6, 7}, Y: []float64{1, 2, math.NaN(), 4, 5, math.NaN(), 7}}}}
	var b bytes.Buffer
	if err := c.SVG(&b); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	lines := regexp.MustCompile(`<polyline[^>]*points="([^"]*)"`).FindAllStringSubmatch(s, -1)
	if len(lines) != 2 || len(strings.Fields(lines[0][1])) != 2 || len(strings.Fields(lines[1][1])) != 2 {
		t.Fatalf("polylines %q, want two of two points each", lines)
	}
	if n := strings.Count(s, "<circle"); n != 1 {
		t.Errorf("%d marks, want the point at 7 alone", n)
	}
}

// Labels of points close together, and a rule's label, do not cover one
// another.
func TestLabelsApart(t *testing.T) {
	c := &Chart{ID: "a", X: Axis{}, Y: Axis{Log: true, Format: Millis},
		Series: []Series{{Name: "p99", X: []float64{1000, 1100, 1200, 5000}, Y: []float64{1, 1.05, 1.1, 95}, Marks: true,
			Labels: []string{"1000/s", "1100/s", "1200/s", "5000/s"}}},
		Rules: []Rule{{Vertical: true, V: 4900, Label: "max 4900/s"}}}
	var b bytes.Buffer
	if err := c.SVG(&b); err != nil {
		t.Fatal(err)
	}
	boxes, texts := textBoxes(b.String())
	if len(boxes) != 5 {
		t.Fatalf("%d labels %q, want 5", len(boxes), texts)
	}
	overlapping(t, boxes, texts)
}

// box is a text's box in an SVG.
type box struct{ x0, y0, x1, y1 float64 }

// textBoxes are the boxes of an SVG's point and rule labels, and their
// texts.
func textBoxes(svg string) ([]box, []string) {
	var boxes []box
	var texts []string
	for _, m := range regexp.MustCompile(`<text x="([0-9.]+)" y="([0-9.]+)" fill="[^"]*" class="(?:label|rule)"( text-anchor="end")? font-size="([0-9.]+)">([^<]*)</text>`).FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		y, _ := strconv.ParseFloat(m[2], 64)
		size, _ := strconv.ParseFloat(m[4], 64)
		w := float64(charWidth * len([]rune(m[5])))
		if m[3] != "" {
			x -= w
		}
		boxes = append(boxes, box{x, y - size, x + w, y})
		texts = append(texts, m[5])
	}
	return boxes, texts
}

// overlapping fails t for each two boxes that overlap.
func overlapping(t *testing.T, boxes []box, texts []string) {
	t.Helper()
	for i := range boxes {
		for j := i + 1; j < len(boxes); j++ {
			a, o := boxes[i], boxes[j]
			if a.x0 < o.x1 && o.x0 < a.x1 && a.y0 < o.y1 && o.y0 < a.y1 {
				t.Errorf("labels %q and %q overlap", texts[i], texts[j])
			}
		}
	}
}

// Two runs' targets on one throughput chart, the same rate, both fallen
// behind: their long labels, too wide to stand side by side, stack along
// the line instead of overlapping (the compare page of two bank runs at
// 400/s drew them one over the other).
func TestRuleLabelsApart(t *testing.T) {
	c := &Chart{ID: "r", X: Axis{Time: true}, Y: Axis{},
		Series: []Series{{Name: "rc", X: []float64{1, 2, 3, 4}, Y: []float64{230, 240, 220, 230}},
			{Name: "serializable", X: []float64{1, 2, 3, 4}, Y: []float64{263, 250, 270, 260}}},
		Rules: []Rule{{V: 400, Label: "rc.json: target 400/s (completed 230/s: fell behind)"},
			{V: 400, Label: "serializable.json: target 400/s (completed 263/s: fell behind)"}}}
	var b bytes.Buffer
	if err := c.SVG(&b); err != nil {
		t.Fatal(err)
	}
	boxes, texts := textBoxes(b.String())
	if len(boxes) != 2 {
		t.Fatalf("%d labels %q, want 2", len(boxes), texts)
	}
	overlapping(t, boxes, texts)
}

// A point's label is not struck through by a line (the SLO's across the
// chart, a line of the series) where a spot beside the point is free of
// them (the sweep's 2000/s label was).
func TestLabelsOffLines(t *testing.T) {
	c := &Chart{ID: "l", X: Axis{}, Y: Axis{Log: true, Format: Millis},
		Series: []Series{
			{Name: "p99", X: []float64{1000, 2000, 2830}, Y: []float64{42.8, 40.4, 35.4}, Marks: true, Labels: []string{"1000/s", "2000/s", "2830/s"}},
			{Name: "p50", X: []float64{1000, 2000, 2830}, Y: []float64{0.6, 3.4, 0.47}, Marks: true},
		},
		Rules: []Rule{{V: 50, Label: "SLO p99<=50ms"}}}
	var b bytes.Buffer
	if err := c.SVG(&b); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	var segs [][4]float64
	for _, m := range regexp.MustCompile(`<polyline[^>]*points="([^"]*)"`).FindAllStringSubmatch(s, -1) {
		pts := strings.Fields(m[1])
		for i := 1; i < len(pts); i++ {
			var x0, y0, x1, y1 float64
			fmt.Sscanf(pts[i-1], "%g,%g", &x0, &y0)
			fmt.Sscanf(pts[i], "%g,%g", &x1, &y1)
			segs = append(segs, [4]float64{x0, y0, x1, y1})
		}
	}
	for _, m := range regexp.MustCompile(`<line x1="([0-9.]+)" x2="([0-9.]+)" y1="([0-9.]+)" y2="([0-9.]+)" stroke="#444" stroke-width="1.0"`).FindAllStringSubmatch(s, -1) {
		var v [4]float64
		for i := range v {
			v[i], _ = strconv.ParseFloat(m[i+1], 64)
		}
		segs = append(segs, [4]float64{v[0], v[2], v[1], v[3]})
	}
	labels := regexp.MustCompile(`<text x="([0-9.]+)" y="([0-9.]+)" fill="#555" class="label"( text-anchor="end")? font-size="9.0">([^<]*)</text>`).FindAllStringSubmatch(s, -1)
	if len(labels) != 3 || len(segs) < 5 {
		t.Fatalf("%d labels, %d segments", len(labels), len(segs))
	}
	for _, m := range labels {
		x, _ := strconv.ParseFloat(m[1], 64)
		y, _ := strconv.ParseFloat(m[2], 64)
		w := TextWidth(m[4], 9)
		if m[3] != "" {
			x -= w
		}
		for _, sg := range segs {
			// Points along the segment, half a pixel apart.
			n := int(math.Hypot(sg[2]-sg[0], sg[3]-sg[1])*2) + 1
			for k := 0; k <= n; k++ {
				px, py := sg[0]+(sg[2]-sg[0])*float64(k)/float64(n), sg[1]+(sg[3]-sg[1])*float64(k)/float64(n)
				if px > x && px < x+w && py > y-9 && py < y+2 {
					t.Errorf("the label %q is struck through by the line %v", m[4], sg)
					break
				}
			}
		}
	}
}

// The PNG writes µ as µ (a u with a stem below the baseline), not as u:
// a tick of 100µs must not read 100us.
func TestPNGMicro(t *testing.T) {
	draw := func(s string) *image.RGBA {
		rc := &rasterCanvas{img: image.NewRGBA(image.Rect(0, 0, 60, 20)), face: newFace()}
		rc.clipR = rc.img.Bounds()
		rc.text(0, 12, s, textStyle{anchor: "start", size: 11, color: "#000"})
		return rc.img
	}
	ink := func(img *image.RGBA, x0, x1, y0, y1 int) int {
		n := 0
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				if img.RGBAAt(x, y).A > 0 {
					n++
				}
			}
		}
		return n
	}
	mu, u := draw("100µs"), draw("100us")
	// The fourth character, below the baseline (y 12): µ's stem, no ink
	// for u.
	if got := ink(mu, 21, 28, 13, 20); got == 0 {
		t.Errorf("100µs: no ink below the baseline under µ: drawn as u")
	}
	if got := ink(u, 21, 28, 13, 20); got != 0 {
		t.Errorf("100us: %d px below the baseline under u", got)
	}
	// The other characters are drawn as before.
	if ink(mu, 0, 21, 0, 20) != ink(u, 0, 21, 0, 20) || ink(mu, 28, 60, 0, 20) != ink(u, 28, 60, 0, 20) {
		t.Errorf("100µs and 100us differ outside the µ")
	}
}
