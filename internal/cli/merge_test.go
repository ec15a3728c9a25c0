package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
)

// instanceDocs runs select-only as three load generators (--instance i/3)
// at once against one database, and returns their --json documents' paths.
func instanceDocs(t *testing.T, url string, extra ...string) []string {
	t.Helper()
	var wg sync.WaitGroup
	results := make([]result, 3)
	paths := make([]string, 3)
	for i := range 3 {
		paths[i] = filepath.Join(t.TempDir(), fmt.Sprintf("run-%d.json", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{"run", "select-only", "--url", url, "--instance", fmt.Sprintf("%d/3", i),
				"--concurrency", "6", "--duration", "2s", "--progress", "0", "--json", paths[i]}, extra...)
			results[i] = txload(t.Context(), nil, args...)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Fatalf("instance %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
	}
	return paths
}

func decodeHist(t *testing.T, s string) *hdr.Histogram {
	t.Helper()
	h, err := metrics.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Three load generators at a third of the rate each, merged: the counts are
// the sums of theirs, the percentiles those of their three histograms added
// by hand (equal, not close), the schedule offered that of one process at
// the whole rate; intervals line up on the wall clock; every output format
// says so.
func TestMergeInstances(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "tpcb", "--url", url); r.code != 0 {
		t.Fatalf("init: %d\n%s", r.code, r.stderr)
	}
	paths := instanceDocs(t, url, "--rate", "600")
	one := jsonPath(t)
	if r := txload(t.Context(), nil, "run", "select-only", "--url", url, "--init", "skip", "--rate", "600", "--concurrency", "6",
		"--duration", "2s", "--progress", "0", "--json", one); r.code != 0 {
		t.Fatalf("single run: exit %d\n%s", r.code, r.stderr)
	}
	merged := filepath.Join(t.TempDir(), "merged.json")
	r := txload(t.Context(), nil, append(append([]string{"merge"}, paths...), "--output", "json", "-o", merged)...)
	if r.code != 0 {
		t.Fatalf("merge: exit %d\n%s", r.code, r.stderr)
	}
	m := readDoc(t, merged)
	run := m.Runs[0]
	var ok, failed, offered, intervalOK int64
	byHand := metrics.NewHistogram()
	service := metrics.NewHistogram()
	for _, p := range paths {
		d := readDoc(t, p).Runs[0]
		if len(d.Intervals) < 2 {
			t.Fatalf("%s has %d intervals: --json must carry them", p, len(d.Intervals))
		}
		o := d.Ops[0]
		ok += o.OK
		failed += o.Failed["serialization"] + o.Failed["other"]
		offered += d.Offered
		byHand.Merge(decodeHist(t, o.Response.Encoded))
		service.Merge(decodeHist(t, o.Service.Encoded))
		for _, iv := range d.Intervals {
			intervalOK += iv.Ops[0].OK
		}
	}
	o := run.Ops[0]
	if o.OK != ok || o.Failed["serialization"]+o.Failed["other"] != failed || ok == 0 {
		t.Fatalf("merged ok %d failed %v, the instances' sum %d, %d", o.OK, o.Failed, ok, failed)
	}
	if single := readDoc(t, one).Runs[0].Offered; run.Offered != offered || run.Offered != single || single != 1200 {
		t.Fatalf("offered: merged %d, the instances' sum %d, one process at the whole rate %d, want 1200", run.Offered, offered, single)
	}
	got := decodeHist(t, o.Response.Encoded)
	if !got.Equals(byHand) || !decodeHist(t, o.Service.Encoded).Equals(service) {
		t.Fatal("the merged histograms differ from the instances' added by hand")
	}
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"p50", o.Response.P50, byHand.ValueAtQuantile(50)}, {"p90", o.Response.P90, byHand.ValueAtQuantile(90)},
		{"p95", o.Response.P95, byHand.ValueAtQuantile(95)}, {"p99", o.Response.P99, byHand.ValueAtQuantile(99)},
		{"p99.9", o.Response.P999, byHand.ValueAtQuantile(99.9)}, {"max", o.Response.Max, byHand.Max()},
		{"count", o.Response.Count, byHand.TotalCount()},
	} {
		if c.got != c.want {
			t.Errorf("merged %s = %d, the three histograms added by hand: %d", c.name, c.got, c.want)
		}
	}
	// Intervals: the three generators ran at once, so their intervals share
	// buckets: about as many merged intervals as one generator has, and
	// every operation in one of them.
	var mergedIntervalOK int64
	for _, iv := range run.Intervals {
		mergedIntervalOK += iv.Ops[0].OK
	}
	if mergedIntervalOK != intervalOK {
		t.Errorf("merged intervals hold %d ok, the instances' %d", mergedIntervalOK, intervalOK)
	}
	// (A schedule: under the race detector, with other tests beside it,
	// the three starts have been seen more than a second apart; the plain
	// run checks it.)
	if n, first := len(run.Intervals), len(readDoc(t, paths[0]).Runs[0].Intervals); n > first+1 && !pgtest.RaceDetector {
		t.Errorf("%d merged intervals from instances of %d each: not aligned", n, first)
	}
	if len(m.MergedFrom) != 3 {
		t.Errorf("merged_from = %v", m.MergedFrom)
	}

	text := txload(t.Context(), nil, append([]string{"merge"}, paths...)...)
	if text.code != 0 {
		t.Fatalf("merge text: exit %d\n%s", text.code, text.stderr)
	}
	mustContain(t, text.stdout, "select-only on PostgreSQL", "open loop at 600 ops/s (poisson), 6 workers",
		"merged from 3 documents: run-0.json, run-1.json, run-2.json", fmt.Sprintf("select-only: %d ok, ", ok),
		"offered 1200 operations")
	if re := regexp.MustCompile(fmt.Sprintf(`select-only +50 +%d +\d+  \(all µs\)`, byHand.ValueAtQuantile(50))); !re.MatchString(text.stdout) {
		t.Errorf("the open-loop block lacks the p50 sojourn of the histograms added by hand, %d µs:\n%s", byHand.ValueAtQuantile(50), text.stdout)
	}
	pg := txload(t.Context(), nil, append(append([]string{"merge"}, paths...), "--output", "pgbench")...)
	mustContain(t, pg.stdout, "transaction type: <builtin: select only>", "number of clients: 6",
		fmt.Sprintf("number of transactions actually processed: %d\n", ok))
	html := filepath.Join(t.TempDir(), "merged.html")
	if r := txload(t.Context(), nil, append(append([]string{"merge"}, paths...), "--output", "html", "-o", html)...); r.code != 0 {
		t.Fatalf("merge html: exit %d\n%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.HasPrefix(string(b), "<!DOCTYPE html>") || !strings.Contains(string(b), `class="plot"`) {
		t.Fatalf("merge html: %v\n%.200s", err, b)
	}
}

// Documents that are not one run's, or whose histograms differ in
// geometry, are refused with one line and exit 2; so are unreadable files
// and unknown formats.
func TestMergeRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, doc *report.Document) string {
		p := filepath.Join(dir, name)
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	start := time.Unix(1700000000, 0)
	g := metrics.NewRegistry([]string{"transfer"}, start)
	g.NewRecorder().Success(0, true, 1500*time.Microsecond, 1500*time.Microsecond, 0, 1)
	if _, err := g.Tick(start.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	rd, err := report.NewRunDoc(g.Total())
	if err != nil {
		t.Fatal(err)
	}
	doc := func(workload string) *report.Document {
		return &report.Document{Version: "test", Command: "run", Workload: workload, Config: map[string]any{}, Runs: []report.RunDoc{rd}}
	}
	bank, vote := write("bank.json", doc("bank")), write("vote.json", doc("vote"))
	coarse := doc("bank")
	coarse.Runs = []report.RunDoc{rd}
	coarse.Runs[0].Histograms = nil
	h := hdr.New(1, 3600000000, 2)
	_ = h.RecordValue(1500)
	enc, err := metrics.Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	coarse.Runs[0].Ops = []report.OpDoc{rd.Ops[0]}
	coarse.Runs[0].Ops[0].Response.Encoded = enc
	coarsePath := write("coarse.json", coarse)
	// The same run twice, by two documents (written apart: their bytes
	// differ, their run id is one); impossible values.
	once := doc("bank")
	once.RunID = "0123abcd"
	runA := write("run-a.json", once)
	once.Version = "rewritten"
	runB := write("run-b.json", once)
	mangled := func(name string, change func(*report.OpDoc)) string {
		d := doc("bank")
		d.Runs = []report.RunDoc{rd}
		d.Runs[0].Ops = []report.OpDoc{rd.Ops[0]}
		change(&d.Runs[0].Ops[0])
		return write(name, d)
	}
	negative := mangled("negative.json", func(o *report.OpDoc) { o.OK = -5 })
	damaged := mangled("damaged.json", func(o *report.OpDoc) { o.Service.Encoded = "SGlzdG9ncmFt" })
	miscounted := mangled("miscounted.json", func(o *report.OpDoc) { o.OK = 2 })
	badClass := mangled("class.json", func(o *report.OpDoc) { o.Failed = map[string]int64{"serialization": -1} })
	garbage := filepath.Join(dir, "garbage.json")
	if err := os.WriteFile(garbage, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"workloads", []string{"merge", bank, vote}, "merge: bank.json is a run of bank, vote.json of vote: only documents of one workload merge"},
		{"histograms", []string{"merge", bank, coarsePath}, "histograms of different settings do not merge exactly"},
		{"missing", []string{"merge", bank, filepath.Join(dir, "nope.json")}, "nope.json: no such file or directory"},
		{"garbage", []string{"merge", garbage}, "garbage.json: reading a txload JSON document"},
		{"format", []string{"merge", bank, "--output", "xml"}, `--output "xml" is not allowed (allowed: text, pgbench, json, html)`},
		{"none", []string{"merge"}, "requires at least 1 arg"},
		{"report missing", []string{"report", filepath.Join(dir, "nope.json"), "-o", filepath.Join(dir, "r.html")}, "nope.json: no such file or directory"},
		{"report output", []string{"report", bank, "-o", filepath.Join(dir, "no", "r.html")}, "-o " + filepath.Join(dir, "no", "r.html") + ": directory"},
		{"same document twice", []string{"merge", bank, bank}, bank + " and " + bank + " are the same document: give each run once"},
		{"same document by two paths", []string{"merge", bank, filepath.Join(dir, ".", "bank.json")}, "are the same document"},
		{"same run twice", []string{"merge", runA, runB}, "merge: run-a.json and run-b.json hold the same run (run id 0123abcd): each run must be merged once"},
		{"negative count", []string{"merge", bank, negative}, "negative.json: runs[0].operations[0].ok: -5 is negative"},
		{"undecodable histogram", []string{"merge", damaged}, "damaged.json: runs[0].operations[0].service.hdr: "},
		{"histogram against count", []string{"merge", miscounted}, "miscounted.json: runs[0].operations[0].response.hdr: holds 1 values for 2 operations"},
		{"negative failures", []string{"report", badClass, "-o", filepath.Join(dir, "r.html")}, "class.json: runs[0].operations[0].failed.serialization: -1 is negative"},
		{"report over its input", []string{"report", bank, "-o", bank}, "-o " + bank + " is also an input"},
		{"merge over its input", []string{"merge", bank, "--output", "json", "-o", bank}, "-o " + bank + " is also an input"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := txload(t.Context(), nil, tt.args...)
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("stderr = %q, want one line with %q", r.stderr, tt.want)
			}
		})
	}
}
