package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// banner is the first line `txload pgbench` prints on stdout, shaped as
// pgbench's "pgbench (CLIENT, server SERVER)".
var banner = regexp.MustCompile(`^pgbench \(1[5-8] \(txload test\), server [0-9]+\.[0-9]+.*\)$`)

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

func pgbenchOK(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	r := txload(t.Context(), env, append([]string{"pgbench"}, args...)...)
	if r.code != 0 {
		t.Fatalf("txload pgbench %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// The seed's commands as written: -i -s 2, then -t 20 -c 4 runs exactly
// 20 transactions for each of the 4 clients, which the server's
// pgbench_history confirms (the pre-run truncated it).
func TestPgbenchCommandInitThenTransactions(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	r := pgbenchOK(t, nil, "-i", "-s", "2", db)
	if r.stdout != "" {
		t.Errorf("-i printed on stdout: %q", r.stdout)
	}
	for _, re := range []string{`(?m)^dropping old tables\.\.\.$`, `(?m)^creating tables\.\.\.$`, `(?m)^generating data \(client-side\)\.\.\.$`,
		`(?m)^200000 of 200000 tuples \(100%\) `, `(?m)^vacuuming\.\.\.$`, `(?m)^creating primary keys\.\.\.$`, `(?m)^done in [0-9.]+ s \(drop tables `} {
		if !regexp.MustCompile(re).MatchString(r.stderr) {
			t.Errorf("-i stderr lacks %s:\n%s", re, r.stderr)
		}
	}
	if n := count(t, db, "SELECT count(*) FROM pgbench_branches"); n != 2 {
		t.Fatalf("-s 2 made %d branches", n)
	}
	if _, err := pgtestExec(t, db, "INSERT INTO pgbench_history (tid, bid, aid, delta) VALUES (1, 1, 1, 0)"); err != nil {
		t.Fatal(err)
	}
	r = pgbenchOK(t, nil, "-t", "20", "-c", "4", db)
	if !banner.MatchString(firstLine(r.stdout)) {
		t.Errorf("banner %q", firstLine(r.stdout))
	}
	if firstLine(r.stderr) != "starting vacuum...end." {
		t.Errorf("stderr begins %q, want pgbench's pre-run vacuum line", firstLine(r.stderr))
	}
	for _, line := range []string{"transaction type: <builtin: TPC-B (sort of)>", "scaling factor: 2", "query mode: simple",
		"number of clients: 4", "number of threads: 1", "maximum number of tries: 1", "number of transactions per client: 20",
		"number of transactions actually processed: 80/80", "number of failed transactions: 0 (0.000%)"} {
		if !strings.Contains(r.stdout, "\n"+line+"\n") {
			t.Errorf("report lacks %q:\n%s", line, r.stdout)
		}
	}
	if n := count(t, db, "SELECT count(*) FROM pgbench_history"); n != 80 {
		t.Errorf("pgbench_history holds %d rows after the run, want the 80 processed (truncated before it)", n)
	}
	// -n: no pre-run vacuum, no truncation: history grows by exactly 3×5.
	r = pgbenchOK(t, nil, "-n", "-t", "5", "-c", "3", "-j", "2", db)
	if strings.Contains(r.stderr, "vacuum") {
		t.Errorf("-n vacuumed:\n%s", r.stderr)
	}
	mustContain(t, r.stdout, "number of transactions actually processed: 15/15", "number of threads: 2")
	if n := count(t, db, "SELECT count(*) FROM pgbench_history"); n != 95 {
		t.Errorf("pgbench_history holds %d rows, want 80 + 15", n)
	}
}

func pgtestExec(t *testing.T, db, sql string) (int64, error) {
	t.Helper()
	tag, err := pgtest.Conn(t, db).Exec(context.Background(), sql)
	return tag.RowsAffected(), err
}

// The seed's select-only run, as written in 001 (-c 8 -j 2 -T 5 -P 5 -M
// prepared -S) but for 2 s: the same lines, 3 s less of a busy machine.
func TestPgbenchCommandSeedSelectOnly(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	pgbenchOK(t, nil, "-i", "-q", db)
	r := pgbenchOK(t, nil, "-c", "8", "-j", "2", "-T", "2", "-P", "2", "-M", "prepared", "-S", db)
	for _, re := range []string{`^pgbench \(`, `(?m)^transaction type: <builtin: select only>$`, `(?m)^query mode: prepared$`,
		`(?m)^number of clients: 8$`, `(?m)^number of threads: 2$`, `(?m)^duration: 2 s$`,
		`(?m)^number of transactions actually processed: [1-9][0-9]*$`, `(?m)^latency average = [0-9.]+ ms$`,
		`(?m)^latency stddev = [0-9.]+ ms$`, `(?m)^initial connection time = [0-9.]+ ms$`,
		`(?m)^tps = [0-9.]+ \(without initial connection time\)$`} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("report lacks %s:\n%s", re, r.stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^progress: 2\.0 s, [0-9.]+ tps, lat [0-9.]+ ms stddev [0-9.]+, 0 failed$`).MatchString(r.stderr) {
		t.Errorf("no progress line at 2 s:\n%s", r.stderr)
	}
}

// The connection the way libpq finds it: PGHOST, PGPORT, PGUSER and
// PGDATABASE name the server and the database, with no argument at all;
// the embedded server is not started.
func TestPgbenchCommandPGEnv(t *testing.T) {
	db := srv.NewDatabase(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGHOST", u.Hostname())
	t.Setenv("PGPORT", u.Port())
	t.Setenv("PGUSER", u.User.Username())
	t.Setenv("PGDATABASE", strings.TrimPrefix(u.Path, "/"))
	if p, ok := u.User.Password(); ok {
		t.Setenv("PGPASSWORD", p)
	}
	t.Setenv("PGSSLMODE", "disable")
	r := pgbenchOK(t, nil, "-i")
	if strings.Contains(r.stderr, "embedded") {
		t.Fatalf("-i with PG* variables used the embedded server:\n%s", r.stderr)
	}
	r = pgbenchOK(t, nil, "-c", "2", "-t", "7")
	mustContain(t, r.stdout, "number of transactions actually processed: 14/14")
	if n := count(t, db, "SELECT count(*) FROM pgbench_history"); n != 14 {
		t.Errorf("the database PGDATABASE names has %d history rows, want 14", n)
	}
	// -h, -p, -U and DBNAME win over the variables.
	other := srv.NewDatabase(t)
	t.Setenv("PGPORT", "1")
	t.Setenv("PGHOST", "192.0.2.1")
	r = pgbenchOK(t, nil, "-h", u.Hostname(), "-p", u.Port(), "-U", u.User.Username(), "-i", strings.TrimPrefix(mustURL(t, other).Path, "/"))
	if n := count(t, other, "SELECT count(*) FROM pgbench_branches"); n != 1 {
		t.Errorf("-h -p -U DBNAME: %d branches in the database named", n)
	}
	// The same database pgbench would reach, when pgbench is installed.
	if pgbench, err := exec.LookPath("pgbench"); err == nil {
		t.Setenv("PGPORT", u.Port())
		t.Setenv("PGHOST", u.Hostname())
		out, err := exec.Command(pgbench, "-c", "2", "-t", "3").CombinedOutput()
		if err != nil {
			t.Fatalf("pgbench: %v\n%s", err, out)
		}
		if n := count(t, db, "SELECT count(*) FROM pgbench_history"); n != 6 {
			t.Errorf("pgbench with the same variables left %d history rows in PGDATABASE, want 6", n)
		}
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Bad usage: pgbench's lines, exit status 1, before any server is touched
// (no embedded server is started either).
func TestPgbenchCommandBadUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "100", "-T", "60"}, "pgbench: error: specify either a number of transactions (-t) or a duration (-T), not both\n"},
		{[]string{"--p", "5"}, "pgbench: option '--p' is ambiguous; possibilities: '--port' '--progress' '--protocol' '--progress-timestamp' '--partitions' '--partition-method'\n" +
			"pgbench: hint: Try \"pgbench --help\" for more information.\n"},
		{[]string{"-c", "0"}, "pgbench: error: -c/--clients must be in range 1..2147483647\n"},
		{[]string{"-i", "-T", "5"}, "pgbench: error: some of the specified options cannot be used in initialization (-i) mode\n"},
		{[]string{"-f", "/no/such.sql"}, "pgbench: error: could not open file \"/no/such.sql\": No such file or directory\n"},
		{[]string{"--output", "xml", "-h", "192.0.2.1"}, "pgbench: error: --output \"xml\" is not allowed (allowed: text, pgbench)\n"},
		// txload's own flags: one line, before the embedded server is
		// chosen (and said to be).
		{[]string{"--html", "/no/such/dir/x.html"}, "pgbench: error: --html /no/such/dir/x.html: directory /no/such/dir does not exist\n"},
		{[]string{"--metrics-addr", "nope"}, "pgbench: error: --metrics-addr \"nope\": want [HOST:]PORT, e.g. 9090 (loopback only) or 0.0.0.0:9090\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := txload(t.Context(), nil, append([]string{"pgbench"}, tc.args...)...)
			if r.code != 1 || r.stderr != tc.want || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q\nstderr %q\nwant exit 1 and %q", r.code, r.stdout, r.stderr, tc.want)
			}
		})
	}
}

// A database without pgbench's tables: pgbench's error and hint, exit 1;
// the same lines as the real pgbench's when it is installed.
func TestPgbenchCommandNoTables(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	r := txload(t.Context(), nil, "pgbench", "-n", db)
	want := `pgbench: error: could not count number of branches: ERROR:  relation "pgbench_branches" does not exist
LINE 1: select count(*) from pgbench_branches
                             ^
pgbench: hint: Perhaps you need to do initialization ("pgbench -i") in database "` + strings.TrimPrefix(mustURL(t, db).Path, "/") + `".
`
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 and:\n%s", r.code, r.stderr, want)
	}
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		t.Skip("pgbench is not installed: nothing to compare with")
	}
	cmd := exec.Command(pgbench, "-n", db)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 1 || stderr.String() != want {
		t.Fatalf("pgbench: exit %d (%v), stderr:\n%s", code, err, stderr.String())
	}
}

// A client that meets an error no retry cures aborts; the report is
// printed and the exit status is 2, as pgbench's.
func TestPgbenchCommandAbortExit2(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	file := writeScript(t, "div.sql", "SELECT 1/0;\n")
	r := txload(t.Context(), nil, "pgbench", "-n", "-t", "3", "-c", "2", "-f", file, db)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "number of transactions per client: 3")
	mustContain(t, r.stderr, "pgbench: error: Run was aborted; the above results are incomplete.\n")
}

// -f FILE@W, -b NAME@W and -D: the scripts run in their proportions with
// the variables given; -s is the :scale of custom scripts.
func TestPgbenchCommandScriptsAndDefines(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	if _, err := pgtestExec(t, db, "CREATE TABLE seen (tag text, scale int, client int)"); err != nil {
		t.Fatal(err)
	}
	a := writeScript(t, "a.sql", "INSERT INTO seen VALUES ('a' || :tag, :scale, :client_id);\n")
	b := writeScript(t, "b.sql", "INSERT INTO seen VALUES ('b' || :tag, :scale, :client_id);\n")
	r := pgbenchOK(t, nil, "-n", "-c", "3", "-t", "40", "-f", a+"@3", "-f", b+"@1", "-D", "tag=7", "-s", "5", "-M", "extended", "--random-seed", "11", db)
	mustContain(t, r.stdout, "transaction type: multiple scripts", "SQL script 1: "+a, " - weight: 3 (targets 75.0% of total)",
		"number of transactions actually processed: 120/120", "scaling factor: 5")
	mustContain(t, r.stderr, "pgbench: setting random seed to 11")
	if n := count(t, db, "SELECT count(*) FROM seen WHERE tag IN ('a7', 'b7') AND scale = 5 AND client BETWEEN 0 AND 2"); n != 120 {
		t.Errorf("%d rows as the scripts should write them, want 120", n)
	}
	if na := count(t, db, "SELECT count(*) FROM seen WHERE tag = 'a7'"); na < 60 || na > 110 {
		t.Errorf("script a@3 ran %d times of 120", na)
	}
}

// -i with pgbench's table options goes through the init steps: partitions,
// foreign keys, unlogged tables, fillfactor, server-side generation; a run
// reports the partitioning as pgbench does.
func TestPgbenchCommandInitOptions(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	r := pgbenchOK(t, nil, "-i", "-I", "dtGvp", "-s", "2", "--partitions", "3", "--partition-method", "hash", "--foreign-keys",
		"--unlogged-tables", "-F", "90", db)
	mustContain(t, r.stderr, "creating 3 partitions...", "generating data (server-side)...", "creating foreign keys...")
	for what, sql := range map[string]string{
		"partitions":       "SELECT count(*) - 3 FROM pg_inherits WHERE inhparent = 'pgbench_accounts'::regclass",
		"hash":             "SELECT count(*) - 1 FROM pg_partitioned_table WHERE partrelid = 'pgbench_accounts'::regclass AND partstrat = 'h'",
		"foreign keys":     "SELECT CASE WHEN count(*) > 0 THEN 0 ELSE 1 END FROM pg_constraint WHERE contype = 'f' AND conname LIKE 'pgbench_%'",
		"unlogged":         "SELECT count(*) FROM pg_class WHERE relname IN ('pgbench_branches', 'pgbench_tellers', 'pgbench_history') AND relpersistence <> 'u'",
		"fillfactor":       "SELECT count(*) - 1 FROM pg_class WHERE relname = 'pgbench_tellers' AND reloptions = '{fillfactor=90}'",
		"200000 accounts":  "SELECT count(*) - 200000 FROM pgbench_accounts",
		"server-side data": "SELECT count(*) - 20 FROM pgbench_tellers",
	} {
		if n := count(t, db, sql); n != 0 {
			t.Errorf("%s: off by %d", what, n)
		}
	}
	r = pgbenchOK(t, nil, "-t", "5", "-N", "-M", "prepared", db)
	mustContain(t, r.stdout, "transaction type: <builtin: simple update>\nscaling factor: 2\npartition method: hash\npartitions: 3\nquery mode: prepared\n")
	// -s on a run of a builtin: the tables' scale wins, with pgbench's warning.
	r = pgbenchOK(t, nil, "-n", "-t", "1", "-S", "-s", "9", db)
	mustContain(t, r.stderr, "pgbench: warning: scale option ignored, using count from pgbench_branches table (2)")
}

// Line for line what the real pgbench prints, numbers masked, on the same
// database with the same command line.
func TestPgbenchCommandMatchesPgbench(t *testing.T) {
	pgtest.OutsideRace(t, "pgbench's output")
	t.Parallel()
	pgbench, major := installedPgbench(t)
	db := srv.NewDatabase(t)
	pgbenchOK(t, nil, "-i", "--pgbench-version", major, db)
	for _, args := range [][]string{
		{"-t", "20", "-c", "4"},
		{"-c", "4", "-j", "2", "-T", "2", "-P", "1", "-M", "prepared", "-S"},
		{"-n", "-t", "10", "-c", "2", "-b", "simple-update@2", "-b", "select-only@1", "-r"},
		{"-n", "-T", "2", "-c", "2", "-R", "200", "-L", "50", "--max-tries", "3", "--failures-detailed"},
		{"-n", "-C", "-t", "20", "-c", "4", "-j", "2", "-S"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			// The two programs run at once (their clients do not fail each
			// other's at read committed): outputs are compared by shape,
			// and a timed run then holds the machine once, not twice.
			cmd := exec.Command(pgbench, append(args, db)...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			wait := started(cmd.Run)
			r := txload(t.Context(), nil, append(append([]string{"pgbench", "--pgbench-version", major}, args...), db)...)
			if err := wait(); err != nil {
				t.Fatalf("pgbench: %v\n%s", err, stderr.String())
			}
			if r.code != 0 {
				t.Fatalf("txload pgbench: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			theirs, ours := outputShape(stdout.String()), outputShape(r.stdout)
			if strings.Join(theirs, "\n") != strings.Join(ours, "\n") {
				t.Errorf("stdout differs, numbers masked:\npgbench:\n%s\ntxload:\n%s", strings.Join(theirs, "\n"), strings.Join(ours, "\n"))
			}
			// stderr: the same kinds of lines (progress lines may differ
			// in number by one at the end of a timed run).
			sameKinds(t, stderr.String(), r.stderr, anyLine)
		})
	}
}

// -C: a new connection for every transaction, which the server counts
// (pg_stat_database.sessions grows by at least the transactions), and
// pgbench's report lines for it.
func TestPgbenchCommandConnect(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	pgbenchOK(t, nil, "-i", "-q", db)
	const q = "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
	// Read on a connection of its own: the stats of sessions that ended
	// reach the counter shortly after.
	sessions := func() int64 {
		var n int64
		c := pgtest.Conn(t, db)
		if err := c.QueryRow(t.Context(), "SELECT pg_stat_clear_snapshot()").Scan(new(string)); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRow(t.Context(), q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		c.Close(t.Context())
		return n
	}
	before := sessions()
	r := pgbenchOK(t, nil, "-n", "-C", "-t", "20", "-c", "4", "-j", "2", "-S", db)
	for _, re := range []string{`(?m)^number of transactions actually processed: 80/80$`,
		`(?m)^average connection time = [0-9]+\.[0-9]{3} ms$`, `(?m)^tps = [0-9]+\.[0-9]{6} \(including reconnection times\)$`} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("report lacks %s:\n%s", re, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "initial connection time") {
		t.Errorf("-C report has the initial connection time:\n%s", r.stdout)
	}
	var delta int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		// Without -C the run and these probes make a handful.
		if delta = sessions() - before; delta >= 80 {
			break
		}
	}
	if delta < 80 {
		t.Errorf("the server counted %d sessions during the run, want at least one per transaction: 80", delta)
	}
	t.Logf("%d sessions for 80 transactions", delta)
}

// Errors in pgbench's words: --verbose-errors prints pgbench's lines for
// the serialization failures it retries and gives up on, and a client that
// aborts prints pgbench's abort line, the same as the installed pgbench
// prints on the same database (numbers masked for the retries, whose
// order depends on timing; the abort line exactly).
func TestPgbenchCommandErrorLinesLikePgbench(t *testing.T) {
	t.Parallel()
	pgbench, _ := installedPgbench(t)
	db := srv.NewDatabase(t)
	pgbenchOK(t, nil, "-i", "-q", db)
	conflict := writeScript(t, "conflict.sql", "BEGIN ISOLATION LEVEL REPEATABLE READ;\nUPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;\nSELECT pg_sleep(0.002);\nEND;\n")
	div := writeScript(t, "div.sql", "SELECT 1;\nSELECT 1/0;\n")
	// A syntax error ends its client too (it stops a txload run): the run
	// goes on, reports, and exits 2.
	syntax := writeScript(t, "syntax.sql", "SELECT 1 AS a \\; SELECT 2 AS b \\gset\nSELECT :a;\n")
	errorLine := func(l string) bool {
		return strings.HasPrefix(l, "pgbench: client ") || strings.HasPrefix(l, "pgbench: error: client ")
	}
	for _, tc := range []struct {
		name  string
		args  []string
		exact bool
	}{
		// Four clients on one row: each round one commits and three fail, so
		// with a few tries a transaction runs out of them about as often as
		// not, and one program may print "ends the failed transaction" where
		// the other happened not to. 100 tries never run out; the cases
		// that give up do so at the first failure, in both programs.
		{"retried", []string{"-n", "-f", conflict, "-c", "4", "-j", "1", "-t", "5", "--max-tries", "100", "--verbose-errors"}, false},
		{"given up", []string{"-n", "-f", conflict, "-c", "4", "-j", "1", "-t", "3", "--verbose-errors"}, false},
		{"latency limit", []string{"-n", "-f", conflict, "-c", "4", "-j", "1", "-t", "5", "--max-tries", "100", "-L", "1000", "--verbose-errors"}, false},
		{"latency limit, given up", []string{"-n", "-f", conflict, "-c", "4", "-j", "1", "-t", "3", "--max-tries", "1", "-L", "1000", "--verbose-errors"}, false},
		{"aborted", []string{"-n", "-f", div, "-c", "1", "-t", "1"}, true},
		{"syntax error", []string{"-n", "-f", syntax, "-c", "2", "-t", "3"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(pgbench, append(tc.args, db)...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			_ = cmd.Run() // an abort exits 2
			r := txload(t.Context(), nil, append(append([]string{"pgbench"}, tc.args...), db)...)
			if want := cmd.ProcessState.ExitCode(); r.code != want {
				t.Errorf("exit %d, pgbench's %d\n%s", r.code, want, r.stderr)
			}
			if len(lineKinds(stderr.String(), errorLine)) == 0 {
				t.Fatalf("pgbench printed no error line:\n%s", stderr.String())
			}
			sameKinds(t, stderr.String(), r.stderr, errorLine)
			if tc.exact {
				line := "pgbench: error: client 0 script 0 aborted in command 1 query 0: ERROR:  division by zero"
				mustContain(t, stderr.String(), line)
				mustContain(t, r.stderr, line)
			}
		})
	}
}

// The seed documents' pgbench commands as written (001: init with
// --no-vacuum --foreign-keys and with --init-steps=dtGpf, then the script
// runs with --failures-detailed, --verbose-errors, --max-tries=10 and
// --protocol=prepared; 004: init with --partitions=10 and a --rate run),
// shortened in time and scale, with the server named by PGHOST, PGPORT,
// PGUSER and PGDATABASE as the seeds name it. Each runs under pgbench and
// under txload pgbench on the same database: stdout line for line and the
// kinds of stderr lines the same, numbers masked.
func TestPgbenchCommandSeedCommandsLikePgbench(t *testing.T) {
	t.Parallel()
	pgbench, major := installedPgbench(t)
	// Both programs run as processes with libpq's variables in their own
	// environment (pgx reads the process's), so that the test runs beside
	// the others.
	bin := buildTxload(t)
	// Each program has a database of its own and they run at once: the
	// outputs are compared by shape, and the seed's two-second runs then
	// hold the machine for their duration once instead of twice.
	theirDB, ourDB := srv.NewDatabase(t), srv.NewDatabase(t)
	u := mustURL(t, theirDB)
	host, port, user := u.Hostname(), u.Port(), u.User.Username()
	dbName := func(db string) string { return strings.TrimPrefix(mustURL(t, db).Path, "/") }
	script := writeScript(t, "tpcb-original.sql", tpcbOriginal(t))
	conn := []string{"--host=" + host, "--username=" + user, "--port=" + port}
	run := []string{"--host=" + host, "--no-vacuum", "--file=" + script + "@1", "--client=8", "--jobs=8",
		"--username=" + user, "--port=" + port, "-T", "2", "-P", "1"}
	with := func(base []string, more ...string) []string {
		return append(append([]string{}, base...), more...)
	}
	// exe runs prog with args and the database's name last, libpq's
	// variables naming that database in its environment.
	exe := func(prog, db string, args ...string) (stdout, stderr string, err error) {
		name := dbName(db)
		cmd := exec.Command(prog, append(args, name)...)
		cmd.Env = append(os.Environ(), "PGHOST="+host, "PGPORT="+port, "PGUSER="+user, "PGDATABASE="+name, "PGSSLMODE=disable")
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			return o.String(), e.String(), fmt.Errorf("%s %s: %w\n%s", prog, strings.Join(args, " "), err, e.String())
		}
		return o.String(), e.String(), nil
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"001 init", with(append([]string{"--initialize"}, conn...), "--no-vacuum", "--scale=1", "--foreign-keys")},
		{"001 init server-side", with(append([]string{"--initialize", "--init-steps=dtGpf"}, conn...), "--no-vacuum", "--scale=1", "--foreign-keys")},
		{"001 run", with(run)},
		{"001 failures detailed", with(run, "--failures-detailed")},
		{"001 verbose errors", with(run, "--failures-detailed", "--verbose-errors")},
		{"001 max tries", with(run, "--failures-detailed", "--max-tries=10")},
		{"001 prepared", with(run, "--failures-detailed", "--max-tries=10", "--protocol=prepared")},
		{"004 init", with([]string{"-U", user, "-i", "-s", "1", "--partitions=10"})},
		{"004 run", with([]string{"-U", user, "-c", "10", "-j", "4", "-P", "1", "-T", "2", "--rate=250"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var theirOut, theirErr string
			wait := started(func() (err error) {
				theirOut, theirErr, err = exe(pgbench, theirDB, tc.args...)
				return err
			})
			// txload follows the installed pgbench's version of the lines.
			ourOut, ourErr, ourFail := exe(bin, ourDB, append([]string{"pgbench", "--pgbench-version", major}, tc.args...)...)
			if err := errors.Join(wait(), ourFail); err != nil {
				t.Fatal(err)
			}
			if theirs, ours := outputShape(theirOut), outputShape(ourOut); strings.Join(theirs, "\n") != strings.Join(ours, "\n") {
				t.Errorf("stdout differs, numbers masked:\npgbench:\n%s\ntxload:\n%s", strings.Join(theirs, "\n"), strings.Join(ours, "\n"))
			}
			sameKinds(t, theirErr, ourErr, anyLine)
		})
	}
}

// --exit-on-abort (pgbench 17 and later): the first client to abort stops
// the run, pgbench's line names its thread, no report, exit 2. Without it
// the other client runs its transactions and the report is printed.
func TestPgbenchCommandExitOnAbort(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	if _, err := pgtestExec(t, db, "CREATE TABLE counter (i int); INSERT INTO counter VALUES (0)"); err != nil {
		t.Fatal(err)
	}
	file := writeScript(t, "abort.sql", "UPDATE counter SET i = i + 1 RETURNING i \\gset\n\\if :i = 5\nSELECT 1/0;\n\\endif\nSELECT pg_sleep(0.01);\n")
	r := txload(t.Context(), nil, "pgbench", "-n", "-t", "50", "-c", "2", "-j", "2", "--exit-on-abort", "-f", file, db)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stderr, "division by zero")
	if !regexp.MustCompile(`(?m)^pgbench: error: Run was aborted due to an error in thread [01]$`).MatchString(r.stderr) {
		t.Errorf("no abort line naming the thread:\n%s", r.stderr)
	}
	if strings.Contains(r.stdout, "number of transactions actually processed") {
		t.Errorf("a report after --exit-on-abort:\n%s", r.stdout)
	}
	// The other client stopped with the run, long before its 50.
	if n := count(t, db, "SELECT i FROM counter"); n >= 50 {
		t.Errorf("counter %d: the run went on after the abort", n)
	}

	if _, err := pgtestExec(t, db, "UPDATE counter SET i = 0"); err != nil {
		t.Fatal(err)
	}
	r = txload(t.Context(), nil, "pgbench", "-n", "-t", "50", "-c", "2", "-j", "2", "-f", file, db)
	if r.code != 2 {
		t.Fatalf("without --exit-on-abort: exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "number of transactions actually processed: ")
	mustContain(t, r.stderr, "pgbench: error: Run was aborted; the above results are incomplete.")
	// The other client's 50, and at least the aborted one's first.
	if n := count(t, db, "SELECT i FROM counter"); n < 51 {
		t.Errorf("counter %d: the other client did not run its 50", n)
	}
}

// -d (--debug from pgbench 17): pgbench's lines for every command, the same
// kinds as the installed pgbench prints on the same database (numbers
// masked, prepared statements' names alike).
func TestPgbenchCommandDebugLikePgbench(t *testing.T) {
	t.Parallel()
	pgbench, major := installedPgbench(t)
	debug := "-d"
	if n, _ := strconv.Atoi(major); n >= 17 {
		debug = "--debug"
	}
	db := srv.NewDatabase(t)
	pgbenchOK(t, nil, "-i", "-q", db)
	names := regexp.MustCompile(`\b(P_[0-9_]+|txload_[0-9]+_[0-9]+)\b`)
	debugLine := func(l string) bool {
		return strings.HasPrefix(l, "pgbench: client ") || strings.HasPrefix(l, "pgbench: pghost: ")
	}
	for _, args := range [][]string{
		{debug, "-n", "-S", "-t", "3", "-c", "2"},
		{debug, "-n", "-t", "2", "-c", "1", "-M", "prepared"},
		{debug, "-n", "-t", "2", "-c", "1", "-M", "extended", "-N"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command(pgbench, append(args, db)...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("pgbench: %v\n%s", err, stderr.String())
			}
			r := pgbenchOK(t, nil, append(append([]string{"--pgbench-version", major}, args...), db)...)
			theirs, ours := names.ReplaceAllString(stderr.String(), "NAME"), names.ReplaceAllString(r.stderr, "NAME")
			if len(lineKinds(theirs, debugLine)) == 0 {
				t.Fatalf("pgbench printed no debug line:\n%s", theirs)
			}
			sameKinds(t, theirs, ours, debugLine)
		})
	}
}

// debug() prints pgbench's line, naming the script and the command (from
// 1), exactly as the installed pgbench prints it.
func TestPgbenchCommandDebugFunctionLikePgbench(t *testing.T) {
	t.Parallel()
	pgbench, _ := installedPgbench(t)
	db := srv.NewDatabase(t)
	a := writeScript(t, "a.sql", "\\set x debug(3)\n\\set y debug(1.5)\n\\if debug(:x > 2)\n\\set z debug(:x * 2)\n\\endif\nSELECT :z;\n")
	lines := func(stderr string) []string {
		var out []string
		for _, l := range strings.Split(stderr, "\n") {
			if strings.HasPrefix(l, "debug(") {
				out = append(out, l)
			}
		}
		return out
	}
	args := []string{"-n", "-t", "1", "-c", "1", "-f", a, db}
	theirs, err := exec.Command(pgbench, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("pgbench: %v\n%s", err, theirs)
	}
	r := pgbenchOK(t, nil, args...)
	want, got := lines(string(theirs)), lines(r.stderr)
	if len(want) != 4 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("debug() lines:\ntxload:\n%s\npgbench:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// installedPgbench returns the installed pgbench and its major version, or
// skips t: there is nothing to compare with.
func installedPgbench(t *testing.T) (path, major string) {
	t.Helper()
	path, n := pgtest.Pgbench(t)
	return path, strconv.Itoa(n)
}

var outputNumbers = regexp.MustCompile(` *[0-9]+(\.[0-9]+)?`)

// maskNumber masks one number and the spaces before it. A number padded
// into a fixed-width column (two or more spaces before it, as in the
// statement latencies) keeps the column's width whatever its digits: a
// 10.5 ms average there has one space fewer than a 0.5 ms one.
func maskNumber(m string) string {
	digits := strings.TrimLeft(m, " ")
	if pad := len(m) - len(digits); pad >= 2 {
		return strings.Repeat(" ", len(m)-1) + "N"
	} else if pad == 1 {
		return " N"
	}
	return "N"
}

// outputShape is pgbench's output line by line with every number masked
// and the banner reduced: what two runs of one command share.
func outputShape(s string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.HasPrefix(l, "pgbench (") {
			l = "pgbench (BANNER)"
		}
		lines = append(lines, outputNumbers.ReplaceAllStringFunc(l, maskNumber))
	}
	return lines
}

// lineKinds is the set of s's lines, shaped by outputShape, that keep
// accepts.
func lineKinds(s string, keep func(string) bool) map[string]bool {
	m := map[string]bool{}
	for _, l := range outputShape(s) {
		if keep(l) {
			m[l] = true
		}
	}
	return m
}

// sameKinds fails t for each kind of line one program printed and the
// other did not; theirs is pgbench's output, ours txload's.
func sameKinds(t *testing.T, theirs, ours string, keep func(string) bool) {
	t.Helper()
	tk, ok := lineKinds(theirs, keep), lineKinds(ours, keep)
	for l := range tk {
		if !ok[l] {
			t.Errorf("pgbench prints %q; txload:\n%s", l, ours)
		}
	}
	for l := range ok {
		if !tk[l] {
			t.Errorf("txload prints %q; pgbench:\n%s", l, theirs)
		}
	}
}

func anyLine(string) bool { return true }

// The masking keeps what the comparison must see (a column's width, the
// words) and drops what differs between two runs (the digits).
func TestOutputShapeMasking(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"         0.412           0  BEGIN;", "        10.412           0  BEGIN;", true},
		{"         0.412           0  BEGIN;", "        0.412           0  BEGIN;", false},
		{"latency average = 1.5 ms", "latency average = 1234.567 ms", true},
		{"tps = 10.0 (without initial connection time)", "tps = 10.0 (including connections establishing)", false},
	} {
		// A line in the middle of a report, as the statement latencies are.
		shape := func(l string) string { return outputShape("pgbench (x)\n" + l)[1] }
		if got := shape(c.a) == shape(c.b); got != c.same {
			t.Errorf("%q and %q masked alike: %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// A -T run cut short says so where the figures are, on stdout: the
// duration line gives the time it ran and what cut it, not the -T asked
// (it printed "duration: 60 s" and a tps over the time run, passing for a
// whole run); `txload merge --output pgbench` of its document says the
// same.
func TestPgbenchCommandInterruptedSaysSo(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	pgbenchOK(t, nil, "-i", "-q", db)
	js := jsonPath(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	r := txload(ctx, nil, "pgbench", "-n", "-S", "-c", "2", "-T", "60", "--json", js, db)
	if r.code != ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s\n%s", r.code, ExitInterrupted, r.stdout, r.stderr)
	}
	line := regexp.MustCompile(`(?m)^duration: [0-9]+\.[0-9] s \(interrupted by an interrupt; -T was 60 s\)$`)
	if !line.MatchString(r.stdout) {
		t.Errorf("the duration line does not say the run was cut short:\n%s", r.stdout)
	}
	m := txload(t.Context(), nil, "merge", "--output", "pgbench", js)
	if m.code != 0 || !line.MatchString(m.stdout) {
		t.Errorf("merge --output pgbench: exit %d\n%s\n%s", m.code, m.stdout, m.stderr)
	}
}
