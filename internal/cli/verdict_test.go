package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// bankRun is `txload run bank` on url's 1000 accounts, at read committed,
// two clients, for d, with extra flags.
func bankRun(url, d string, extra ...string) []string {
	return append([]string{"run", "bank", "--url", url, "--init", "keep", "--accounts", "1000", "--isolation", "rc",
		"-c", "2", "-d", d, "--progress", "0"}, extra...)
}

// An audit that did not finish (its session ended by the administrator)
// is in the run's document as a failed audit, with its error: merge and
// report fail with it (exit 1) and show it, the HTML in red. The document
// had no check at all, like an --instance run's, and merge exited 0.
func TestAuditErrorInDocument(t *testing.T) {
	t.Parallel()
	url := newBank(t)
	dir := t.TempDir()
	js, page := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.html")
	ctx := t.Context()
	done := make(chan result, 1)
	go func() { done <- txload(ctx, nil, bankRun(url, "2s", "--json", js, "--html", page)...) }()
	// Once the run's transfers are under way (bank_run recorded, which
	// reads bank_meta), bank_meta is locked: the audit, which reads it,
	// waits, and its session is ended.
	lock := pgtest.Conn(t, url)
	held := beside(ctx, lock, "SELECT count(*) FROM bank_ledger", 10, func() (bool, error) {
		_, err := lock.Exec(ctx, "BEGIN; LOCK TABLE bank_meta IN ACCESS EXCLUSIVE MODE")
		return false, err
	})
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	admin := pgtest.Conn(t, url)
	for {
		var killed int64
		if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database()
			AND pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND query LIKE '%bank_meta%'`).Scan(&killed); err != nil {
			t.Fatal(err)
		}
		if killed > 0 {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the run ended (exit %d) before its audit waited on bank_meta\n%s\n%s", r.code, r.stdout, r.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if _, err := lock.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.code != ExitFailed || !strings.Contains(r.stderr, "57P01") {
		t.Fatalf("run: exit %d, want 1 with the audit's error\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var doc struct {
		Runs []struct {
			Check *struct {
				Error      string
				Violations []string
			}
		}
	}
	if b, err := os.ReadFile(js); err != nil || json.Unmarshal(b, &doc) != nil || len(doc.Runs) != 1 {
		t.Fatalf("reading %s: %v", js, err)
	}
	c := doc.Runs[0].Check
	if c == nil || !strings.Contains(c.Error, "check bank: ") || !strings.Contains(c.Error, "57P01") || len(c.Violations) != 0 {
		t.Fatalf("the document's check: %+v, want the audit's error", c)
	}
	failed := "AUDIT FAILED: " + c.Error
	for _, output := range []string{"text", "pgbench", "json", "html"} {
		out := filepath.Join(dir, "merged."+output)
		m := txload(ctx, nil, "merge", js, "--output", output, "-o", out)
		b, _ := os.ReadFile(out)
		if m.code != ExitFailed || !strings.Contains(m.stderr, failed) {
			t.Errorf("merge --output %s: exit %d, want 1 with %q\n%s", output, m.code, failed, m.stderr)
		}
		if output == "text" && (!strings.Contains(string(b), failed) || strings.Contains(string(b), "check: ok")) {
			t.Errorf("merge's text lacks %q or says check: ok:\n%s", failed, b)
		}
		if output == "json" {
			var back struct {
				Runs []struct{ Check struct{ Error string } }
			}
			if err := json.Unmarshal(b, &back); err != nil || len(back.Runs) != 1 || back.Runs[0].Check.Error != c.Error {
				t.Errorf("merged --output json: %v, check %+v, want the error %q", err, back.Runs, c.Error)
			}
		}
	}
	redLine := `<span class="fail">` + strings.ReplaceAll(failed, `"`, "&#34;")
	report := filepath.Join(dir, "report.html")
	rr := txload(ctx, nil, "report", js, "-o", report)
	if rr.code != ExitFailed || !strings.Contains(rr.stderr, failed) {
		t.Errorf("report: exit %d, want 1 with %q\n%s", rr.code, failed, rr.stderr)
	}
	for _, p := range []string{page, report, filepath.Join(dir, "merged.html")} {
		if b, err := os.ReadFile(p); err != nil || !strings.Contains(string(b), redLine) || strings.Contains(string(b), "check: ok") {
			t.Errorf("%s lacks %q in red (%v)", p, failed, err)
		}
	}
}

// A run whose clients aborted failed (exit 1); its merge keeps the
// ABORTED note in every output and fails too, and report fails with it.
// merge printed the run as clean (check: ok, exit 0) and dropped the note.
// Documents of different txload versions merge with a warning.
func TestMergeKeepsAborted(t *testing.T) {
	t.Parallel()
	url := newBank(t)
	dir := t.TempDir()
	ctx := t.Context()
	clean, aborted := filepath.Join(dir, "clean.json"), filepath.Join(dir, "aborted.json")
	if r := txload(ctx, nil, bankRun(url, "1s", "--json", clean)...); r.code != 0 {
		t.Fatalf("clean run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The 30th transfer after this raises an error no retry cures: its
	// client aborts.
	if _, err := pgtest.Conn(t, url).Exec(ctx, `CREATE SEQUENCE boom_at;
		CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
		IF nextval('boom_at') = 30 THEN RAISE EXCEPTION 'boom'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER boom BEFORE INSERT ON bank_ledger FOR EACH ROW EXECUTE FUNCTION boom()`); err != nil {
		t.Fatal(err)
	}
	r := txload(ctx, nil, bankRun(url, "2s", "--json", aborted)...)
	if r.code != ExitFailed || !strings.Contains(r.stdout, "ABORTED: 1 client ended") {
		t.Fatalf("the run with a client aborted: exit %d, want 1 with ABORTED\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var notes []string
	for _, n := range readDoc(t, aborted).Runs[0].Notes {
		if strings.HasPrefix(n, "ABORTED: ") {
			notes = append(notes, n)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "boom") {
		t.Fatalf("the run's ABORTED notes: %q", notes)
	}
	note := notes[0]
	for _, output := range []string{"text", "pgbench", "json", "html"} {
		out := filepath.Join(dir, "merged."+output)
		m := txload(ctx, nil, "merge", aborted, "--output", output, "-o", out)
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if m.code != ExitFailed || !strings.Contains(m.stderr, note) {
			t.Errorf("merge --output %s: exit %d, want 1 with %q\n%s", output, m.code, note, m.stderr)
		}
		if output != "pgbench" && !strings.Contains(string(b), "ABORTED: 1 client ended on an error no retry cures") {
			t.Errorf("merge --output %s lacks %q:\n%.3000s", output, note, b)
		}
		if (output == "text" || output == "html") && !strings.Contains(string(b), "merged from 1 document: aborted.json") {
			t.Errorf("merge --output %s lacks the summary's other notes:\n%.3000s", output, b)
		}
	}
	if rr := txload(ctx, nil, "report", aborted, "-o", filepath.Join(dir, "r.html")); rr.code != ExitFailed || !strings.Contains(rr.stderr, note) {
		t.Errorf("report: exit %d, want 1 with %q\n%s", rr.code, note, rr.stderr)
	}
	// A clean document merges clean, with no ABORTED line.
	if m := txload(ctx, nil, "merge", clean); m.code != 0 || strings.Contains(m.stdout, "ABORTED") || strings.Contains(m.stderr, "warning") {
		t.Errorf("merge of the clean run: exit %d\n%s\n%s", m.code, m.stdout, m.stderr)
	}

	// Another version's document (its run id changed too: a run of its
	// own).
	var raw map[string]any
	b, err := os.ReadFile(clean)
	if err != nil || json.Unmarshal(b, &raw) != nil {
		t.Fatal(err)
	}
	raw["txload_version"], raw["run_id"] = "0.9.0", "0123456789abcdef01234567"
	older := filepath.Join(dir, "older.json")
	if b, err := json.Marshal(raw); err != nil || os.WriteFile(older, b, 0o644) != nil {
		t.Fatal(err)
	}
	m := txload(ctx, nil, "merge", clean, older)
	want := "txload: merge: warning: clean.json was written by txload test, older.json by txload 0.9.0"
	if m.code != 0 || !strings.Contains(m.stderr, want) {
		t.Errorf("merge of two versions' documents: exit %d, want 0 with %q\n%s", m.code, want, m.stderr)
	}
}

// A sweep whose audit found violations shows them on its page (--html,
// and report of its --json, which exits 1 as the sweep did), in red,
// and its CSV's check column says so on every step. Neither page showed
// the audit, and the CSV had no verdict.
func TestSweepVerdictOnPages(t *testing.T) {
	t.Parallel()
	url := newBank(t)
	ctx := t.Context()
	if _, err := pgtest.Conn(t, url).Exec(ctx, "UPDATE bank_account SET balance = balance + 500 WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	js, page, csvPath, report := filepath.Join(dir, "s.json"), filepath.Join(dir, "s.html"), filepath.Join(dir, "s.csv"), filepath.Join(dir, "r.html")
	r := txload(ctx, nil, "sweep", "bank", "--url", url, "--init", "keep", "--accounts", "1000", "--isolation", "rc", "-c", "2",
		"--slo", "p99<=5s", "--start", "20", "--max-steps", "2", "--step-duration", "1s", "--step-warmup", "0s", "--progress", "0",
		"--json", js, "--html", page, "--csv", csvPath)
	if r.code != ExitFailed || !strings.Contains(r.stdout, "VIOLATION: ") {
		t.Fatalf("sweep of tampered data: exit %d, want 1 with its VIOLATIONs\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if rr := txload(ctx, nil, "report", js, "-o", report); rr.code != ExitFailed || !strings.Contains(rr.stderr, "check found violations: ") {
		t.Errorf("report of the sweep: exit %d, want 1 with its violations\n%s", rr.code, rr.stderr)
	}
	for _, p := range []string{page, report} {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), `<span class="fail">VIOLATION: `) || strings.Contains(string(b), "check: ok") {
			t.Errorf("%s lacks the VIOLATIONs in red (%v)", p, err)
		}
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("CSV: %v, %q", err, rows)
	}
	if rows[0][len(rows[0])-1] != "check" {
		t.Errorf("CSV header %q, want a last column check", rows[0])
	}
	for _, row := range rows[1:] {
		if row[len(row)-1] != "violation" {
			t.Errorf("CSV row %q: check is not violation", row)
		}
	}
}

// A run that did not keep its --rate failed (exit 1, BEHIND or
// SATURATED): its document says why, and merge and report fail with it.
// They exited 0 over it. pgbench's own runs fall behind a --rate without
// failing, as pgbench's do: their documents merge clean.
func TestMergeFailsOnRateNotKept(t *testing.T) {
	t.Parallel()
	url := newBank(t)
	dir := t.TempDir()
	ctx := t.Context()
	behind := filepath.Join(dir, "behind.json")
	r := txload(ctx, nil, bankRun(url, "1s", "--rate", "100000", "--json", behind)...)
	why := readDoc(t, behind).Runs[0].RunFailed
	if r.code != ExitFailed || !strings.Contains(why, "the database did not sustain 100000 ops/s") || !strings.Contains(r.stderr, why) {
		t.Fatalf("the run at 100000 ops/s: exit %d, its document's run_failed %q\n%s", r.code, why, r.stderr)
	}
	if m := txload(ctx, nil, "merge", behind); m.code != ExitFailed || !strings.Contains(m.stderr, why) {
		t.Errorf("merge: exit %d, want 1 with %q\n%s", m.code, why, m.stderr)
	}
	if rr := txload(ctx, nil, "report", behind, "-o", filepath.Join(dir, "r.html")); rr.code != ExitFailed || !strings.Contains(rr.stderr, why) {
		t.Errorf("report: exit %d, want 1 with %q\n%s", rr.code, why, rr.stderr)
	}

	pgb := srv.NewDatabase(t)
	if r := txload(ctx, nil, "pgbench", "-i", "-s", "1", pgb); r.code != 0 {
		t.Fatalf("pgbench -i: exit %d\n%s", r.code, r.stderr)
	}
	late := filepath.Join(dir, "pgbench.json")
	if r := txload(ctx, nil, "pgbench", "-S", "-R", "100000", "-T", "1", "--json", late, pgb); r.code != 0 {
		t.Fatalf("pgbench -R 100000: exit %d, want 0 (pgbench's runs fall behind without failing)\n%s", r.code, r.stderr)
	}
	if d := readDoc(t, late).Runs[0]; d.Unstarted == 0 || d.RunFailed != "" {
		t.Fatalf("pgbench's document: %d never started, run_failed %q: want some, and none", d.Unstarted, d.RunFailed)
	}
	if m := txload(ctx, nil, "merge", late); m.code != 0 {
		t.Errorf("merge of pgbench's run: exit %d, want 0\n%s", m.code, m.stderr)
	}
}

// A stop signal ends merge while its -o is a pipe whose reader takes
// nothing (a stalled >(…)), with exit 130: the write waited on the reader
// and the first signal was not obeyed (a 75 kB page held a SIGTERM 18 s).
func TestMergeStalledReaderInterrupted(t *testing.T) {
	t.Parallel()
	url := newBank(t)
	dir := t.TempDir()
	js := filepath.Join(dir, "run.json")
	// Its intervals every 10 ms make a document larger than a pipe takes.
	if r := txload(t.Context(), nil, bankRun(url, "3s", "--json", js, "--progress", "10ms")...); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil { // blocking, as a shell's
		t.Fatal(err)
	}
	// The pipe's buffer made 4 KiB (F_SETPIPE_SZ): the document is more.
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(p[1]), 1031, 4096); e != 0 {
		t.Skip("no F_SETPIPE_SZ here:", e)
	}
	if st, err := os.Stat(js); err != nil || st.Size() < 1<<14 {
		t.Fatalf("the document is %v bytes (%v): want more than the pipe's buffer takes", st.Size(), err)
	}
	pr, pw := os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	defer pr.Close()
	defer pw.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan result, 1)
	go func() { done <- txload(ctx, nil, "merge", js, "--output", "json", "-o", "/dev/fd/"+strconv.Itoa(p[1])) }()
	time.Sleep(time.Second)
	cancel() // the stop signal
	select {
	case r := <-done:
		if r.code != ExitInterrupted {
			t.Fatalf("merge to a stalled reader, interrupted: exit %d, want %d\n%s", r.code, ExitInterrupted, r.stderr)
		}
	case <-time.After(30 * time.Second): // 5 s a write may wait after the stop
		t.Fatal("merge to a stalled reader did not end at the stop signal")
	}
}

// merge prints a document's check as the run did, its names quoted: a
// document written by an older txload (or edited) with escape codes in a
// violation printed them raw, and a terminal showed a "check: ok" of the
// violation's own (a retry of the eighth retest).
func TestMergeQuotesDocumentText(t *testing.T) {
	t.Parallel()
	url := newBank(t)
	dir := t.TempDir()
	js := filepath.Join(dir, "run.json")
	if r := txload(t.Context(), nil, bankRun(url, "1s", "--json", js)...); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	var raw map[string]any
	b, err := os.ReadFile(js)
	if err != nil || json.Unmarshal(b, &raw) != nil {
		t.Fatal(err)
	}
	check := raw["runs"].([]any)[0].(map[string]any)["check"].(map[string]any)
	check["violations"] = []any{"column bank_account.\x1b[2K\x1b[1A\r\ncheck: ok\x1b[8m (integer) is one init does not make"}
	raw["server"].(map[string]any)["version"] = "18.3\x1b[8m" // hid every line after the server's
	raw["workload"] = "bank\ncheck: ok"                       // printed a line of its own
	edited := filepath.Join(dir, "edited.json")
	if b, err := json.Marshal(raw); err != nil || os.WriteFile(edited, b, 0o644) != nil {
		t.Fatal(err)
	}
	m := txload(t.Context(), nil, "merge", edited)
	if m.code != ExitFailed || strings.ContainsAny(m.stdout+m.stderr, "\x1b\r") ||
		!strings.Contains(m.stdout, "VIOLATION: column bank_account.\\x1b[2K\\x1b[1A\\x0d\n  check: ok\\x1b[8m") ||
		!strings.Contains(m.stdout, `18.3\x1b[8m`) || regexp.MustCompile(`(?m)^check: ok`).MatchString(m.stdout) {
		t.Errorf("merge of a document with escape codes in its violation and server: exit %d\n%q\n%q", m.code, m.stdout, m.stderr)
	}
	if m := txload(t.Context(), nil, "merge", edited, "--output", "pgbench"); strings.ContainsAny(m.stdout+m.stderr, "\x1b\r") {
		t.Errorf("merge --output pgbench printed escape codes:\n%q\n%q", m.stdout, m.stderr)
	}
	// A second run's document of another version (merge warns, naming
	// both), and a right-to-left override in its configuration: the
	// warning printed the version raw, and a terminal showed "check: ok"
	// over the merge's failure (retest 10).
	raw["txload_version"] = "dev\r\x1b[2K\x1b[1Acheck: ok\x1b[8m"
	raw["run_id"] = "other-" + fmt.Sprint(raw["run_id"])
	raw["config"].(map[string]any)["note\u202e"] = "ko :kcehc\u2028"
	other := filepath.Join(dir, "other.json")
	if b, err := json.Marshal(raw); err != nil || os.WriteFile(other, b, 0o644) != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"merge", edited, other}, {"merge", edited, other, "--output", "pgbench"}, {"report", edited, other, "-o", filepath.Join(dir, "r.html")}} {
		m := txload(t.Context(), nil, args...)
		out := m.stdout + m.stderr
		if args[0] == "report" {
			b, _ := os.ReadFile(args[len(args)-1])
			out += string(b)
		}
		if m.code == ExitOK || strings.ContainsAny(out, "\x1b\r\u202e\u2028") {
			t.Errorf("%v over a document of another version with escape codes in it: exit %d, printed raw:\n%q", args, m.code, out)
		}
	}
}
