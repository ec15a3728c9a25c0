package pgio

import (
	"math"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
)

// KindStats is what the statements of one kind did.
type KindStats struct {
	Statements, Rows int64
	// Latency is in µs: from the intended start to the end of the
	// statement and its commit (client mode), or the statement and its
	// COMMIT as the procedure timed them with clock_timestamp() (server
	// mode).
	Latency *hdr.Histogram
}

func newKindStats() KindStats { return KindStats{Latency: metrics.NewHistogram()} }

func (k *KindStats) record(d time.Duration, rows int64) {
	k.Statements++
	k.Rows += rows
	if k.Latency != nil {
		_ = k.Latency.RecordValue(min(max(d.Microseconds(), 0), math.MaxInt32))
	}
}

// Interval is one progress interval of the measured period (or of the
// warm-up).
type Interval struct {
	// Start and End are offsets from the start of the measured period;
	// negative during the warm-up.
	Start, End time.Duration
	Warmup     bool
	Kinds      [numKinds]KindStats
	// Counters is what the server's counters gained over the interval;
	// HaveCounters says they were sampled at both ends.
	Counters     Counters
	HaveCounters bool
	// warmup is the run's: the interval is labelled with its end since
	// the run's start, as txload's progress lines are.
	warmup time.Duration
	// settled says the interval's counters are in, or will never be (the
	// run ended without them: Collector.Final).
	settled bool
}

// Label is the interval's end since the start of the run, warm-up
// included.
func (iv *Interval) Label() time.Duration { return iv.warmup + iv.End }

// Collector gathers a run's statements by kind, in total and by interval,
// as the sessions report them: at once in client mode, a flush later in
// server mode. It decides what is measured the way the engine does: a
// statement is measured when its intended start is at or after the start of
// the measured window, and in the window when it ended before the window's
// end (the end of the duration, or an interrupt: Cut); one in flight then
// is the drain's, counted apart. Safe for concurrent use.
type Collector struct {
	mu        sync.Mutex
	measured  time.Time     // start of the measured window
	windowEnd time.Time     // its end
	cut       bool          // the window was cut short (an interrupt)
	interval  time.Duration // of progress
	warmup    time.Duration

	total   [numKinds]KindStats
	drain   [numKinds]Drained
	lastEnd time.Time       // of the measured statements
	warm    [numKinds]int64 // statements in the warm-up
	// inter are the measured intervals from the base-th on, those not
	// printed yet (or, with no printer, not yet complete): an interval
	// holds a histogram of each kind (370 KB), and a run of any length
	// holds only those in progress, and the first keptIntervals for its
	// Result.
	inter     []*Interval
	base      int
	kept      []*Interval
	nMeasured int         // measured intervals so far
	warmIv    []*Interval // warm-up intervals, by index back from the start (no histograms)
	first     []time.Time // each session's start, zero if unknown
	through   []time.Time // each session's watermark: its statements that started before it are in
	done      []bool
	// last is the last sample, haveLast says there is one.
	last     Counters
	haveLast bool
	print    func(*Interval)
}

// keptIntervals is how many measured intervals the Result keeps: enough
// for the report to list them all when they are few (maxReportIntervals).
const keptIntervals = maxReportIntervals + 1

// Drained counts the statements of a kind in flight at the window's end.
type Drained struct{ Statements, Rows int64 }

// NewCollector makes a collector for sessions whose measured window starts
// at measured, after a warm-up of warmup, and lasts window, with intervals
// of interval (0: none, only totals). print, if set, receives each measured
// interval once every session has reported through its end and its
// counters are in.
func NewCollector(sessions int, measured time.Time, warmup, window, interval time.Duration, print func(*Interval)) *Collector {
	c := &Collector{measured: measured, windowEnd: measured.Add(window), warmup: warmup, interval: interval, print: print,
		first: make([]time.Time, sessions), through: make([]time.Time, sessions), done: make([]bool, sessions)}
	for k := range c.total {
		c.total[k] = newKindStats()
	}
	return c
}

// Measured is the start of the measured period.
func (c *Collector) Measured() time.Time { return c.measured }

// Boundaries returns the interval boundaries from the start of the warm-up
// to before end: every interval from the start of the measured period, and the
// warm-up cut the same way back from it (its first interval shorter). With
// no intervals, the start of the measured period only.
func (c *Collector) Boundaries(end time.Time) []time.Time {
	if c.interval <= 0 {
		// Only the start of the measured period.
		return []time.Time{c.measured}
	}
	var out []time.Time
	if c.warmup > 0 {
		out = append(out, c.measured.Add(-c.warmup))
		for k := (c.warmup - 1) / c.interval; k > 0; k-- {
			out = append(out, c.measured.Add(-k*c.interval))
		}
	}
	for t := c.measured; t.Before(end); t = t.Add(c.interval) {
		out = append(out, t)
	}
	return out
}

// Started records when session s started (its first statement, or its
// start behind the barrier in server mode).
func (c *Collector) Started(s int, at time.Time) {
	c.mu.Lock()
	if c.first[s].IsZero() || at.Before(c.first[s]) {
		c.first[s] = at
	}
	c.mu.Unlock()
}

// Record adds a statement of session s that started at (intended) at, took
// d and touched rows rows.
func (c *Collector) Record(s int, k Kind, at time.Time, d time.Duration, rows int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.Before(c.measured) {
		c.warm[k]++
		if iv := c.warmInterval(at); iv != nil {
			iv.Kinds[k].record(d, rows)
		}
		return
	}
	if !at.Add(d).Before(c.windowEnd) {
		c.drain[k].Statements++
		c.drain[k].Rows += rows
		return
	}
	c.total[k].record(d, rows)
	if end := at.Add(d); end.After(c.lastEnd) {
		c.lastEnd = end
	}
	if iv := c.intervalAt(at); iv != nil {
		iv.Kinds[k].record(d, rows)
	}
}

func (c *Collector) intervalAt(at time.Time) *Interval {
	if c.interval <= 0 {
		return nil
	}
	i := int(at.Sub(c.measured) / c.interval)
	if i < c.base {
		return nil // complete, and gone
	}
	for c.base+len(c.inter) <= i {
		n := c.base + len(c.inter)
		iv := &Interval{Start: time.Duration(n) * c.interval, End: time.Duration(n+1) * c.interval, warmup: c.warmup}
		for k := range iv.Kinds {
			iv.Kinds[k] = newKindStats()
		}
		c.inter = append(c.inter, iv)
		if n < keptIntervals {
			c.kept = append(c.kept, iv)
		}
		c.nMeasured = n + 1
	}
	return c.inter[i-c.base]
}

func (c *Collector) warmInterval(at time.Time) *Interval {
	if c.interval <= 0 {
		return nil
	}
	i := int((c.measured.Sub(at) - 1) / c.interval) // 0: the last interval before the measured period
	for len(c.warmIv) <= i {
		n := len(c.warmIv)
		// Counts only: nothing reads a warm-up interval's latencies.
		iv := &Interval{Start: -time.Duration(n+1) * c.interval, End: -time.Duration(n) * c.interval, Warmup: true, warmup: c.warmup}
		if iv.Start < -c.warmup {
			iv.Start = -c.warmup
		}
		c.warmIv = append(c.warmIv, iv)
	}
	return c.warmIv[i]
}

// Through says session s reported every statement it started before t.
func (c *Collector) Through(s int, t time.Time) {
	c.mu.Lock()
	if t.After(c.through[s]) {
		c.through[s] = t
	}
	c.mu.Unlock()
	c.flushPrints()
}

// Done says session s ended: nothing more will come from it.
func (c *Collector) Done(s int) {
	c.mu.Lock()
	c.done[s] = true
	c.mu.Unlock()
	c.flushPrints()
}

// Sample adds a sample of the server's counters taken at a boundary.
func (c *Collector) Sample(s Counters) {
	c.mu.Lock()
	prev, cur, pair := c.last, s, c.haveLast
	c.last, c.haveLast = s, true
	if pair && c.interval > 0 {
		// The interval the pair spans, if it is one.
		mid := prev.At.Add(cur.At.Sub(prev.At) / 2)
		var iv *Interval
		if mid.Before(c.measured) {
			iv = c.warmInterval(mid)
		} else {
			iv = c.intervalAt(mid)
		}
		if iv != nil && !iv.HaveCounters {
			iv.Counters, iv.HaveCounters, iv.settled = cur.Sub(prev), true, true
		}
	}
	c.mu.Unlock()
	c.flushPrints()
}

// Final says no more samples come: an interval without its counters (a
// sample that failed, or that the end of the run overtook) is printed
// without them.
func (c *Collector) Final() {
	c.mu.Lock()
	for _, iv := range c.inter {
		iv.settled = true
	}
	c.mu.Unlock()
	c.flushPrints()
}

// watermark is the time before which every session reported everything.
func (c *Collector) watermark() time.Time {
	var w time.Time
	first := true
	for s := range c.through {
		if c.done[s] {
			continue
		}
		if first || c.through[s].Before(w) {
			w, first = c.through[s], false
		}
	}
	if first {
		return time.Unix(math.MaxInt32, 0) // every session is done
	}
	return w
}

// flushPrints prints the measured intervals that are complete, and lets
// them go (but the first keptIntervals).
func (c *Collector) flushPrints() {
	for {
		c.mu.Lock()
		if len(c.inter) == 0 {
			c.mu.Unlock()
			return
		}
		iv := c.inter[0]
		end := c.measured.Add(iv.End)
		if c.watermark().Before(end) || !iv.settled {
			c.mu.Unlock()
			return
		}
		c.inter[0] = nil
		c.inter = c.inter[1:]
		c.base++
		c.mu.Unlock()
		if c.print != nil {
			c.print(iv)
		}
	}
}

// Cut ends the measured window at t, if that is before its end: an
// interrupt. What ends at or after it is the drain's.
func (c *Collector) Cut(t time.Time) {
	c.mu.Lock()
	if t.Before(c.windowEnd) {
		c.windowEnd, c.cut = t, true
	}
	c.mu.Unlock()
}

// Window is the length of the measured window: to its end when the run
// reached it (timed says its sessions ran until then; a statement in flight
// there, or a cut, says so too), else to the end of its last statement.
func (c *Collector) Window(timed bool) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if timed || c.cut || c.drain[Select].Statements+c.drain[Update].Statements > 0 {
		return max(c.windowEnd.Sub(c.measured), 0)
	}
	if c.lastEnd.IsZero() {
		return 0
	}
	return c.lastEnd.Sub(c.measured)
}

// Drain is the statements in flight at the window's end, by kind.
func (c *Collector) Drain() [numKinds]Drained {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.drain
}

// LastEnd is when the last measured statement ended; zero if none ran.
func (c *Collector) LastEnd() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastEnd
}

// MeasuredIntervals is the number of measured intervals so far (Totals
// returns the first keptIntervals of them).
func (c *Collector) MeasuredIntervals() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nMeasured
}

// Totals returns the measured statements by kind, the warm-up's, the
// intervals (the warm-up's, then the first keptIntervals measured), and
// the spread of the sessions' starts (-1 when fewer than two
// are known: a session that failed before it reported any).
func (c *Collector) Totals() (total [numKinds]KindStats, warm [numKinds]int64, intervals []*Interval, spread time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var lo, hi time.Time
	known := 0
	for _, t := range c.first {
		if t.IsZero() {
			continue
		}
		known++
		if lo.IsZero() || t.Before(lo) {
			lo = t
		}
		if t.After(hi) {
			hi = t
		}
	}
	for i := len(c.warmIv) - 1; i >= 0; i-- {
		intervals = append(intervals, c.warmIv[i])
	}
	intervals = append(intervals, c.kept...)
	if known < 2 {
		return c.total, c.warm, intervals, -1
	}
	return c.total, c.warm, intervals, hi.Sub(lo)
}
