package metrics

import (
	"sync"
	"time"
)

// Recorder is one worker's handle. Its methods are safe to call from that
// worker while the Registry ticks, and allocate nothing.
type Recorder struct {
	mu    sync.Mutex // held by the worker per record and by Tick per swap
	cur   *Snapshot
	spare *Snapshot
}

// Statement records one execution of statement stmt of operation op, of a
// measured operation.
func (r *Recorder) Statement(op, stmt int, d time.Duration) {
	r.mu.Lock()
	if s := r.cur.Ops[op].Stmts; stmt < len(s) {
		s[stmt].Count++
		s[stmt].Total += d
	}
	r.mu.Unlock()
}

// StatementError records that statement stmt of a measured operation op
// failed; retried says whether the operation will be retried.
func (r *Recorder) StatementError(op, stmt int, retried bool) {
	r.mu.Lock()
	if s := r.cur.Ops[op].Stmts; stmt < len(s) {
		if retried {
			s[stmt].Retries++
		} else {
			s[stmt].Failures++
		}
	}
	r.mu.Unlock()
}

// Skip records an open-loop operation dropped for starting past the latency
// limit.
func (r *Recorder) Skip(op int, measured bool) {
	if !measured {
		return
	}
	r.mu.Lock()
	r.cur.Ops[op].Skipped++
	r.mu.Unlock()
}

// Late records a successful operation slower than the latency limit.
func (r *Recorder) Late(op int, measured bool) {
	if !measured {
		return
	}
	r.mu.Lock()
	r.cur.Ops[op].Late++
	r.mu.Unlock()
}

// Success records an operation that committed after tries attempts.
// measured is false during the warm-up: the operation is only counted.
func (r *Recorder) Success(op int, measured bool, response, service, lag time.Duration, tries int) {
	r.mu.Lock()
	o := r.cur.Ops[op]
	if !measured {
		o.Warmup++
		o.WarmupOK++
		r.mu.Unlock()
		return
	}
	o.OK++
	// Values are clamped into range, so recording cannot fail.
	_ = o.Response.RecordValue(micros(response))
	_ = o.Service.RecordValue(micros(service))
	_ = o.Lag.RecordValue(micros(lag))
	if tries > 1 {
		o.Retried++
		o.Retries += int64(tries - 1)
	}
	r.mu.Unlock()
}

// Failure records an operation that gave up after tries attempts; class is
// that of its last error.
func (r *Recorder) Failure(op int, measured bool, class Class, tries int) {
	r.mu.Lock()
	o := r.cur.Ops[op]
	if !measured {
		o.Warmup++
		r.mu.Unlock()
		return
	}
	o.Failed[class]++
	if tries > 1 {
		o.Retried++
		o.Retries += int64(tries - 1)
	}
	r.mu.Unlock()
}

// Abandoned records an operation still in flight when the run stopped
// waiting for it (an interrupt, the drain timeout): its outcome is unknown.
// One begun during the warm-up counts with the warm-up's, as one that did
// not succeed.
func (r *Recorder) Abandoned(op int, measured bool) {
	r.mu.Lock()
	if measured {
		r.cur.Ops[op].Abandoned++
	} else {
		r.cur.Ops[op].Warmup++
	}
	r.mu.Unlock()
}

// ReconnectFailed records a connection attempt that failed while replacing a
// lost connection.
func (r *Recorder) ReconnectFailed() {
	r.mu.Lock()
	r.cur.Reconnects++
	r.mu.Unlock()
}

// Error records one failed attempt, whether or not it will be retried.
func (r *Recorder) Error(op int, measured bool, class Class) {
	if !measured {
		return
	}
	r.mu.Lock()
	r.cur.Ops[op].Errors[class]++
	r.mu.Unlock()
}

// Registry owns the recorders of one run and merges them on each tick.
type Registry struct {
	ops   []string
	stmts []int

	mu        sync.Mutex
	recorders []*Recorder
	late      []*Recorder // taken only once the window has ended
	interval  *Snapshot
	total     *Snapshot
	drain     *Snapshot // after EndWindow: what ended past the window
	lastTick  time.Time
}

// NewRegistry returns a registry for the named operations; the interval
// clock starts at start. stmts, if given, is the number of statements of
// each operation, for per-statement figures.
func NewRegistry(ops []string, start time.Time, stmts ...int) *Registry {
	return &Registry{
		ops:      append([]string(nil), ops...),
		stmts:    append([]int(nil), stmts...),
		interval: NewSnapshot(ops, stmts...),
		total:    NewSnapshot(ops, stmts...),
		lastTick: start,
	}
}

// Restart sets the start of the first interval, for a registry made before
// the run began (while workers connected).
func (g *Registry) Restart(start time.Time) {
	g.mu.Lock()
	g.lastTick = start
	g.mu.Unlock()
}

// Ops returns the operation names, in recording order.
func (g *Registry) Ops() []string { return g.ops }

// NewRecorder returns a recorder for one worker.
func (g *Registry) NewRecorder() *Recorder {
	r := &Recorder{cur: NewSnapshot(g.ops, g.stmts...), spare: NewSnapshot(g.ops, g.stmts...)}
	g.mu.Lock()
	g.recorders = append(g.recorders, r)
	g.mu.Unlock()
	return r
}

// NewLateRecorder returns a recorder for what one worker sees end after the
// measured window's end: it is taken into the drain's total (Drain) once
// EndWindow was called, never into the window's.
func (g *Registry) NewLateRecorder() *Recorder {
	r := &Recorder{cur: NewSnapshot(g.ops, g.stmts...), spare: NewSnapshot(g.ops, g.stmts...)}
	g.mu.Lock()
	g.late = append(g.late, r)
	g.mu.Unlock()
	return r
}

// Tick collects what every recorder saw since the previous tick, adds it to
// the cumulative total (or, once the window has ended, to the drain's) and
// returns it. The returned snapshot is reused by the next Tick: read it
// before calling Tick again.
func (g *Registry) Tick(now time.Time) (*Snapshot, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tick(now)
}

// EndWindow ends the measured window at now: it ticks the window's last
// interval into the total, and every later Tick adds to the drain's total
// instead (Drain), with what the late recorders hold, so that the total
// holds exactly the window's intervals.
// Only its first call ends the window; a later one is a plain Tick.
func (g *Registry) EndWindow(now time.Time) (*Snapshot, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	iv, err := g.tick(now)
	if g.drain == nil {
		g.drain = NewSnapshot(g.ops, g.stmts...)
	}
	return iv, err
}

// WindowEnded says whether EndWindow was called.
func (g *Registry) WindowEnded() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.drain != nil
}

// Drain returns what ended after the window, as of the last Tick (nil if
// the window never ended). Its Elapsed is set by the caller.
func (g *Registry) Drain() *Snapshot {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.drain
}

func (g *Registry) tick(now time.Time) (*Snapshot, error) {
	if now.Before(g.lastTick) {
		now = g.lastTick // an interval never ends before it began
	}
	g.interval.Reset()
	recs := g.recorders
	if g.drain != nil {
		recs = append(recs[:len(recs):len(recs)], g.late...)
	}
	for _, r := range recs {
		r.mu.Lock()
		r.cur, r.spare = r.spare, r.cur
		r.mu.Unlock()
		// The worker now records into the other snapshot: r.spare is ours.
		if err := g.interval.Merge(r.spare); err != nil {
			return nil, err
		}
		r.spare.Reset()
	}
	g.interval.Elapsed = now.Sub(g.lastTick)
	g.lastTick = now
	into := g.total
	if g.drain != nil {
		into = g.drain
	}
	if err := into.Merge(g.interval); err != nil {
		return nil, err
	}
	return g.interval, nil
}

// Total returns the cumulative snapshot as of the last Tick. Its Elapsed is
// set by the caller, which knows where the measured period began.
func (g *Registry) Total() *Snapshot {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total
}
