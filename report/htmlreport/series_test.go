package htmlreport

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/txload/txload/report"
	"github.com/txload/txload/report/plot"
)

// The labels of a timeline's events close together (a failover's fault,
// promotion, new primary and first commit, within 1% of a 10 s axis) are
// each beside its own line, never on one another, inside the plot, and
// stacked down in the order of the events: at the left edge, in the
// middle and at the right edge, where they go left of their lines.
func TestEventLabelsApart(t *testing.T) {
	labels := []string{"fault", "promotion requested", "new primary", "first commit"}
	for _, from := range []float64{0, 4, 9.91} {
		t.Run(fmt.Sprint(from), func(t *testing.T) {
			doc := hourDoc(t, 5)
			var pts []report.SeriesPoint
			for i := 1; i <= 100; i++ {
				pts = append(pts, report.SeriesPoint{At: float64(i) / 10, Values: []float64{9000 + float64(i%7)*100, float64(i % 3)}})
			}
			var evs []report.SeriesEvent
			for i, l := range labels {
				evs = append(evs, report.SeriesEvent{At: from + float64(i)*0.03, Label: l})
			}
			doc.Series = []report.SeriesDoc{{Title: "failover timeline", Lines: []string{"commits", "failures"}, Points: pts, Events: evs}}
			var b bytes.Buffer
			if err := Write(&b, []*report.Document{doc}, Options{}); err != nil {
				t.Fatal(err)
			}
			c := chartTitled(t, charts(t, b.String()), "failover timeline")
			xa := readAxis(t, c.xticks, "s", false)
			halfPx := 0.5 * (xa.last() - xa.ticks[0].v) / (xa.ticks[len(xa.ticks)-1].px - xa.ticks[0].px)
			type box struct {
				x0, y0, x1, y1 float64
				y              float64
			}
			boxes := map[string]box{}
			for _, tx := range c.texts {
				if tx.class != "rule" || tx.s == "load ended" { // the document's run ends at 5 s, its timeline at 10 s
					continue
				}
				w := plot.TextWidth(tx.s, tx.size)
				bx := box{tx.x, tx.y - tx.size, tx.x + w, tx.y + tx.size/5, tx.y} // DejaVu Sans: 0.9 em above the baseline, 0.2 below
				line := tx.x - 4                                                  // the label starts 4 px right of its line, or ends 4 px left of it
				if tx.anchor == "end" {
					bx.x0, bx.x1, line = tx.x-w, tx.x, tx.x+4
				}
				i := indexOf(labels, tx.s)
				if i < 0 {
					t.Fatalf("a rule label %q", tx.s)
				}
				if at := xa.value(line); math.Abs(at-evs[i].At) > halfPx {
					t.Errorf("%q is beside a line at %.3fs, its event is at %.3fs", tx.s, at, evs[i].At)
				}
				if bx.x0 < c.left || bx.x1 > c.right || bx.y0 < c.top || bx.y1 > c.bottom {
					t.Errorf("%q (%+v) is not inside the plot (%g..%g, %g..%g)", tx.s, bx, c.left, c.right, c.top, c.bottom)
				}
				boxes[tx.s] = bx
			}
			if len(boxes) != len(labels) {
				t.Fatalf("labels drawn: %v, want %q", boxes, labels)
			}
			for i, a := range labels {
				for _, o := range labels[i+1:] {
					p, q := boxes[a], boxes[o]
					if p.x0 < q.x1 && q.x0 < p.x1 && p.y0 < q.y1 && q.y0 < p.y1 {
						t.Errorf("labels %q %+v and %q %+v overlap", a, p, o, q)
					}
				}
				if i > 0 && boxes[a].y <= boxes[labels[i-1]].y {
					t.Errorf("%q (at y %g) is not below %q (at y %g), the event before it", a, boxes[a].y, labels[i-1], boxes[labels[i-1]].y)
				}
			}
		})
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
