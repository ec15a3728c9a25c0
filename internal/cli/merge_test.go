package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
		if !r.ran() { // exit 0, or 1 only for BEHIND on a loaded machine
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
	url := tpcbDatabase(t)
	paths := instanceDocs(t, url, "--rate", "600")
	one := jsonPath(t)
	if r := txload(t.Context(), nil, "run", "select-only", "--url", url, "--init", "skip", "--rate", "600", "--concurrency", "6",
		"--duration", "2s", "--progress", "0", "--json", one); !r.ran() {
		t.Fatalf("single run: exit %d\n%s", r.code, r.stderr)
	}
	merged := filepath.Join(t.TempDir(), "merged.json")
	r := txload(t.Context(), nil, append(append([]string{"merge"}, paths...), "--output", "json", "-o", merged)...)
	if !r.ran() { // exit 1 only where an instance was BEHIND, as it failed
		t.Fatalf("merge: exit %d\n%s", r.code, r.stderr)
	}
	m := readDoc(t, merged)
	run := m.Runs[0]
	var ok, failed, offered, intervalOK, drainOK int64
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
		if d.Drain != nil {
			drainOK += d.Drain.Ops[0].OK
		}
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
	// pgbench's report counts what ended in the drain too, as the runs'
	// own reports did.
	pg := txload(t.Context(), nil, append(append([]string{"merge"}, paths...), "--output", "pgbench")...)
	mustContain(t, pg.stdout, "transaction type: <builtin: select only>", "number of clients: 6",
		fmt.Sprintf("number of transactions actually processed: %d\n", ok+drainOK))
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

// reportLines splits a pgbench report into its lines' keys and values
// ("number of clients: 2", "tps = 617.0 (without ...)"), the banner left
// out.
func reportLines(t *testing.T, stdout string) [][2]string {
	t.Helper()
	line := regexp.MustCompile(`^(.+?)(?:: | = )(.+)$`)
	var out [][2]string
	for _, l := range strings.Split(strings.TrimRight(stdout, "\n"), "\n") {
		if strings.HasPrefix(l, "pgbench (") {
			continue
		}
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("report line %q is neither KEY: VALUE nor KEY = VALUE:\n%s", l, stdout)
		}
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}

// Two `txload pgbench` runs (-c 2 -j 1 -T 2, -s 1 on a scale-2 database)
// merged with --output pgbench: every line of the report is what the two
// runs printed, as pgbench would print them for one run with both
// processes as its threads: the settings they share (the scale read from
// the tables, not -s), the sums of clients, threads, transactions and
// failures, the latency average and tps over the longer run, and the
// initial connection time as pgbench computes it for threads that start
// together once the last has connected: the longer of the two. The text
// summary's header counts the four clients.
func TestMergePgbenchRuns(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	pgbenchOK(t, nil, "-i", "-s", "2", db)
	var paths []string
	var runs [][][2]string
	for i := range 2 {
		paths = append(paths, filepath.Join(t.TempDir(), fmt.Sprintf("pgbench-%d.json", i)))
		r := pgbenchOK(t, nil, "-c", "2", "-j", "1", "-T", "2", "-s", "1", "--json", paths[i], db)
		runs = append(runs, reportLines(t, r.stdout))
		t.Logf("run %d:\n%s", i, r.stdout)
	}
	r := txload(t.Context(), nil, "merge", paths[0], paths[1], "--output", "pgbench")
	if r.code != 0 {
		t.Fatalf("merge --output pgbench: exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("merged:\n%s", r.stdout)
	merged := reportLines(t, r.stdout)
	if len(merged) != len(runs[0]) || len(runs[1]) != len(runs[0]) {
		t.Fatalf("merged report has %d lines, the runs' %d and %d:\n%s", len(merged), len(runs[0]), len(runs[1]), r.stdout)
	}
	value := func(run int, key string) string {
		for _, kv := range runs[run] {
			if kv[0] == key {
				return kv[1]
			}
		}
		t.Fatalf("run %d printed no %q", run, key)
		return ""
	}
	num := func(s string) float64 {
		f, err := strconv.ParseFloat(strings.Fields(s)[0], 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return f
	}
	// The runs' lengths, from what they printed: processed over tps.
	secs := func(run int) float64 {
		return num(value(run, "number of transactions actually processed")) / num(value(run, "tps"))
	}
	longest := max(secs(0), secs(1))
	processed := num(value(0, "number of transactions actually processed")) + num(value(1, "number of transactions actually processed"))
	failed := num(value(0, "number of failed transactions")) + num(value(1, "number of failed transactions"))
	clients := num(value(0, "number of clients")) + num(value(1, "number of clients"))
	close := func(got, want, tolerance float64) bool { return math.Abs(got-want) <= tolerance }
	for i, kv := range merged {
		key, got := kv[0], kv[1]
		if key != runs[0][i][0] {
			t.Errorf("line %d of the merged report is %q, the runs' %q", i+1, key, runs[0][i][0])
			continue
		}
		a, b := value(0, key), value(1, key)
		var ok bool
		var want string
		switch key {
		case "transaction type", "query mode", "maximum number of tries", "duration":
			ok, want = got == a && a == b, a
		case "scaling factor":
			ok, want = got == "2" && a == "2" && b == "2", "2, read from the tables (-s 1 was given)"
		case "number of clients", "number of threads", "number of transactions actually processed":
			want = strconv.Itoa(int(num(a) + num(b)))
			ok = got == want
		case "number of failed transactions":
			want = fmt.Sprintf("%d (%.3f%%)", int(failed), 100*failed/(processed+failed))
			ok = got == want
		case "latency average":
			// pgbench's average without per-transaction latencies: the
			// run's length times its clients over its transactions.
			w := 1e3 * longest * clients / (processed + failed)
			want = fmt.Sprintf("%.3f ms", w)
			ok = close(num(got), w, 0.0015)
		case "initial connection time":
			want = fmt.Sprintf("%.3f ms", max(num(a), num(b)))
			ok = got == want && num(got) > 0
		case "tps":
			w := processed / longest
			want = fmt.Sprintf("%f (without initial connection time)", w)
			ok = close(num(got), w, w*1e-6) && strings.HasSuffix(got, " (without initial connection time)")
		default:
			t.Errorf("line %q is not checked: add it to the test", key)
			continue
		}
		if !ok {
			t.Errorf("merged %s: %q, want %s (the runs printed %q and %q)", key, got, want, a, b)
		}
	}
	text := txload(t.Context(), nil, "merge", paths[0], paths[1])
	if text.code != 0 {
		t.Fatalf("merge: exit %d\n%s", text.code, text.stderr)
	}
	mustContain(t, firstLine(text.stdout), "pgbench on PostgreSQL", ": closed loop, 4 workers, ")
	mustContain(t, text.stdout, "connected 4 clients in ")
}

// A violation the audit of any merged document found is in the merged
// report and fails the merge, whatever the order of the documents (the
// merged check was the first document's: a later one's failed audit was
// dropped, and merge exited 0).
func TestMergeKeepsEveryViolation(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	clean, tampered := jsonPath(t), jsonPath(t)
	if r := txload(t.Context(), nil, "run", "bank", "--url", url, "--isolation", "ser", "-d", "1s", "--progress", "0", "--json", clean); r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := pgtest.Conn(t, url).Exec(t.Context(), "UPDATE bank_account SET balance = balance + 5 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if r := txload(t.Context(), nil, "run", "bank", "--url", url, "--isolation", "ser", "--init", "keep", "-d", "1s", "--progress", "0", "--json", tampered); r.code != 1 {
		t.Fatalf("the run after the tampering: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, order := range [][]string{{clean, tampered}, {tampered, clean}} {
		r := txload(t.Context(), nil, append([]string{"merge"}, order...)...)
		if r.code != 1 || !strings.Contains(r.stdout, "VIOLATION: ") || strings.Contains(r.stdout, "check: ok") {
			t.Errorf("merge %s: exit %d, want 1 with the VIOLATION\n%s\n%s", strings.Join(order, " "), r.code, r.stdout, r.stderr)
		}
	}
}

// A failover document merges with its failover section and its verdict:
// a run that lost acknowledged commits (async, the standby held back)
// exited 1, and so does the merge of its document, which prints the
// failover's figures and its FAILED line and keeps the section in --output
// json (merge dropped both, and printed the run as clean).
func TestMergeFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded pair")
	}
	t.Parallel()
	dir := t.TempDir()
	js, merged := filepath.Join(dir, "f.json"), filepath.Join(dir, "m.json")
	r := txload(t.Context(), nil, "failover", "bank", "--hold-standby", "1s", "--at", "1s", "--duration", "3s", "--progress", "0", "--json", js)
	if r.code != ExitFailed || !strings.Contains(r.stderr, "acknowledged commits lost by the failover") {
		t.Fatalf("the failover run: exit %d, want 1 with commits lost\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var run struct {
		Failover []struct {
			Lost int64 `json:"lost"`
		} `json:"failover"`
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &run); err != nil || len(run.Failover) != 1 || run.Failover[0].Lost == 0 {
		t.Fatalf("the run's --json failover section: %v %+v", err, run.Failover)
	}
	lost := fmt.Sprintf("FAILED (async): %d acknowledged commits lost by the failover", run.Failover[0].Lost)
	m := txload(t.Context(), nil, "merge", js)
	if m.code != ExitFailed || !strings.Contains(m.stdout, lost) || !strings.Contains(m.stdout, "Failover (async): ") ||
		!strings.Contains(m.stderr, lost) {
		t.Errorf("merge: exit %d, want 1 with %q\n%s\n%s", m.code, lost, m.stdout, m.stderr)
	}
	// The stored verdict edited away, the section's figures still fail
	// the merge, and the report shows them.
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, tb := range doc["tables"].([]any) {
		delete(tb.(map[string]any), "failed")
	}
	edited := filepath.Join(dir, "edited.json")
	if b, err := json.Marshal(doc); err != nil || os.WriteFile(edited, b, 0o644) != nil {
		t.Fatal(err)
	}
	derived := fmt.Sprintf("FAILED (async): %d acknowledged commits lost", run.Failover[0].Lost)
	if m := txload(t.Context(), nil, "merge", edited); m.code != ExitFailed || !strings.Contains(m.stderr, derived) {
		t.Errorf("merge of the document without its stored verdict: exit %d, want 1 with %q\n%s\n%s", m.code, derived, m.stdout, m.stderr)
	}
	html := filepath.Join(dir, "r.html")
	if r := txload(t.Context(), nil, "report", edited, "-o", html); r.code != ExitFailed || !strings.Contains(r.stderr, derived) {
		t.Errorf("report: exit %d, want 1 with %q\n%s", r.code, derived, r.stderr)
	} else if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), derived) {
		t.Errorf("the report of the document without its stored verdict lacks %q (%v)", derived, err)
	}
	if m := txload(t.Context(), nil, "merge", js, "--output", "json", "-o", merged); m.code != ExitFailed {
		t.Errorf("merge --output json: exit %d, want 1\n%s", m.code, m.stderr)
	}
	var back struct {
		Failover []struct {
			Lost int64 `json:"lost"`
		} `json:"failover"`
		Tables []struct {
			Failed string `json:"failed"`
		} `json:"tables"`
	}
	b, err = os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &back); err != nil || len(back.Failover) != 1 || back.Failover[0].Lost != run.Failover[0].Lost ||
		len(back.Tables) == 0 || !strings.HasPrefix(back.Tables[0].Failed, lost) {
		t.Errorf("the merged document's failover section %+v, tables %+v (%v)", back.Failover, back.Tables, err)
	}
}
