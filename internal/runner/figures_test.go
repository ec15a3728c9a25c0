package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/txload/txload/workload"
)

// A workload's figures of each interval (pgio's) become the document's
// series: the rates on one chart with a log scale, named as the text names
// them (LIOPS), each ratio on its own; a point per interval, the ones given
// before the measured window left out, an interval that lacks a figure
// left out of its chart.
func TestFigureLog(t *testing.T) {
	f := &figureLog{}
	f.set("pgio_liops", 1) // before the run: dropped
	f.start(time.Now().Add(-10 * time.Second))
	for i := range 3 {
		f.set("pgio_selects_per_second", float64(100+i))
		f.set("pgio_liops", float64(30000+i))
		if i != 1 {
			f.set("pgio_hit_ratio", 0.999)
		}
	}
	series := f.series("pgio", []workload.Line{{Label: "update-pct", Value: "0"}})
	if len(series) != 2 {
		t.Fatalf("%d series, want the rates and the hit ratio", len(series))
	}
	rates, ratio := series[0], series[1]
	if !rates.Log || rates.Unit != "/s" || !slices.Equal(rates.Lines, []string{"selects", "LIOPS"}) || len(rates.Points) != 3 {
		t.Errorf("rates %+v", rates)
	}
	if got := rates.Points[2].Values; !slices.Equal(got, []float64{102, 30002}) {
		t.Errorf("the last interval's rates %v", got)
	}
	if ratio.Unit != "ratio" || !slices.Equal(ratio.Lines, []string{"hit ratio"}) || len(ratio.Points) != 2 {
		t.Errorf("ratio %+v: want the two intervals that gave it", ratio)
	}
	if rates.Labels["update-pct"] != "0" || rates.Title != "pgio: the figures of its progress lines (update-pct=0)" {
		t.Errorf("title %q, labels %v", rates.Title, rates.Labels)
	}
}
