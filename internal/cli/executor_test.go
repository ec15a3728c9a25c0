package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// An error no retry cures ends the client, as pgbench does: the run says
// which, with the server's message, its SQLSTATE and the script's file and
// line, and exits 1. --continue-on-error keeps the clients going and
// shows the first message in the summary; a run in which nothing
// committed, every transaction failed, exits 1 saying so (it exited 0).
func TestScriptErrorAbortsClients(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	file := writeScript(t, "div.sql", "\\set x 0\nSELECT 1 / :x;\n")
	r := txload(t.Context(), nil, "run", "script", "--file", file, "--url", url, "--concurrency", "2", "--duration", "1s", "--progress", "0")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stderr, "div.sql:2: ERROR: division by zero (SQLSTATE 22012)", "client 0 aborted")
	mustContain(t, r.stdout, "ABORTED: 2 clients ended on an error no retry cures")
	last := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if l := last[len(last)-1]; !strings.Contains(l, "2 clients aborted") || !strings.Contains(l, "division by zero (SQLSTATE 22012)") {
		t.Errorf("last line %q", l)
	}

	js := filepath.Join(t.TempDir(), "failed.json")
	r = txload(t.Context(), nil, "run", "script", "--file", file, "--url", url, "--concurrency", "2", "--duration", "1s",
		"--progress", "0", "--continue-on-error", "--json", js)
	if r.code != 1 {
		t.Fatalf("--continue-on-error: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "first other error: ", "div.sql:2: ERROR: division by zero (SQLSTATE 22012)", "failed by class: other")
	mustContain(t, r.stderr, "txload: nothing committed: all ")
	if m := txload(t.Context(), nil, "merge", js); m.code != 1 || !strings.Contains(m.stderr, "nothing committed: all ") {
		t.Errorf("merge of the run: exit %d, want 1 saying nothing committed\n%s", m.code, m.stderr)
	}

	// A pipeline that commits a block of its own, then a statement that
	// fails at the Sync (a deferred unique constraint): each is of unknown
	// outcome, never retried, and the run does not say nothing committed
	// over the blocks it did (retest 11).
	admin := pgtest.Conn(t, url)
	if _, err := admin.Exec(t.Context(), `CREATE TABLE du (k int UNIQUE DEFERRABLE INITIALLY DEFERRED); INSERT INTO du VALUES (0); CREATE TABLE pa (k int)`); err != nil {
		t.Fatal(err)
	}
	pipe := writeScript(t, "pipe.sql", "\\startpipeline\nBEGIN;\nINSERT INTO pa VALUES (:client_id);\nCOMMIT;\nINSERT INTO du VALUES (0);\n\\endpipeline\n")
	r = txload(t.Context(), nil, "run", "script", "--file", pipe, "--url", url, "-M", "extended", "--concurrency", "2", "--transactions", "3",
		"--progress", "0", "--continue-on-error", "--max-tries", "3")
	var blocks int
	if err := admin.QueryRow(t.Context(), `SELECT count(*) FROM pa`).Scan(&blocks); err != nil {
		t.Fatal(err)
	}
	if r.code != 1 || blocks != 6 || !strings.Contains(r.stdout, "failed by class: ambiguous 6") ||
		!strings.Contains(r.stderr, "txload: none seen to commit: all 6 operations failed, 6 of unknown outcome (which may have committed)") {
		t.Errorf("pipeline committing a block, failing at its Sync: exit %d, %d blocks committed (want 1, 6: none retried)\n%s\n%s", r.code, blocks, r.stdout, r.stderr)
	}

	// A script whose failing part comes after a part that committed: a
	// pipeline's later segment that commits after the first failed at its
	// Sync, and a script of two transactions whose second fails with a
	// serialization failure (retest 12: counted failed, retried, the
	// committed part applied three times, and "nothing committed").
	if _, err := admin.Exec(t.Context(), `CREATE FUNCTION ser() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'ser' USING ERRCODE = '40001'; END $$`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, text string }{
		{"later.sql", "\\startpipeline\nINSERT INTO du VALUES (0);\n\\syncpipeline\nINSERT INTO pa VALUES (:client_id);\n\\endpipeline\n"},
		{"two.sql", "INSERT INTO pa VALUES (pg_backend_pid());\nSELECT ser();\n"},
	} {
		if _, err := admin.Exec(t.Context(), `TRUNCATE pa`); err != nil {
			t.Fatal(err)
		}
		r = txload(t.Context(), nil, "run", "script", "--file", writeScript(t, c.name, c.text), "--url", url, "-M", "extended", "--concurrency", "2",
			"--transactions", "3", "--progress", "0", "--continue-on-error", "--max-tries", "3")
		if err := admin.QueryRow(t.Context(), `SELECT count(*) FROM pa`).Scan(&blocks); err != nil {
			t.Fatal(err)
		}
		if r.code != 1 || blocks != 6 || !strings.Contains(r.stdout, "failed by class: ambiguous 6") || strings.Contains(r.stdout, "retried: 3") ||
			!strings.Contains(r.stderr, "none seen to commit: all 6 operations failed, 6 of unknown outcome") {
			t.Errorf("%s: exit %d, %d rows committed (want 1, 6: none retried)\n%s\n%s", c.name, r.code, blocks, r.stdout, r.stderr)
		}
		// Each client goes on on its connection, still good: it
		// reconnected, its session lost (retest 14).
		var backends int
		if err := admin.QueryRow(t.Context(), `SELECT count(DISTINCT k) FROM pa`).Scan(&backends); err != nil || c.name == "two.sql" && backends != 2 {
			t.Errorf("%s: the rows were written by %d backends (%v), want 2: one per client", c.name, backends, err)
		}
	}

	// An error no retry cures after a committed write still ends the
	// client (it went on, the error counted of unknown outcome), and says
	// the write committed.
	if _, err := admin.Exec(t.Context(), `TRUNCATE pa`); err != nil {
		t.Fatal(err)
	}
	r = txload(t.Context(), nil, "run", "script", "--file", writeScript(t, "after.sql", "INSERT INTO pa VALUES (1);\nSELECT 1 / 0;\n"), "--url", url,
		"--concurrency", "2", "--transactions", "3", "--progress", "0")
	if err := admin.QueryRow(t.Context(), `SELECT count(*) FROM pa`).Scan(&blocks); err != nil {
		t.Fatal(err)
	}
	if r.code != 1 || blocks != 2 || !strings.Contains(r.stdout, "ABORTED: 2 clients") ||
		!strings.Contains(r.stderr, "division by zero (SQLSTATE 22012) (after this attempt committed a write)") {
		t.Errorf("a write, then a division by zero: exit %d, %d rows (want 1, 2: each client aborted after its first)\n%s\n%s", r.code, blocks, r.stdout, r.stderr)
	}

	// One transaction in two fails: the run goes on, and exits 0.
	half := writeScript(t, "half.sql", "\\set x random(0, 1)\nSELECT 1 / :x;\n")
	r = txload(t.Context(), nil, "run", "script", "--file", half, "--url", url, "--concurrency", "2", "--duration", "1s",
		"--progress", "0", "--continue-on-error")
	if r.code != 0 {
		t.Fatalf("--continue-on-error, half failing: exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "failed by class: other")
}

// A Bind the server refuses with a protocol violation (08P01) is not a lost
// connection: it ends the client with its message and the run exits 1.
func TestProtocolViolationReported(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	file := writeScript(t, "bind.sql", "SELECT $1;\n")
	r := txload(t.Context(), nil, "run", "script", "--file", file, "--url", url, "--concurrency", "1", "--duration", "1s",
		"--progress", "0", "--protocol", "extended")
	if r.code != 1 || !strings.Contains(r.stderr, "SQLSTATE 08P") || strings.Contains(r.stdout, "connection") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)

// tps and latency are taken over the measured period until the last
// transaction ended, as pgbench takes them: a script that sleeps 3 s, run
// for 1 s on 2 clients, gives pgbench's tps within 5%.
func TestSleepingScriptRateLikePgbench(t *testing.T) {
	timingSensitive(t)
	t.Parallel()
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		t.Skip("pgbench is not installed (Debian: postgresql-contrib; .ci/run installs it)")
	}
	url := srv.NewDatabase(t)
	file := writeScript(t, "sleep.sql", "\\sleep 3 s\n")
	// Both at once: the clients only sleep.
	var out []byte
	wait := started(func() (err error) {
		out, err = exec.CommandContext(t.Context(), pgbench, "-n", "-f", file, "-c", "2", "-T", "1", url).CombinedOutput()
		return err
	})
	r := txload(t.Context(), nil, "run", "script", "--file", file, "--url", url, "--concurrency", "2", "--duration", "1s",
		"--progress", "0", "--output", "pgbench")
	if err := wait(); err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		t.Fatalf("pgbench printed no tps:\n%s", out)
	}
	theirs, _ := strconv.ParseFloat(string(m[1]), 64)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	m = tpsLine.FindSubmatch([]byte(r.stdout))
	if m == nil {
		t.Fatalf("no tps line:\n%s", r.stdout)
	}
	ours, _ := strconv.ParseFloat(string(m[1]), 64)
	if ours < theirs*0.95 || ours > theirs*1.05 {
		t.Fatalf("tps %g, pgbench %g:\n%s", ours, theirs, r.stdout)
	}
	// The 3 s sleep, not the 1 s duration (the old wrong figure); a busy
	// machine wakes a sleeper late by some milliseconds (3010.5 ms seen
	// under -race).
	lat := regexp.MustCompile(`latency average = ([0-9.]+) ms`).FindStringSubmatch(r.stdout)
	if lat == nil {
		t.Fatalf("no latency line:\n%s", r.stdout)
	}
	if v, _ := strconv.ParseFloat(lat[1], 64); v < 3000 || v >= 3100 {
		t.Errorf("latency average %s ms, want the 3 s sleep (3000 to 3100 ms):\n%s", lat[1], r.stdout)
	}
}

// In a pipeline, --protocol extended leaves no prepared statement on the
// server; --protocol prepared does. The script counts them from inside.
func TestPipelineHonoursProtocol(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	conn := pgtest.Conn(t, url)
	if _, err := conn.Exec(context.Background(), `CREATE TABLE seen (proto text, prepared int)`); err != nil {
		t.Fatal(err)
	}
	file := writeScript(t, "pipe.sql", `\startpipeline
SELECT 1 AS one;
INSERT INTO seen SELECT :proto, count(*) FROM pg_prepared_statements;
\endpipeline
`)
	for _, proto := range []string{"extended", "prepared"} {
		if r := txload(t.Context(), nil, "run", "script", "--file", file, "--url", url, "--concurrency", "1", "--duration", "300ms",
			"--progress", "0", "--protocol", proto, "--define", "proto="+proto); r.code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", proto, r.code, r.stdout, r.stderr)
		}
	}
	if n := count(t, url, `SELECT count(*) FROM seen WHERE proto = 'extended' AND prepared > 0`); n != 0 {
		t.Errorf("%d pipelines under --protocol extended saw prepared statements", n)
	}
	if n := count(t, url, `SELECT count(*) FROM seen WHERE proto = 'prepared' AND prepared > 0`); n == 0 {
		t.Errorf("no pipeline under --protocol prepared saw its prepared statements")
	}
}

// For each protocol, txload sends the server the statements pgbench sends:
// pg_stat_statements lists the same normalized statements, each called as
// many times per transaction, after the same number of tpcb-like
// transactions from each. The run's audits (its counts, md5 sums, and the
// COPY of the history its identity sums before the run) are left out.
func TestStatementsLikePgbench(t *testing.T) {
	pgtest.OutsideRace(t, "pgbench's statements")
	t.Parallel()
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		t.Skip("pgbench is not installed (Debian: postgresql-contrib; .ci/run installs it)")
	}
	url := srv.NewDatabase(t)
	conn := pgtest.Conn(t, url)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		t.Skipf("pg_stat_statements is not loaded on the test server: %v", err)
	}
	if r := txload(t.Context(), nil, "init", "tpcb", "--url", url); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	statements := func() []string {
		rows, err := conn.Query(ctx, `SELECT s.query || ' x' || s.calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
			WHERE d.datname = current_database() AND s.query ~* 'pgbench_|^(BEGIN|END|COMMIT)'
			  AND s.query !~* 'count\(\*\)|vacuum|truncate|txload_pgbench_builtin|md5\(|^copy ' ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	reset := func() {
		if _, err := conn.Exec(ctx, "SELECT pg_stat_statements_reset()"); err != nil {
			t.Fatal(err)
		}
	}
	for _, proto := range []string{"simple", "extended", "prepared"} {
		t.Run(proto, func(t *testing.T) {
			reset()
			if out, err := exec.CommandContext(t.Context(), pgbench, "-n", "-M", proto, "-c", "1", "-t", "50", url).CombinedOutput(); err != nil {
				t.Fatalf("pgbench: %v\n%s", err, out)
			}
			theirs := statements()
			slices.Sort(theirs) // in the order withoutAudit leaves ours
			reset()
			// 50 transactions on one client, as pgbench's -t 50.
			r := txload(t.Context(), nil, "run", "tpcb-like", "--url", url, "--protocol", proto, "--concurrency", "1",
				"--transactions", "50", "--progress", "0")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			ours := withoutAudit(t, statements())
			if len(theirs) == 0 || !slices.Equal(theirs, ours) {
				t.Fatalf("pgbench:\n  %s\ntxload:\n  %s", strings.Join(theirs, "\n  "), strings.Join(ours, "\n  "))
			}
		})
	}
}

// The server crashes (immediate shutdown) and restarts several times during
// a tpcb-like run with retries: pgbench_history grows by exactly the
// committed transactions plus the ambiguous ones that did commit (the
// reconciliation would report a violation otherwise), and no history row is
// there twice.
func TestServerCrashesHistoryExact(t *testing.T) {
	s := pgtest.OwnServer(t) // stopped and restarted: a server of its own
	url := s.URL() + "&options=-c%20synchronous_commit%3Don"
	if r := txload(t.Context(), nil, "init", "tpcb", "--url", url); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	done := make(chan result, 1)
	go func() {
		done <- txload(t.Context(), nil, "run", "tpcb-like", "--url", url, "--concurrency", "8", "--duration", "9s",
			"--max-tries", "10", "--progress", "1s", "--protocol", "prepared")
	}()
	for range 3 {
		time.Sleep(2 * time.Second)
		if err := s.Halt(true); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if err := s.Restart(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	r := <-done
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "UNREACHABLE: the server could not be reached", "check: ok", "ambiguous: ")
	if n := count(t, url, `SELECT count(*) FROM (SELECT 1 FROM pgbench_history GROUP BY tid, bid, aid, delta, mtime HAVING count(*) > 1) d`); n != 0 {
		t.Fatalf("%d history rows are there twice:\n%s", n, r.stdout)
	}
	if c := txload(t.Context(), nil, "check", "tpcb", "--url", url); c.code != 0 {
		t.Fatalf("check tpcb: exit %d\n%s", c.code, c.stdout)
	}
	t.Log(r.stdout)
}

// withoutAudit takes the run's audit out of the statements a tpcb-like run
// sent: its snapshot (BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY) and
// the END that closes it, counted with the workload's ENDs.
func withoutAudit(t *testing.T, stmts []string) []string {
	t.Helper()
	audit := regexp.MustCompile(`(?i)^begin isolation level repeatable read read only x(\d+)$`)
	// END and COMMIT are one statement to pg_stat_statements, listed by
	// the text it saw first: the run's audit before it commits first.
	end := regexp.MustCompile(`(?i)^(?:END|commit) x(\d+)$`)
	snapshots := 0
	var out []string
	for _, s := range stmts {
		if m := audit.FindStringSubmatch(s); m != nil {
			n, _ := strconv.Atoi(m[1])
			snapshots += n
			continue
		}
		out = append(out, s)
	}
	for i, s := range out {
		if m := end.FindStringSubmatch(s); m != nil {
			n, _ := strconv.Atoi(m[1])
			out[i] = "END x" + strconv.Itoa(n-snapshots)
		}
	}
	slices.Sort(out)
	return out
}
