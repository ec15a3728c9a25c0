package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"image"
	_ "image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var stepLine = regexp.MustCompile(`(?m)^\s+\d+\s+\d.*\s(PASS|FAIL.*)$`)

// A sweep of select-only on the embedded server climbs until the SLO
// breaks, bisects, and reports a maximum; its CSV and charts match the
// printed steps.
func TestSweepFindsMaximum(t *testing.T) {
	timingSensitive(t)
	url := srv.NewDatabase(t)
	dir := t.TempDir()
	csvPath, png, svg := filepath.Join(dir, "sweep.csv"), filepath.Join(dir, "sweep.png"), filepath.Join(dir, "sweep.svg")
	// The machine may be shared (a p99 of 250 ms at 200 ops/s was seen at
	// load 20): a short warm-up and a loose SLO keep the first step
	// passing; what the test is about is the sweep's steps, CSV and chart.
	args := []string{"sweep", "select-only", "--url", url, "--init", "keep", "--slo", "p99<=1s",
		"--step-duration", "600ms", "--step-warmup", "300ms", "--start", "200", "--factor", "4", "--max-steps", "6",
		"--csv", csvPath, "--chart", png}
	r := txload(t.Context(), nil, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "maximum sustainable rate: ", "SLO p99<=1s")
	t.Log(r.stdout)
	steps := stepLine.FindAllString(r.stdout, -1)
	if len(steps) == 0 || len(steps) > 6 {
		t.Fatalf("%d step lines:\n%s", len(steps), r.stdout)
	}
	if !strings.Contains(steps[0], "PASS") {
		t.Errorf("the first step (200 ops/s) failed:\n%s", r.stdout)
	}

	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows[0], ","); got != "step,target_ops,achieved_ops,p50_us,p99_us,max_us,errors,pass,check" {
		t.Errorf("CSV header %q", got)
	}
	if len(rows)-1 != len(steps) {
		t.Errorf("CSV has %d rows, stdout %d steps", len(rows)-1, len(steps))
	}
	if rows[1][0] != "1" || rows[1][1] != "200" || rows[1][7] != "true" || rows[1][8] != "ok" {
		t.Errorf("first CSV row %q", rows[1])
	}

	b, err := os.ReadFile(png)
	if err != nil {
		t.Fatal(err)
	}
	if _, format, err := image.Decode(bytes.NewReader(b)); err != nil || format != "png" {
		t.Fatalf("chart: format %q, %v", format, err)
	}

	// The same sweep, kept short, drawn as SVG.
	r = txload(t.Context(), nil, "sweep", "select-only", "--url", url, "--init", "keep", "--slo", "p99<=1s,max<2s",
		"--step-duration", "1s", "--step-warmup", "0s", "--start", "200", "--max-steps", "2", "--chart", svg)
	if r.code != 0 {
		t.Fatalf("svg sweep: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "maximum sustainable rate: ", "stopped after --max-steps 2")
	sb, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	var root struct{ XMLName xml.Name }
	if err := xml.Unmarshal(sb, &root); err != nil || root.XMLName.Local != "svg" {
		t.Fatalf("chart.svg: root %q, %v", root.XMLName.Local, err)
	}
}

// When even --start breaks the SLO, sweep says so and exits 1.
func TestSweepNoMaximum(t *testing.T) {
	url := srv.NewDatabase(t)
	r := txload(t.Context(), nil, "sweep", "select-only", "--url", url, "--init", "keep", "--slo", "max<1us",
		"--step-duration", "1s", "--step-warmup", "0s", "--start", "100")
	if r.code != ExitFailed {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "no sustainable rate: even --start 100 ops/s fails")
	if n := len(stepLine.FindAllString(r.stdout, -1)); n != 1 {
		t.Fatalf("%d steps, want 1:\n%s", n, r.stdout)
	}
}

// Bad input is a one-line usage error naming the flag, before the database
// is touched.
func TestSweepBadInput(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	for _, tc := range []struct {
		name, want string
		args       []string
	}{
		{name: "slo words", args: []string{"--slo", "p99 <= fast"}, want: "--slo"},
		{name: "slo percentile", args: []string{"--slo", "p42<=1ms"}, want: "--slo"},
		{name: "slo empty", args: []string{"--slo", ""}, want: "--slo"},
		{name: "slo missing", args: nil, want: "--slo"},
		{name: "rate", args: []string{"--slo", "p99<=5ms", "--rate", "100"}, want: "--rate"},
		{name: "chart gif", args: []string{"--slo", "p99<=5ms", "--chart", "foo.gif"}, want: "--chart"},
		{name: "factor 1", args: []string{"--slo", "p99<=5ms", "--factor", "1"}, want: "--factor"},
		{name: "factor beyond the schedule", args: []string{"--slo", "p99<=5ms", "--factor", "1e99"},
			want: "--factor 1e+99 makes the second step 1e+101 ops/s (--start × --factor), more than one operation per nanosecond"},
		{name: "start beyond the schedule", args: []string{"--slo", "p99<=5ms", "--start", "2e9"}, want: "--start 2e+09 is more than one operation per nanosecond"},
		{name: "start 0", args: []string{"--slo", "p99<=5ms", "--start", "0"}, want: "--start"},
		{name: "error rate", args: []string{"--slo", "p99<=5ms", "--max-error-rate", "2"}, want: "--max-error-rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"sweep", "select-only", "--url", url, "--init", "keep"}, tc.args...)
			r := txload(t.Context(), nil, args...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != ExitUsage || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 and one line containing %q", r.code, r.stderr, tc.want)
			}
		})
	}
	if n := count(t, url, `SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'pgbench_%'`); n != 0 {
		t.Fatalf("bad input created %d tables", n)
	}
}

// A sweep of a workload with an audit of its own (bank's ledger held to
// the transfers txload saw commit) is audited once, after the last step,
// over what every step committed: the schema's state before the first
// step is the audit's baseline, so the audit must see every step's
// commits, not the last step's alone. A real violation (a trigger that
// writes each transfer's ledger row twice) then ends the sweep with exit 1.
func TestSweepAuditsEveryStep(t *testing.T) {
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "bank", "--url", url, "--accounts", "1000"); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	// A loose SLO and any error rate: the test is about the audit, not
	// the steps' verdicts.
	sweep := []string{"sweep", "bank", "--url", url, "--accounts", "1000", "--init", "keep", "--slo", "p99<=30s", "--max-error-rate", "1",
		"--step-duration", "1s", "--step-warmup", "100ms", "--start", "50", "--max-steps", "2", "--concurrency", "4", "--progress", "0"}
	var r result
	var base int64
	for try := 1; ; try++ {
		base = count(t, url, "SELECT count(*) FROM bank_ledger")
		r = txload(t.Context(), nil, sweep...)
		if strings.Contains(r.stdout, "VIOLATION") || r.code != 0 && !strings.Contains(r.stderr, "no sustainable rate") {
			t.Fatalf("exit %d, want no violation\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		mustContain(t, r.stdout, "check: ok")
		if len(stepLine.FindAllString(r.stdout, -1)) == 2 {
			break
		}
		// A loaded machine can fail the first step (an operation still
		// in flight when its second ended): the sweep stops there, and
		// one step does not test the sum.
		if try == 3 {
			t.Fatalf("the first step failed in %d sweeps:\n%s", try, r.stdout)
		}
	}
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// Every transfer of the two steps, warm-ups and drains included, is
	// in the audit's count: the rows the ledger gained.
	m := regexp.MustCompile(`(?m)^ambiguous: +0 \(0 of them committed, per the ledger: (\d+) rows = (\d+) committed \+ 0\)$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no reconciliation line with 0 ambiguous:\n%s", r.stdout)
	}
	before := count(t, url, "SELECT count(*) FROM bank_ledger")
	if m[1] != m[2] || m[1] != strconv.FormatInt(before-base, 10) {
		t.Fatalf("the audit counted %s ledger rows and %s commits; the sweep added %d rows:\n%s", m[1], m[2], before-base, r.stdout)
	}

	sqlExec(t, url, `CREATE FUNCTION twice() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF pg_trigger_depth() = 1 THEN
		INSERT INTO bank_ledger SELECT NEW.*;
	END IF;
	RETURN NULL;
END $$`, `CREATE TRIGGER twice AFTER INSERT ON bank_ledger FOR EACH ROW EXECUTE FUNCTION twice()`)
	r = txload(t.Context(), nil, sweep...)
	if r.code != ExitFailed {
		t.Fatalf("a sweep whose audit found a violation: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "VIOLATION: the server holds ", "applied twice or by someone else")
	mustContain(t, r.stderr, "check found violations: ")
	if after := count(t, url, "SELECT count(*) FROM bank_ledger"); after == before {
		t.Fatalf("the tampered sweep wrote no ledger row")
	}
}
