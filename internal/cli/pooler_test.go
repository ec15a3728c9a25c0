package cli

import (
	"context"
	"fmt"
	neturl "net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// Through PgBouncer in transaction mode, with a plain URL: the pooler is
// detected, the bank and the tpcb-like builtin run and check out, and
// --protocol prepared is refused with one line before anything is written.
func TestThroughPgbouncer(t *testing.T) {
	t.Parallel()
	direct := srv.NewDatabase(t)
	url := pgtest.Pgbouncer(t, direct, "transaction")

	r := txload(t.Context(), nil, "run", "bank", "--url", url, "--accounts", "1000", "--transactions", "200", "--progress", "0", "--concurrency", "8")
	if r.code != 0 {
		t.Fatalf("bank: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stderr, "through PgBouncer", "transaction pooling: statements are unnamed and no session state is used")
	mustContain(t, r.stdout, "check: ok")

	r = txload(t.Context(), nil, "run", "tpcb-like", "--url", url, "--protocol", "prepared", "--duration", "1s", "--init", "fresh")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--protocol prepared keeps named prepared statements in the server session, but PgBouncer") {
		t.Fatalf("prepared through the pooler: exit %d\n%s", r.code, r.stderr)
	}
	if n := count(t, direct, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'pgbench%'"); n != 0 {
		t.Fatalf("the refused run created %d tables", n)
	}
	for _, proto := range []string{"simple", "extended"} {
		r = txload(t.Context(), nil, "run", "tpcb-like", "--url", url, "--protocol", proto, "--transactions", "200", "--progress", "0",
			"--concurrency", "8", "--init", "keep")
		if r.code != 0 {
			t.Fatalf("tpcb-like %s: exit %d\n%s\n%s", proto, r.code, r.stdout, r.stderr)
		}
		mustContain(t, r.stdout, "tpcb-like")
	}
	if c := txload(t.Context(), nil, "check", "tpcb", "--url", url); c.code != 0 {
		t.Fatalf("check tpcb: exit %d\n%s", c.code, c.stdout)
	}
}

// Through a pooler the clients are checked against the pooler's own limit,
// not the server's max_connections (a pooler exists to multiplex them):
// more clients than the server has connections run through PgBouncer
// (max_client_conn 500, pool 20); 600 are refused with the pooler's limit.
func TestConnectionsThroughPooler(t *testing.T) {
	t.Parallel()
	direct := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "select-only", "--url", direct); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	url := pgtest.Pgbouncer(t, direct, "transaction")
	maxConns := count(t, direct, "SELECT current_setting('max_connections')::int")
	clients := maxConns + 50
	if clients > 495 {
		t.Skipf("the test server has %d connections: more would not fit under PgBouncer's max_client_conn 500", maxConns)
	}
	r := txload(t.Context(), nil, "run", "select-only", "--url", url, "--concurrency", strconv.FormatInt(clients, 10), "--transactions", "2", "--progress", "0")
	if r.code != 0 {
		t.Fatalf("%d clients through PgBouncer, the server having %d connections: exit %d\n%s\n%s", clients, maxConns, r.code, r.stdout, r.stderr)
	}
	r = txload(t.Context(), nil, "run", "select-only", "--url", url, "--concurrency", "600", "--transactions", "2", "--progress", "0")
	if want := "the run needs 602 connections but PgBouncer"; r.code != ExitUsage || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "max_client_conn 500") {
		t.Fatalf("600 clients: exit %d, want 2 and %q\n%s", r.code, want, r.stderr)
	}
	t.Logf("refused: %s", r.stderr)
}

// Straight to the server, what a role can really use: the connections in
// use are counted though the role cannot see the others' rows of
// pg_stat_activity, superuser-reserved slots are left out for it, and the
// role's and the database's connection limits bind. Each refusal is one
// line, exit 2, before anything is written.
func TestConnectionsARoleCanMake(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	admin := pgtest.Conn(t, url)
	role := fmt.Sprintf("plain_%d", time.Now().UnixNano()%1e9)
	if _, err := admin.Exec(t.Context(), "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pgtest.Conn(t, srv.URL()).Exec(context.Background(), "DROP OWNED BY "+role+"; DROP ROLE "+role)
	})
	if _, err := admin.Exec(t.Context(), "GRANT ALL ON SCHEMA public TO "+role); err != nil {
		t.Fatal(err)
	}
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	u.User = neturl.User(role)
	plain := u.String()
	// Twenty connections of another role, idle, to another database.
	for range 20 {
		pgtest.Conn(t, srv.URL())
	}
	inUse := regexp.MustCompile(`, ([0-9]+) in use\)`)
	r := txload(t.Context(), nil, "run", "bank", "--url", plain, "--concurrency", "100000")
	m := inUse.FindStringSubmatch(r.stderr)
	if r.code != ExitUsage || m == nil || !strings.Contains(r.stderr, "reserved for superusers") {
		t.Fatalf("exit %d, want 2 and the connections in use\n%s", r.code, r.stderr)
	}
	if n, _ := strconv.Atoi(m[1]); n < 21 {
		t.Fatalf("%d connections in use for a role that cannot see the others', with 21 open", n)
	}
	for _, tc := range []struct{ alter, want string }{
		{"ALTER ROLE " + role + " CONNECTION LIMIT 6", "role " + role + " limited to 6 connections"},
		{"ALTER DATABASE " + u.Path[1:] + " CONNECTION LIMIT 6", "limited to 6 connections"},
	} {
		// A limit with room for the connections txload opens before its
		// check (each closed backend takes a moment to leave).
		if _, err := admin.Exec(t.Context(), tc.alter); err != nil {
			t.Fatal(err)
		}
		r := txload(t.Context(), nil, "run", "bank", "--url", plain, "--concurrency", "20")
		if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 1 {
			t.Fatalf("after %s: exit %d, want 2 and %q\n%s", tc.alter, r.code, tc.want, r.stderr)
		}
		if n := count(t, url, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'bank%'"); n != 0 {
			t.Fatalf("the refused run created %d tables", n)
		}
	}
}
