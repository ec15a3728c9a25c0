package report_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
)

// fakeRun records n intervals of one load generator whose ticks start at
// start and come every second plus jitter[i]; in interval i it commits
// ok(i) operations of op "a" with response times that depend on seed and
// fails one "b" per interval with a serialization error after 2 tries.
func fakeRun(t *testing.T, seed int, start time.Time, n int, jitter []time.Duration) *report.Document {
	t.Helper()
	g := metrics.NewRegistry([]string{"a", "b"}, start)
	r := g.NewRecorder()
	ivs, err := report.NewIntervals(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ivs.Close() })
	end := start
	for i := range n {
		for j := range 100 + 10*seed + i {
			us := time.Duration((j*37+seed*1000+i*13)%20000+1) * time.Microsecond
			r.Success(0, true, us+time.Duration(seed)*time.Millisecond, us, time.Duration(seed)*time.Millisecond, 1+j%3/2)
		}
		r.Error(1, true, metrics.Serialization)
		r.Failure(1, true, metrics.Serialization, 2)
		end = end.Add(time.Second)
		if i < len(jitter) {
			end = end.Add(jitter[i])
		}
		iv, err := g.Tick(end)
		if err != nil {
			t.Fatal(err)
		}
		ivs.Add(iv, end, false)
	}
	total := g.Total()
	total.Elapsed = end.Sub(start)
	rd, err := report.NewRunDoc(total)
	if err != nil {
		t.Fatal(err)
	}
	if err := ivs.Err(); err != nil {
		t.Fatal(err)
	}
	rd.Spooled = ivs
	return &report.Document{Version: "test", Command: "run", Workload: "w",
		Config: map[string]any{"concurrency": "4", "instance": "x/3", "rate": "0"},
		Server: map[string]any{"dialect": "PostgreSQL", "version": "18.1"}, Runs: []report.RunDoc{rd}}
}

// roundTrip writes doc as JSON and reads it back, as merge does with files.
func roundTrip(t *testing.T, doc *report.Document) *report.Document {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteJSON(&b, doc); err != nil {
		t.Fatal(err)
	}
	back, err := report.ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func decode(t *testing.T, s string) *hdr.Histogram {
	t.Helper()
	h, err := metrics.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestIntervalsRoundTripToTotals(t *testing.T) {
	doc := roundTrip(t, fakeRun(t, 1, time.Unix(1000, 0), 4, nil))
	run := doc.Runs[0]
	total, err := run.Total()
	if err != nil {
		t.Fatal(err)
	}
	ivs := intervals(t, &run)
	if len(ivs) != 4 {
		t.Fatalf("%d intervals, want 4", len(ivs))
	}
	sum := metrics.NewSnapshot(run.Names())
	for i, iv := range ivs {
		if want := time.Unix(1000+int64(i), 0); !iv.Start.Equal(want) || iv.End.Sub(iv.Start) != time.Second {
			t.Errorf("interval %d: %s..%s, want from %s for 1s", i, iv.Start, iv.End, want)
		}
		if err := sum.Merge(iv.Snapshot); err != nil {
			t.Fatal(err)
		}
	}
	for i, o := range total.Ops {
		s := sum.Ops[i]
		if o.OK != s.OK || o.Failed != s.Failed || o.Errors != s.Errors || o.Retries != s.Retries || o.Retried != s.Retried {
			t.Errorf("%s: total %+v, intervals add up to %+v", o.Name, o, s)
		}
		if !o.Response.Equals(s.Response) || !o.Service.Equals(s.Service) || !o.Lag.Equals(s.Lag) {
			t.Errorf("%s: the intervals' histograms do not add up to the total's", o.Name)
		}
	}
	if total.Ops[0].OK != 110+111+112+113 {
		t.Errorf("ok = %d", total.Ops[0].OK)
	}
}

func TestMergeExact(t *testing.T) {
	// Three load generators whose ticks fall at different phases of the
	// second; the third's jitter straddles a second boundary.
	base := time.Unix(2000, 0)
	docs := []*report.Document{
		roundTrip(t, fakeRun(t, 0, base.Add(100*time.Millisecond), 5, nil)),
		roundTrip(t, fakeRun(t, 1, base.Add(800*time.Millisecond), 5, nil)),
		roundTrip(t, fakeRun(t, 2, base.Add(999*time.Millisecond), 5, []time.Duration{2 * time.Millisecond, -3 * time.Millisecond, 2 * time.Millisecond, 0, 1 * time.Millisecond})),
	}
	merged, err := report.Merge(docs, []string{"a.json", "b.json", "c.json"})
	if err != nil {
		t.Fatal(err)
	}
	merged = roundTrip(t, merged)
	m := merged.Runs[0]
	for i, op := range m.Ops {
		var ok, failed, retries int64
		byHand := metrics.NewHistogram()
		for _, d := range docs {
			o := d.Runs[0].Ops[i]
			ok += o.OK
			failed += o.Failed["serialization"]
			retries += o.Retries
			byHand.Merge(decode(t, o.Response.Encoded))
		}
		if op.OK != ok || op.Failed["serialization"] != failed || op.Retries != retries {
			t.Errorf("%s: ok %d failed %d retries %d, want %d %d %d", op.Name, op.OK, op.Failed["serialization"], op.Retries, ok, failed, retries)
		}
		got := decode(t, op.Response.Encoded)
		if !got.Equals(byHand) {
			t.Errorf("%s: merged histogram differs from the three added by hand", op.Name)
		}
		for _, q := range []float64{50, 90, 99, 99.9, 100} {
			if a, b := got.ValueAtQuantile(q), byHand.ValueAtQuantile(q); a != b {
				t.Errorf("%s p%g = %d, by hand %d", op.Name, q, a, b)
			}
		}
		if op.Response.P99 != byHand.ValueAtQuantile(99) || op.Response.Max != byHand.Max() {
			t.Errorf("%s: p99 %d max %d, by hand %d %d", op.Name, op.Response.P99, op.Response.Max, byHand.ValueAtQuantile(99), byHand.Max())
		}
	}
	if want := 5*time.Second + 2*time.Millisecond; m.ElapsedSec != want.Seconds() {
		t.Errorf("elapsed %gs, want the longest, %s", m.ElapsedSec, want)
	}
	// Intervals: five buckets, one interval of each generator in each.
	ivs := intervals(t, &m)
	if len(ivs) != 5 || m.IntervalCount() != 5 {
		t.Fatalf("%d merged intervals (count %d), want 5: %+v", len(ivs), m.IntervalCount(), ivs)
	}
	for i, iv := range ivs {
		if want := int64(100 + 110 + 120 + 3*i); iv.Snapshot.Ops[0].OK != want {
			t.Errorf("merged interval %d: %d ok, want %d", i, iv.Snapshot.Ops[0].OK, want)
		}
		if iv.Snapshot.Ops[1].Failed[metrics.Serialization] != 3 {
			t.Errorf("merged interval %d: %d failed, want 3", i, iv.Snapshot.Ops[1].Failed[metrics.Serialization])
		}
		if !iv.Start.Equal(base.Add(time.Duration(i)*time.Second + 100*time.Millisecond)) {
			t.Errorf("merged interval %d starts at %s", i, iv.Start)
		}
	}
	if strings.Join(merged.MergedFrom, ",") != "a.json,b.json,c.json" {
		t.Errorf("merged_from %v", merged.MergedFrom)
	}
	if _, ok := merged.Config["instance"]; ok {
		t.Errorf("the merged configuration keeps one instance's --instance")
	}
	var out bytes.Buffer
	if err := report.WriteSummary(&out, merged); err != nil {
		t.Fatal(err)
	}
	mustHave(t, out.String(), "w on PostgreSQL 18.1: closed loop, 4 workers", "merged from 3 documents: a.json, b.json, c.json",
		"a: 1680 ok, 0 failed", "b: 0 ok, 15 failed", "failed by class: serialization 15")
}

func mustHave(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("output lacks %q:\n%s", sub, s)
		}
	}
}

func TestMergeRefuses(t *testing.T) {
	base := time.Unix(3000, 0)
	other := fakeRun(t, 1, base, 2, nil)
	other.Workload = "bank"
	coarse := fakeRun(t, 1, base, 2, nil)
	h := hdr.New(1, 3600000000, 2)
	_ = h.RecordValues(1234, coarse.Runs[0].Ops[0].OK) // as many as it counts: only the geometry differs
	enc, err := metrics.Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	coarse.Runs[0].Ops[0].Response.Encoded = enc
	coarse.Runs[0].Histograms = nil
	variant := fakeRun(t, 1, base, 2, nil)
	variant.Runs[0].Labels = map[string]string{"isolation": "serializable"}
	for _, tt := range []struct {
		name string
		doc  *report.Document
		want string
	}{
		{"workload", other, "merge: a.json is a run of w, b.json of bank: only documents of one workload merge"},
		{"geometry", coarse, "histograms of different settings do not merge exactly"},
		{"variants", variant, "run 1 is unlabelled in a.json but isolation=serializable in b.json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := report.Merge([]*report.Document{fakeRun(t, 0, base, 2, nil), roundTrip(t, tt.doc)}, []string{"a.json", "b.json"})
			var me *report.MergeError
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want a MergeError", err)
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %q, want one line with %q", err, tt.want)
			}
		})
	}
}

// Independent runs (no --instance) merged: their clients add up; shares of
// one run (--instance) keep the run's --concurrency, which is all of them.
func TestMergeConcurrency(t *testing.T) {
	base := time.Unix(4000, 0)
	for _, tt := range []struct {
		instance string
		want     string
	}{{"", "10"}, {"0/2", "4"}} {
		a, b := fakeRun(t, 0, base, 1, nil), fakeRun(t, 1, base, 1, nil)
		a.Config = map[string]any{"concurrency": "4", "instance": tt.instance, "instances": "0"}
		b.Config = map[string]any{"concurrency": "6", "instance": tt.instance, "instances": "0"}
		m, err := report.Merge([]*report.Document{a, b}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.ConfigString("concurrency"); got != tt.want {
			t.Errorf("instance %q: merged concurrency %s, want %s", tt.instance, got, tt.want)
		}
	}
}

// intervals decodes every interval of rd, in order.
func intervals(t *testing.T, rd *report.RunDoc) []report.Interval {
	t.Helper()
	var out []report.Interval
	err := rd.EachInterval(func(_ int, d *report.IntervalDoc) error {
		iv, err := rd.DecodeInterval(d)
		out = append(out, iv)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Documents that cannot be load generators of one run are named with why:
// each on an embedded server of its own, or run at different times.
// Shares of one run against one server, overlapping, draw no warning.
func TestUnrelated(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	doc := func(embedded bool, from time.Duration) *report.Document {
		return &report.Document{Server: map[string]any{"dialect": "PostgreSQL", "embedded": embedded},
			Runs: []report.RunDoc{{Intervals: []report.IntervalDoc{{Start: t0.Add(from), End: t0.Add(from + time.Second)}, {Start: t0.Add(from + time.Second), End: t0.Add(from + 2*time.Second)}}}}}
	}
	for _, tc := range []struct {
		name string
		docs []*report.Document
		want []string
	}{
		{"shares of one run", []*report.Document{doc(false, 0), doc(false, 500*time.Millisecond)}, nil},
		{"two embedded servers", []*report.Document{doc(true, 0), doc(true, time.Second)},
			[]string{"a.json, b.json each ran on an embedded server of its own: they did not load one database"}},
		{"one after the other", []*report.Document{doc(false, 0), doc(false, 3*time.Second)},
			[]string{"a.json ran 04:00:00–04:00:02 UTC and b.json 04:00:03–04:00:05 UTC: they did not run at the same time"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := report.Unrelated(tc.docs, []string{"a.json", "b.json"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A command's own figures are each document's: merge keeps failover's
// section and its tables, and with them the verdict (Failures), which the
// summary prints; documents without them gain none.
func TestMergeKeepsCommandSections(t *testing.T) {
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	a, b := fakeRun(t, 1, start, 3, nil), fakeRun(t, 2, start, 3, nil)
	a.Tables = []report.TableDoc{{Title: "Failover (async): embedded primary and standby", Rows: [][]string{{"", ""}, {"lost", "1 (0 of them the probe's)"}},
		Failed: "FAILED (async): 1 acknowledged commits lost by the failover"}}
	a.Failover = []byte(`[{"replication":"async","lost":1}]`)
	b.Failover = []byte(`[{"replication":"async","lost":0}]`)
	merged, err := report.Merge([]*report.Document{roundTrip(t, a), roundTrip(t, b)}, []string{"a.json", "b.json"})
	if err != nil {
		t.Fatal(err)
	}
	merged = roundTrip(t, merged)
	if got := merged.Failures(); !slices.Equal(got, []string{"FAILED (async): 1 acknowledged commits lost by the failover"}) {
		t.Errorf("failures %q", got)
	}
	if got := string(merged.Failover); got != `[{"replication":"async","lost":1},{"replication":"async","lost":0}]` {
		t.Errorf("failover section %s", got)
	}
	var text bytes.Buffer
	if err := report.WriteSummary(&text, merged); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Failover (async): embedded primary and standby\n  lost: 1 (0 of them the probe's)\nFAILED (async): 1 acknowledged commits lost by the failover\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, text.String())
		}
	}
	plain, err := report.Merge([]*report.Document{roundTrip(t, fakeRun(t, 1, start, 3, nil))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Failover != nil || plain.Tables != nil || plain.Failures() != nil {
		t.Errorf("a run's document merged gained %s, %v", plain.Failover, plain.Tables)
	}
}

// A document that says a command of several runs was interrupted (a
// sweep's) says so merged, naming what interrupted the first that was.
func TestMergeKeepsInterrupted(t *testing.T) {
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		by     [2]string
		wantBy string
	}{
		{"neither", [2]string{"", ""}, ""},
		{"the second", [2]string{"", "SIGTERM"}, "SIGTERM"},
		{"both", [2]string{"Ctrl-C (SIGINT)", "SIGTERM"}, "Ctrl-C (SIGINT)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := fakeRun(t, 1, start, 3, nil), fakeRun(t, 2, start, 3, nil)
			a.Interrupted, a.InterruptedBy = tc.by[0] != "", tc.by[0]
			b.Interrupted, b.InterruptedBy = tc.by[1] != "", tc.by[1]
			merged, err := report.Merge([]*report.Document{roundTrip(t, a), roundTrip(t, b)}, []string{"a.json", "b.json"})
			if err != nil {
				t.Fatal(err)
			}
			merged = roundTrip(t, merged)
			if merged.Interrupted != (tc.wantBy != "") || merged.InterruptedBy != tc.wantBy {
				t.Errorf("merged: interrupted %v by %q, want by %q", merged.Interrupted, merged.InterruptedBy, tc.wantBy)
			}
		})
	}
}

// A merged run keeps what failed any document's run: an audit that did
// not finish (its error, each once, with the figures of an audit that
// did) and its clients' ABORTED notes, each once. A merge of clean
// documents keeps neither.
func TestMergeKeepsFailedRuns(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const aborted = "ABORTED: 1 client ended on an error no retry cures (--continue-on-error keeps them running): ERROR: boom (SQLSTATE P0001)"
	ok := &report.CheckDoc{Values: map[string]int64{"drift": 0}, Violations: []string{}}
	failed := func(msg string) *report.CheckDoc {
		return &report.CheckDoc{Values: map[string]int64{}, Violations: []string{}, Error: msg}
	}
	for _, tc := range []struct {
		name      string
		checks    []*report.CheckDoc
		notes     [][]string
		wantError string
		wantNotes []string
		values    bool
	}{
		{"clean", []*report.CheckDoc{ok, ok}, [][]string{{"connected"}, nil}, "", nil, true},
		{"failed audit first", []*report.CheckDoc{failed("check bank: 57P01"), ok}, nil, "check bank: 57P01", nil, true},
		{"failed audit last", []*report.CheckDoc{ok, failed("check bank: 57P01")}, nil, "check bank: 57P01", nil, true},
		{"two failed audits", []*report.CheckDoc{failed("a"), failed("b"), failed("a")}, nil, "a; b", nil, false},
		{"aborted", []*report.CheckDoc{ok, ok}, [][]string{{"connected", aborted}, {aborted}}, "", []string{aborted}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var docs []*report.Document
			for i, c := range tc.checks {
				d := fakeRun(t, i, t0, 3, nil)
				d.Runs[0].Check = c
				if i < len(tc.notes) {
					d.Runs[0].Notes = tc.notes[i]
				}
				docs = append(docs, d)
			}
			m, err := report.Merge(docs, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			rd := m.Runs[0]
			if rd.Check.Error != tc.wantError || (len(rd.Check.Values) > 0) != tc.values {
				t.Errorf("merged check %+v, want the error %q (figures: %v)", rd.Check, tc.wantError, tc.values)
			}
			if got := rd.AbortedNotes(); !slices.Equal(got, tc.wantNotes) || len(rd.Notes) != len(tc.wantNotes) {
				t.Errorf("merged notes %q, want %q", rd.Notes, tc.wantNotes)
			}
			var text bytes.Buffer
			if err := report.WriteSummary(&text, m); err != nil {
				t.Fatal(err)
			}
			failedLine := rd.Check.FailedLine()
			if failedLine != "" && (!strings.Contains(text.String(), failedLine) || strings.Contains(text.String(), "check: ok")) {
				t.Errorf("the text lacks %q or says check: ok:\n%s", failedLine, text.String())
			}
			for _, n := range tc.wantNotes {
				if strings.Count(text.String(), n) != 1 {
					t.Errorf("the text holds %q %d times, want once:\n%s", n, strings.Count(text.String(), n), text.String())
				}
			}
		})
	}
}

// Documents of different txload versions are named, with theirs.
func TestVersionsDiffer(t *testing.T) {
	names := []string{"a.json", "b.json", "c.json"}
	for _, tc := range []struct {
		versions []string
		want     string
	}{
		{[]string{"1.0", "1.0", "1.0"}, ""},
		{[]string{"1.0", "1.1", "1.0"}, "a.json was written by txload 1.0, b.json by txload 1.1"},
		{[]string{"1.0", "", "0.9"}, "a.json was written by txload 1.0, b.json by txload (none), c.json by txload 0.9"},
	} {
		var docs []*report.Document
		for _, v := range tc.versions {
			docs = append(docs, &report.Document{Version: v})
		}
		if got := report.VersionsDiffer(docs, names); got != tc.want {
			t.Errorf("versions %q: %q, want %q", tc.versions, got, tc.want)
		}
	}
}
