package slo

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want: the SLO's String
		conds    []Condition
	}{
		{in: "p99<=50ms", want: "p99<=50ms", conds: []Condition{{Metric: P99, Limit: 50 * time.Millisecond}}},
		{in: " p99<=50ms, max<1s ,p99.9 < 200ms,mean<=3ms", want: "p99<=50ms,max<1s,p99.9<200ms,mean<=3ms", conds: []Condition{
			{Metric: P99, Limit: 50 * time.Millisecond},
			{Metric: Max, Strict: true, Limit: time.Second},
			{Metric: P999, Strict: true, Limit: 200 * time.Millisecond},
			{Metric: Mean, Limit: 3 * time.Millisecond},
		}},
		{in: "p50<1ms,p90<2ms,p95<=3ms", want: "p50<1ms,p90<2ms,p95<=3ms", conds: []Condition{
			{Metric: P50, Strict: true, Limit: time.Millisecond},
			{Metric: P90, Strict: true, Limit: 2 * time.Millisecond},
			{Metric: P95, Limit: 3 * time.Millisecond},
		}},
		{in: "max<1us", want: "max<1µs", conds: []Condition{{Metric: Max, Strict: true, Limit: time.Microsecond}}},
		{in: "p99<=1.5ms", want: "p99<=1.5ms", conds: []Condition{{Metric: P99, Limit: 1500 * time.Microsecond}}},
		{in: "p99<=+1m30s", want: "p99<=1m30s", conds: []Condition{{Metric: P99, Limit: 90 * time.Second}}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			s, err := Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.String(); got != tc.want {
				t.Errorf("String %q, want %q", got, tc.want)
			}
			got := s.Conditions()
			if len(got) != len(tc.conds) {
				t.Fatalf("conditions %v, want %v", got, tc.conds)
			}
			for i := range got {
				if got[i] != tc.conds[i] {
					t.Errorf("condition %d: %+v, want %+v", i, got[i], tc.conds[i])
				}
			}
			again, err := Parse(s.String())
			if err != nil || again.String() != s.String() {
				t.Errorf("String does not parse back: %q, %v", again, err)
			}
		})
	}
}

// Each error says which condition is wrong and why.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{in: "", want: []string{"no condition"}},
		{in: "  ", want: []string{"no condition"}},
		{in: "p99", want: []string{`"p99" has no comparison`, "METRIC<=DURATION"}},
		{in: "p99<=", want: []string{`"p99<=" has no limit after <=`}},
		{in: "<=5ms", want: []string{`"<=5ms" has no metric`}},
		{in: "p99=<5ms", want: []string{`comparison "=<" is not allowed`, "< or <="}},
		{in: "p99>5ms", want: []string{`comparison ">" is not allowed`}},
		{in: "p99>=5ms", want: []string{`comparison ">=" is not allowed`}},
		{in: "p99==5ms", want: []string{`comparison "==" is not allowed`}},
		{in: "p99<<5ms", want: []string{`comparison "<<" is not allowed`}},
		{in: "min<5ms", want: []string{`unknown metric "min"`, "p50, p90, p95, p99, p99.9, max, mean"}},
		{in: "P99<5ms", want: []string{`unknown metric "P99"`}},
		{in: "p42<=1ms", want: []string{"percentile p42 is not one of p50, p90, p95, p99, p99.9 (or max, mean)"}},
		{in: "p99.0<=1ms", want: []string{"percentile p99.0 is not one of"}},
		{in: "p100<=1ms", want: []string{"percentile p100 is not one of"}},
		{in: "p99<=5ms,", want: []string{`"p99<=5ms,": condition 2 of 2 is empty`}},
		{in: ",p99<=5ms", want: []string{"condition 1 of 2 is empty"}},
		{in: "p99<=5ms,,max<1s", want: []string{"condition 2 of 3 is empty"}},
		{in: "p99<=fast", want: []string{`"fast" is not a duration`}},
		{in: "p99<=5", want: []string{`"5" is not a duration`}},
		{in: "p99<=5 ms", want: []string{`"5 ms" is not a duration`}},
		{in: "p99<=NaN", want: []string{`"NaN" is not a duration`}},
		{in: "p99<=Inf", want: []string{`"Inf" is not a duration`}},
		{in: "p99<=+Infms", want: []string{`"+Infms" is not a duration`}},
		{in: "p99<=9999999999h", want: []string{`"9999999999h" is not a duration`}},
		{in: "p99<=-5ms", want: []string{"the limit must be positive, got -5ms"}},
		{in: "p99<=0s", want: []string{"the limit must be positive, got 0s"}},
		{in: "p99<=0", want: []string{"the limit must be positive, got 0s"}},
		{in: "p99<500ns", want: []string{"500ns is below the histograms' resolution of 1µs"}},
		{in: "p99<=50ms,p99<=40ms", want: []string{`"p99<=40ms" bounds p99 again after "p99<=50ms"`, "one condition"}},
		{in: "p99<50ms, max<1s, p99 <= 50ms", want: []string{`"p99 <= 50ms" bounds p99 again after "p99<50ms"`}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			s, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("accepted as %q", s)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
	if _, err := Parse(""); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: %v, want ErrEmpty", err)
	}
}

func TestNew(t *testing.T) {
	s, err := New(Condition{Metric: P99, Limit: time.Millisecond}, Condition{Metric: Max, Strict: true, Limit: time.Second})
	if err != nil || s.String() != "p99<=1ms,max<1s" {
		t.Fatalf("%q, %v", s, err)
	}
	for _, tc := range []struct {
		conds []Condition
		want  string
	}{
		{[]Condition{{Metric: numMetrics, Limit: time.Second}}, "unknown metric"},
		{[]Condition{{Metric: P50}}, "must be positive"},
		{[]Condition{{Metric: P50, Limit: time.Nanosecond}}, "below the histograms' resolution"},
		{[]Condition{{Metric: P50, Limit: time.Second}, {Metric: P50, Strict: true, Limit: time.Millisecond}}, "bounds p50 again"},
	} {
		if _, err := New(tc.conds...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%v): %v, want %q", tc.conds, err, tc.want)
		}
	}
	var zero SLO
	if zero.String() != "" || zero.Check(nil) != nil {
		t.Error("the zero SLO is not empty")
	}
}

// hist records each value (µs) count times.
func hist(t *testing.T, values ...int64) *hdr.Histogram {
	t.Helper()
	h := hdr.New(1, int64(time.Hour/time.Microsecond), 3)
	for _, v := range values {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func TestCheck(t *testing.T) {
	// 1000 values: 1..990 µs, then ten slow ones of 50ms..59ms.
	var vs []int64
	for i := int64(1); i <= 990; i++ {
		vs = append(vs, i)
	}
	for i := int64(0); i < 10; i++ {
		vs = append(vs, 50000+1000*i)
	}
	h := hist(t, vs...)
	for _, tc := range []struct {
		slo  string
		want []string // the violations' texts
	}{
		{slo: "p50<=500us,p90<=900us,p95<=950us,p99<=990us", want: nil},
		{slo: "p50<500us", want: []string{"p50 500µs violates p50<500µs"}},
		// HDR reports the top of the value's bucket: 58ms reads 58.015ms.
		{slo: "p99<990us,p99.9<=58.1ms", want: []string{"p99 990µs violates p99<990µs"}},
		{slo: "p99.9<=57ms", want: []string{"p99.9 58.015ms violates p99.9<=57ms"}},
		{slo: "max<=59.1ms", want: nil},
		{slo: "max<59ms", want: []string{"max 59.007ms violates max<59ms"}},
		// mean = (990*991/2 + 10*54500) / 1000 = 1035.545µs (recorded
		// values are exact below 2048).
		{slo: "mean<=1036us", want: nil},
		{slo: "mean<1ms,p50<=1s", want: []string{"mean 1.036ms violates mean<1ms"}},
	} {
		t.Run(tc.slo, func(t *testing.T) {
			s, err := Parse(tc.slo)
			if err != nil {
				t.Fatal(err)
			}
			vs := s.Check(h)
			if len(vs) != len(tc.want) {
				t.Fatalf("violations %v, want %q", vs, tc.want)
			}
			for i, v := range vs {
				if v.String() != tc.want[i] {
					t.Errorf("violation %q, want %q", v, tc.want[i])
				}
			}
		})
	}
	s, _ := Parse("p99<=1s,max<1h")
	for name, h := range map[string]*hdr.Histogram{"empty": hist(t), "nil": nil} {
		vs := s.Check(h)
		if len(vs) != 2 || !math.IsNaN(vs[0].Value) || vs[0].String() != "p99 not measured (nothing recorded) violates p99<=1s" {
			t.Errorf("%s histogram: %v, want both conditions violated as unmeasured", name, vs)
		}
	}
}

// <= admits the limit itself, < does not; limits compare in exact µs.
func TestHolds(t *testing.T) {
	le := Condition{Metric: P99, Limit: 50 * time.Millisecond}
	lt := Condition{Metric: Max, Strict: true, Limit: time.Second}
	frac := Condition{Metric: Mean, Limit: 1500 * time.Nanosecond}
	for _, tc := range []struct {
		c    Condition
		us   float64
		want bool
	}{
		{le, 50000, true}, {le, 50000.001, false}, {le, 0, true},
		{lt, 1e6, false}, {lt, 999999, true},
		{frac, 1.5, true}, {frac, 1.6, false},
		{le, math.NaN(), false}, {lt, math.NaN(), false},
	} {
		if got := tc.c.Holds(tc.us); got != tc.want {
			t.Errorf("%s holds for %gµs: %v, want %v", tc.c, tc.us, got, tc.want)
		}
	}
}

// Whatever Parse accepts prints back to itself, has one condition per
// metric, and bounds no metric below the resolution; what it refuses it
// refuses with one line.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"p99<=50ms", "p99<=50ms,max<1s", " p50 < 1us ,mean<=2h", "p99.9<1.5ms", "p42<1ms",
		"p99<=-1s", "p99<=NaN", "max<1s,max<2s", ",", "p99<=5ms,", "p99>=1s", "mean<=0.5µs", "p99<=+Inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			if strings.Contains(err.Error(), "\n") && !strings.Contains(in, "\n") {
				t.Fatalf("%q: error spans lines: %q", in, err)
			}
			return
		}
		out := s.String()
		again, err := Parse(out)
		if err != nil || again.String() != out {
			t.Fatalf("%q prints as %q, which parses as %q, %v", in, out, again, err)
		}
		seen := map[Metric]bool{}
		for _, c := range s.Conditions() {
			if seen[c.Metric] || c.Limit < Resolution || c.Metric < 0 || c.Metric >= numMetrics {
				t.Fatalf("%q: accepted condition %+v", in, c)
			}
			seen[c.Metric] = true
		}
		if len(seen) == 0 {
			t.Fatalf("%q: accepted with no condition", in)
		}
	})
}
