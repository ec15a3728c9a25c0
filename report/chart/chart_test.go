package chart

import (
	"bytes"
	"image/png"
	"slices"
	"testing"

	"github.com/txload/txload/slo"
)

// A bisection's steps, in the order they ran: the line joins them in order
// of target rate, not of steps (which would zig-zag).
var steps = []Point{
	{Target: 1000, Throughput: 1000, P50: 1.2, P99: 7.2, Pass: true},
	{Target: 4000, Throughput: 3990, P50: 1.4, P99: 16, Pass: true},
	{Target: 16000, Throughput: 12000, P50: 347, P99: 536},
	{Target: 8000, Throughput: 8000, P50: 3.7, P99: 36, Pass: true},
	{Target: 11300, Throughput: 11100, P50: 124, P99: 193},
	{Target: 9510, Throughput: 9510, P50: 1.1, P99: 7.2, Pass: true},
}

func TestSweepInTargetOrder(t *testing.T) {
	c := Sweep("t", Curve{Points: steps})
	p99 := c.Series[1]
	if want := []float64{1000, 3990, 8000, 9510, 11100, 12000}; !slices.Equal(p99.X, want) {
		t.Fatalf("x = %v, want the throughputs in order of target %v", p99.X, want)
	}
	if want := []bool{false, false, false, false, true, true}; !slices.Equal(p99.Hollow, want) {
		t.Fatalf("hollow = %v, want the failing steps %v", p99.Hollow, want)
	}
	if p99.Labels[3] != "9510/s" {
		t.Fatalf("labels = %v", p99.Labels)
	}
}

func TestFormats(t *testing.T) {
	var b bytes.Buffer
	if err := WritePNG(&b, "t", Curve{Points: steps}); err != nil {
		t.Fatal(err)
	}
	if img, err := png.Decode(&b); err != nil || img.Bounds().Dx() != 800 {
		t.Fatalf("PNG: %v", err)
	}
	b.Reset()
	if err := WriteSVG(&b, "t", Curve{Points: steps}); err != nil || !bytes.HasPrefix(b.Bytes(), []byte(`<?xml`)) || !bytes.Contains(b.Bytes(), []byte("<svg ")) {
		t.Fatalf("SVG: %v\n%.100s", err, b.String())
	}
	for path, ok := range map[string]bool{"s.png": true, "S.SVG": true, "s.gif": false, "s": false} {
		if Supported(path) != ok {
			t.Errorf("Supported(%q) = %v", path, !ok)
		}
	}
	if got := Unsupported("s.gif"); got != "--chart s.gif: the file name must end in .png or .svg" {
		t.Errorf("Unsupported: %q", got)
	}
}

// A step where no operation succeeded has no throughput and no latency: it
// is not drawn (at 0 ops/s, 0.001 ms as it once was), and a note says so;
// the maximum found and the SLO are drawn as lines.
func TestNothingCompletedIsNotDrawn(t *testing.T) {
	objective, err := slo.Parse("p99<=50ms,max<1s")
	if err != nil {
		t.Fatal(err)
	}
	pts := append(slices.Clone(steps), Point{Target: 64000, Why: "saturated: 64000 of 64000 never started"})
	c := Sweep("t", Curve{SLO: objective, Points: pts})
	for _, s := range c.Series {
		if slices.Contains(s.X, 0) || len(s.X) != len(steps) {
			t.Errorf("%s: x %v, want the %d steps that completed", s.Name, s.X, len(steps))
		}
	}
	want := []string{"not drawn: the step at 64000/s, where no operation succeeded (FAIL: saturated: 64000 of 64000 never started)",
		"SLO max<1s: max is not drawn (the chart shows p50 and p99)"}
	if !slices.Equal(c.Notes, want) {
		t.Errorf("notes %q, want %q", c.Notes, want)
	}
	if len(c.Rules) != 2 || c.Rules[0].V != 9510 || c.Rules[0].Label != "max 9510/s" || c.Rules[1].V != 50 || c.Rules[1].Label != "SLO p99<=50ms" {
		t.Errorf("rules %+v, want the maximum 9510/s and the SLO p99<=50ms", c.Rules)
	}
	var b bytes.Buffer
	if err := WritePNG(&b, "t", Curve{SLO: objective, Points: pts}); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	// The notes are written under the chart: the image is taller than the
	// plot and its legend.
	if h := img.Bounds().Dy(); h < 480+16+2*16 {
		t.Errorf("the PNG is %d px high: no room for the notes", h)
	}
}
