package chart

import (
	"bytes"
	"image/png"
	"path/filepath"
	"slices"
	"testing"
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
	c := Sweep("t", steps)
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
	dir := t.TempDir()
	for _, name := range []string{"s.png", "s.svg"} {
		path := filepath.Join(dir, name)
		if err := LatencyThroughput(path, "t", steps); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := WritePNG(&b, "t", steps); err != nil {
		t.Fatal(err)
	}
	if img, err := png.Decode(&b); err != nil || img.Bounds().Dx() != 800 {
		t.Fatalf("PNG: %v", err)
	}
	if err := LatencyThroughput(filepath.Join(dir, "s.gif"), "t", steps); err == nil || err.Error() != "--chart "+filepath.Join(dir, "s.gif")+": the file name must end in .png or .svg" {
		t.Fatalf("gif: %v", err)
	}
}
