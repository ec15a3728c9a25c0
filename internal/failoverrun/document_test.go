package failoverrun

import (
	"slices"
	"testing"
	"time"

	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/report"
	"github.com/txload/txload/workload"
	"github.com/txload/txload/workload/all"
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

// Each mode's table in --json (and so the HTML report) carries a line
// that says what the failover found wrong: acknowledged commits lost,
// phantoms, the workload's check, the run's own failure; none when all
// was well, or when the run was interrupted and found nothing wrong.
func TestTableFailed(t *testing.T) {
	start := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		r    Result
		want string
	}{
		{"clean", Result{FaultSent: start, FirstNew: start.Add(time.Second)}, ""},
		{"lost", Result{FaultSent: start, FirstNew: start.Add(time.Second), Tally: Tally{Acked: 100, Lost: 3}},
			"FAILED (async): 3 acknowledged commits lost by the failover"},
		{"phantom and check", Result{FaultSent: start, FirstNew: start.Add(time.Second), Tally: Tally{Phantom: 2},
			Outcome: &runner.Outcome{Check: &workload.CheckResult{Violations: []string{"money drift: +10"}}}},
			"FAILED (async): 2 rolled-back transactions are on the new primary; bank's check found a violation"},
		{"the run failed", Result{FaultSent: start, Err: "--failover-command failed (exit status 1): no such node"},
			"FAILED (async): the run failed: --failover-command failed (exit status 1): no such node"},
		{"interrupted before the fault", Result{Interrupted: true}, ""},
	}
	m, err := all.Registry().Get("bank")
	if err != nil {
		t.Fatal(err)
	}
	p := &plan{o: Options{Workload: m}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.Mode, tt.r.Workload = "async", "bank"
			doc, err := p.newDocument([]*Result{&tt.r})
			if err != nil {
				t.Fatal(err)
			}
			if len(doc.Tables) != 1 || doc.Tables[0].Failed != tt.want {
				t.Errorf("tables %+v, want one failed %q", doc.Tables, tt.want)
			}
		})
	}
}
