package report

import (
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/metrics"
)

// The drain line counts what ended after the window, in words that fit
// its numbers, and what the drain skipped (--latency-limit): with the
// window's figures and the operations never started, every operation
// offered. The old line left the skipped out and said "1 operations".
func TestDrainLine(t *testing.T) {
	for _, tc := range []struct {
		elapsed     time.Duration
		ok, skipped int64
		want        string
	}{
		{0, 0, 0, ""},
		{340 * time.Microsecond, 8, 0, "drain: 8 operations in flight when the window ended, not in the figures below: 8 committed and 0 failed in the 340µs after it"},
		{12400 * time.Microsecond, 3, 0, "3 committed and 0 failed in the 12ms after it"},
		{time.Millisecond, 1, 0, "drain: 1 operation in flight when the window ended"},
		{time.Millisecond, 9, 2, "9 committed and 0 failed in the 1ms after it, 0 abandoned (outcome unknown); 2 operations skipped after it, later than --latency-limit"},
		{0, 0, 1, "drain: 0 operations in flight when the window ended, not in the figures below: 0 committed and 0 failed in the 0s after it, 0 abandoned (outcome unknown); 1 operation skipped after it"},
	} {
		s := metrics.NewSnapshot([]string{"op"})
		s.Ops[0].OK, s.Ops[0].Skipped = tc.ok, tc.skipped
		s.Elapsed = tc.elapsed
		got := DrainLine(s)
		if tc.want == "" {
			if got != "" {
				t.Errorf("nothing in flight: %q, want no line", got)
			}
			continue
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("drain of %s: %q, want it to contain %q", tc.elapsed, got, tc.want)
		}
	}
}

// The warm-up's operations have a line of their own: the text's and the
// document's (its warmup, and each operation's warmup_ok), and the summary
// written from the document has it too. The old report had the warm-up's
// operations in neither its text nor (committed) its document.
func TestWarmupLine(t *testing.T) {
	s := metrics.NewSnapshot([]string{"a", "b"})
	s.Ops[0].Warmup, s.Ops[0].WarmupOK = 394, 393
	s.Ops[1].Warmup, s.Ops[1].WarmupOK = 1, 1
	s.Elapsed = 2 * time.Second
	const want = "warm-up: 395 operations begun in the 1.00s before the window, not in the figures below: 394 committed and 1 failed"
	if got := WarmupLine(s, time.Second); got != want {
		t.Errorf("text: %q, want %q", got, want)
	}
	if got := WarmupLine(metrics.NewSnapshot([]string{"a"}), time.Second); got != "" {
		t.Errorf("no warm-up: %q, want no line", got)
	}
	rd, err := NewRunDoc(s)
	if err != nil {
		t.Fatal(err)
	}
	if w := rd.Warmup; w == nil || *w != (WarmupDoc{Operations: 395, Committed: 394, Failed: 1}) || rd.Ops[0].WarmupOK != 393 {
		t.Fatalf("document's warm-up %+v, operations %+v", w, rd.Ops)
	}
	back, err := rd.Total()
	if err != nil || back.Ops[0].WarmupOK != 393 || back.Ops[1].WarmupOK != 1 {
		t.Fatalf("read back: %v %+v", err, back.Ops)
	}
	doc := &Document{Workload: "w", Config: map[string]any{KeyWarmup: "1s", KeyConcurrency: "2"}, Runs: []RunDoc{rd}}
	if err := doc.Validate(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteSummary(&b, doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\n  "+want+"\n") {
		t.Errorf("summary from the document lacks %q:\n%s", want, b.String())
	}
	for _, bad := range []WarmupDoc{{Operations: 3, Committed: 4, Failed: -1}, {Operations: 3, Committed: 1, Failed: 1}, {Operations: -1, Committed: -1}} {
		doc.Runs[0].Warmup = &bad
		if err := doc.Validate(); err == nil || !strings.Contains(err.Error(), "runs[0].warmup") {
			t.Errorf("warm-up %+v: %v, want refused", bad, err)
		}
	}
}

// The header's loop: of an instance, its own share of the rate beside its
// own workers, and the instance named. The old header said "open loop at
// 400 ops/s …, 2 workers" for instance 0 of 2: the whole rate beside its
// share of the workers.
func TestLoop(t *testing.T) {
	for _, tc := range []struct {
		loop Loop
		want string
	}{
		{Loop{Workers: 8}, "closed loop, 8 workers"},
		{Loop{Workers: 1, Each: 1}, "closed loop, 1 worker, 1 operation each"},
		{Loop{Rate: 500, Arrival: "poisson", Workers: 8}, "open loop at 500 ops/s (poisson), 8 workers"},
		{Loop{Rate: 400, Arrival: "poisson", Workers: 2, AllWorkers: 4, Instance: 0, Instances: 2},
			"open loop at 200 ops/s (poisson), 2 workers (instance 0 of 2: its share of 400 ops/s and 4 workers)"},
		{Loop{Rate: 400, Arrival: "uniform", Workers: 1, AllWorkers: 4, Instance: 2, Instances: 3},
			"open loop at 133.333 ops/s (uniform), 1 worker (instance 2 of 3: its share of 400 ops/s and 4 workers)"},
		{Loop{Workers: 2, AllWorkers: 3, Instance: 0, Instances: 2}, "closed loop, 2 workers (instance 0 of 2: its share of 3 workers)"},
		// A number of transactions per client: --rate is the whole's, as
		// --concurrency is; an instance's share is its clients' (it was
		// the whole rate on each instance before).
		{Loop{Rate: 100, Arrival: "poisson", Workers: 2, AllWorkers: 4, Each: 10, Instance: 1, Instances: 2},
			"open loop at 50 ops/s (poisson), 2 workers, 10 operations each (instance 1 of 2: its share of 100 ops/s and 4 workers)"},
		{Loop{Rate: 100, Arrival: "poisson", Workers: 1, AllWorkers: 3, Each: 10, Instance: 1, Instances: 2},
			"open loop at 33.3333 ops/s (poisson), 1 worker, 10 operations each (instance 1 of 2: its share of 100 ops/s and 3 workers)"},
	} {
		if got := tc.loop.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.loop, got, tc.want)
		}
	}
	// A document of an instance says the same as its run.
	for _, tc := range []struct {
		config map[string]any
		want   string
	}{
		{map[string]any{KeyRate: "400", KeyConcurrency: "4", KeyInstance: "0/2", KeyArrival: "poisson"},
			"open loop at 200 ops/s (poisson), 2 workers (instance 0 of 2: its share of 400 ops/s and 4 workers)"},
		{map[string]any{KeyRate: "400", KeyConcurrency: "4", KeyInstance: "", KeyArrival: "poisson"},
			"open loop at 400 ops/s (poisson), 4 workers"},
		{map[string]any{KeyConcurrency: "5", KeyInstance: "1/2"}, "closed loop, 2 workers (instance 1 of 2: its share of 5 workers)"},
	} {
		if got := (&Document{Config: tc.config}).Mode(); got != tc.want {
			t.Errorf("document of %v: %q, want %q", tc.config, got, tc.want)
		}
	}
}
