package slo

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// A system answers a step at a target rate with what a run would measure.
type system func(t *testing.T, rate float64) Step

const stepTime = 10 * time.Second

// served is a step where every scheduled operation completed, each
// response time drawn from an exponential distribution whose 99th
// percentile is p99 (1000 deterministic samples at its quantiles).
func served(t *testing.T, rate float64, p99 time.Duration) Step {
	us := float64(p99) / float64(time.Microsecond)
	top := float64(time.Hour / time.Microsecond) // histograms clamp here
	vs := make([]int64, 0, 1000)
	for i := 1; i < 1000; i++ {
		vs = append(vs, int64(min(us*math.Log(1000/float64(1000-i))/math.Log(100), top)))
	}
	vs = append(vs, int64(min(3*us, top)))
	ok := int64(math.Round(rate * stepTime.Seconds()))
	return Step{Target: rate, Elapsed: stepTime, OK: ok, Offered: ok, Response: hist(t, vs...)}
}

// queue is a single server (M/M/1) whose p99 response time, ln(100)/(μ−λ),
// reaches limit at rate knee and explodes beyond: it passes "p99<=limit"
// exactly up to knee.
func queue(knee float64, limit time.Duration) system {
	mu := knee + math.Log(100)/limit.Seconds()
	return func(t *testing.T, rate float64) Step {
		p99 := time.Hour
		if rate < mu {
			p99 = time.Duration(math.Log(100) / (mu - rate) * float64(time.Second))
		}
		// Below the knee, the top of p99's HDR bucket (≤ 0.1% above it)
		// must still be within the limit.
		if rate <= knee {
			p99 = min(p99, limit*999/1000)
		}
		return served(t, rate, p99)
	}
}

// capped completes at most capacity operations per second, fast: it falls
// short of 99% of the target above capacity/0.99.
func capped(capacity float64) system {
	return func(t *testing.T, rate float64) Step {
		s := served(t, rate, 2*time.Millisecond)
		s.OK = int64(math.Round(min(rate, capacity) * stepTime.Seconds()))
		return s
	}
}

// failing fails 5% of the operations above knee, each after two failed
// attempts.
func failing(knee float64) system {
	return func(t *testing.T, rate float64) Step {
		s := served(t, rate, 2*time.Millisecond)
		if rate > knee {
			s.Failed = s.OK / 20
			s.OK -= s.Failed
			s.FailedAttempts = 2 * s.Failed
		}
		return s
	}
}

// saturating is a generator that cannot schedule above knee.
func saturating(knee float64) system {
	return func(t *testing.T, rate float64) Step {
		s := served(t, rate, 2*time.Millisecond)
		if rate > knee {
			s.Saturated, s.Unstarted = true, s.Offered/2
		}
		return s
	}
}

// The search, judging each step as the sweep does, finds the knee of
// synthetic curves: passing rates all at or below it, failing ones all
// above, and the maximum within the precision below it.
func TestSearchFindsKnee(t *testing.T) {
	objective, err := Parse("p99<=50ms,max<1s")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                     string
		sys                      system
		knee                     float64 // passes exactly up to here
		start, factor, precision float64
		maxSteps                 int
		rates                    []float64 // the steps, in order
		lo, hi                   float64
		stop                     Stop
	}{
		{
			name: "p99 explodes above 3170", sys: queue(3170, 50*time.Millisecond), knee: 3170,
			start: 100, factor: 2, precision: 0.02, maxSteps: 20,
			// Doubling to the first failure, then geometric midpoints
			// rounded to three digits: √(1600·3200) = 2262.7 → 2260, ...
			rates: []float64{100, 200, 400, 800, 1600, 3200, 2260, 2690, 2930, 3060, 3130, 3160},
			lo:    3160, hi: 3200, stop: Converged,
		},
		{
			name: "p99 knee, steps run out while bisecting", sys: queue(3170, 50*time.Millisecond), knee: 3170,
			start: 100, factor: 2, precision: 0.02, maxSteps: 8,
			rates: []float64{100, 200, 400, 800, 1600, 3200, 2260, 2690},
			lo:    2690, hi: 3200, stop: MaxSteps,
		},
		{
			name: "p99 knee, converging on the last step allowed", sys: queue(3170, 50*time.Millisecond), knee: 3170,
			start: 100, factor: 2, precision: 0.02, maxSteps: 12,
			rates: []float64{100, 200, 400, 800, 1600, 3200, 2260, 2690, 2930, 3060, 3130, 3160},
			lo:    3160, hi: 3200, stop: Converged,
		},
		{
			name: "p99 knee, coarse precision", sys: queue(3170, 50*time.Millisecond), knee: 3170,
			start: 1000, factor: 10, precision: 0.5, maxSteps: 20,
			rates: []float64{1000, 10000, 3160, 5620, 4210},
			lo:    3160, hi: 4210, stop: Converged,
		},
		{
			name: "throughput capped at 5000/s", sys: capped(5000), knee: 5000 / MinAchieved,
			start: 100, factor: 2, precision: 0.02, maxSteps: 20,
			rates: []float64{100, 200, 400, 800, 1600, 3200, 6400, 4530, 5380, 4940, 5160, 5050, 5100},
			lo:    5050, hi: 5100, stop: Converged,
		},
		{
			name: "errors above 1234/s", sys: failing(1234), knee: 1234,
			start: 10, factor: 3, precision: 0.05, maxSteps: 20,
			rates: []float64{10, 30, 90, 270, 810, 2430, 1400, 1060, 1220, 1310, 1260},
			lo:    1220, hi: 1260, stop: Converged,
		},
		{
			name: "saturated above 800/s, the knee a step's rate", sys: saturating(800), knee: 800,
			start: 100, factor: 2, precision: 0.1, maxSteps: 20,
			rates: []float64{100, 200, 400, 800, 1600, 1130, 951, 872},
			lo:    800, hi: 872, stop: Converged,
		},
		{
			name: "never fails: a lower bound", sys: queue(math.Inf(1), 50*time.Millisecond), knee: math.Inf(1),
			start: 100, factor: 2, precision: 0.02, maxSteps: 5,
			rates: []float64{100, 200, 400, 800, 1600},
			lo:    1600, hi: 0, stop: MaxSteps,
		},
		{
			name: "fails at start: no rate", sys: queue(50, 50*time.Millisecond), knee: 50,
			start: 100, factor: 2, precision: 0.02, maxSteps: 20,
			rates: []float64{100},
			lo:    0, hi: 100, stop: NoPass,
		},
		{
			name: "one step allowed", sys: queue(3170, 50*time.Millisecond), knee: 3170,
			start: 100, factor: 2, precision: 0.02, maxSteps: 1,
			rates: []float64{100},
			lo:    100, hi: 0, stop: MaxSteps,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSearch(tc.start, tc.factor, tc.precision, tc.maxSteps)
			if err != nil {
				t.Fatal(err)
			}
			var rates []float64
			for rate, ok := s.Next(); ok; rate, ok = s.Next() {
				if again, _ := s.Next(); again != rate {
					t.Fatalf("Next moved from %g to %g before Observe", rate, again)
				}
				if len(rates) > 100 {
					t.Fatalf("no end after %v", rates)
				}
				why := Judge(tc.sys(t, rate), objective, 0.01)
				pass := len(why) == 0
				if pass != (rate <= tc.knee) {
					t.Fatalf("the curve is wrong: at %g pass=%v (%v), knee %g", rate, pass, why, tc.knee)
				}
				rates = append(rates, rate)
				if got := s.Result(); got.Stop != Running || got.Steps != len(rates)-1 {
					t.Fatalf("result mid-search %+v", got)
				}
				s.Observe(rate, pass)
			}
			if _, ok := s.Next(); ok {
				t.Fatal("Next goes on after the end")
			}
			if !slices.Equal(rates, tc.rates) {
				t.Errorf("rates %v\n      want %v", rates, tc.rates)
			}
			res := s.Result()
			want := Result{Lo: tc.lo, Hi: tc.hi, Steps: len(tc.rates), Stop: tc.stop}
			if res != want {
				t.Fatalf("result %+v, want %+v", res, want)
			}
			// What the result promises, whatever the rates: the maximum
			// is a passing rate at or below the knee, the bound above it
			// fails, and when converged they are within the precision.
			if res.Lo > tc.knee || (res.Hi != 0 && res.Hi <= tc.knee) {
				t.Errorf("[%g, %g] does not hold the knee %g", res.Lo, res.Hi, tc.knee)
			}
			if res.Stop == Converged && res.Hi/res.Lo-1 > tc.precision {
				t.Errorf("converged at [%g, %g], wider than %g", res.Lo, res.Hi, tc.precision)
			}
			if res.Stop == Converged && res.Lo < tc.knee/(1+tc.precision) {
				t.Errorf("maximum %g is not within %g below the knee %g", res.Lo, tc.precision, tc.knee)
			}
		})
	}
}

// A precision finer than float64 can bisect stops when no rate is left
// between the bounds rather than repeating one.
func TestSearchExhausted(t *testing.T) {
	s, err := NewSearch(1, 2, 1e-300, 10000)
	if err != nil {
		t.Fatal(err)
	}
	knee := 1.5
	for rate, ok := s.Next(); ok; rate, ok = s.Next() {
		s.Observe(rate, rate <= knee)
	}
	res := s.Result()
	if res.Stop != Converged || res.Steps > 80 || !(res.Lo <= knee && res.Hi > knee) || res.Hi != math.Nextafter(res.Lo, 2) {
		t.Fatalf("%+v", res)
	}
}

func TestNewSearchRefuses(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		start, factor, precision float64
		maxSteps                 int
		want                     string
	}{
		{0, 2, 0.02, 20, "start rate must be a positive number, got 0"},
		{-1, 2, 0.02, 20, "start rate"},
		{nan, 2, 0.02, 20, "start rate"},
		{inf, 2, 0.02, 20, "start rate"},
		{100, 1, 0.02, 20, "factor must be greater than 1, got 1"},
		{100, nan, 0.02, 20, "factor"},
		{100, inf, 0.02, 20, "factor"},
		{100, 2, 0, 20, "precision must be positive, got 0"},
		{100, 2, nan, 20, "precision"},
		{100, 2, inf, 20, "precision"},
		{100, 2, 0.02, 0, "steps must be at least 1, got 0"},
	} {
		if _, err := NewSearch(tc.start, tc.factor, tc.precision, tc.maxSteps); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSearch(%g, %g, %g, %d): %v, want %q", tc.start, tc.factor, tc.precision, tc.maxSteps, err, tc.want)
		}
	}
}

func TestRoundRate(t *testing.T) {
	for _, tc := range []struct{ r, lo, hi, want float64 }{
		{2262.74, 1600, 3200, 2260},
		{0.0123456, 0.01, 0.02, 0.0123},
		{1234567, 1e6, 2e6, 1230000},
		{1005, 1004, 1006, 1005},     // 1010 and 1000 are outside
		{1004.9, 1004, 1006, 1004.9}, // 1000 is outside
		{3164.8, 3130, 3200, 3160},
		{0, 0, 1, 0},
	} {
		if got := roundRate(tc.r, tc.lo, tc.hi); got != tc.want {
			t.Errorf("roundRate(%g, %g, %g) = %g, want %g", tc.r, tc.lo, tc.hi, got, tc.want)
		}
	}
}

// Verdict is sweep's last line: each way a search ends.
func TestVerdict(t *testing.T) {
	objective, err := Parse("p99<=50ms")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		r    Result
		want string
	}{
		{Result{Lo: 0, Hi: 1000, Steps: 1, Stop: NoPass}, "no sustainable rate: even --start 1000 ops/s fails (SLO p99<=50ms)"},
		{Result{Lo: 8000, Hi: 0, Steps: 4, Stop: MaxSteps}, "maximum sustainable rate: 8000 ops/s (SLO p99<=50ms) (a lower bound: no step failed; stopped after --max-steps 4)"},
		{Result{Lo: 9510, Hi: 11300, Steps: 6, Stop: MaxSteps}, "maximum sustainable rate: 9510 ops/s (SLO p99<=50ms) (between 9510 and 11300: stopped after --max-steps 6 before --precision 0.02)"},
		{Result{Lo: 1234.5, Hi: 1250, Steps: 9, Stop: Converged}, "maximum sustainable rate: 1234.5 ops/s (SLO p99<=50ms) (1250 fails)"},
	} {
		if got := tt.r.Verdict(objective, 1000, tt.r.Steps, 0.02); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.r, got, tt.want)
		}
	}
}
