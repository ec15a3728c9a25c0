package chart

import (
	"bytes"
	"image/png"
	"slices"
	"testing"

	"github.com/txload/txload/report/plot"
	"github.com/txload/txload/slo"
)

// A bisection's steps, in the order they ran.
var steps = []Point{
	{Target: 1000, Throughput: 1000, P50: 1.2, P99: 7.2, Pass: true},
	{Target: 4000, Throughput: 3990, P50: 1.4, P99: 16, Pass: true},
	{Target: 16000, Throughput: 12000, P50: 347, P99: 536},
	{Target: 8000, Throughput: 8000, P50: 3.7, P99: 36, Pass: true},
	{Target: 11300, Throughput: 11100, P50: 124, P99: 193},
	{Target: 9510, Throughput: 9510, P50: 1.1, P99: 7.2, Pass: true},
}

// The steps that kept up with their target are joined in order of
// throughput; a step that fell behind (16000/s achieving 12000/s) stands
// apart, unjoined, with a dotted line from what it achieved to its target.
func TestSweepJoinsStepsThatKeptUp(t *testing.T) {
	c := Sweep("t", Curve{Points: steps})
	var line, apart, short []float64
	var hollow []bool
	for _, s := range c.Series {
		switch {
		case s.Stat == "p99" && !s.NoLine:
			line, hollow = s.X, s.Hollow
			if s.Labels[3] != "9510/s" {
				t.Errorf("labels = %v", s.Labels)
			}
		case s.Stat == "p99":
			apart = s.X
		case s.Stat == "short of target":
			short = s.X
		}
	}
	if want := []float64{1000, 3990, 8000, 9510, 11100}; !slices.Equal(line, want) {
		t.Errorf("p99 line x = %v, want the steps that kept up in order of throughput %v", line, want)
	}
	if want := []bool{false, false, false, false, true}; !slices.Equal(hollow, want) {
		t.Errorf("hollow = %v, want the failing step %v", hollow, want)
	}
	if !slices.Equal(apart, []float64{12000}) || !slices.Equal(short, []float64{12000, 16000}) {
		t.Errorf("apart %v, dotted %v: want 16000/s's step at 12000/s, dotted to 16000", apart, short)
	}
}

// A sweep whose saturated step achieved less than a lower target's (the
// issue's: 4000/s achieving 1656/s between the 1000 and 2000 steps): the
// line never turns back, and p50 is told from p99 by its colour and marks.
func TestSweepLineDoesNotTurnBack(t *testing.T) {
	pts := []Point{
		{Target: 1000, Throughput: 997.5, P50: 0.578, P99: 42.8, Pass: true},
		{Target: 2000, Throughput: 1990, P50: 3.4, P99: 40.4, Pass: true},
		{Target: 4000, Throughput: 1656.5, P50: 745, P99: 1240},
		{Target: 2830, Throughput: 2827, P50: 0.466, P99: 35.4, Pass: true},
		{Target: 3360, Throughput: 2492.5, P50: 252, P99: 528},
	}
	c := Sweep("t", Curve{Points: pts})
	var p50, p99 *plot.Series
	for i, s := range c.Series {
		if s.NoLine || len(s.X) < 2 {
			continue
		}
		for k := 1; k < len(s.X); k++ {
			if s.X[k] < s.X[k-1] {
				t.Errorf("%s %s turns back: x %v", s.Name, s.Stat, s.X)
			}
		}
		switch s.Stat {
		case "p50":
			p50 = &c.Series[i]
		case "p99":
			p99 = &c.Series[i]
		}
	}
	if p50 == nil || p99 == nil || len(p99.X) != 3 {
		t.Fatalf("p50 %v, p99 %v: want lines of the 3 steps that kept up", p50, p99)
	}
	if p50.Color == p99.Color || p50.Square == p99.Square || p50.Dash == p99.Dash {
		t.Errorf("p50 (%s, square %v, dash %q) and p99 (%s, square %v, dash %q) look alike", p50.Color, p50.Square, p50.Dash, p99.Color, p99.Square, p99.Dash)
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
	drawn := map[string]int{}
	for _, s := range c.Series {
		if slices.Contains(s.X, 0) || slices.Contains(s.X, 64000) {
			t.Errorf("%s: x %v: the step that completed nothing is drawn", s.Stat, s.X)
		}
		if s.Stat == "p50" || s.Stat == "p99" {
			drawn[s.Stat] += len(s.X)
		}
	}
	if drawn["p50"] != len(steps) || drawn["p99"] != len(steps) {
		t.Errorf("steps drawn %v, want the %d that completed", drawn, len(steps))
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
