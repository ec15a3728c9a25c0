package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/workload/pgbench/script"
)

func writeScript(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func count(t *testing.T, url, sql string) int64 {
	t.Helper()
	var n int64
	if err := pgtest.Conn(t, url).QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// tpcb-like under every protocol: each committed transaction is one history
// row and one server commit, and the balances agree afterwards.
func TestTPCBLikeProtocols(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	// Loaded before the commits are counted: beyond the transactions, a
	// run's commits are then only its audit's reads and autovacuum's.
	if r := txload(t.Context(), nil, "init", "tpcb", "--url", url); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	for _, proto := range []string{"simple", "extended", "prepared"} {
		t.Run(proto, func(t *testing.T) {
			js := jsonPath(t)
			histBefore := count(t, url, "SELECT count(*) FROM pgbench_history")
			before := xactCommit(t, url)
			r := txload(t.Context(), nil, "run", "tpcb-like", "--url", url, "--init", "keep", "--protocol", proto, "--concurrency", "4",
				"--transactions", "250", "--progress", "0", "--json", js)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			op := readDoc(t, js).Runs[0].Ops[0]
			if op.OK == 0 {
				t.Fatalf("no transaction committed\n%s", r.stdout)
			}
			if hist := count(t, url, "SELECT count(*) FROM pgbench_history") - histBefore; hist != op.OK {
				t.Errorf("history grew by %d, txload committed %d", hist, op.OK)
			}
			// Beyond the transactions: the scale read, the audit's reads
			// and autovacuum.
			if commits := xactCommit(t, url) - before; commits < op.OK || commits > op.OK+100 {
				t.Errorf("pg_stat_database counted %d commits, txload %d", commits, op.OK)
			}
			if c := txload(t.Context(), nil, "check", "tpcb", "--url", url); c.code != 0 {
				t.Fatalf("check tpcb: exit %d\n%s", c.code, c.stdout)
			}
		})
	}
}

// The seed's script, unmodified, with pgbench's report format.
func TestSeedScriptPgbenchOutput(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "tpcb", "--url", url); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	file := writeScript(t, "tpcb-original.sql", tpcbOriginal(t))
	js := jsonPath(t)
	// Two I/O loops drive the four clients: pgbench's "number of threads".
	r := txload(t.Context(), nil, "run", "script", "--file", file+"@1", "--url", url, "--concurrency", "4", "--jobs", "2", "--duration", "2s",
		"--progress", "1s", "--output", "pgbench", "--report-per-statement", "--json", js)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, re := range []string{
		`(?m)^transaction type: .*tpcb-original.sql$`, `(?m)^scaling factor: 1$`, `(?m)^query mode: simple$`,
		`(?m)^number of clients: 4$`, `(?m)^number of threads: 2$`, `(?m)^maximum number of tries: 1$`, `(?m)^duration: 2 s$`,
		`(?m)^number of transactions actually processed: [1-9][0-9]*$`, `(?m)^latency average = [0-9.]+ ms$`,
		`(?m)^tps = [0-9.]+ \(without initial connection time\)$`, `(?m)^statement latencies in milliseconds`,
		`(?m)^ +[0-9.]+ +[0-9]+ +UPDATE pgbench_accounts SET abalance = abalance \+ :delta WHERE aid = :aid;$`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("pgbench report lacks %s:\n%s", re, r.stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^progress: 1\.0 s, [0-9.]+ tps, lat [0-9.]+ ms stddev [0-9.]+, 0 failed$`).MatchString(r.stderr) {
		t.Errorf("no pgbench progress line:\n%s", r.stderr)
	}
	// The document's report says the same.
	if m := txload(t.Context(), nil, "merge", js, "--output", "pgbench"); m.code != 0 || !strings.Contains(m.stdout, "\nnumber of threads: 2\n") {
		t.Errorf("merge --output pgbench: exit %d, want number of threads: 2:\n%s\n%s", m.code, m.stdout, m.stderr)
	}
	if c := txload(t.Context(), nil, "check", "tpcb", "--url", url); c.code != 0 {
		t.Fatalf("check tpcb: exit %d\n%s", c.code, c.stdout)
	}
}

// Every client updates the same row at serializable: without retries the
// run reports failures by class; with retries, far fewer failures.
func TestHotScriptRetries(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "tpcb", "--url", url); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	file := writeScript(t, "hot.sql", `BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT bbalance FROM pgbench_branches WHERE bid = 1;
UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;
END;
`)
	failed := map[string]int64{}
	for _, tries := range []string{"1", "10"} {
		js := jsonPath(t)
		r := txload(t.Context(), nil, "run", "script", "--file", file, "--url", url, "--concurrency", "8", "--transactions", "200",
			"--progress", "0", "--max-tries", tries, "--json", js)
		if r.code != 0 {
			t.Fatalf("--max-tries %s: exit %d\n%s", tries, r.code, r.stderr)
		}
		op := readDoc(t, js).Runs[0].Ops[0]
		failed[tries] = op.Failed["serialization"]
		switch tries {
		case "1":
			if op.Failed["serialization"] == 0 || op.Retries != 0 {
				t.Errorf("--max-tries 1: failed %v, retries %d", op.Failed, op.Retries)
			}
			mustContain(t, r.stdout, "failed by class: serialization ")
		case "10":
			if op.Retried == 0 || op.Retries == 0 {
				t.Errorf("--max-tries 10: retried %d, retries %d", op.Retried, op.Retries)
			}
		}
	}
	if failed["10"]*5 > failed["1"] {
		t.Errorf("failures: %d with 1 try, %d with 10: want far fewer", failed["1"], failed["10"])
	}
}

// The meta-commands do what pgbench's do, checked in the data they write.
func TestScriptFeatures(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	conn := pgtest.Conn(t, url)
	if _, err := conn.Exec(context.Background(), `CREATE TABLE seen (client int, branch text, x int, doubled int, label text, seed bigint)`); err != nil {
		t.Fatal(err)
	}
	file := writeScript(t, "features.sql", `-- a comment; with a semicolon
\set x random(1, 10)
\if :x > 5
  \set branch 1
\elif :x > 2
  \set branch 2
\else
  \set branch 3
\endif
SELECT :x * 2 AS doubled, 'v' || :x AS label \gset
SELECT :x AS again \aset p_
\sleep 1 ms
\startpipeline
INSERT INTO seen VALUES (:client_id, CASE :branch::int WHEN 1 THEN 'big' WHEN 2 THEN 'mid' ELSE 'small' END,
  :p_again, :doubled, :label, :tag::bigint);
\endpipeline
`)
	for _, proto := range []string{"extended", "prepared"} {
		if r := txload(t.Context(), nil, "run", "script", "--file", file, "--url", url, "--concurrency", "3", "--transactions", "50",
			"--progress", "0", "--protocol", proto, "--define", "tag=42"); r.code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", proto, r.code, r.stdout, r.stderr)
		}
	}
	if n := count(t, url, "SELECT count(*) FROM seen"); n == 0 {
		t.Fatal("the script wrote nothing")
	}
	for what, sql := range map[string]string{
		"\\if branches":   `SELECT count(*) FROM seen WHERE NOT ((x > 5 AND branch = 'big') OR (x BETWEEN 3 AND 5 AND branch = 'mid') OR (x <= 2 AND branch = 'small'))`,
		"\\gset":          `SELECT count(*) FROM seen WHERE doubled <> 2 * x`,
		"\\aset prefix":   `SELECT count(*) FROM seen WHERE x NOT BETWEEN 1 AND 10`,
		"--define":        `SELECT count(*) FROM seen WHERE seed <> 42`,
		"client_id":       `SELECT count(*) FROM seen WHERE client NOT BETWEEN 0 AND 2`,
		"quoted variable": `SELECT count(*) FROM seen WHERE label <> 'v' || x`,
	} {
		if bad := count(t, url, sql); bad != 0 {
			t.Errorf("%s: %d rows wrong", what, bad)
		}
	}
	if n := count(t, url, "SELECT count(DISTINCT client) FROM seen"); n != 3 {
		t.Errorf("%d clients wrote, want 3", n)
	}
}

// The same seed draws the same values: 50 transactions a run, not a rate
// for a second, which a loaded machine fell behind (CI of 07843a1: 5 of
// 50 never started).
func TestRandomSeedDeterministic(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	conn := pgtest.Conn(t, url)
	if _, err := conn.Exec(context.Background(), `CREATE TABLE draws (run int, client int, v bigint, g bigint, z bigint)`); err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		file := writeScript(t, "draw.sql", `\set v random(1, 1000000)
\set g random_gaussian(1, 1000, 3.0)
\set z random_zipfian(1, 1000, 1.5)
INSERT INTO draws VALUES (`+strconv.Itoa(run)+`, :client_id, :v, :g, :z);
`)
		if r := txload(t.Context(), nil, "run", "script", "--file", file, "--url", url, "--transactions", "50",
			"--progress", "0", "--random-seed", "7", "--concurrency", "1"); r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
	}
	if n := count(t, url, `SELECT count(*) FROM draws`); n != 100 {
		t.Fatalf("%d draws, want 100", n)
	}
	diff := count(t, url, `SELECT count(*) FROM (SELECT v, g, z FROM draws WHERE run = 1 EXCEPT ALL SELECT v, g, z FROM draws WHERE run = 2) d`)
	if diff != 0 {
		t.Fatalf("%d draws differ between two runs with --random-seed 7", diff)
	}
}

func TestScriptBadInput(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	good := writeScript(t, "good.sql", "SELECT 1;\n")
	for _, tc := range []struct {
		name, file, want string
		args             []string
	}{
		{name: "missing file", args: []string{"--file", "/no/such.sql"}, want: "/no/such.sql"},
		{name: "syntax error", file: "\\set x (1 +\nSELECT 1;\n", want: "bad.sql:1:"},
		{name: "unknown meta-command", file: "SELECT 1;\n\\frobnicate\n", want: `bad.sql:2: unknown meta-command`},
		{name: "shell without command", file: "\\shell\n", want: `bad.sql:1: missing command in command "shell"`},
		{name: "pipeline left open", file: "\\startpipeline\nSELECT 1;\n", args: []string{"--protocol", "extended"}, want: `bad.sql:1: end of script reached with pipeline open`},
		{name: "weight not a number", args: []string{"--file", good + "@heavy"}, want: "heavy"},
		{name: "scale zero", args: []string{"--file", good, "--scale", "0"}, want: "--scale must be at least 1"},
		{name: "unknown protocol", args: []string{"--file", good, "--protocol", "carrier-pigeon"}, want: `--protocol "carrier-pigeon" is not allowed`},
		{name: "no script", args: nil, want: "run script needs --file"},
		{name: "bad define", args: []string{"--file", good, "--define", "novalue"}, want: "--define"},
		{name: "unknown builtin", args: []string{"--builtin", "tpcc"}, want: "tpcc"},
		{name: "output", args: []string{"--file", good, "--output", "xml"}, want: `--output "xml" is not allowed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "script", "--url", url}, tc.args...)
			if tc.file != "" {
				args = append(args, "--file", writeScript(t, "bad.sql", tc.file))
			}
			r := txload(t.Context(), nil, args...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != ExitUsage || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 and one line containing %q", r.code, r.stderr, tc.want)
			}
		})
	}
	r := txload(t.Context(), nil, "init", "tpcb", "--url", url, "--scale", "0")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--scale must be at least 1") {
		t.Fatalf("init --scale 0: exit %d %s", r.code, r.stderr)
	}
	if n := count(t, url, `SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'pgbench_%'`); n != 0 {
		t.Fatalf("bad input created %d tables", n)
	}
}

// --latency-limit under --rate: transactions that would start too late are
// skipped, slow ones counted late, and pgbench's report says so.
func TestLatencyLimitSkipsAndCounts(t *testing.T) {
	timingSensitive(t)
	url := srv.NewDatabase(t)
	js := jsonPath(t)
	// One client cannot keep up with 3000 tpcb-like transactions a second:
	// the schedule falls behind and most would start too late.
	r := txload(t.Context(), nil, "run", "tpcb-like", "--url", url, "--init", "keep", "--concurrency", "1", "--rate", "3000", "--duration", "2s",
		"--latency-limit", "5ms", "--progress", "0", "--json", js, "--output", "pgbench")
	if !r.ran() { // exit 0, or 1 only for BEHIND when a loaded machine stalls the client at the end
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	run := readDoc(t, js).Runs[0]
	all, err := run.All() // the window and the drain after it
	if err != nil {
		t.Fatal(err)
	}
	op := all.Ops[0]
	if failed := op.FailedTotal(); op.Skipped == 0 || op.OK+failed+op.Skipped+op.Abandoned+run.Unstarted != run.Offered {
		t.Fatalf("skipped %d ok %d failed %d abandoned %d unstarted %d, offered %d", op.Skipped, op.OK, failed, op.Abandoned, run.Unstarted, run.Offered)
	}
	for _, re := range []string{
		`(?m)^number of transactions skipped: [1-9][0-9]* \([0-9.]+%\)$`,
		`(?m)^number of transactions above the 5\.0 ms latency limit: [0-9]+/[0-9]+ \([0-9.]+%\)$`,
		`(?m)^rate limit schedule lag: avg [0-9.]+ \(max [0-9.]+\) ms$`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("report lacks %s:\n%s", re, r.stdout)
		}
	}
}

// pgbench's report with retries: retried and retries lines, failures by
// kind, and per-statement failures and retries.
func TestPgbenchOutputRetries(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "tpcb", "--url", url); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	file := writeScript(t, "hot.sql", "BEGIN ISOLATION LEVEL SERIALIZABLE;\nSELECT bbalance FROM pgbench_branches WHERE bid = 1;\nUPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;\nEND;\n")
	r := txload(t.Context(), nil, "run", "script", "--file", file, "--url", url, "--concurrency", "8", "--duration", "2s",
		"--progress", "1s", "--max-tries", "3", "--output", "pgbench", "--failures-detailed", "-r")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, re := range []string{
		`(?m)^maximum number of tries: 3$`,
		`(?m)^number of failed transactions: [0-9]+ \([0-9.]+%\)$`,
		`(?m)^number of serialization failures: [0-9]+ \([0-9.]+%\)$`,
		`(?m)^number of deadlock failures: 0 \(0\.000%\)$`,
		`(?m)^number of transactions retried: [1-9][0-9]* \([0-9.]+%\)$`,
		`(?m)^total number of retries: [1-9][0-9]*$`,
		`(?m)^statement latencies in milliseconds, failures and retries:$`,
		`(?m)^ +[0-9.]+ +[0-9]+ +[1-9][0-9]* +UPDATE pgbench_branches`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("report lacks %s:\n%s", re, r.stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^progress: 1\.0 s, [0-9.]+ tps, lat [0-9.]+ ms stddev [0-9.]+, [0-9]+ failed, [0-9]+ retried, [0-9]+ retries$`).MatchString(r.stderr) {
		t.Errorf("progress line lacks retries:\n%s", r.stderr)
	}
}

// With the same --random-seed, a client draws exactly what pgbench's draws.
func TestRandomSeedMatchesPgbench(t *testing.T) {
	t.Parallel()
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		t.Skip("pgbench is not installed: nothing to compare with")
	}
	url := srv.NewDatabase(t)
	conn := pgtest.Conn(t, url)
	if _, err := conn.Exec(context.Background(), `CREATE TABLE draws (n bigserial, tool text, v bigint, e bigint, z bigint, h bigint)`); err != nil {
		t.Fatal(err)
	}
	script := func(tool string) string {
		return writeScript(t, tool+".sql", `\set v random(1, 1000000000)
\set e random_exponential(1, 1000, 2.5)
\set z random_zipfian(1, 1000, 1.2)
\set h hash(:v)
INSERT INTO draws (tool, v, e, z, h) VALUES ('`+tool+`', :v, :e, :z, :h);
`)
	}
	if out, err := exec.Command(pgbench, "-n", "-c", "1", "-t", "20", "--random-seed", "7", "-f", script("pgbench"), url).CombinedOutput(); err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	if r := txload(t.Context(), nil, "run", "script", "--file", script("txload"), "--url", url, "--concurrency", "1",
		"--duration", "500ms", "--progress", "0", "--random-seed", "7"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	draws := func(tool string) []string {
		rows, err := conn.Query(context.Background(), `SELECT v || ' ' || e || ' ' || z || ' ' || h FROM draws WHERE tool = $1 ORDER BY n LIMIT 20`, tool)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			out = append(out, s)
		}
		return out
	}
	theirs, ours := draws("pgbench"), draws("txload")
	if len(theirs) != 20 || len(ours) != 20 {
		t.Fatalf("pgbench drew %d, txload %d", len(theirs), len(ours))
	}
	for i := range theirs {
		if theirs[i] != ours[i] {
			t.Fatalf("draw %d: pgbench %s, txload %s", i, theirs[i], ours[i])
		}
	}
}

// Cancelling the run interrupts statements the server is still running: the
// run's context is watched once per connection, not per query.
func TestScriptInterruptsRunningStatement(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	file := writeScript(t, "sleep.sql", "SELECT pg_sleep(30);\n")
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	start := time.Now()
	r := txload(ctx, nil, "run", "script", "--file", file, "--url", url, "--concurrency", "2", "--duration", "1m", "--progress", "0")
	if r.code != ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s", r.code, ExitInterrupted, r.stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %s to stop a run cancelled after 1s", d)
	}
	mustContain(t, r.stdout, "INTERRUPTED")
}

// simple-update inserts one history row per transaction and moves only
// account balances; select-only changes nothing.
func TestSimpleUpdateAndSelectOnly(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	for _, w := range []string{"simple-update", "select-only"} {
		t.Run(w, func(t *testing.T) {
			js := jsonPath(t)
			before := count(t, url+"", "SELECT count(*) FROM pg_tables WHERE tablename = 'pgbench_history'")
			histBefore := int64(0)
			if before == 1 {
				histBefore = count(t, url, "SELECT count(*) FROM pgbench_history")
			}
			r := txload(t.Context(), nil, "run", w, "--url", url, "--init", "keep", "--concurrency", "4", "--transactions", "250", "--progress", "0",
				"--protocol", "prepared", "--json", js)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			op := readDoc(t, js).Runs[0].Ops[0]
			grew := count(t, url, "SELECT count(*) FROM pgbench_history") - histBefore
			sums := count(t, url, "SELECT (SELECT sum(abalance) FROM pgbench_accounts) - (SELECT COALESCE(sum(delta), 0) FROM pgbench_history)")
			branches := count(t, url, "SELECT COALESCE(sum(bbalance), 0) FROM pgbench_branches")
			switch w {
			case "simple-update":
				if op.OK == 0 || grew != op.OK || sums != 0 || branches != 0 {
					t.Fatalf("ok %d, history grew %d, accounts − history %d, branches %d", op.OK, grew, sums, branches)
				}
			case "select-only":
				if op.OK == 0 || grew != 0 {
					t.Fatalf("ok %d, history grew %d", op.OK, grew)
				}
			}
		})
	}
}

// The builtins never create tables behind the user's back: on a database
// without pgbench's tables they fail with pgbench's hint, and create nothing.
func TestBuiltinNeedsInit(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	r := txload(t.Context(), nil, "run", "select-only", "--url", url, "--duration", "1s", "--progress", "0")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stderr, "pgbench's tables do not exist in this database: initialize them first")
	if n := count(t, url, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"); n != 0 {
		t.Fatalf("a run without --init created %d tables", n)
	}
}

// tpcbOriginal is seed 001's tpcb-original.sql: pgbench's tpcb-like builtin
// as a script file (the script package's tests hold the two equal).
func tpcbOriginal(t *testing.T) string {
	t.Helper()
	text, err := script.BuiltinText("tpcb-like")
	if err != nil {
		t.Fatal(err)
	}
	return text
}
