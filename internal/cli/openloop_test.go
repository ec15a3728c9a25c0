package cli

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The .hlog decodes, with HdrHistogram's own log reader, back to the counts
// and maxima of the run's report; the open-loop lines are in the seed's shape.
func TestHistogramLogMatchesReport(t *testing.T) {
	timingSensitive(t)
	url := srv.NewDatabase(t)
	js, hl := jsonPath(t), t.TempDir()+"/run.hlog"
	r := txload(t.Context(), nil, "run", "bank", "--url", url, "--isolation", "rc", "--transfer", "delta", "--rate", "400",
		"--duration", "3s", "--warmup", "1s", "--progress", "0", "--json", js, "--histogram", hl)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	op := readDoc(t, js).Runs[0].Ops[0]
	f, err := os.Open(hl)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	merged := map[string]*hdr.Histogram{}
	reader := hdr.NewHistogramLogReader(f)
	for {
		h, err := reader.NextIntervalHistogram()
		if err != nil {
			t.Fatalf("reading the log: %v", err)
		}
		if h == nil {
			break
		}
		if merged[h.Tag()] == nil {
			merged[h.Tag()] = hdr.New(1, 3600_000_000, 3)
		}
		merged[h.Tag()].Merge(h)
	}
	for tag, want := range map[string]struct{ count, max int64 }{
		"transfer-sojourn": {op.Response.Count, op.Response.Max},
		"transfer-remote":  {op.Service.Count, op.Service.Max},
		"transfer-lag":     {op.Lag.Count, op.Lag.Max},
	} {
		h := merged[tag]
		if h == nil {
			t.Fatalf("no %s histograms in the log (tags: %v)", tag, merged)
		}
		if h.TotalCount() != want.count || h.Max() != want.max {
			t.Errorf("%s: log count %d max %d, report count %d max %d", tag, h.TotalCount(), h.Max(), want.count, want.max)
		}
	}
	gen := regexp.MustCompile(`(?m)^# generated ops/s: ([0-9.]+)$`).FindStringSubmatch(r.stdout)
	act := regexp.MustCompile(`(?m)^# actual ops/s: ([0-9.]+)$`).FindStringSubmatch(r.stdout)
	if gen == nil || act == nil {
		t.Fatalf("no generated/actual lines:\n%s", r.stdout)
	}
	g, _ := strconv.ParseFloat(gen[1], 64)
	a, _ := strconv.ParseFloat(act[1], 64)
	if g < 392 || g > 408 || a < g*0.98 || a > g*1.02 {
		t.Errorf("generated %.2f (target 400), actual %.2f", g, a)
	}
	for _, q := range []string{"50", "95", "99", "100"} {
		if !regexp.MustCompile(`(?m)^transfer +` + q + ` +[0-9]+ +[0-9]+ +\(all µs\)$`).MatchString(r.stdout) {
			t.Errorf("no %s row in the open-loop table:\n%s", q, r.stdout)
		}
	}
}

// Far beyond capacity, the run stops once operations fall --max-lag behind,
// says the target is beyond what the database sustains, and sojourn time
// dwarfs remote time.
func TestSaturation(t *testing.T) {
	url := srv.NewDatabase(t)
	js := jsonPath(t)
	r := txload(t.Context(), nil, "run", "bank", "--url", url, "--isolation", "rc", "--transfer", "delta", "--rate", "200000",
		"--concurrency", "2", "--duration", "30s", "--max-lag", "1s", "--progress", "0", "--json", js)
	// The run did not do what was asked (200000 ops/s for 30 s): exit 1,
	// the report printed.
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stderr, "txload: saturated: the database did not sustain 200000 ops/s, and the run stopped after ")
	m := regexp.MustCompile(`SATURATED: the target of 200000 ops/s is beyond what the database sustains: .* it sustained ([0-9.]+) ops/s`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no saturation line:\n%s", r.stdout)
	}
	if sustained, _ := strconv.ParseFloat(m[1], 64); sustained <= 0 || sustained > 100000 {
		t.Errorf("sustained %s ops/s", m[1])
	}
	run := readDoc(t, js).Runs[0]
	op := run.Ops[0]
	if !run.Saturated || run.ElapsedSec > 10 {
		t.Errorf("saturated %v after %.1fs", run.Saturated, run.ElapsedSec)
	}
	if op.Response.P50 < 10*op.Service.P50 || op.Response.P50 < 100000 {
		t.Errorf("sojourn p50 %d µs, remote p50 %d µs: want sojourn ≫ remote", op.Response.P50, op.Service.P50)
	}
	// Generated over the time the run lasted, not the 30 s asked: a
	// saturated run started about as many operations as it completed.
	gen := regexp.MustCompile(`(?m)^# generated ops/s: ([0-9.]+)\n# actual ops/s: ([0-9.]+)$`).FindStringSubmatch(r.stdout)
	if gen == nil {
		t.Fatalf("no open-loop report:\n%s", r.stdout)
	}
	if g, a := atof(t, gen[1]), atof(t, gen[2]); g < a*0.9 {
		t.Errorf("generated %s ops/s, completed %s: generation divided by the 30 s asked, not the %.1f s run", gen[1], gen[2], run.ElapsedSec)
	}
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Far beyond what 2 clients can do (100,000 a second: 20,000 was reached
// by half on a quiet machine), but within --max-lag: once the 2 s
// window ends nothing new starts. The 2 operations in flight then drain
// within --drain-timeout, the rest of the schedule is never started,
// counted once, and the audit finds exactly the operations that ran. The
// old engine went on starting the late arrivals after the window (tens of
// seconds of them) and called them all "in flight". The run did not do
// what was asked, its rate: it says BEHIND and exits 1.
func TestOpenLoopEndsWithItsWindow(t *testing.T) {
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "tpcb", "--url", url); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	js := jsonPath(t)
	r := txload(t.Context(), nil, "run", "tpcb-like", "--url", url, "--init", "skip", "--rate", "100000", "--concurrency", "2",
		"--duration", "2s", "--drain-timeout", "1s", "--max-lag", "1m", "--progress", "0", "--json", js)
	if r.code != 1 || !strings.Contains(r.stderr, "behind: the database did not sustain 100000 ops/s") {
		t.Fatalf("exit %d, want 1 and the behind error\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	run := readDoc(t, js).Runs[0]
	if run.Saturated || run.Drain == nil || run.Offered != 200000 {
		t.Fatalf("saturated %v, drain %v, offered %d: want neither saturated nor without a drain, 200000 offered\n%s", run.Saturated, run.Drain != nil, run.Offered, r.stdout)
	}
	drain, err := run.DrainSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	total, err := run.Total()
	if err != nil {
		t.Fatal(err)
	}
	d, w := drain.Total("all"), total.Total("all")
	inFlight := d.OK + d.FailedTotal() + d.Abandoned
	if inFlight > 2 || drain.Elapsed > time.Second {
		t.Errorf("%d operations in flight at the window's end, drained in %s: want at most the 2 clients' within --drain-timeout 1s\n%s", inFlight, drain.Elapsed, r.stdout)
	}
	if sum := w.OK + w.FailedTotal() + w.Skipped + inFlight + run.Unstarted; sum != run.Offered || 2*run.Unstarted <= run.Offered {
		t.Errorf("ok %d + failed %d + skipped %d + in flight %d + never started %d = %d, want the %d offered, most never started",
			w.OK, w.FailedTotal(), w.Skipped, inFlight, run.Unstarted, sum, run.Offered)
	}
	mustContain(t, r.stdout, fmt.Sprintf("BEHIND: the target of 100000 ops/s was not sustained: %d of 200000 scheduled operations", run.Unstarted),
		fmt.Sprintf("per the history: %d rows = %d committed + 0", w.OK+d.OK, w.OK+d.OK), "check: ok")
	if strings.Contains(r.stdout, "SATURATED") {
		t.Errorf("a run within --max-lag says SATURATED:\n%s", r.stdout)
	}
}
