package slo

import (
	"fmt"
	"math"
	"strconv"
)

// Stop says why a Search ended.
type Stop int

const (
	// Running: Next has another rate to try.
	Running Stop = iota
	// Converged: the lowest failing rate is within the precision of the
	// highest passing one (or no rate lies strictly between them).
	Converged
	// NoPass: the first rate tried failed, so no rate is known to pass.
	NoPass
	// MaxSteps: the steps ran out first; the result is a lower bound when
	// no step failed, an interval wider than the precision otherwise.
	MaxSteps
)

func (s Stop) String() string {
	switch s {
	case Running:
		return "running"
	case Converged:
		return "converged"
	case NoPass:
		return "no passing rate"
	case MaxSteps:
		return "max steps"
	}
	return "Stop(" + strconv.Itoa(int(s)) + ")"
}

// Result is where a Search stands.
type Result struct {
	// Lo is the highest rate that passed, 0 when none did; Hi the lowest
	// that failed, 0 when none did.
	Lo, Hi float64
	// Steps is the number of outcomes observed.
	Steps int
	Stop  Stop
}

// Search finds the highest rate that passes: it raises the rate from start
// by factor until a step fails, then tries the geometric midpoint of the
// highest passing and lowest failing rates (rounded to three significant
// digits where that stays strictly between them) until hi/lo − 1 is at most
// precision, or maxSteps steps ran. It assumes that passing is monotone:
// a rate below a passing one passes.
//
// Use it as a loop: for r, ok := s.Next(); ok; r, ok = s.Next() { run a step
// at r; s.Observe(r, passed) }, then s.Result().
type Search struct {
	start, factor, precision float64
	maxSteps                 int

	lo, hi float64
	steps  int
	stop   Stop
}

// NewSearch returns a search starting at start operations per second.
// start must be positive, factor greater than 1, precision positive (all
// finite) and maxSteps at least 1.
func NewSearch(start, factor, precision float64, maxSteps int) (*Search, error) {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !(start > 0) || !finite(start):
		return nil, fmt.Errorf("the start rate must be a positive number, got %g", start)
	case !(factor > 1) || !finite(factor):
		return nil, fmt.Errorf("the factor must be greater than 1, got %g", factor)
	case !(precision > 0) || !finite(precision):
		return nil, fmt.Errorf("the precision must be positive, got %g", precision)
	case maxSteps < 1:
		return nil, fmt.Errorf("the maximum number of steps must be at least 1, got %d", maxSteps)
	}
	return &Search{start: start, factor: factor, precision: precision, maxSteps: maxSteps}, nil
}

// Next is the rate to try now, or false when the search is over (see
// Result). Until Observe is called it returns the same rate again.
func (s *Search) Next() (float64, bool) {
	if s.stop != Running {
		return 0, false
	}
	var next float64
	switch {
	case s.steps == 0:
		next = s.start
	case s.hi == 0: // still climbing
		next = s.lo * s.factor
	case s.lo == 0:
		s.stop = NoPass
	case s.hi/s.lo-1 <= s.precision:
		s.stop = Converged
	default:
		next = roundRate(math.Sqrt(s.lo*s.hi), s.lo, s.hi) // the search is in ratios
		if !(next > s.lo && next < s.hi) {                 // nothing left between them
			s.stop = Converged
		}
	}
	if s.stop == Running && s.steps >= s.maxSteps {
		s.stop = MaxSteps
	}
	if s.stop != Running {
		return 0, false
	}
	return next, true
}

// Observe records whether a step at rate passed; rate is the one Next
// returned.
func (s *Search) Observe(rate float64, pass bool) {
	s.steps++
	if pass {
		s.lo = max(s.lo, rate)
	} else if s.hi == 0 || rate < s.hi {
		s.hi = rate
	}
}

// Result is the search's outcome so far; its Stop is Running until Next has
// returned false.
func (s *Search) Result() Result {
	return Result{Lo: s.lo, Hi: s.hi, Steps: s.steps, Stop: s.stop}
}

// roundRate rounds r to three significant digits when that keeps it
// strictly between lo and hi, for readable targets.
func roundRate(r, lo, hi float64) float64 {
	if r <= 0 {
		return r
	}
	scale := math.Pow(10, math.Floor(math.Log10(r))-2)
	x := math.Round(r/scale) * scale
	// Pow of a negative exponent is inexact: print through 'g'.
	x, _ = strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	if x > lo && x < hi {
		return x
	}
	return r
}

// Verdict is what a search found, in the line sweep prints at its end: the
// highest rate that passed and how far it is known (a lower bound, an
// interval, or the rate that failed), or that even start failed.
// maxSteps and precision are the search's, named as the flags that set
// them.
func (r Result) Verdict(objective SLO, start float64, maxSteps int, precision float64) string {
	if r.Lo == 0 {
		return fmt.Sprintf("no sustainable rate: even --start %s ops/s fails (SLO %s)", FormatRate(start), objective)
	}
	var bound string
	stopped := fmt.Sprintf("stopped after --max-steps %d", maxSteps)
	switch {
	case r.Hi == 0:
		bound = fmt.Sprintf(" (a lower bound: no step failed; %s)", stopped)
	case r.Stop == MaxSteps:
		bound = fmt.Sprintf(" (between %s and %s: %s before --precision %g)", FormatRate(r.Lo), FormatRate(r.Hi), stopped, precision)
	default:
		bound = fmt.Sprintf(" (%s fails)", FormatRate(r.Hi))
	}
	return fmt.Sprintf("maximum sustainable rate: %s ops/s (SLO %s)%s", FormatRate(r.Lo), objective, bound)
}

// FormatRate writes a rate in operations per second as sweep does: as few
// digits as it takes (2000, 9510, 1234.5).
func FormatRate(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }
