package cli

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/txload/txload/internal/pgtest"
)

// schemaOf lists pgbench's tables' columns as information_schema describes
// them, and their row counts.
func schemaOf(t *testing.T, url string) (cols []string, counts map[string]int64) {
	t.Helper()
	conn := pgtest.Conn(t, url)
	ctx := context.Background()
	rows, err := conn.Query(ctx, `SELECT table_name, column_name, data_type, COALESCE(character_maximum_length, 0), is_nullable
		FROM information_schema.columns WHERE table_name LIKE 'pgbench_%' AND table_schema = current_schema()
		ORDER BY table_name, ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var tb, col, typ, null string
		var n int
		if err := rows.Scan(&tb, &col, &typ, &n, &null); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, fmt.Sprintf("%s.%s %s(%d) null=%s", tb, col, typ, n, null))
	}
	counts = map[string]int64{}
	for _, tb := range []string{"pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history"} {
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+tb).Scan(&n); err != nil {
			t.Fatal(err)
		}
		counts[tb] = n
	}
	return cols, counts
}

func primaryKeys(t *testing.T, url string) []string {
	t.Helper()
	rows, err := pgtest.Conn(t, url).Query(context.Background(), `SELECT tc.table_name || '(' || kcu.column_name || ')' || tc.constraint_type
		FROM information_schema.table_constraints tc JOIN information_schema.key_column_usage kcu USING (constraint_name, table_name)
		WHERE tc.table_name LIKE 'pgbench_%' ORDER BY 1`)
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

// init tpcb gives what pgbench -i gives: the same columns and types, the
// same row counts, the same keys.
func TestInitTPCBMatchesPgbench(t *testing.T) {
	pgtest.OutsideRace(t, "pgbench's tables")
	t.Parallel()
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		t.Skip("pgbench is not installed: nothing to compare with")
	}
	for _, tc := range []struct {
		name     string
		txload   []string
		pgbench  []string
		wantKeys int
	}{
		{"client-side", []string{"--generate", "client"}, []string{"-I", "dtgvp"}, 3},
		{"server-side with foreign keys", []string{"--generate", "server", "--foreign-keys"}, []string{"-I", "dtGvpf"}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ours, theirs := srv.NewDatabase(t), srv.NewDatabase(t)
			r := txload(t.Context(), nil, append([]string{"init", "tpcb", "--scale", "1", "--url", ours}, tc.txload...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if !regexp.MustCompile(`done in [0-9.]+ s \(drop tables [0-9.]+ s, create tables [0-9.]+ s, (client|server)-side generate [0-9.]+ s, vacuum [0-9.]+ s, primary keys [0-9.]+ s`).MatchString(r.stderr) {
				t.Errorf("no pgbench-shaped timing line:\n%s", r.stderr)
			}
			out, err := exec.Command(pgbench, append([]string{"-i", "-s", "1", "-q"}, append(tc.pgbench, theirs)...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("pgbench -i: %v\n%s", err, out)
			}
			oc, on := schemaOf(t, ours)
			tcols, tn := schemaOf(t, theirs)
			if strings.Join(oc, "\n") != strings.Join(tcols, "\n") {
				t.Errorf("columns differ:\ntxload:\n%s\npgbench:\n%s", strings.Join(oc, "\n"), strings.Join(tcols, "\n"))
			}
			want := map[string]int64{"pgbench_accounts": 100000, "pgbench_branches": 1, "pgbench_tellers": 10, "pgbench_history": 0}
			for tb, n := range want {
				if on[tb] != n || tn[tb] != n {
					t.Errorf("%s: txload %d rows, pgbench %d, want %d", tb, on[tb], tn[tb], n)
				}
			}
			if ok, pk := primaryKeys(t, ours), primaryKeys(t, theirs); strings.Join(ok, ",") != strings.Join(pk, ",") || len(ok) != tc.wantKeys {
				t.Errorf("keys: txload %v, pgbench %v", ok, pk)
			}
		})
	}
}

func TestInitTPCBOptions(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	r := txload(t.Context(), nil, "init", "tpcb", "--url", url, "--scale", "2", "--partitions", "3", "--partition-method", "hash",
		"--fillfactor", "80", "--unlogged-tables", "--init-conns", "3")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	conn := pgtest.Conn(t, url)
	var parts, unlogged int
	var accounts int64
	if err := conn.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM pg_inherits WHERE inhparent = 'pgbench_accounts'::regclass),
		(SELECT count(*) FROM pg_class WHERE relname LIKE 'pgbench_%' AND relpersistence = 'u' AND relkind = 'r'),
		(SELECT count(*) FROM pgbench_accounts)`).Scan(&parts, &unlogged, &accounts); err != nil {
		t.Fatal(err)
	}
	if parts != 3 || accounts != 200000 || unlogged < 4 {
		t.Fatalf("partitions %d, accounts %d, unlogged tables %d", parts, accounts, unlogged)
	}
	var opts []string
	if err := conn.QueryRow(context.Background(), `SELECT reloptions FROM pg_class WHERE relname = 'pgbench_tellers'`).Scan(&opts); err != nil || len(opts) != 1 || opts[0] != "fillfactor=80" {
		t.Fatalf("tellers reloptions %v (%v)", opts, err)
	}
	// Re-runnable: the tables stay; --drop reloads.
	r = txload(t.Context(), nil, "init", "tpcb", "--url", url)
	if r.code != 0 || !strings.Contains(r.stderr, "already hold scale 2") {
		t.Fatalf("re-run: exit %d\n%s", r.code, r.stderr)
	}
	if c := txload(t.Context(), nil, "check", "tpcb", "--url", url); c.code != 0 || !strings.Contains(c.stdout, "check: ok") ||
		!strings.Contains(c.stdout, "not checked after the fact: which history rows a run wrote") {
		t.Fatalf("check: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	if _, err := conn.Exec(context.Background(), "UPDATE pgbench_branches SET bbalance = bbalance + 7 WHERE bid = 1"); err != nil {
		t.Fatal(err)
	}
	if c := txload(t.Context(), nil, "check", "tpcb", "--url", url); c.code != 1 || !strings.Contains(c.stdout, "VIOLATION: balances disagree") {
		t.Fatalf("check after tampering: exit %d\n%s", c.code, c.stdout)
	}
}

// init tpcb on pgbench's tables made with other settings exits 2, naming
// the difference and --drop, and leaves them as they are.
func TestInitTPCBOtherSettingsExit2(t *testing.T) {
	t.Parallel()
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		t.Skip("pgbench is not installed: the tables are to be made by pgbench -i")
	}
	url := srv.NewDatabase(t)
	if out, err := exec.Command(pgbench, "-i", "-s", "2", "-q", url).CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	r := txload(t.Context(), nil, "init", "tpcb", "--url", url, "--scale", "3", "--unlogged-tables")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "pgbench's tables exist with other settings: scale 2 (asked 3), unlogged false (asked true); --drop recreates them") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var n int
	if err := pgtest.Conn(t, url).QueryRow(context.Background(), "SELECT count(*) FROM pgbench_branches").Scan(&n); err != nil || n != 2 {
		t.Fatalf("branches %d (%v)", n, err)
	}
	if r := txload(t.Context(), nil, "init", "tpcb", "--url", url, "--scale", "3", "--drop"); r.code != 0 {
		t.Fatalf("--drop: exit %d\n%s", r.code, r.stderr)
	}
}
