package lag

import (
	"testing"
	"time"

	"github.com/txload/txload/metrics"
)

func TestTracker(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type step func(tr *Tracker)
	send := func(w int, want int64) step {
		return func(tr *Tracker) {
			if got := tr.Send(w); got != want {
				t.Errorf("Send(%d) = %d, want %d", w, got, want)
			}
		}
	}
	ack := func(w int, seq int64, ms int) step { return func(tr *Tracker) { tr.Acked(w, seq, at(ms)) } }
	fail := func(w int, seq int64, amb bool, ms int) step {
		return func(tr *Tracker) { tr.Failed(w, seq, amb, at(ms)) }
	}
	see := func(ms int, gap bool, rows ...Sighting) step { return func(tr *Tracker) { tr.Seen(rows, at(ms), gap) } }
	expire := func(ms int) step { return func(tr *Tracker) { tr.Expire(at(ms)) } }
	for _, tc := range []struct {
		name    string
		writers int
		steps   []step
		counts  Counts
		lags    []int64 // µs, sorted as the histogram gives them back: min and max
		pos     []Position
		pending int
	}{
		{
			name: "in order", writers: 1,
			steps:  []step{send(0, 1), ack(0, 1, 10), send(0, 2), ack(0, 2, 20), see(15, false, Sighting{0, 1}), see(27, false, Sighting{0, 2})},
			counts: Counts{Sent: 2, Acked: 2, Measured: 2},
			lags:   []int64{5000, 7000},
			pos:    []Position{{After: 2, MaxSeen: 2}},
		},
		{
			name: "seen before acknowledged", writers: 1,
			steps:  []step{send(0, 1), see(5, false, Sighting{0, 1}), ack(0, 1, 6)},
			counts: Counts{Sent: 1, Acked: 1, Measured: 1, Early: 1},
			lags:   []int64{0, 0},
			pos:    []Position{{After: 1, MaxSeen: 1}},
		},
		{
			name: "a rolled-back marker is not waited for", writers: 1,
			steps:  []step{send(0, 1), fail(0, 1, false, 3), send(0, 2), ack(0, 2, 4), see(9, false, Sighting{0, 2}, Sighting{0, 1})},
			counts: Counts{Sent: 2, Acked: 1, Failed: 1, Measured: 1},
			lags:   []int64{5000, 5000},
			pos:    []Position{{After: 2, MaxSeen: 2}},
		},
		{
			name: "ambiguous marker seen later: it committed", writers: 1,
			steps:  []step{send(0, 1), fail(0, 1, true, 3), see(9, false, Sighting{0, 1})},
			counts: Counts{Sent: 1, Ambiguous: 1, AmbiguousSeen: 1},
			pos:    []Position{{After: 1, MaxSeen: 1}},
		},
		{
			name: "reordered: the gap poll finds the earlier marker", writers: 1,
			steps: []step{send(0, 1), ack(0, 1, 1), send(0, 2), ack(0, 2, 2),
				see(10, false, Sighting{0, 2}), see(50, true, Sighting{0, 1}, Sighting{0, 2})},
			counts: Counts{Sent: 2, Acked: 2, Measured: 2, Late: 1},
			lags:   []int64{8000, 49000},
			pos:    []Position{{After: 2, MaxSeen: 2}},
		},
		{
			name: "a marker still unseen while later ones arrive is given up after the expiry", writers: 1,
			steps: []step{send(0, 1), ack(0, 1, 1), send(0, 2), ack(0, 2, 2), see(10, false, Sighting{0, 2}),
				expire(500), expire(1002)},
			counts:  Counts{Sent: 2, Acked: 2, Measured: 1, Expired: 1},
			lags:    []int64{8000, 8000},
			pos:     []Position{{After: 2, MaxSeen: 2}},
			pending: 0,
		},
		{
			name: "the last marker unseen is pending, not expired", writers: 1,
			steps:   []step{send(0, 1), ack(0, 1, 1), expire(5000)},
			counts:  Counts{Sent: 1, Acked: 1},
			pos:     []Position{{After: 0, MaxSeen: 0}},
			pending: 1,
		},
		{
			name: "writers are independent; repeats and unknown markers", writers: 2,
			steps: []step{send(0, 1), send(1, 1), ack(1, 1, 1), ack(0, 1, 2), send(1, 2), ack(1, 2, 3),
				see(4, false, Sighting{1, 1}, Sighting{1, 1}, Sighting{1, 2}, Sighting{5, 1}, Sighting{1, 9})},
			counts:  Counts{Sent: 3, Acked: 3, Measured: 2, Unknown: 2},
			lags:    []int64{1000, 3000},
			pos:     []Position{{After: 0, MaxSeen: 0}, {After: 2, MaxSeen: 2}},
			pending: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(t0, tc.writers, time.Second)
			for _, s := range tc.steps {
				s(tr)
			}
			if got := tr.Counts(); got != tc.counts {
				t.Errorf("counts %+v, want %+v", got, tc.counts)
			}
			h := tr.Total()
			if tc.lags == nil {
				if h.TotalCount() != 0 {
					t.Errorf("%d lags recorded, want none", h.TotalCount())
				}
			} else if !h.ValuesAreEquivalent(h.Min(), tc.lags[0]) || !h.ValuesAreEquivalent(h.Max(), tc.lags[1]) {
				t.Errorf("lag min %d max %d, want %d and %d (µs)", h.Min(), h.Max(), tc.lags[0], tc.lags[1])
			}
			pos := tr.Positions(nil)
			for i := range tc.pos {
				if pos[i] != tc.pos[i] {
					t.Errorf("writer %d at %+v, want %+v", i, pos[i], tc.pos[i])
				}
			}
			if n, _ := tr.Pending(); n != tc.pending {
				t.Errorf("%d pending, want %d", n, tc.pending)
			}
		})
	}
}

// Tick hands over the interval's lag and starts a new one; Behind is the
// age of the oldest acknowledged marker not seen.
func TestTrackerTick(t *testing.T) {
	t0 := time.Now()
	tr := NewTracker(t0, 1, 0)
	tr.Send(0)
	tr.Acked(0, 1, t0)
	tr.Seen([]Sighting{{0, 1}}, t0.Add(3*time.Millisecond), false)
	tr.Send(0)
	tr.Acked(0, 2, t0.Add(10*time.Millisecond))
	h := metrics.NewHistogram()
	iv := tr.Tick(t0.Add(time.Second), h)
	if iv.Measured != 1 || iv.Lag.TotalCount() != 1 || !iv.Lag.ValuesAreEquivalent(iv.Lag.Max(), 3000) {
		t.Errorf("first interval: %d measured, %d in histogram, max %d", iv.Measured, iv.Lag.TotalCount(), iv.Lag.Max())
	}
	if iv.Pending != 1 || iv.Behind != 990*time.Millisecond {
		t.Errorf("pending %d behind %s, want 1 and 990ms", iv.Pending, iv.Behind)
	}
	iv = tr.Tick(t0.Add(2*time.Second), h)
	if iv.Measured != 0 || iv.Lag.TotalCount() != 0 || iv.Behind != 1990*time.Millisecond {
		t.Errorf("second interval: %d measured, behind %s", iv.Measured, iv.Behind)
	}
	if tr.Total().TotalCount() != 1 {
		t.Errorf("total %d, want 1", tr.Total().TotalCount())
	}
}
