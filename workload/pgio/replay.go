package pgio

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// replayLag is how long after a server-mode statement ran it is handed to
// the engine: a flush period, and room for a statement that was running
// when the session flushed and for the pause between the warm-up's calls
// and the measured period's.
const replayLag = flushPeriod + 400*time.Millisecond

// wakeEvery is the replay's clock: it hands on, every wakeEvery, what is
// due by then.
const wakeEvery = time.Millisecond

// Event is what a server-mode session did, as it is replayed.
type Event int

// The events.
const (
	// EvStarted: session S started at At.
	EvStarted Event = iota
	// EvStatement: session S ran a statement of kind K from At for D,
	// touching Rows rows.
	EvStatement
	// EvThrough: session S reported every statement it started before At.
	EvThrough
	// EvDone: session S ended at At.
	EvDone
	// EvFailed: session S ended on Err at At.
	EvFailed
)

// Replayed is one event of a server-mode session.
type Replayed struct {
	Ev   Event
	S    int
	K    Kind
	At   time.Time
	D    time.Duration
	Rows int64
	Err  error
}

// Replay hands a server-mode run's events on a fixed lag after they
// happened, in the order of their times, on the run's clock shifted by that
// lag. Whoever takes them (the engine's sessions, the collector) sees the
// run as if it ran it, lag later: each progress interval closed on that
// clock holds exactly the statements that started in it (none arrives after
// its interval was closed, none before it opened), the measured period ends
// when the last statement did, and an interrupt cuts them all at the same
// statement. A statement that comes later than the lag (a flush held up by
// a long statement) is handed on at once, in a later interval. Safe for
// concurrent use.
type Replay struct {
	lag     time.Duration
	mu      sync.Mutex
	q       byStart
	start   time.Time
	started bool
	closed  bool
	last    time.Time // the latest end of a statement pushed
	wake    chan struct{}
}

// NewReplay makes a replay with a lag of lag.
func NewReplay(lag time.Duration) *Replay { return &Replay{lag: lag, wake: make(chan struct{}, 1)} }

func (p *Replay) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Begin says the run started at start.
func (p *Replay) Begin(start time.Time) {
	p.mu.Lock()
	p.start, p.started = start, true
	p.mu.Unlock()
	p.signal()
}

// Lag is the replay's lag.
func (p *Replay) Lag() time.Duration { return p.lag }

// Push adds an event.
func (p *Replay) Push(x Replayed) {
	p.mu.Lock()
	heap.Push(&p.q, x)
	if end := x.At.Add(x.D); end.After(p.last) {
		p.last = end
	}
	p.mu.Unlock()
	p.signal()
}

// Hold makes Run return no sooner than the lag after t: the end of a timed
// run, whose sessions ran statements until then.
func (p *Replay) Hold(t time.Time) {
	p.mu.Lock()
	if t.After(p.last) {
		p.last = t
	}
	p.mu.Unlock()
}

// Close says no more statements come.
func (p *Replay) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.signal()
}

// Run calls ready with the shifted start once the lag after the start
// passed, then deliver with each event (At not shifted) when the lag after
// it passed; once closed and empty, it returns when the lag after the last
// statement's end passed, or at once when ctx ends or the run was closed
// before it started.
func (p *Replay) Run(ctx context.Context, ready func(time.Time), deliver func(Replayed)) {
	var start time.Time
	for {
		p.mu.Lock()
		started, closed := p.started, p.closed
		start = p.start
		p.mu.Unlock()
		if started {
			if !p.sleepUntil(ctx, start.Add(p.lag), false) {
				return
			}
			ready(start.Add(p.lag))
			break
		}
		if closed || !p.sleepUntil(ctx, time.Time{}, true) {
			return
		}
	}
	for {
		p.mu.Lock()
		if len(p.q) == 0 {
			closed, last := p.closed, p.last
			p.mu.Unlock()
			if closed {
				p.sleepUntil(ctx, last.Add(p.lag), false)
				return
			}
			if !p.sleepUntil(ctx, time.Time{}, true) {
				return
			}
			continue
		}
		due := p.q[0].At.Add(p.lag)
		if time.Now().Before(due) {
			p.mu.Unlock()
			// Waking for each statement would be thousands of wake-ups a
			// second, on the cores the server needs: at most one a
			// millisecond, each handing on everything due by then.
			if !p.sleepUntil(ctx, start.Add(p.lag+(due.Sub(start.Add(p.lag))+wakeEvery-1).Truncate(wakeEvery)), true) {
				return
			}
			continue
		}
		x := heap.Pop(&p.q).(Replayed)
		p.mu.Unlock()
		deliver(x)
	}
}

// sleepUntil waits until t (zero: no time), or a push when woken; false if
// ctx ended first.
func (p *Replay) sleepUntil(ctx context.Context, t time.Time, woken bool) bool {
	var timer <-chan time.Time
	if !t.IsZero() {
		d := time.Until(t)
		if d <= 0 {
			return ctx.Err() == nil
		}
		tm := time.NewTimer(d)
		defer tm.Stop()
		timer = tm.C
	}
	var wake chan struct{}
	if woken {
		wake = p.wake
	}
	select {
	case <-timer:
	case <-wake:
	case <-ctx.Done():
		return false
	}
	return true
}

// byStart is a heap of statements by start, then session.
type byStart []Replayed

func (h byStart) Len() int { return len(h) }
func (h byStart) Less(i, j int) bool {
	switch {
	case !h[i].At.Equal(h[j].At):
		return h[i].At.Before(h[j].At)
	case h[i].Ev != h[j].Ev:
		return h[i].Ev < h[j].Ev // a session's statements before its report at the same time
	}
	return h[i].S < h[j].S
}
func (h byStart) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *byStart) Push(x any)   { *h = append(*h, x.(Replayed)) }
func (h *byStart) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
