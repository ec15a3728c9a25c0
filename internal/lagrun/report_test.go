package lagrun

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/lag"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/slo"
)

// hist is a histogram of values (µs).
func hist(t *testing.T, values ...int64) *hdr.Histogram {
	t.Helper()
	h := metrics.NewHistogram()
	for _, v := range values {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// conditions parses an objective.
func conditions(t *testing.T, s string) []slo.Condition {
	t.Helper()
	o, err := slo.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return o.Conditions()
}

// result is a run on the embedded logical pair: 4 markers, every one seen.
func result(t *testing.T) *Result {
	return &Result{Workload: "tpcb-like", Mode: "logical", Source: "postgres://src", Dest: "postgres://dst",
		MarkInterval: 10 * time.Millisecond, PollInterval: time.Millisecond, DrainTimeout: 30 * time.Second,
		Stream: lag.Counts{Sent: 4, Acked: 4, Measured: 4},
		Lag:    hist(t, 1000, 2000, 3000, 40000), StreamLag: hist(t, 1000, 2000, 3000, 40000), TxLag: hist(t),
		Reader:   lag.ReaderStats{Polls: 3, Period: hist(t, 1000, 1000, 1100), RoundTrip: hist(t, 300, 400, 500)},
		CaughtUp: true, CatchUp: 2500 * time.Microsecond}
}

// The lag block, line for line, as each kind of run writes it.
func TestWriteLag(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Result)
		want string
	}{
		{"logical pair, objective held", func(r *Result) {
			r.SLO = verdicts(conditions(t, "p99<=1s"), r.Lag)
			r.Subscriptions = []*lag.SubscriptionStats{{Name: "txload_lag", Samples: 12, Delay: hist(t, 200, 300)}}
		}, `replication lag (logical replication between two embedded servers): 4 markers written every 10ms, 4 acknowledged, 4 seen on the destination
          mean     p50      p90      p95      p99    p99.9      max
  lag  11.50ms  2.00ms  40.03ms  40.03ms  40.03ms  40.03ms  40.03ms
  precision: a marker is seen at most one poll after it became visible: polls every 1.03ms (p99 1.10ms), each taking 400µs (p99 500µs)
  the destination had every marker 2.50ms after the load stopped
  server: pg_stat_subscription txload_lag: 12 samples, last message sent → received p50 200µs p99 300µs max 300µs
slo p99<=1s on lag: PASS (40.03ms)

`},
		{"markers inside transactions, objective broken", func(r *Result) {
			r.Marked = true
			r.Stream.Early = 1
			r.Tx = lag.Counts{Sent: 10, Acked: 7, Failed: 1, Ambiguous: 1, AmbiguousSeen: 1, Measured: 8, Early: 2, Late: 1}
			r.TxLag = hist(t, 500, 600, 700, 800, 900, 1000, 1100, 1200)
			r.Lag.Merge(r.TxLag)
			r.SLO = verdicts(conditions(t, "p50<1ms,max<=20ms"), r.Lag)
		}, `replication lag (logical replication between two embedded servers): 4 markers written every 10ms, 4 acknowledged, 4 seen on the destination
  and a marker inside every transaction: 10 written, 7 committed, 2 rolled back (1 with their COMMIT's outcome unknown, 1 of those arrived), 1 in flight when the load stopped, 8 seen on the destination
                          mean     p50      p90      p95      p99    p99.9      max
  lag (stream)         11.50ms  2.00ms  40.03ms  40.03ms  40.03ms  40.03ms  40.03ms
  lag per transaction    850µs   800µs   1.10ms   1.20ms   1.20ms   1.20ms   1.20ms
  precision: a marker is seen at most one poll after it became visible: polls every 1.03ms (p99 1.10ms), each taking 400µs (p99 500µs)
  3 markers were visible before their COMMIT's acknowledgement reached txload (recorded as 0)
  the destination reordered markers: 1 found late, 0 never seen while later ones were
  the destination had every marker 2.50ms after the load stopped
slo p50<1ms on lag (every marker, stream and transactions): FAIL (1.00ms)
slo max<=20ms on lag (every marker, stream and transactions): FAIL (40.03ms)

`},
		{"your replication, drain timeout", func(r *Result) {
			r.Mode = "external"
			r.CaughtUp, r.Pending = false, 5
			r.Stream = lag.Counts{Sent: 9, Acked: 6, Failed: 2, Ambiguous: 1, AmbiguousSeen: 1, Measured: 4, Late: 1, Expired: 2}
			r.Reader.Errors, r.Reader.FirstErr = 4, errors.New("FATAL: terminating connection\n\tdue to administrator command")
			r.Writes.Errors, r.Writes.FirstErr = 3, errors.New("write failed:\nbroken pipe")
		}, `replication lag (your replication): 9 markers written every 10ms, 6 acknowledged, 4 seen on the destination
          mean     p50      p90      p95      p99    p99.9      max
  lag  11.50ms  2.00ms  40.03ms  40.03ms  40.03ms  40.03ms  40.03ms
  precision: a marker is seen at most one poll after it became visible: polls every 1.03ms (p99 1.10ms), each taking 400µs (p99 500µs)
  3 marker writes failed, 1 of them with their COMMIT's outcome unknown (1 of those arrived)
  the destination reordered markers: 1 found late, 2 never seen while later ones were
  4 polls of the destination failed; the first: FATAL: terminating connection due to administrator command
  3 marker writes on the source failed; the first: write failed: broken pipe
  DRAIN TIMEOUT: 5 acknowledged markers had not reached the destination 30s after the load stopped

`},
		{"the source itself, interrupted", func(r *Result) {
			r.Mode, r.Same = "external", true
			r.Interrupted, r.CaughtUp, r.Pending = true, false, 2
		}, `replication lag (the source itself): 4 markers written every 10ms, 4 acknowledged, 4 seen on the destination
          mean     p50      p90      p95      p99    p99.9      max
  lag  11.50ms  2.00ms  40.03ms  40.03ms  40.03ms  40.03ms  40.03ms
  precision: a marker is seen at most one poll after it became visible: polls every 1.03ms (p99 1.10ms), each taking 400µs (p99 500µs)
  INTERRUPTED: 2 acknowledged markers not seen on the destination yet; convergence not checked

`},
		{"physical standby, nothing measured", func(r *Result) {
			r.Mode = "physical"
			r.Stream = lag.Counts{Sent: 3, Acked: 3}
			r.Lag, r.StreamLag = hist(t), hist(t)
			r.Reader = lag.ReaderStats{Period: hist(t), RoundTrip: hist(t)}
			r.Senders = []*lag.SenderStats{
				{Name: "txload_standby", Samples: 9, Idle: 3, Write: hist(t), Flush: hist(t), Replay: hist(t, 1500, 2500), Behind: hist(t, 500, 2048, 3<<20)},
				{Name: "walreceiver", Samples: 2, Write: hist(t), Flush: hist(t), Replay: hist(t), Behind: hist(t)},
			}
		}, `replication lag (a streaming standby of an embedded server): 3 markers written every 10ms, 3 acknowledged, 0 seen on the destination
    mean  p50  p90  p95  p99  p99.9  max
  the destination had every marker 2.50ms after the load stopped
  server: pg_stat_replication txload_standby: 9 samples, replay_lag p50 1.50ms p99 2.50ms max 2.50ms, 3 with replay_lag NULL; replay_lsn behind the source's WAL p50 2.0kB p99 3.0MB max 3.0MB
  server: pg_stat_replication walreceiver: 2 samples

`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := result(t)
			if tc.edit != nil {
				tc.edit(r)
			}
			var b strings.Builder
			writeLag(&b, r)
			if b.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
}

// The objective is judged on every marker's lag; with none measured it
// fails whatever its limit.
func TestVerdicts(t *testing.T) {
	lags := hist(t, 1000, 2000, 3000, 40000)
	for _, tc := range []struct {
		objective string
		lag       *hdr.Histogram
		pass      []bool
		values    []float64
	}{
		{"p50<=2ms,p99<40ms,max<=1s", lags, []bool{true, false, true}, []float64{2000, 40031, 40031}},
		{"p50<2ms", lags, []bool{false}, []float64{2000}},
		{"max<1s", hist(t), []bool{false}, nil},
	} {
		t.Run(tc.objective, func(t *testing.T) {
			vs := verdicts(conditions(t, tc.objective), tc.lag)
			if len(vs) != len(tc.pass) {
				t.Fatalf("%d verdicts", len(vs))
			}
			for i, v := range vs {
				if v.Pass != tc.pass[i] || (tc.values != nil && v.Value != tc.values[i]) {
					t.Errorf("%s: pass %v value %g, want %v %v", v.Cond, v.Pass, v.Value, tc.pass[i], tc.values)
				}
			}
		})
	}
}

// A progress line: the interval's lag, how far behind the destination
// is, and the servers' own view where there is one.
func TestProgressLine(t *testing.T) {
	none := lag.ViewSample{Replay: -1, Delay: -1, Behind: -1}
	for _, tc := range []struct {
		iv   lag.Interval
		view lag.ViewSample
		want string
	}{
		{lag.Interval{Lag: hist(t)}, none, "   3.0s  lag  none seen"},
		{lag.Interval{Lag: hist(t, 1000, 3000), Measured: 2}, none, "   3.0s  lag  p50 1.00ms  p99 3.00ms  max 3.00ms  markers 2"},
		{lag.Interval{Lag: hist(t), Pending: 7, Behind: 1500 * time.Millisecond}, lag.ViewSample{Replay: 2 * time.Millisecond, Delay: -1, Behind: 4096},
			"   3.0s  lag  none seen  behind 1.50s (7 pending)  replay_lag 2.00ms  replay behind 4.0kB"},
		{lag.Interval{Lag: hist(t, 500), Measured: 1}, lag.ViewSample{Replay: -1, Delay: 300 * time.Microsecond, Behind: -1},
			"   3.0s  lag  p50 500µs  p99 500µs  max 500µs  markers 1  subscription delay 300µs"},
	} {
		if got := progressLine(3*time.Second, tc.iv, tc.view); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

func TestBytesString(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.0kB", 1536: "1.5kB", 1<<20 - 1: "1024.0kB", 1 << 20: "1.0MB", 5 << 30: "5120.0MB"} {
		if got := bytesString(n); got != want {
			t.Errorf("bytesString(%d) = %q, want %q", n, got, want)
		}
	}
}

// The comparison's verdict: a phrase per table that differs, and one for
// the markers.
func TestConvergenceFailures(t *testing.T) {
	okMarkers := &lag.MarkerDiff{Source: 5, Dest: 5}
	for _, tc := range []struct {
		name string
		conv Convergence
		want []string
	}{
		{"converged", Convergence{Tables: []*lag.Diff{{Pair: lag.Pair{Source: "a", Dest: "a"}, SourceRows: 3, DestRows: 3}}, Markers: okMarkers}, nil},
		{"rows missing, extra and differing", Convergence{Tables: []*lag.Diff{
			{Pair: lag.Pair{Source: "a", Dest: "a"}, SourceRows: 10, DestRows: 10},
			{Pair: lag.Pair{Source: "b", Dest: "b2"}, SourceRows: 10, DestRows: 9, Missing: 2, Extra: 1, Differing: 3},
		}, Markers: okMarkers}, []string{"b: 2 missing, 1 extra, 3 differing"}},
		{"columns missing", Convergence{Tables: []*lag.Diff{{Pair: lag.Pair{Source: "a", Dest: "a"}, SourceRows: 1, DestRows: 1, MissingColumns: []string{"x", "y"}}}, Markers: okMarkers},
			[]string{"a: columns missing: x, y"}},
		{"counts alone differ", Convergence{Tables: []*lag.Diff{{Pair: lag.Pair{Source: "h", Dest: "h"}, SourceRows: 7, DestRows: 6}}, Markers: okMarkers},
			[]string{"h: 6 rows against 7"}},
		{"markers lost and repeated", Convergence{Markers: &lag.MarkerDiff{Source: 5, Dest: 5, Gaps: 1, Repeats: 1}},
			[]string{"markers: 1 gap, 1 repeat, 0 extra"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.conv.Failures(); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The convergence table: a row per table, the keys that differ (and how
// many more), the markers' gaps and repeats, the verdict.
func TestWriteConvergence(t *testing.T) {
	conv := &Convergence{
		Tables: []*lag.Diff{
			{Pair: lag.Pair{Source: "pgbench_accounts", Dest: "pgbench_accounts"}, SourceRows: 100000, DestRows: 99998, Missing: 3, MissingKeys: []string{"aid=42", "aid=43"}, Ranges: 256},
			{Pair: lag.Pair{Source: "pgbench_history", Dest: "hist"}, SourceRows: 500, DestRows: 501, Extra: 1, ExtraKeys: []string{"(row) 1,2,3"}, Differing: 1, DifferingKeys: []string{"(row) 4"}, Ranges: 16,
				MissingColumns: []string{"mtime"}},
			{Pair: lag.Pair{Source: "pgbench_tellers", Dest: "pgbench_tellers"}, SourceRows: 10, DestRows: 10, Ranges: 1},
		},
		Markers:  &lag.MarkerDiff{Source: 12, Dest: 12, Gaps: 1, Repeats: 1, GapKeys: []string{"writer 3 seq 7"}, RepeatKeys: []string{"writer 3 seq 9"}},
		Compared: []int{4, 1, 1},
		Took:     1500 * time.Millisecond,
	}
	var b strings.Builder
	writeConvergence(&b, conv)
	want := `table                   source rows  dest rows  missing  extra  differing  ranges
pgbench_accounts             100000      99998        3      0          0     256
pgbench_history → hist          500        501        0      1          1      16
pgbench_tellers                  10         10        0      0          0       1
MISSING pgbench_accounts: aid=42
MISSING pgbench_accounts: aid=43
MISSING pgbench_accounts: ... and 1 more
pgbench_accounts still differed after 4 comparisons a second apart
EXTRA pgbench_history: (row) 1,2,3
DIFFERING pgbench_history: (row) 4
MISSING COLUMNS hist: mtime
markers: 12 on the source, 12 on the destination: 1 gap, 1 repeat, 0 extra
GAP (lost): writer 3 seq 7
REPEAT (applied twice): writer 3 seq 9
convergence: FAILED: pgbench_accounts: 3 missing; pgbench_history: 1 extra, 1 differing, columns missing: mtime; markers: 1 gap, 1 repeat, 0 extra (compared in 1.50s)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	writeConvergence(&b, &Convergence{Tables: conv.Tables[2:], Markers: &lag.MarkerDiff{Source: 3, Dest: 3}, Compared: []int{1}, Took: 20 * time.Millisecond})
	if last := strings.TrimSpace(b.String()[strings.LastIndex(strings.TrimSpace(b.String()), "\n"):]); last != "convergence: ok, the destination holds exactly the source's rows (compared in 0.02s)" {
		t.Errorf("last line %q", last)
	}
}
