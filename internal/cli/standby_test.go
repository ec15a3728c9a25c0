package cli

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/pg/replica"
	"github.com/txload/txload/internal/pgtest"
)

// A check run on a hot standby reads what the standby has replayed, which
// may be behind the primary: the server line says it is a standby (the
// eighth outside retest checked a standby whose replay had stopped and
// nothing said so).
func TestCheckOnStandbySaysSo(t *testing.T) {
	t.Parallel() // servers of its own, which mostly wait
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	p := standbyAfter(ctx, t, "SELECT count(*) = 1000 FROM bank_account", []string{"init", "bank", "--accounts", "1000"})
	for url, want := range map[string]bool{p.Standby.URL(): true, p.Primary.URL(): false} {
		r := txload(ctx, nil, "check", "bank", "--url", url)
		out := r.stdout + r.stderr
		if r.code != 0 || strings.Contains(out, "a standby in recovery") != want {
			t.Errorf("check bank on %s: exit %d, want 0, the standby named %v\n%s", url, r.code, want, out)
		}
	}
}

// standbyAfter starts a primary and its hot standby (stopped when the test
// ends), runs each init on the primary (its --url added), and returns once
// ready, a query of one boolean, is true on the standby: it has replayed
// them.
func standbyAfter(ctx context.Context, t *testing.T, ready string, inits ...[]string) *replica.Pair {
	t.Helper()
	p, err := replica.StartPair(ctx, replica.PairOptions{Server: embedded.Options{CacheDir: os.Getenv("TXLOAD_CACHE_DIR")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	for _, args := range inits {
		if r := txload(ctx, nil, append(args, "--url", p.Primary.URL())...); r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", strings.Join(args[:2], " "), r.code, r.stderr)
		}
	}
	standby := pgtest.Conn(t, p.Standby.URL())
	for {
		var done bool
		if err := standby.QueryRow(ctx, ready).Scan(&done); err == nil && done {
			return p
		}
		if ctx.Err() != nil {
			t.Fatal("the standby did not replay the inits")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
