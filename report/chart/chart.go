// Package chart draws txload's charts with gonum/plot.
package chart

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Point is one measured step: the throughput it achieved, its latencies
// and whether it passed.
type Point struct {
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

// minMillis keeps log-scale values positive.
const minMillis = 0.001

// LatencyThroughput writes a chart of p50 and p99 latency (ms, log scale)
// against achieved throughput to path, as PNG or SVG by its extension.
// Passing steps are filled marks, failing ones hollow; lines join the steps
// in throughput order.
func LatencyThroughput(path string, title string, points []Point) error {
	if !Supported(path) {
		return fmt.Errorf("chart %s: unsupported format (use %s)", path, strings.Join(Formats, " or "))
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "achieved throughput (ops/s)"
	p.Y.Label.Text = "latency (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true

	series := []struct {
		name  string
		get   func(Point) float64
		color color.Color
	}{
		{"p50", func(pt Point) float64 { return pt.P50 }, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}},
		{"p99", func(pt Point) float64 { return pt.P99 }, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}},
	}
	sorted := append([]Point(nil), points...)
	for i := 1; i < len(sorted); i++ { // insertion sort by throughput: few points
		for j := i; j > 0 && sorted[j].Throughput < sorted[j-1].Throughput; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	for _, s := range series {
		var all, pass, fail plotter.XYs
		for _, pt := range sorted {
			xy := plotter.XY{X: pt.Throughput, Y: math.Max(s.get(pt), minMillis)}
			all = append(all, xy)
			if pt.Pass {
				pass = append(pass, xy)
			} else {
				fail = append(fail, xy)
			}
		}
		if len(all) > 1 {
			l, err := plotter.NewLine(all)
			if err != nil {
				return fmt.Errorf("chart: %w", err)
			}
			l.Color = s.color
			l.Width = vg.Points(1)
			p.Add(l)
		}
		for _, grp := range []struct {
			xys  plotter.XYs
			pass bool
		}{{pass, true}, {fail, false}} {
			if len(grp.xys) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(grp.xys)
			if err != nil {
				return fmt.Errorf("chart: %w", err)
			}
			sc.Color = s.color
			sc.Radius = vg.Points(3.5)
			if grp.pass {
				sc.Shape = draw.CircleGlyph{}
				p.Legend.Add(s.name+" pass", sc)
			} else {
				sc.Shape = draw.CrossGlyph{}
				sc.Radius = vg.Points(4.5)
				p.Legend.Add(s.name+" FAIL", sc)
			}
			p.Add(sc)
		}
	}
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("writing chart %s: %w", path, err)
	}
	return nil
}
