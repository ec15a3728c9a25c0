package metrics

import (
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

const (
	lowestMicros  = 1
	highestMicros = int64(time.Hour / time.Microsecond)
	sigFigs       = 3
)

// NewHistogram returns an empty histogram with txload's geometry:
// microseconds from 1 µs to one hour, 3 significant digits.
func NewHistogram() *hdr.Histogram {
	return hdr.New(lowestMicros, highestMicros, sigFigs)
}

// micros converts d to whole microseconds clamped into [0, one hour] (HDR
// histograms record 0 exactly),
// so that no value is ever dropped.
func micros(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if us < 0 {
		return 0
	}
	if us > highestMicros {
		return highestMicros
	}
	return us
}

// OpStats is everything recorded for one kind of operation.
type OpStats struct {
	Name string
	// Response is end − intended start, Service is end − actual start, Lag is
	// actual start − intended start; of committed operations, in µs.
	Response, Service, Lag *hdr.Histogram
	// OK counts operations that succeeded (after any retries).
	OK int64
	// Failed counts operations that gave up, by the class of their last error.
	Failed [NumClasses]int64
	// Errors counts every failed attempt, retried or not, by class.
	Errors [NumClasses]int64
	// Retried counts operations that needed at least one retry; Retries
	// counts the retries themselves.
	Retried, Retries int64
	// Warmup counts operations that ended during the warm-up: they ran but are
	// in no other field. WarmupOK counts those of them that succeeded.
	Warmup, WarmupOK int64
	// Skipped counts open-loop operations not run because they would have
	// started later than the latency limit; Late counts those that ran and
	// took longer than it.
	Skipped, Late int64
	// Abandoned counts operations still in flight when the run stopped
	// waiting for them (the drain timeout): their outcome is unknown.
	Abandoned int64
	// Stmts holds per-statement figures, for workloads that report them.
	Stmts []StmtStats
}

// StmtStats is one statement of an operation: its executions' total time,
// and the failures and retries it caused.
type StmtStats struct {
	Count    int64
	Total    time.Duration
	Failures int64
	Retries  int64
}

// Mean is the statement's average latency.
func (s StmtStats) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Total / time.Duration(s.Count)
}

func newOpStats(name string, stmts int) *OpStats {
	o := &OpStats{Name: name, Response: NewHistogram(), Service: NewHistogram(), Lag: NewHistogram()}
	if stmts > 0 {
		o.Stmts = make([]StmtStats, stmts)
	}
	return o
}

// FailedTotal is the number of operations that failed, of every class.
func (o *OpStats) FailedTotal() int64 { return sum(o.Failed[:]) }

// ErrorsTotal is the number of failed attempts, of every class.
func (o *OpStats) ErrorsTotal() int64 { return sum(o.Errors[:]) }

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// Merge adds from into o: its counts, and its histograms where it has them
// (from may hold counts only, its histograms nil).
func (o *OpStats) Merge(from *OpStats) error {
	for _, p := range [...]struct{ to, from *hdr.Histogram }{
		{o.Response, from.Response}, {o.Service, from.Service}, {o.Lag, from.Lag},
	} {
		if p.from == nil {
			continue
		}
		if dropped := p.to.Merge(p.from); dropped != 0 {
			return fmt.Errorf("merging %s histograms: %d values out of range", o.Name, dropped)
		}
	}
	o.OK += from.OK
	for c := range o.Failed {
		o.Failed[c] += from.Failed[c]
		o.Errors[c] += from.Errors[c]
	}
	o.Retried += from.Retried
	o.Retries += from.Retries
	o.Warmup += from.Warmup
	o.WarmupOK += from.WarmupOK
	o.Skipped += from.Skipped
	o.Late += from.Late
	o.Abandoned += from.Abandoned
	if len(from.Stmts) > 0 && len(o.Stmts) < len(from.Stmts) {
		o.Stmts = append(o.Stmts, make([]StmtStats, len(from.Stmts)-len(o.Stmts))...)
	}
	for i, st := range from.Stmts {
		t := &o.Stmts[i]
		t.Count += st.Count
		t.Total += st.Total
		t.Failures += st.Failures
		t.Retries += st.Retries
	}
	return nil
}

func (o *OpStats) reset() {
	name, resp, serv, lag, stmts := o.Name, o.Response, o.Service, o.Lag, o.Stmts
	resp.Reset()
	serv.Reset()
	lag.Reset()
	clear(stmts)
	*o = OpStats{Name: name, Response: resp, Service: serv, Lag: lag, Stmts: stmts}
}

// Snapshot holds the statistics of every operation over a period.
type Snapshot struct {
	Ops []*OpStats
	// Reconnects counts connection attempts that failed while clients
	// replaced lost connections: an outage shows here.
	Reconnects int64
	// Elapsed is the length of the measured period the snapshot covers.
	Elapsed time.Duration
}

// NewSnapshot returns an empty snapshot for the named operations; stmts, if
// given, is the number of statements of each.
func NewSnapshot(ops []string, stmts ...int) *Snapshot {
	s := &Snapshot{Ops: make([]*OpStats, len(ops))}
	for i, name := range ops {
		n := 0
		if i < len(stmts) {
			n = stmts[i]
		}
		s.Ops[i] = newOpStats(name, n)
	}
	return s
}

// Merge adds from into s. Both must cover the same operations, in the same
// order. Elapsed is not changed: periods may overlap (several workers) or
// follow each other (ticks), and only the caller knows which.
func (s *Snapshot) Merge(from *Snapshot) error {
	if len(from.Ops) != len(s.Ops) {
		return fmt.Errorf("merging snapshots: %d operations into %d", len(from.Ops), len(s.Ops))
	}
	for i, o := range s.Ops {
		if o.Name != from.Ops[i].Name {
			return fmt.Errorf("merging snapshots: operation %q into %q", from.Ops[i].Name, o.Name)
		}
		if err := o.Merge(from.Ops[i]); err != nil {
			return err
		}
	}
	s.Reconnects += from.Reconnects
	return nil
}

// Plus returns a new snapshot holding s and from added up; its Elapsed is
// s's.
func (s *Snapshot) Plus(from *Snapshot) (*Snapshot, error) {
	names := make([]string, len(s.Ops))
	stmts := make([]int, len(s.Ops))
	for i, o := range s.Ops {
		names[i], stmts[i] = o.Name, len(o.Stmts)
	}
	out := NewSnapshot(names, stmts...)
	if err := out.Merge(s); err != nil {
		return nil, err
	}
	if err := out.Merge(from); err != nil {
		return nil, err
	}
	out.Elapsed = s.Elapsed
	return out, nil
}

// Reset empties s, keeping its histograms' memory.
func (s *Snapshot) Reset() {
	for _, o := range s.Ops {
		o.reset()
	}
	s.Elapsed = 0
	s.Reconnects = 0
}

// Total folds every operation into one, named name: for lines that show the
// whole workload at once. It is for reading: of a snapshot of one
// operation it is that operation, its histograms shared (a progress line
// at every tick of a short --progress allocates no histogram).
func (s *Snapshot) Total(name string) *OpStats {
	if len(s.Ops) == 1 {
		t := *s.Ops[0]
		t.Name, t.Stmts = name, nil
		return &t
	}
	t := newOpStats(name, 0)
	for _, o := range s.Ops {
		_ = t.Merge(o) // same geometry: nothing can be dropped
	}
	t.Stmts = nil // statements of different operations do not add up
	return t
}

// OK is the number of successful operations of every kind.
func (s *Snapshot) OK() int64 {
	var n int64
	for _, o := range s.Ops {
		n += o.OK
	}
	return n
}

// Micros formats a time in µs compactly, as the reports print latencies:
// 850µs, 3.24ms, 1.20s.
func Micros(us int64) string {
	switch {
	case us < 1000:
		return fmt.Sprintf("%dµs", us)
	case us < 1000000:
		return fmt.Sprintf("%.2fms", float64(us)/1e3)
	default:
		return fmt.Sprintf("%.2fs", float64(us)/1e6)
	}
}
