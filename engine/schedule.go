package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Arrival is how open-loop operations are spread in time.
type Arrival int

// The arrival processes.
const (
	Poisson Arrival = iota
	Uniform
)

// String returns the flag value.
func (a Arrival) String() string { return [...]string{"poisson", "uniform"}[a] }

// ParseArrival reads an --arrival value.
func ParseArrival(s string) (Arrival, error) {
	switch s {
	case "poisson":
		return Poisson, nil
	case "uniform":
		return Uniform, nil
	}
	return 0, fmt.Errorf("%q is not an arrival process (allowed: poisson, uniform)", s)
}

// segment is a stretch of the schedule holding exactly n operations in
// [from, from+length).
type segment struct {
	from, length time.Duration
	n            int64
}

// schedule yields intended start offsets from the start of the run. Each
// segment (warm-up, measured period) offers exactly round(rate × length)
// operations, so an open-loop run's count is known in advance. Uniform spaces
// them evenly; Poisson places them as a Poisson process conditioned on that
// count, i.e. as sorted uniform draws, generated in order in O(1) memory.
type schedule struct {
	arrival Arrival
	rng     *rand.Rand
	segs    []segment
	seg     int
	k       int64   // operations emitted in the current segment
	t       float64 // Poisson: position of the last one, in seconds from the segment start
	phase   float64 // uniform: offset of the first arrival, as a fraction of the spacing
}

func newSchedule(arrival Arrival, rate float64, seed uint64, lengths ...time.Duration) *schedule {
	s := &schedule{arrival: arrival, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	var from time.Duration
	for _, l := range lengths {
		s.segs = append(s.segs, segment{from: from, length: l, n: int64(math.Round(rate * l.Seconds()))})
		from += l
	}
	return s
}

// total is the number of operations in segment i.
func (s *schedule) total(i int) int64 { return s.segs[i].n }

// next returns the next offset, the index of its segment, and false when the
// schedule is exhausted.
func (s *schedule) next() (time.Duration, int, bool) {
	for s.seg < len(s.segs) && s.k >= s.segs[s.seg].n {
		s.seg++
		s.k, s.t = 0, 0
	}
	if s.seg == len(s.segs) {
		return 0, 0, false
	}
	g := s.segs[s.seg]
	var at float64
	switch s.arrival {
	case Uniform:
		at = (float64(s.k) + s.phase) * g.length.Seconds() / float64(g.n)
	default:
		// The minimum of the remaining m uniforms on [t, T] is
		// t + (T−t)·(1 − U^(1/m)); -expm1(log(U)/m) keeps precision for large m.
		m := float64(g.n - s.k)
		u := 1 - s.rng.Float64() // (0, 1]
		s.t += (g.length.Seconds() - s.t) * -math.Expm1(math.Log(u)/m)
		at = s.t
	}
	s.k++
	return g.from + time.Duration(at*float64(time.Second)), s.seg, true
}

// newScheduleCounts is a schedule with counts[i] operations in the segment of
// length lengths[i]: one group's share of the run's schedule. phase, in
// [0, 1), shifts uniform arrivals by that fraction of their spacing, so that
// the shares of several groups interleave evenly.
func newScheduleCounts(arrival Arrival, seed uint64, phase float64, lengths []time.Duration, counts []int64) *schedule {
	s := &schedule{arrival: arrival, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), phase: phase}
	var from time.Duration
	for i, l := range lengths {
		s.segs = append(s.segs, segment{from: from, length: l, n: counts[i]})
		from += l
	}
	return s
}
