package failoverrun

import (
	"slices"
	"testing"
	"time"

	"github.com/txload/txload/report"
)

// The timeline marks each moment that happened, in seconds from the
// load's start: the promotion's request too (the embedded pair's), and
// nothing that did not happen.
func TestEvents(t *testing.T) {
	start := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name string
		r    Result
		want []report.SeriesEvent
	}{
		{"embedded, held", Result{HeldAt: at(2000), FaultSent: at(4000), PromoteRequested: at(4300), NewPrimary: at(4371), FirstNew: at(4365)},
			[]report.SeriesEvent{{At: 2, Label: "standby held"}, {At: 4, Label: "fault"}, {At: 4.3, Label: "promotion requested"},
				{At: 4.371, Label: "new primary"}, {At: 4.365, Label: "first commit"}}},
		{"cluster, command", Result{FaultSent: at(10000), NewPrimary: at(12500), FirstNew: at(12600)},
			[]report.SeriesEvent{{At: 10, Label: "fault"}, {At: 12.5, Label: "new primary"}, {At: 12.6, Label: "first commit"}}},
		{"interrupted before the fault", Result{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.startAt = start
			got := events(&tt.r)
			if !slices.EqualFunc(got, tt.want, func(a, b report.SeriesEvent) bool {
				return a.Label == b.Label && a.At > b.At-1e-9 && a.At < b.At+1e-9
			}) {
				t.Errorf("events = %+v, want %+v", got, tt.want)
			}
		})
	}
}
