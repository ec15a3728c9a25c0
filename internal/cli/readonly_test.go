package cli

import (
	"context"
	"fmt"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// Runs that write nothing run where nothing can be written, as pgbench's
// do (the eighth outside retest: a hot standby, a read-only role): a role
// that may only read, its transactions read-only by default, stands in
// for a standby. txload's record of pgbench's builtins and ycsb's claim of
// key numbers for inserts are not written for them.
func TestReadOnlyRunsOnReadOnlyRole(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	for _, args := range [][]string{
		{"init", "tpcb", "--url", url, "--scale", "1"},
		{"init", "ycsb", "--url", url, "--records", "500"},
	} {
		if r := txload(t.Context(), nil, args...); r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", strings.Join(args[:2], " "), r.code, r.stderr)
		}
	}
	ro := loginRole(t, url, "ro", `GRANT SELECT ON ALL TABLES IN SCHEMA public TO %[1]s; ALTER ROLE %[1]s SET default_transaction_read_only = on`)
	for _, args := range [][]string{
		{"pgbench", "-S", "-n", "-T", "1", "-c", "2", ro},
		{"pgbench", "-b", "select-only", "-n", "-t", "20", "-c", "2", ro},
		{"run", "select-only", "--url", ro, "--init", "skip", "--concurrency", "2", "--duration", "1s", "--progress", "0"},
		{"run", "ycsb", "--url", ro, "--init", "keep", "--records", "500", "--workload", "c", "--concurrency", "2", "--duration", "1s", "--progress", "0"},
	} {
		r := txload(t.Context(), nil, args...)
		if r.code != 0 {
			t.Errorf("%s as a read-only role: exit %d, want 0\n%s\n%s", strings.Join(args[:2], " "), r.code, r.stdout, r.stderr)
		}
	}
	// A run that writes still needs to: tpcb-like fails, loudly.
	if r := txload(t.Context(), nil, "pgbench", "-n", "-t", "5", "-c", "1", ro); r.code == 0 || !strings.Contains(r.stderr, "in a read-only transaction (SQLSTATE 25006)") {
		t.Errorf("tpcb-like as a read-only role: exit %d, want non-zero and the refusal shown\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// On a hot standby, the runs that write nothing run (a script of its
// own too, its record not written, which one line says), and `check vote`
// fails with one line saying the view's definition cannot be compared
// there, where it failed on BEGIN READ WRITE (the eighth outside retest).
func TestReadOnlyRunsOnStandby(t *testing.T) {
	t.Parallel() // servers of its own, which mostly wait
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	p := standbyAfter(ctx, t, "SELECT count(*) = 1000 FROM article",
		[]string{"init", "tpcb", "--scale", "1"},
		[]string{"init", "ycsb", "--records", "500"},
		[]string{"init", "vote", "--articles", "1000"})
	script := filepath.Join(t.TempDir(), "ro.sql")
	if err := os.WriteFile(script, []byte("\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := p.Standby.URL()
	for _, c := range []struct {
		args []string
		line string // a line stderr must hold
	}{
		{[]string{"pgbench", "-S", "-n", "-t", "20", "-c", "2", url}, ""},
		{[]string{"pgbench", "-f", script, "-n", "-t", "20", "-c", "2", url},
			"the server is in recovery (a hot standby), where no statement of the run can write: its scripts are not recorded in txload_pgbench_builtin\n"},
		{[]string{"run", "select-only", "--url", url, "--init", "skip", "--concurrency", "2", "--duration", "1s", "--progress", "0"}, ""},
		{[]string{"run", "ycsb", "--url", url, "--init", "keep", "--records", "500", "--workload", "c", "--concurrency", "2", "--duration", "1s", "--progress", "0"},
			"the run only reads and scans: it claims no key numbers for inserts (it writes nothing)\n"},
	} {
		if r := txload(ctx, nil, c.args...); r.code != 0 || !strings.Contains(r.stderr, c.line) {
			t.Errorf("%s on a standby: exit %d, want 0 and %q\n%s\n%s", strings.Join(c.args[:2], " "), r.code, c.line, r.stdout, r.stderr)
		}
	}
	r := txload(ctx, nil, "check", "vote", "--url", url)
	if want := "txload: comparing article_votes' definition with init's: the server is in recovery (a hot standby), where no scratch view can be made to print init's: " +
		"run the check on the primary, whose article_votes the standby replays\n"; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("check vote on a standby: exit %d, want 1 and %q\n%s\n%s", r.code, want, r.stdout, r.stderr)
	}
}

// loginRole makes a role of its own for url's database (prefix and the
// database's name), runs setup (%[1]s is the role, %[2]s the database)
// in that database, and returns url as that role. The role is dropped
// when the test ends.
func loginRole(t *testing.T, url, prefix, setup string) string {
	t.Helper()
	role := prefix + "_" + strings.ToLower(strings.TrimPrefix(dbName(t, url), "txload_test_"))
	admin := pgtest.Conn(t, srv.URL())
	t.Cleanup(func() {
		_, _ = pgtest.Conn(t, url).Exec(context.Background(), "DROP OWNED BY "+role)
		_, _ = admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+role)
	})
	if _, err := admin.Exec(t.Context(), "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := pgtest.Conn(t, url).Exec(t.Context(), fmt.Sprintf(setup, role, dbName(t, url))); err != nil {
		t.Fatal(err)
	}
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	u.User = neturl.User(role)
	return u.String()
}
