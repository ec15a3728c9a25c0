package slo

import (
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	objective, err := Parse("p99<=5ms,max<1s")
	if err != nil {
		t.Fatal(err)
	}
	fast := func() Step { // 1000 ops/s for 10s, p99 2ms, max 3ms
		s := served(t, 1000, 2*time.Millisecond)
		s.Offered = 10000
		return s
	}
	for _, tc := range []struct {
		name         string
		step         func() Step
		maxErrorRate float64
		want         []Reason
	}{
		{name: "pass", step: fast, maxErrorRate: 0.01},
		{name: "99% of target passes", step: func() Step { s := fast(); s.OK = 9900; return s }, maxErrorRate: 0.01},
		{name: "below 99% of target", step: func() Step { s := fast(); s.OK = 9899; return s }, maxErrorRate: 0.01,
			want: []Reason{{BelowTarget, "completed 99.0% of the 10000 offered"}}},
		// Every offered operation completed, the last one 2% after the
		// window: the measured rate is 98% of the target, the step passes.
		{name: "last operation after the window", step: func() Step { s := fast(); s.Elapsed = 10200 * time.Millisecond; return s },
			maxErrorRate: 0.01},
		// 98 in the window and 2 completed in the drain, of 100 offered:
		// a short step that kept up (a sweep's first step of 1 s at
		// 100/s failed so, "completed 98.0% of the 100 offered").
		{name: "completed in the drain", step: func() Step { s := fast(); s.Offered, s.OK, s.DrainOK = 100, 98, 2; return s },
			maxErrorRate: 0.01},
		{name: "closed loop below target", step: func() Step { s := fast(); s.Offered, s.OK = 0, 9899; return s }, maxErrorRate: 0.01,
			want: []Reason{{BelowTarget, "achieved 99.0% of target"}}},
		{name: "saturated", step: func() Step { s := fast(); s.Saturated, s.Unstarted = true, 12; return s }, maxErrorRate: 0.01,
			want: []Reason{{Saturated, "saturated: 12 of 10000 never started"}}},
		// (10 failed attempts + 5 failed operations) / (10000 + 5) = 0.0015.
		{name: "error rate at the limit", step: func() Step { s := fast(); s.Failed, s.FailedAttempts = 5, 10; return s },
			maxErrorRate: 0.0015},
		{name: "error rate above", step: func() Step { s := fast(); s.Failed, s.FailedAttempts = 5, 10; return s },
			maxErrorRate: 0.001, want: []Reason{{TooManyErrors, "error rate 0.0015 > 0.001"}}},
		{name: "any error with a zero limit", step: func() Step { s := fast(); s.FailedAttempts = 1; return s },
			maxErrorRate: 0, want: []Reason{{TooManyErrors, "error rate 0.0001 > 0"}}},
		{name: "slo", step: func() Step { return served(t, 1000, 10*time.Millisecond) }, maxErrorRate: 0.01,
			want: []Reason{{Violated, "p99 10.007ms violates p99<=5ms"}}},
		{name: "slo, both conditions", step: func() Step { return served(t, 1000, 400*time.Millisecond) }, maxErrorRate: 0.01,
			want: []Reason{{Violated, "p99 400.127ms violates p99<=5ms"}, {Violated, "max 1.200s violates max<1s"}}},
		{name: "nothing completed", step: func() Step {
			return Step{Target: 1000, Elapsed: 10 * time.Second, Offered: 10000, Response: hist(t)}
		}, maxErrorRate: 1, want: []Reason{{BelowTarget, "completed 0.0% of the 10000 offered"}, {NoneCompleted, "no operation completed"}}},
		{name: "all failed: the SLO is not judged", step: func() Step {
			return Step{Target: 1000, Elapsed: 10 * time.Second, Failed: 10000, FailedAttempts: 10000, Offered: 10000, Response: hist(t)}
		}, maxErrorRate: 0.01, want: []Reason{{BelowTarget, "completed 0.0% of the 10000 offered"}, {TooManyErrors, "error rate 2 > 0.01"}}},
		{name: "no measured time", step: func() Step { s := fast(); s.Offered, s.Elapsed = 0, 0; return s }, maxErrorRate: 0.01,
			want: []Reason{{BelowTarget, "achieved 0.0% of target"}}},
		{name: "every reason, in order", step: func() Step {
			s := served(t, 1000, 10*time.Millisecond)
			s.OK, s.Failed, s.Saturated, s.Unstarted = 5000, 100, true, 4900
			return s
		}, maxErrorRate: 0.01, want: []Reason{
			{Saturated, "saturated: 4900 of 10000 never started"},
			{BelowTarget, "completed 50.0% of the 10000 offered"},
			{TooManyErrors, "error rate 0.0196 > 0.01"},
			{Violated, "p99 10.007ms violates p99<=5ms"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Judge(tc.step(), objective, tc.maxErrorRate)
			if len(got) != len(tc.want) {
				t.Fatalf("reasons %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("reason %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestStepFigures(t *testing.T) {
	s := Step{Elapsed: 2 * time.Second, OK: 3000, Failed: 7, FailedAttempts: 20}
	if s.Achieved() != 1500 || s.Errors() != 27 {
		t.Fatalf("achieved %g, errors %d", s.Achieved(), s.Errors())
	}
}
