// Package chart draws the sweep's latency-throughput chart as SVG, with the
// same plotting code as the HTML report (report/plot).
package chart

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/txload/txload/report/plot"
)

// Point is one measured step: the rate it targeted, the throughput it
// achieved, its latencies and whether it passed.
type Point struct {
	Target     float64 // operations per second asked for
	Throughput float64 // operations per second achieved
	P50, P99   float64 // milliseconds
	Pass       bool
}

// Formats are the file extensions LatencyThroughput can write.
var Formats = []string{".png", ".svg"}

// Supported tells whether path's extension is one LatencyThroughput writes.
func Supported(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	for _, f := range Formats {
		if ext == f {
			return true
		}
	}
	return false
}

// Unsupported is the one line that says why path cannot be drawn.
func Unsupported(path string) string {
	return fmt.Sprintf("--chart %s: the file name must end in .png or .svg", path)
}

// minMillis keeps log-scale values positive.
const minMillis = 0.001

// Sweep returns the chart of p50 and p99 latency (ms, log scale) against
// achieved throughput, the steps joined in order of target rate (a
// bisection's steps come out of order: joined in step order they would
// zig-zag). Passing steps are filled marks, failing ones hollow, each
// labelled with its target.
func Sweep(title string, points []Point) *plot.Chart {
	sorted := append([]Point(nil), points...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Target == sorted[j].Target { // no targets given: by throughput
			return sorted[i].Throughput < sorted[j].Throughput
		}
		return sorted[i].Target < sorted[j].Target
	})
	c := &plot.Chart{
		ID:    "sweep",
		Title: title,
		X:     plot.Axis{Label: "achieved throughput (ops/s)"},
		Y:     plot.Axis{Label: "response time (log scale)", Log: true, Format: plot.Millis},
	}
	for i, s := range []struct {
		name string
		get  func(Point) float64
		dash string
	}{{"p50", func(p Point) float64 { return p.P50 }, plot.Solid}, {"p99", func(p Point) float64 { return p.P99 }, plot.Dashed}} {
		ser := plot.Series{Name: s.name + " (hollow: step failed)", Color: plot.Palette[i], Dash: s.dash, Marks: true}
		for _, p := range sorted {
			ser.X = append(ser.X, p.Throughput)
			ser.Y = append(ser.Y, math.Max(s.get(p), minMillis))
			ser.Hollow = append(ser.Hollow, !p.Pass)
			label := ""
			if i == 1 {
				label = strconv.FormatFloat(p.Target, 'f', -1, 64) + "/s"
			}
			ser.Labels = append(ser.Labels, label)
		}
		c.Series = append(c.Series, ser)
	}
	return c
}

// WriteSVG writes the Sweep chart to w as a standalone SVG file.
func WriteSVG(w io.Writer, title string, points []Point) error {
	if _, err := io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"); err != nil {
		return err
	}
	c := Sweep(title, points)
	c.Width, c.Height = 800, 480
	return c.SVG(w)
}

// WritePNG writes the Sweep chart to w as a PNG image.
func WritePNG(w io.Writer, title string, points []Point) error {
	c := Sweep(title, points)
	c.Width, c.Height = 800, 480
	return c.PNG(w)
}

// LatencyThroughput writes the Sweep chart to path, as PNG or SVG by its
// extension.
func LatencyThroughput(path string, title string, points []Point) error {
	if !Supported(path) {
		return errors.New(Unsupported(path))
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing chart %s: %w", path, err)
	}
	write := WriteSVG
	if strings.EqualFold(filepath.Ext(path), ".png") {
		write = WritePNG
	}
	if err := write(f, title, points); err != nil {
		f.Close()
		return fmt.Errorf("writing chart %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing chart %s: %w", path, err)
	}
	return nil
}
