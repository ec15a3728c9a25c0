package pgbench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/txload/txload/internal/pgtest"
)

// describe is pgbench's tables as the catalog holds them: what \d+ shows
// (kind, persistence, storage options, tablespace, partitioning, columns,
// constraints, indexes), and what they hold.
func describe(t *testing.T, url string) string {
	t.Helper()
	conn := pgtest.Conn(t, url)
	ctx := context.Background()
	var sb strings.Builder
	q := func(title, sql string) {
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", title, err)
		}
		defer rows.Close()
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&sb, "%s %v\n", title, vals)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", title, err)
		}
	}
	q("relation", `SELECT c.relname, c.relkind, c.relpersistence, COALESCE(c.reloptions::text, ''), COALESCE(ts.spcname, ''),
			COALESCE(pg_get_partkeydef(c.oid), ''), COALESCE(pg_get_expr(c.relpartbound, c.oid), '')
		FROM pg_class c LEFT JOIN pg_tablespace ts ON ts.oid = c.reltablespace
		WHERE c.relname LIKE 'pgbench%' AND c.relnamespace = current_schema()::regnamespace ORDER BY 1`)
	q("column", `SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		WHERE c.relname LIKE 'pgbench%' AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1, 2`)
	q("constraint", `SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conrelid::regclass::text LIKE 'pgbench%' ORDER BY 1, 2`)
	q("index", `SELECT tablename, indexname, indexdef, COALESCE(tablespace, '') FROM pg_indexes WHERE tablename LIKE 'pgbench%' ORDER BY 1, 2`)
	q("rows", `SELECT (SELECT count(*) FROM pgbench_branches), (SELECT count(*) FROM pgbench_tellers), (SELECT count(*) FROM pgbench_accounts),
		(SELECT count(*) FROM pgbench_history), (SELECT sum(bid) FROM pgbench_tellers), (SELECT sum(bid::bigint) FROM pgbench_accounts),
		(SELECT count(*) FROM pgbench_tellers WHERE filler IS NULL), (SELECT count(*) FROM pgbench_branches WHERE filler IS NULL),
		(SELECT count(*) FROM pgbench_accounts WHERE filler = '')`)
	return sb.String()
}

// maskTimes hides the durations of a log, which differ from run to run.
var timeRE = regexp.MustCompile(`[0-9]+\.[0-9]{2} s`)

func maskTimes(s string) string { return timeRE.ReplaceAllString(s, "N s") }

// tablespaces creates two tablespaces in fresh directories owned by the
// server's user, or skips.
func tablespaces(t *testing.T) (string, string) {
	t.Helper()
	conn := pgtest.Conn(t, srv.URL())
	ctx := context.Background()
	var dataDir string
	if err := conn.QueryRow(ctx, "SHOW data_directory").Scan(&dataDir); err != nil {
		t.Skipf("cannot find the server's data directory: %v", err)
	}
	st, err := os.Stat(dataDir)
	if err != nil {
		t.Skipf("the server's data directory is not on this machine (%v): no tablespace to create", err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	var names []string
	for _, n := range []string{"big", "fast"} {
		dir, err := os.MkdirTemp("", "ts")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, int(sys.Uid), int(sys.Gid)); err != nil {
			t.Skipf("cannot give %s to the server's user: %v", dir, err)
		}
		name := fmt.Sprintf("ts_%s_%d", n, os.Getpid())
		if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLESPACE %s LOCATION '%s'", name, dir)); err != nil {
			t.Skipf("CREATE TABLESPACE: %v", err)
		}
		t.Cleanup(func() {
			_, _ = pgtest.Conn(t, srv.URL()).Exec(context.Background(), "DROP TABLESPACE IF EXISTS "+name)
		})
		names = append(names, name)
	}
	return names[0], names[1]
}

// Every init step, alone or in pgbench's order, with its options: the same
// lines as the installed pgbench prints (durations aside), and the same
// tables, as the catalog describes them, with the same rows.
func TestRunInitStepsLikePgbench(t *testing.T) {
	t.Parallel()
	_, major := realPgbench(t)
	type tc struct {
		name string
		args []string
		cfg  InitConfig
	}
	cases := []tc{
		{"defaults", []string{"-i"}, InitConfig{Steps: "dtgvp"}},
		{"server-side with foreign keys, scale 2", []string{"-i", "-I", "dtGvpf", "-s", "2"}, InitConfig{Steps: "dtGvpf", Scale: 2}},
		{"hash partitions and fillfactor", []string{"-i", "--partitions", "3", "--partition-method", "hash", "-F", "90"},
			InitConfig{Steps: "dtgvp", Partitions: 3, PartitionMethod: "hash", Fillfactor: 90}},
		{"quiet range partitions", []string{"-i", "-q", "-s", "2", "--partitions", "2"}, InitConfig{Steps: "dtgvp", Scale: 2, Partitions: 2, Quiet: true}},
		{"no vacuum, foreign keys", []string{"-i", "-n", "--foreign-keys"}, InitConfig{Steps: "dtg pf"}},
		{"unlogged", []string{"-i", "--unlogged-tables", "--foreign-keys"}, InitConfig{Steps: "dtgvpf", UnloggedTables: true}},
		{"tables only", []string{"-i", "-I", "dt"}, InitConfig{Steps: "dt"}},
	}
	big, fast := "", ""
	if os.Geteuid() == 0 {
		big, fast = tablespaces(t)
		cases = append(cases, tc{"tablespaces", []string{"-i", "--tablespace", big, "--index-tablespace", fast},
			InitConfig{Steps: "dtgvp", Tablespace: big, IndexTablespace: fast}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// One connection each: the parallel load below is the case
			// for the race detector.
			pgtest.OutsideRace(t, "pgbench -i's output and tables")
			if c.cfg.Scale == 0 {
				c.cfg.Scale = 1
			}
			if c.cfg.Fillfactor == 0 {
				c.cfg.Fillfactor = 100
			}
			c.cfg.Major = major
			theirs, ours := srv.NewDatabase(t), srv.NewDatabase(t)
			out, code := runPgbench(t, theirs, c.args...)
			if code != 0 {
				t.Fatalf("pgbench %v: exit %d\n%s", c.args, code, out)
			}
			var log bytes.Buffer
			if err := RunInitSteps(testCtx(t), target(t, ours), c.cfg, &log); err != nil {
				t.Fatalf("RunInitSteps: %v\n%s", err, log.String())
			}
			if maskTimes(log.String()) != maskTimes(out) {
				t.Errorf("log lines differ:\n--- pgbench\n%s--- txload\n%s", out, log.String())
			}
			if c.cfg.Steps == "dt" {
				// No rows to describe: the tables alone.
				return
			}
			if d, w := describe(t, ours), describe(t, theirs); d != w {
				t.Errorf("tables differ:\n--- pgbench\n%s--- txload\n%s", w, d)
			}
		})
	}
	// txload's parallel load gives the same tables.
	t.Run("parallel load", func(t *testing.T) {
		t.Parallel()
		theirs, ours := srv.NewDatabase(t), srv.NewDatabase(t)
		if out, code := runPgbench(t, theirs, "-i", "-s", "3", "--foreign-keys"); code != 0 {
			t.Fatalf("pgbench: %s", out)
		}
		var log bytes.Buffer
		if err := RunInitSteps(testCtx(t), target(t, ours), InitConfig{Steps: "dtgvpf", Scale: 3, Fillfactor: 100, Conns: 3, Major: major}, &log); err != nil {
			t.Fatal(err)
		}
		if d, w := describe(t, ours), describe(t, theirs); d != w {
			t.Errorf("tables differ:\n--- pgbench\n%s--- txload\n%s", w, d)
		}
		if !strings.Contains(log.String(), "300000 of 300000 tuples (100%)") {
			t.Errorf("no progress line:\n%s", log.String())
		}
	})
}

// Steps run in the order given, as pgbench runs them: tables first, data
// later, on the same database.
func TestRunInitStepsOrder(t *testing.T) {
	t.Parallel()
	_, major := realPgbench(t)
	theirs, ours := srv.NewDatabase(t), srv.NewDatabase(t)
	for _, steps := range []string{"dt", "g", "pv"} {
		out, code := runPgbench(t, theirs, "-i", "-I", steps)
		if code != 0 {
			t.Fatalf("pgbench -I %s: %s", steps, out)
		}
		var log bytes.Buffer
		if err := RunInitSteps(testCtx(t), target(t, ours), InitConfig{Steps: steps, Scale: 1, Fillfactor: 100, Major: major}, &log); err != nil {
			t.Fatalf("-I %s: %v", steps, err)
		}
		if maskTimes(log.String()) != maskTimes(out) {
			t.Errorf("-I %s: log lines differ:\n--- pgbench\n%s--- txload\n%s", steps, out, log.String())
		}
	}
	if d, w := describe(t, ours), describe(t, theirs); d != w {
		t.Errorf("tables differ:\n--- pgbench\n%s--- txload\n%s", w, d)
	}
	// A step out of place fails as it does in pgbench: no tables to fill.
	err := RunInitSteps(testCtx(t), target(t, srv.NewDatabase(t)), InitConfig{Steps: "g", Scale: 1, Fillfactor: 100}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "client-side generate") || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("generate without tables: %v", err)
	}
	for _, bad := range []string{"", "dtx"} {
		if err := RunInitSteps(testCtx(t), target(t, srv.NewDatabase(t)), InitConfig{Steps: bad}, &bytes.Buffer{}); err == nil {
			t.Errorf("steps %q accepted", bad)
		}
	}
}

// --unlogged-tables --partitions N --foreign-keys: pgbench up to 17 makes
// the partitioned table unlogged, which PostgreSQL 18 refuses; txload
// makes its partitions unlogged and puts the accounts' foreign key on each
// of them, and the tables take pgbench's transactions.
func TestUnloggedPartitionsForeignKeys(t *testing.T) {
	t.Parallel()
	_, major := realPgbench(t)
	url := srv.NewDatabase(t)
	var log bytes.Buffer
	cfg := InitConfig{Steps: "dtgvpf", Scale: 1, Fillfactor: 100, Partitions: 3, PartitionMethod: "range", UnloggedTables: true, Major: major}
	if err := RunInitSteps(testCtx(t), target(t, url), cfg, &log); err != nil {
		t.Fatalf("RunInitSteps: %v\n%s", err, log.String())
	}
	conn := pgtest.Conn(t, url)
	var unloggedParts, fks int
	var parentPersistence string
	if err := conn.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'pgbench_accounts'::regclass AND c.relpersistence = 'u'),
		(SELECT relpersistence::text FROM pg_class WHERE oid = 'pgbench_accounts'::regclass),
		(SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conparentid = 0)`).Scan(&unloggedParts, &parentPersistence, &fks); err != nil {
		t.Fatal(err)
	}
	wantParent := "u"
	if serverVersion(t) >= 180000 {
		wantParent = "p"
	}
	// tellers→branches, history→branches, tellers, accounts, and the
	// accounts' reference to the branches (on the parent, or on each of
	// the 3 partitions from server 18).
	wantFKs := 5
	if wantParent == "p" {
		wantFKs = 4 + 3
	}
	if unloggedParts != 3 || parentPersistence != wantParent || fks != wantFKs {
		t.Fatalf("unlogged partitions %d, parent persistence %q, foreign keys %d (want 3, %q, %d)", unloggedParts, parentPersistence, fks, wantParent, wantFKs)
	}
	if out, code := runPgbench(t, url, "-n", "-c", "2", "-t", "50"); code != 0 {
		t.Fatalf("pgbench on the tables: exit %d\n%s", code, out)
	}
	// The foreign key holds: an account of a branch that does not exist.
	if _, err := conn.Exec(context.Background(), "INSERT INTO pgbench_accounts VALUES (100001, 99, 0, '')"); err == nil || !strings.Contains(err.Error(), "foreign key") {
		t.Fatalf("an account of branch 99: %v", err)
	}
	if wantParent == "p" {
		// What pgbench itself does here.
		out, code := runPgbench(t, srv.NewDatabase(t), "-i", "--unlogged-tables", "--partitions", "3", "--foreign-keys")
		t.Logf("pgbench %d on server %d: exit %d: %s", major, serverVersion(t), code, lastLine(out))
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
