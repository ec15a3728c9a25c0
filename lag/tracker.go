package lag

import (
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
)

// Tracker pairs each marker's acknowledgement on the source with its
// sighting on the destination and records the lag between them. Writers
// are numbered 0..n-1 here (the marker table holds first+i); each writer
// sends its markers one after another, seq 1, 2, 3, ..., a new seq for every
// attempt. It is safe for concurrent use.
type Tracker struct {
	start time.Time
	// expire is how long an acknowledged marker may stay unseen while later
	// markers of its writer are seen before the Tracker stops waiting for
	// it (it is counted as not seen; the convergence check says whether it
	// is missing).
	expire time.Duration

	// split is the first writer of the second group (the markers inside
	// the workload's transactions); len(writers) when there is none.
	split int

	mu       sync.Mutex
	writers  []writerState
	interval *hdr.Histogram
	total    [2]*hdr.Histogram // per group
	ivSeen   int64
	counts   [2]Counts // per group
}

// Counts are the markers' fates so far.
type Counts struct {
	// Sent counts markers written (attempts); Acked those whose COMMIT the
	// source acknowledged; Failed those whose transaction rolled back;
	// Ambiguous those whose COMMIT was in flight when the connection was
	// lost (they may have committed).
	Sent, Acked, Failed, Ambiguous int64
	// Measured counts acknowledged markers seen on the destination: each
	// is one lag value.
	Measured int64
	// Early counts markers the reader saw before their writer had the
	// acknowledgement (a destination that is the source, or faster than
	// the acknowledgement's way back): recorded as lag 0.
	Early int64
	// Late counts markers first found by the gap poll, after a later
	// marker of the same writer (a pipeline that reorders): their lag is
	// measured with the gap poll's coarser precision.
	Late int64
	// Expired counts acknowledged markers never seen while later ones of
	// their writer were, for longer than the expiry.
	Expired int64
	// AmbiguousSeen counts ambiguous markers found on the destination:
	// their transaction did commit. Unknown counts markers seen that no
	// writer sent.
	AmbiguousSeen, Unknown int64
}

// writerState is one writer's markers not resolved yet: q[i] is marker
// low+1+i. A marker is resolved once nothing more can happen to it: seen
// and acknowledged, failed, or given up.
type writerState struct {
	low     int64
	maxSeen int64
	q       []entry
}

type entryState uint8

const (
	inFlight entryState = iota
	acked
	failed
	ambiguous
	expired
)

type entry struct {
	state entryState
	seen  bool
	late  bool          // first found by the gap poll
	ack   time.Duration // since start: acknowledged, or failed (ambiguous)
	at    time.Duration // since start: seen
}

// NewTracker tracks n writers on txload's clock from start. expire is how
// long an acknowledged marker may stay unseen while later markers of its
// writer arrive (0: forever).
func NewTracker(start time.Time, n int, expire time.Duration) *Tracker {
	return NewSplitTracker(start, n, n, expire)
}

// NewSplitTracker is NewTracker with two groups of writers whose counts and
// total lag are also kept apart (CountsOf, TotalOf): writers 0..split-1
// (the marker stream) and split..n-1 (the markers written inside the
// workload's transactions).
func NewSplitTracker(start time.Time, n, split int, expire time.Duration) *Tracker {
	return &Tracker{
		start: start, expire: expire, split: split,
		writers:  make([]writerState, n),
		interval: metrics.NewHistogram(), total: [2]*hdr.Histogram{metrics.NewHistogram(), metrics.NewHistogram()},
	}
}

// group is writer w's group: 0 or 1.
func (t *Tracker) group(w int) int {
	if w >= t.split {
		return 1
	}
	return 0
}

// Writers is the number of writers.
func (t *Tracker) Writers() int { return len(t.writers) }

// Send returns the seq of writer w's next marker, about to be written.
func (t *Tracker) Send(w int) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	ws := &t.writers[w]
	ws.q = append(ws.q, entry{})
	t.counts[t.group(w)].Sent++
	return ws.low + int64(len(ws.q))
}

func (ws *writerState) get(seq int64) *entry {
	if i := seq - ws.low - 1; i >= 0 && i < int64(len(ws.q)) {
		return &ws.q[i]
	}
	return nil
}

// Acked records that the source acknowledged the COMMIT of writer w's
// marker seq at at.
func (t *Tracker) Acked(w int, seq int64, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ws := &t.writers[w]
	e := ws.get(seq)
	if e == nil || e.state != inFlight {
		return
	}
	e.state, e.ack = acked, at.Sub(t.start)
	c := &t.counts[t.group(w)]
	c.Acked++
	if e.seen {
		// Seen before the acknowledgement came back.
		c.Early++
		c.Measured++
		t.record(0, t.group(w))
	}
	t.advance(ws)
}

// Failed records that writer w's marker seq was not committed: its
// transaction rolled back, or (ambiguous) the connection was lost while its
// COMMIT was in flight.
func (t *Tracker) Failed(w int, seq int64, isAmbiguous bool, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ws := &t.writers[w]
	e := ws.get(seq)
	if e == nil || e.state != inFlight {
		return
	}
	c := &t.counts[t.group(w)]
	if isAmbiguous {
		e.state, e.ack = ambiguous, at.Sub(t.start)
		c.Ambiguous++
		if e.seen {
			c.AmbiguousSeen++
		}
	} else {
		e.state = failed
		c.Failed++
	}
	t.advance(ws)
}

// Sighting is one marker row found on the destination.
type Sighting struct {
	Writer int // 0..n-1
	Seq    int64
}

// Seen records markers the reader found at at. gap says they come from the
// gap poll (below a marker already seen).
func (t *Tracker) Seen(rows []Sighting, at time.Time, gap bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := at.Sub(t.start)
	for _, r := range rows {
		if r.Writer < 0 || r.Writer >= len(t.writers) {
			t.counts[0].Unknown++
			continue
		}
		c := &t.counts[t.group(r.Writer)]
		ws := &t.writers[r.Writer]
		e := ws.get(r.Seq)
		if e == nil {
			if r.Seq > ws.low+int64(len(ws.q)) {
				c.Unknown++
			}
			continue // resolved already: seen again, or a repeat
		}
		if e.seen {
			continue
		}
		e.seen, e.at, e.late = true, now, gap && r.Seq < ws.maxSeen
		ws.maxSeen = max(ws.maxSeen, r.Seq)
		switch e.state {
		case acked:
			c.Measured++
			if e.late {
				c.Late++
			}
			t.record(now-e.ack, t.group(r.Writer))
		case ambiguous:
			c.AmbiguousSeen++
		case expired:
			// Counted as expired already; its lag is known now, but it came
			// after the Tracker gave up on it: leave the figures alone.
		}
	}
	for i := range t.writers {
		t.advance(&t.writers[i])
	}
}

// record adds one lag value; t.mu is held.
func (t *Tracker) record(d time.Duration, g int) {
	us := max(int64(d/time.Microsecond), 0)
	_ = t.interval.RecordValue(min(us, t.interval.HighestTrackableValue()))
	_ = t.total[g].RecordValue(min(us, t.total[g].HighestTrackableValue()))
	t.ivSeen++
}

// advance pops the resolved markers at the front of ws.q.
func (t *Tracker) advance(ws *writerState) {
	n := 0
	for _, e := range ws.q {
		resolved := (e.state == acked && e.seen) || e.state == failed || e.state == expired ||
			(e.state == ambiguous && e.seen)
		if !resolved {
			break
		}
		n++
	}
	if n > 0 {
		ws.q = ws.q[n:]
		ws.low += int64(n)
	}
}

// Expire gives up on markers acknowledged (or ambiguous) more than the
// expiry before now that are still unseen although a later marker of their
// writer was seen: the pipeline reordered or lost them.
func (t *Tracker) Expire(now time.Time) {
	if t.expire <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cut := now.Sub(t.start) - t.expire
	for i := range t.writers {
		ws := &t.writers[i]
		for j := range ws.q {
			e := &ws.q[j]
			if ws.low+int64(j)+1 >= ws.maxSeen {
				break
			}
			if e.seen || e.ack > cut {
				continue
			}
			switch e.state {
			case acked:
				e.state = expired
				t.counts[t.group(i)].Expired++
			case ambiguous:
				e.state = expired // most likely rolled back
			}
		}
		t.advance(ws)
	}
}

// Position is where the reader's polls of one writer start.
type Position struct {
	// After: every marker of the writer at or below it is resolved.
	After int64
	// MaxSeen is the highest seq seen.
	MaxSeen int64
}

// Positions returns each writer's position, into ps (reused if large
// enough).
func (t *Tracker) Positions(ps []Position) []Position {
	t.mu.Lock()
	defer t.mu.Unlock()
	ps = ps[:0]
	for _, ws := range t.writers {
		ps = append(ps, Position{After: ws.low, MaxSeen: max(ws.maxSeen, ws.low)})
	}
	return ps
}

// Pending is what the destination still owes: acknowledged markers not seen
// yet (expired ones aside), and the acknowledgement time of the oldest.
func (t *Tracker) Pending() (n int, oldest time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	first := time.Duration(-1)
	for _, ws := range t.writers {
		for _, e := range ws.q {
			if e.state == acked && !e.seen {
				n++
				if first < 0 || e.ack < first {
					first = e.ack
				}
			}
		}
	}
	if n == 0 {
		return 0, time.Time{}
	}
	return n, t.start.Add(first)
}

// Interval is the lag recorded since the previous Tick.
type Interval struct {
	Lag *hdr.Histogram // µs; reused by the next Tick
	// Measured is the number of lag values in it.
	Measured int64
	// Pending is the number of acknowledged markers not seen yet at the
	// tick, Behind the age of the oldest (a lower bound of the lag now:
	// while the destination is stalled, nothing is measured, but Behind
	// grows).
	Pending int
	Behind  time.Duration
}

// Tick returns the interval's lag and starts the next interval. The
// histogram is reused: read it before the next Tick.
func (t *Tracker) Tick(now time.Time, into *hdr.Histogram) Interval {
	t.Expire(now)
	n, oldest := t.Pending()
	t.mu.Lock()
	defer t.mu.Unlock()
	into.Reset()
	into.Merge(t.interval)
	t.interval.Reset()
	iv := Interval{Lag: into, Measured: t.ivSeen, Pending: n}
	t.ivSeen = 0
	if n > 0 {
		iv.Behind = max(now.Sub(oldest), 0)
	}
	return iv
}

// Total returns a copy of every lag recorded so far (µs).
func (t *Tracker) Total() *hdr.Histogram {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := metrics.NewHistogram()
	h.Merge(t.total[0])
	h.Merge(t.total[1])
	return h
}

// TotalOf returns a copy of the lag recorded for group g's writers (0: up
// to the split, 1: from it on).
func (t *Tracker) TotalOf(g int) *hdr.Histogram {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := metrics.NewHistogram()
	h.Merge(t.total[g])
	return h
}

// CountsOf returns the fates of group g's markers.
func (t *Tracker) CountsOf(g int) Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts[g]
}

// Counts returns the markers' fates so far.
func (t *Tracker) Counts() Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, b := t.counts[0], t.counts[1]
	return Counts{
		Sent: a.Sent + b.Sent, Acked: a.Acked + b.Acked, Failed: a.Failed + b.Failed, Ambiguous: a.Ambiguous + b.Ambiguous,
		Measured: a.Measured + b.Measured, Early: a.Early + b.Early, Late: a.Late + b.Late, Expired: a.Expired + b.Expired,
		AmbiguousSeen: a.AmbiguousSeen + b.AmbiguousSeen, Unknown: a.Unknown + b.Unknown,
	}
}
