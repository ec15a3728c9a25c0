package plot

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"math"
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
	for _, want := range []string{`data-points="6"`, `data-name="p50" data-points="3"`, `data-name="p99" data-points="3"`, `data-name="empty" data-points="0"`,
		`stroke-dasharray="6 3"`, `fill="#fff" stroke="#e15759"`, ">latency — µs<", ">10ms<", ">1s<"} {
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
	for _, want := range []string{Palette[0], Palette[1]} {
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

func TestDashes(t *testing.T) {
	segs := dashes([]pt{{0, 0}, {20, 0}}, "6 3")
	// 0-6 on, 6-9 off, 9-15 on, 15-18 off, 18-20 on
	if len(segs) != 3 || segs[1][0].x != 9 || segs[2][1].x != 20 {
		t.Fatalf("dashes = %v", segs)
	}
}
