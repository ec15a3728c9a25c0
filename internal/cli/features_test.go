package cli

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/metrics"
)

// Lists in --isolation and --selection run every combination on fresh data
// and end with one comparison table.
func TestVariantsComparison(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	js := jsonPath(t)
	r := txload(t.Context(), nil, "run", "bank", "--url", url, "--accounts", "1000",
		"--isolation", "rc,serializable", "--selection", "10,500", "--transactions", "100", "--progress", "0", "--json", js)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	table := r.stdout[strings.Index(r.stdout, "comparison:"):]
	rows := strings.Split(strings.TrimSpace(table), "\n")
	if len(rows) != 6 || !strings.Contains(rows[1], "isolation") || !strings.Contains(rows[1], "lost updates") || !strings.Contains(rows[1], "drift") {
		t.Fatalf("comparison table:\n%s", table)
	}
	doc := readDoc(t, js)
	want := []struct{ iso, sel string }{{"read committed", "10"}, {"read committed", "500"}, {"serializable", "10"}, {"serializable", "500"}}
	if len(doc.Runs) != len(want) {
		t.Fatalf("%d runs in JSON, want %d", len(doc.Runs), len(want))
	}
	for i, w := range want {
		run := doc.Runs[i]
		if run.Labels["isolation"] != w.iso || run.Labels["selection"] != w.sel {
			t.Errorf("run %d labels %v, want %v", i, run.Labels, w)
		}
		// Fresh data for each: the ledger holds this run's transfers only.
		if got, ok := run.Check.Values["ledger_transfers"], allOf(t, run).Ops[0].OK; got != ok {
			t.Errorf("run %d: ledger has %d transfers, the run committed %d", i, got, ok)
		}
		if !strings.Contains(rows[2+i], w.iso) {
			t.Errorf("table row %d = %q, want %s", i, rows[2+i], w.iso)
		}
	}
}

// init is set-based and re-runnable: the same settings keep the data, other
// settings are refused, --drop recreates.
func TestInitRerunAndDrop(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	count := func() (n int64) {
		if err := pgtest.Conn(t, url).QueryRow(context.Background(), "SELECT count(*) FROM bank_account").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if r := txload(t.Context(), nil, "init", "bank", "--url", url, "--accounts", "5000"); r.code != 0 || count() != 5000 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	r := txload(t.Context(), nil, "init", "bank", "--url", url, "--accounts", "5000")
	if r.code != 0 || !strings.Contains(r.stderr, "already holds 5000 accounts") {
		t.Fatalf("re-run: exit %d\n%s", r.code, r.stderr)
	}
	r = txload(t.Context(), nil, "init", "bank", "--url", url, "--accounts", "7000")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--drop recreates it") || count() != 5000 {
		t.Fatalf("other settings: exit %d\n%s", r.code, r.stderr)
	}
	if r := txload(t.Context(), nil, "init", "bank", "--url", url, "--accounts", "7000", "--drop"); r.code != 0 || count() != 7000 {
		t.Fatalf("--drop: exit %d\n%s", r.code, r.stderr)
	}
	// run --init keep uses the data in place: the ledger accumulates.
	for i := 0; i < 2; i++ {
		if r := txload(t.Context(), nil, "run", "bank", "--url", url, "--accounts", "7000", "--init", "keep", "--transactions", "20", "--progress", "0"); r.code != 0 {
			t.Fatalf("run --init keep: exit %d\n%s", r.code, r.stderr)
		}
	}
	var ledger int64
	if err := pgtest.Conn(t, url).QueryRow(context.Background(), "SELECT count(*) FROM bank_ledger").Scan(&ledger); err != nil || ledger == 0 {
		t.Fatalf("ledger %d: %v", ledger, err)
	}
	// After the fact, the identity is said not checked (retest 9's O1:
	// check: ok with no word of it).
	r = txload(t.Context(), nil, "check", "bank", "--url", url)
	if r.code != 0 || !strings.Contains(r.stdout, "not checked after the fact: which ledger rows a run wrote") {
		t.Fatalf("check after the run: exit %d\n%s", r.code, r.stdout)
	}
	// check needs a schema: a fresh database has none.
	r = txload(t.Context(), nil, "check", "bank", "--url", srv.NewDatabase(t))
	if r.code != ExitFailed || !strings.Contains(r.stderr, "run `txload init bank` first") {
		t.Fatalf("check on empty database: exit %d\n%s", r.code, r.stderr)
	}
}

// A run or sweep on a schema init made with other settings is refused as
// init refuses it: bad input found before anything is written, exit 2,
// with the run's way to recreate it.
func TestRunOtherSettingsExit2(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "bank", "--url", url, "--accounts", "1000"); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"run", "bank", "--duration", "1s"},
		{"sweep", "bank", "--slo", "p99<=1s", "--step-duration", "1s"},
	} {
		r := txload(t.Context(), nil, append(args, "--url", url, "--accounts", "2000", "--init", "keep", "--progress", "0")...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		want := "txload: init bank: the bank schema exists with other settings (accounts=1000 initial-balance=10000; asked: accounts=2000 initial-balance=10000); --drop recreates it (in a run: --init fresh)"
		if r.code != ExitUsage || lines[len(lines)-1] != want || r.stdout != "" {
			t.Fatalf("%s: exit %d, want 2 and the last line\n%s\nstdout:\n%s\nstderr:\n%s", args[0], r.code, want, r.stdout, r.stderr)
		}
	}
	if n, ledger := count(t, url, "SELECT count(*) FROM bank_account"), count(t, url, "SELECT count(*) FROM bank_ledger"); n != 1000 || ledger != 0 {
		t.Fatalf("the refused runs left %d accounts and %d ledger rows, want 1000 and 0", n, ledger)
	}
}

// --verbose-errors prints every failed attempt, one line each, and the
// progress line carries errors and retries.
func TestVerboseErrorsAndProgress(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	js := jsonPath(t)
	r := txload(t.Context(), nil, "run", "bank", "--url", url, "--isolation", "ser", "--selection", "2",
		"--duration", "2s", "--progress", "500ms", "--verbose-errors", "--json", js)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	op := allOf(t, readDoc(t, js).Runs[0]).Ops[0] // error lines come from the drain too
	var lines, progress int
	for _, l := range strings.Split(r.stderr, "\n") {
		switch {
		case strings.HasPrefix(l, "error: worker "):
			lines++
			if !strings.Contains(l, "transfer attempt ") || !strings.Contains(l, "SQLSTATE") {
				t.Errorf("error line %q", l)
			}
		case strings.Contains(l, " ops/s  errors "):
			progress++
		}
	}
	if errs := op.ErrorsTotal(); errs == 0 || int64(lines) != errs {
		t.Errorf("%d error lines for %d errors", lines, errs)
	}
	if progress < 3 {
		t.Errorf("%d progress lines in 2s at 500ms", progress)
	}
}

// The histograms in --json decode back to exactly what the run reported.
func TestJSONHistogramsDecode(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	js := jsonPath(t)
	if r := txload(t.Context(), nil, "run", "bank", "--url", url, "--transactions", "300", "--progress", "0", "--json", js); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	op := readDoc(t, js).Runs[0].Ops[0]
	for name, h := range map[string]struct {
		enc            string
		count, p99, mx int64
	}{
		"response": {op.Response.Encoded, op.Response.Count, op.Response.P99, op.Response.Max},
		"service":  {op.Service.Encoded, op.Service.Count, op.Service.P99, op.Service.Max},
		"lag":      {op.Lag.Encoded, op.Lag.Count, op.Lag.P99, op.Lag.Max},
	} {
		d, err := metrics.Decode(h.enc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d.TotalCount() != h.count || d.TotalCount() != op.OK || d.ValueAtQuantile(99) != h.p99 || d.Max() != h.mx {
			t.Errorf("%s decodes to count %d p99 %d max %d; JSON says %d %d %d (ok %d)", name,
				d.TotalCount(), d.ValueAtQuantile(99), d.Max(), h.count, h.p99, h.mx, op.OK)
		}
	}
	doc := readDoc(t, js)
	if urls, _ := doc.Config["urls"].([]any); len(urls) != 1 || doc.Server == nil {
		t.Errorf("config urls %v server %v", doc.Config["urls"], doc.Server)
	}
}

// Three instances of one run, each --instance i/3 at the total --rate and
// --concurrency: together they offer exactly what one process would, and
// the ledger holds exactly what they committed.
func TestInstancesShareTheRun(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "bank", "--url", url); r.code != 0 {
		t.Fatalf("init: %d\n%s", r.code, r.stderr)
	}
	var wg sync.WaitGroup
	results := make([]result, 3)
	paths := make([]string, 3)
	for i := range 3 {
		paths[i] = jsonPath(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = txload(t.Context(), nil, "run", "bank", "--url", url, "--instance", fmt.Sprintf("%d/3", i),
				"--rate", "300", "--concurrency", "7", "--duration", "2s", "--progress", "0", "--json", paths[i], "--isolation", "rc", "--transfer", "delta")
		}()
	}
	wg.Wait()
	var offered, ok int64
	for i, r := range results {
		if !r.ran() { // exit 0, or 1 only for BEHIND on a loaded machine
			t.Fatalf("instance %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
		mustContain(t, r.stdout, "run `txload check bank`")
		run := readDoc(t, paths[i]).Runs[0]
		offered += run.Offered
		ok += allOf(t, run).Ops[0].OK
	}
	if offered != 600 {
		t.Fatalf("the instances offered %d operations, want 600", offered)
	}
	if n := count(t, url, "SELECT count(*) FROM bank_ledger"); n != ok {
		t.Fatalf("ledger %d rows, instances committed %d", n, ok)
	}
}
