package cli

import (
	"strings"
	"testing"

	"github.com/txload/txload/internal/pgtest"
)

// Through PgBouncer in transaction mode, with a plain URL: the pooler is
// detected, the bank and the tpcb-like builtin run and check out, and
// --protocol prepared is refused with one line before anything is written.
func TestThroughPgbouncer(t *testing.T) {
	t.Parallel()
	direct := srv.NewDatabase(t)
	url := pgtest.Pgbouncer(t, direct, "transaction")

	r := txload(t.Context(), nil, "run", "bank", "--url", url, "--transactions", "200", "--progress", "0", "--concurrency", "8")
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
