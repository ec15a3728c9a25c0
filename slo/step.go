package slo

import (
	"fmt"
	"strconv"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// MinAchieved is the share of its target rate a step must complete.
const MinAchieved = 0.99

// Step is what one step of a capacity search measured.
type Step struct {
	Target  float64       // the scheduled rate, operations per second
	Elapsed time.Duration // the measured period
	// OK and Failed count the operations that succeeded and that gave up;
	// FailedAttempts counts every failed attempt, retried or not.
	OK, Failed, FailedAttempts int64
	// DrainOK counts the operations in flight when the window ended that
	// succeeded after it: offered in the window, completed.
	DrainOK int64
	// Saturated: the generator fell so far behind its schedule that
	// Unstarted of the Offered operations never started.
	Saturated          bool
	Unstarted, Offered int64
	// Response holds the response times (from intended start) of the
	// operations that succeeded, in µs.
	Response *hdr.Histogram
}

// Achieved is the completed rate: ok operations per measured second.
func (s Step) Achieved() float64 {
	if secs := s.Elapsed.Seconds(); secs > 0 {
		return float64(s.OK) / secs
	}
	return 0
}

// Errors is the step's error count: failed attempts plus failed operations.
func (s Step) Errors() int64 { return s.FailedAttempts + s.Failed }

// Kind is a reason a step fails.
type Kind int

// The reasons a step fails, in the order Judge reports them.
const (
	Saturated     Kind = iota + 1 // the schedule fell behind
	BelowTarget                   // completed under MinAchieved of the target
	NoneCompleted                 // no operation finished, ok or failed
	TooManyErrors                 // Errors / (OK + Failed) above the maximum
	Violated                      // an SLO condition did not hold
)

func (k Kind) String() string {
	switch k {
	case Saturated:
		return "saturated"
	case BelowTarget:
		return "below target"
	case NoneCompleted:
		return "none completed"
	case TooManyErrors:
		return "too many errors"
	case Violated:
		return "SLO violated"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Reason is one reason a step fails, with its figures in Text.
type Reason struct {
	Kind Kind
	Text string
}

func (r Reason) String() string { return r.Text }

// Judge says why step s fails, or nothing when it passes. A step passes
// when it was not saturated, completed at least MinAchieved of the
// operations its schedule offered (of its target rate, when nothing was
// offered: a closed loop),
// its error rate (failed attempts + failed operations) / (ok + failed
// operations) is at most maxErrorRate, and every condition of objective
// holds on its response times. The SLO is checked only when an operation
// succeeded: with none, the other reasons already say why.
func Judge(s Step, objective SLO, maxErrorRate float64) []Reason {
	var why []Reason
	add := func(k Kind, format string, args ...any) {
		why = append(why, Reason{Kind: k, Text: fmt.Sprintf(format, args...)})
	}
	if s.Saturated {
		add(Saturated, "saturated: %d of %d never started", s.Unstarted, s.Offered)
	}
	// An open-loop step is judged on the operations its schedule offered:
	// the last of them may end after the window, and a rate taken to that
	// end would fail a step that kept up only because the window is short;
	// those that completed after it (the drain's) count as completed.
	if s.Offered > 0 {
		if done := s.OK + s.DrainOK; !(float64(done) >= MinAchieved*float64(s.Offered)) {
			add(BelowTarget, "completed %.1f%% of the %d offered", 100*float64(done)/float64(s.Offered), s.Offered)
		}
	} else if achieved := s.Achieved(); !(achieved >= MinAchieved*s.Target) {
		add(BelowTarget, "achieved %.1f%% of target", 100*achieved/s.Target)
	}
	if done := s.OK + s.Failed; done == 0 {
		add(NoneCompleted, "no operation completed")
	} else if er := float64(s.Errors()) / float64(done); er > maxErrorRate {
		add(TooManyErrors, "error rate %.3g > %g", er, maxErrorRate)
	}
	if s.OK > 0 {
		for _, v := range objective.Check(s.Response) {
			add(Violated, "%s", v)
		}
	}
	return why
}
