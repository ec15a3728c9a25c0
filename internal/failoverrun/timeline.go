package failoverrun

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/txload/txload/engine"
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
	ok, failed []int64 // per bucket from start
	spans      []span
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
	i := int(x.End.Sub(t.start) / bucket)
	if i < 0 {
		i = 0
	}
	for len(g.ok) <= i {
		g.ok, g.failed = append(g.ok, 0), append(g.failed, 0)
	}
	if x.Outcome == engine.TxnOK {
		g.ok[i]++
	} else {
		g.failed[i]++
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

// series is commits and failures per second, bucket by bucket, from the
// load's start.
func (t *timeline) series() (ok, failed []float64) {
	n := 0
	for _, g := range t.groups {
		n = max(n, len(g.ok))
	}
	ok, failed = make([]float64, n), make([]float64, n)
	per := float64(time.Second) / float64(bucket)
	for _, g := range t.groups {
		for i := range g.ok {
			ok[i] += float64(g.ok[i]) * per
			failed[i] += float64(g.failed[i]) * per
		}
	}
	return ok, failed
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
