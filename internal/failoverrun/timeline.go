package failoverrun

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/report"
)

// bucket is the timeline's resolution: commits and failures per 100 ms.
const bucket = 100 * time.Millisecond

// span is one transaction that ended after the fault: when it was due,
// started and ended, and whether it committed.
type span struct {
	intended, start, end int64 // Unix ns
	ok                   bool
}

// timeline is a runner.TxnLog: it counts every transaction's end per
// bucket, and keeps those that ended after the fault and began before the
// writes came back (the operations that straddled the failover). Each
// group is written by its own goroutine only.
type timeline struct {
	started chan time.Time // the load's start, once
	fault   atomic.Int64   // Unix ns of the fault; 0: not yet
	back    atomic.Int64   // Unix ns when the new primary was known; 0: not yet
	start   time.Time
	groups  []*group
	once    sync.Once
}

type group struct {
	// per bucket from start: transactions committed, failed attempts
	// (every error, retried or not) and transactions failed (given up).
	ok, attempts, failed []int64
	last                 time.Duration // the latest end, from start
	spans                []span
}

func newTimeline() *timeline { return &timeline{started: make(chan time.Time, 1)} }

func (t *timeline) Open(groups int) error {
	t.groups = make([]*group, groups)
	for i := range t.groups {
		t.groups[i] = &group{}
	}
	return nil
}

func (t *timeline) Start(start time.Time) {
	t.start = start
	t.once.Do(func() { t.started <- start })
}

func (t *timeline) Txn(x engine.Txn) {
	if x.Outcome == engine.TxnSkipped || x.Group >= len(t.groups) {
		return
	}
	g := t.groups[x.Group]
	// Bucket i is (i×bucket, (i+1)×bucket]: the last one ends at the
	// last end, never empty.
	d := x.End.Sub(t.start)
	i := 0
	if d > 0 {
		i = int((d - 1) / bucket)
	}
	g.last = max(g.last, d)
	for len(g.ok) <= i {
		g.ok, g.attempts, g.failed = append(g.ok, 0), append(g.attempts, 0), append(g.failed, 0)
	}
	if x.Outcome == engine.TxnOK {
		g.ok[i]++
		g.attempts[i] += int64(max(x.Tries-1, 0)) // the retried ones
	} else {
		g.failed[i]++
		g.attempts[i] += int64(max(x.Tries, 1))
	}
	f := t.fault.Load()
	if f == 0 || x.End.UnixNano() < f {
		return
	}
	if b := t.back.Load(); b != 0 && x.Start.UnixNano() > b+int64(time.Second) {
		return
	}
	g.spans = append(g.spans, span{intended: x.Intended.UnixNano(), start: x.Start.UnixNano(), end: x.End.UnixNano(), ok: x.Outcome == engine.TxnOK})
}

func (t *timeline) Close(time.Time) error { return nil }

// timelineLines are the names of points' values, in order.
func timelineLines() []string { return []string{"commits", "failed attempts", "failed transactions"} }

// points are commits, failed attempts (retried or not) and failed
// transactions (that gave up) per second, bucket by bucket from the
// load's start, each at its bucket's end. The last bucket ends at the
// last transaction's end: its rates are over that part of it, and the
// timeline ends there, not with a drop at the next 100 ms.
func (t *timeline) points() []report.SeriesPoint {
	n, end := 0, time.Duration(0)
	for _, g := range t.groups {
		n, end = max(n, len(g.ok)), max(end, g.last)
	}
	counts := make([][3]int64, n)
	for _, g := range t.groups {
		for i := range g.ok {
			counts[i][0] += g.ok[i]
			counts[i][1] += g.attempts[i]
			counts[i][2] += g.failed[i]
		}
	}
	out := make([]report.SeriesPoint, n)
	for i, c := range counts {
		from, to := time.Duration(i)*bucket, time.Duration(i+1)*bucket
		if i == n-1 && end > from && end < to {
			to = end
		}
		secs := (to - from).Seconds()
		out[i] = report.SeriesPoint{At: to.Seconds(), Values: []float64{float64(c[0]) / secs, float64(c[1]) / secs, float64(c[2]) / secs}}
	}
	return out
}

// straddled are the transactions that were under way, or due, at some
// moment of [from, to): ended after from, due before to.
func (t *timeline) straddled(from, to time.Time) []span {
	var out []span
	for _, g := range t.groups {
		for _, s := range g.spans {
			if s.end >= from.UnixNano() && s.intended < to.UnixNano() {
				out = append(out, s)
			}
		}
	}
	return out
}
