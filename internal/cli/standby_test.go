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
	p, err := replica.StartPair(ctx, replica.PairOptions{Server: embedded.Options{CacheDir: os.Getenv("TXLOAD_CACHE_DIR")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	if r := txload(ctx, nil, "init", "bank", "--url", p.Primary.URL(), "--accounts", "1000"); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	standby := pgtest.Conn(t, p.Standby.URL())
	for {
		var n int64
		if err := standby.QueryRow(ctx, "SELECT count(*) FROM bank_account").Scan(&n); err == nil && n == 1000 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the standby did not replay the init")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for url, want := range map[string]bool{p.Standby.URL(): true, p.Primary.URL(): false} {
		r := txload(ctx, nil, "check", "bank", "--url", url)
		out := r.stdout + r.stderr
		if r.code != 0 || strings.Contains(out, "a standby in recovery") != want {
			t.Errorf("check bank on %s: exit %d, want 0, the standby named %v\n%s", url, r.code, want, out)
		}
	}
}
