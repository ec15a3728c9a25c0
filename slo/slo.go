package slo

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Grammar describes the text Parse reads, for help and error messages.
const Grammar = "METRIC<=DURATION or METRIC<DURATION, METRIC one of p50, p90, p95, p99, p99.9, max, mean (e.g. \"p99<=50ms,max<1s\")"

// Resolution is the smallest limit a condition may set: histograms record
// whole microseconds, so a tighter limit could not be told apart from 0.
const Resolution = time.Microsecond

// ErrEmpty is returned by Parse for an empty (or blank) objective.
var ErrEmpty = errors.New("no condition given")

// Metric is a statistic of a latency histogram.
type Metric int

// The metrics an SLO may bound.
const (
	P50 Metric = iota
	P90
	P95
	P99
	P999
	Max
	Mean
	numMetrics
)

var metricNames = [numMetrics]string{"p50", "p90", "p95", "p99", "p99.9", "max", "mean"}

// quantiles are the percentiles of P50…P999, for hdr's ValueAtQuantile.
var quantiles = [numMetrics]float64{50, 90, 95, 99, 99.9}

func (m Metric) String() string {
	if m < 0 || m >= numMetrics {
		return "Metric(" + strconv.Itoa(int(m)) + ")"
	}
	return metricNames[m]
}

// Value is m of h in microseconds, or NaN when h records nothing: an empty
// histogram has no percentile, maximum or mean.
func (m Metric) Value(h *hdr.Histogram) float64 {
	if h == nil || h.TotalCount() == 0 {
		return math.NaN()
	}
	switch m {
	case Max:
		return float64(h.Max())
	case Mean:
		return h.Mean()
	case P50, P90, P95, P99, P999:
		return float64(h.ValueAtQuantile(quantiles[m]))
	}
	return math.NaN()
}

// Condition bounds one metric from above.
type Condition struct {
	Metric Metric
	Strict bool // < rather than <=
	Limit  time.Duration
}

func (c Condition) String() string {
	op := "<="
	if c.Strict {
		op = "<"
	}
	return c.Metric.String() + op + c.Limit.String()
}

// Holds reports whether a value of the metric, in microseconds, meets c.
// NaN (nothing measured) never does.
func (c Condition) Holds(us float64) bool {
	limit := float64(c.Limit) / float64(time.Microsecond)
	if c.Strict {
		return us < limit
	}
	return us <= limit
}

// SLO is a set of conditions that must all hold, at most one per metric, in
// the order they were written. The zero SLO has no condition: nothing
// violates it.
type SLO struct {
	conds []Condition
}

// New returns the SLO of conds, refusing what Parse refuses: an unknown
// metric, a limit below Resolution, two conditions on one metric.
func New(conds ...Condition) (SLO, error) {
	seen := map[Metric]Condition{}
	for _, c := range conds {
		if c.Metric < 0 || c.Metric >= numMetrics {
			return SLO{}, fmt.Errorf("%s: unknown metric", c.Metric)
		}
		if c.Limit < Resolution {
			return SLO{}, limitError(c.String(), c.Limit)
		}
		if prev, ok := seen[c.Metric]; ok {
			return SLO{}, duplicateError(prev, c.String())
		}
		seen[c.Metric] = c
	}
	return SLO{conds: append([]Condition(nil), conds...)}, nil
}

// Conditions returns a copy of the SLO's conditions.
func (s SLO) Conditions() []Condition { return append([]Condition(nil), s.conds...) }

// String is the SLO in Parse's grammar, without spaces: Parse(s.String())
// gives s back.
func (s SLO) String() string {
	parts := make([]string, len(s.conds))
	for i, c := range s.conds {
		parts[i] = c.String()
	}
	return strings.Join(parts, ",")
}

// Violation is a condition that did not hold, and the value that broke it.
type Violation struct {
	Condition Condition
	Value     float64 // µs; NaN when the histogram recorded nothing
}

func (v Violation) String() string {
	if math.IsNaN(v.Value) {
		return fmt.Sprintf("%s not measured (nothing recorded) violates %s", v.Condition.Metric, v.Condition)
	}
	return fmt.Sprintf("%s %s violates %s", v.Condition.Metric, Micros(v.Value), v.Condition)
}

// Check evaluates every condition on h (microseconds) and returns those that
// do not hold, in the SLO's order; none when the SLO is met. An empty
// histogram violates every condition: nothing shows that it holds.
func (s SLO) Check(h *hdr.Histogram) []Violation {
	var out []Violation
	for _, c := range s.conds {
		if v := c.Metric.Value(h); !c.Holds(v) {
			out = append(out, Violation{Condition: c, Value: v})
		}
	}
	return out
}

// Parse reads an objective in Grammar: conditions separated by commas, each
// a metric, < or <=, and a positive Go duration of at least Resolution;
// spaces around the parts are ignored. The errors say which condition is
// wrong and why, without naming a flag: callers add that.
func Parse(s string) (SLO, error) {
	if strings.TrimSpace(s) == "" {
		return SLO{}, ErrEmpty
	}
	parts := strings.Split(s, ",")
	conds := make([]Condition, 0, len(parts))
	seen := map[Metric]Condition{}
	for i, part := range parts {
		part = strings.TrimSpace(part)
		if part == "" {
			return SLO{}, fmt.Errorf("%q: condition %d of %d is empty (a stray comma?); want %s", s, i+1, len(parts), Grammar)
		}
		c, err := parseCondition(part)
		if err != nil {
			return SLO{}, err
		}
		if prev, ok := seen[c.Metric]; ok {
			return SLO{}, duplicateError(prev, part)
		}
		conds = append(conds, c)
		seen[c.Metric] = c
	}
	return SLO{conds: conds}, nil
}

func parseCondition(part string) (Condition, error) {
	i := strings.IndexAny(part, "<>=!")
	if i < 0 {
		return Condition{}, fmt.Errorf("%q has no comparison; want %s", part, Grammar)
	}
	name := strings.TrimSpace(part[:i])
	m, err := parseMetric(part, name)
	if err != nil {
		return Condition{}, err
	}
	rest := part[i:]
	j := 0
	for j < len(rest) && strings.IndexByte("<>=!", rest[j]) >= 0 {
		j++
	}
	op, value := rest[:j], strings.TrimSpace(rest[j:])
	if op != "<" && op != "<=" {
		return Condition{}, fmt.Errorf("%q: comparison %q is not allowed; an SLO bounds latency from above with < or <=", part, op)
	}
	if value == "" {
		return Condition{}, fmt.Errorf("%q has no limit after %s; want a duration such as 50ms or 1s", part, op)
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		return Condition{}, fmt.Errorf("%q: %q is not a duration (want a number with a unit, such as 50ms or 1s)", part, value)
	}
	if d < Resolution {
		return Condition{}, limitError(part, d)
	}
	return Condition{Metric: m, Strict: op == "<", Limit: d}, nil
}

func parseMetric(part, name string) (Metric, error) {
	for m, n := range metricNames {
		if name == n {
			return Metric(m), nil
		}
	}
	if name == "" {
		return 0, fmt.Errorf("%q has no metric before the comparison; want %s", part, Grammar)
	}
	if p, ok := strings.CutPrefix(name, "p"); ok {
		if _, err := strconv.ParseFloat(p, 64); err == nil {
			return 0, fmt.Errorf("%q: percentile %s is not one of p50, p90, p95, p99, p99.9 (or max, mean)", part, name)
		}
	}
	return 0, fmt.Errorf("%q: unknown metric %q; want one of p50, p90, p95, p99, p99.9, max, mean", part, name)
}

func limitError(part string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%q: the limit must be positive, got %s", part, d)
	}
	return fmt.Errorf("%q: the limit %s is below the histograms' resolution of %s", part, d, Resolution)
}

func duplicateError(prev Condition, part string) error {
	return fmt.Errorf("%q bounds %s again after %q: give each metric one condition (the tighter would decide alone)", part, prev.Metric, prev.String())
}

// Micros prints a latency in µs with a readable unit, as the verdicts and
// the sweep's table show it: 850µs, 1.219ms, 1.200s.
func Micros(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.3fs", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.3fms", us/1e3)
	}
	return fmt.Sprintf("%.0fµs", us)
}
