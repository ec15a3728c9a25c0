package runner

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/txload/txload/report"
	"github.com/txload/txload/workload"
)

// figureLog keeps the figures a workload gives of each of its progress
// intervals (workload.RunOptions.Figure: pgio's LIOPS, PIOPS and hit
// ratio), for the document and the live page: a point per interval, a
// figure given again starting the next, each at the time it was given
// from the start of the measured window. Points given in the warm-up are
// left out. It is safe for concurrent use: the workload gives its figures
// from its own goroutine, the live page reads them from another.
type figureLog struct {
	mu       sync.Mutex
	measured time.Time // the measured window's start; zero until the run starts
	names    []string  // in the order first given
	points   []figurePoint
	cur      map[string]float64
	at       float64
}

// start sets the start of the measured window.
func (f *figureLog) start(measured time.Time) {
	f.mu.Lock()
	f.measured = measured
	f.mu.Unlock()
}

// set records one figure of the current interval.
func (f *figureLog) set(name string, v float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.measured.IsZero() {
		return
	}
	if _, again := f.cur[name]; again {
		f.flush()
	}
	if f.cur == nil {
		f.cur = map[string]float64{}
		f.at = time.Since(f.measured).Seconds()
	}
	if !slices.Contains(f.names, name) {
		f.names = append(f.names, name)
	}
	f.cur[name] = v
}

// flush ends the current point; one of the warm-up is dropped.
func (f *figureLog) flush() {
	if f.cur != nil && f.at > 0 {
		f.points = append(f.points, figurePoint{at: f.at, values: f.cur})
	}
	f.cur = nil
}

// figurePoint is one interval's figures, by name.
type figurePoint struct {
	at     float64
	values map[string]float64
}

// series are the figures as the document's series: the ratios (names
// ending in _ratio) a chart each, in per cent; the others, rates per
// second as pgio's are, on one chart with a log scale, so that 36 PIOPS
// show beside 32000 LIOPS. labels are the run's, when it has several.
func (f *figureLog) series(workloadName string, labels []workload.Line) []report.SeriesDoc {
	f.mu.Lock()
	defer f.mu.Unlock()
	points := slices.Clone(f.points)
	if f.cur != nil && f.at > 0 { // the interval under way, for the live page
		points = append(points, figurePoint{at: f.at, values: maps.Clone(f.cur)})
	}
	if len(points) == 0 {
		return nil
	}
	var lm map[string]string
	suffix := ""
	if len(labels) > 0 {
		lm = map[string]string{}
		for _, l := range labels {
			lm[l.Label] = l.Value
		}
		suffix = " (" + LabelString(labels) + ")"
	}
	// docOf is the series of names: a point per interval that gave them
	// all.
	docOf := func(sd report.SeriesDoc, names []string) report.SeriesDoc {
		for _, n := range names {
			sd.Lines = append(sd.Lines, figureLabel(workloadName, n))
		}
		for _, p := range points {
			sp := report.SeriesPoint{At: p.at}
			for _, n := range names {
				if v, ok := p.values[n]; ok {
					sp.Values = append(sp.Values, v)
				}
			}
			if len(sp.Values) == len(names) {
				sd.Points = append(sd.Points, sp)
			}
		}
		return sd
	}
	var out []report.SeriesDoc
	var rates []string
	for _, n := range f.names {
		if strings.HasSuffix(n, "_ratio") {
			out = append(out, docOf(report.SeriesDoc{Title: workloadName + ": " + figureLabel(workloadName, n) + " per interval" + suffix, Unit: "ratio", Labels: lm}, []string{n}))
		} else {
			rates = append(rates, n)
		}
	}
	if len(rates) > 0 {
		out = append([]report.SeriesDoc{docOf(report.SeriesDoc{Title: workloadName + ": the figures of its progress lines" + suffix,
			Axis: "per second (log scale)", Unit: "/s", Log: true, Labels: lm}, rates)}, out...)
	}
	return out
}

// figureLabel is a figure's name as a chart's legend says it: the
// workload's prefix and "_per_second" left out, an I/O rate in capitals
// as the text report writes it (pgio_liops: LIOPS).
func figureLabel(workloadName, name string) string {
	n := strings.TrimPrefix(name, workloadName+"_")
	n = strings.TrimSuffix(n, "_per_second")
	if strings.HasSuffix(n, "iops") && !strings.Contains(n, "_") {
		return strings.ToUpper(n)
	}
	return strings.ReplaceAll(n, "_", " ")
}
