package embedded

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The first start keeps the cluster initdb made; the next starts copy it
// instead of running initdb; a kept cluster the server cannot start from
// is replaced by a new initdb's, and the start succeeds.
func TestInitdbTemplate(t *testing.T) {
	linuxOnly(t)
	if testing.Short() {
		t.Skip("may download the binaries")
	}
	t.Parallel() // a cache of its own
	cache, rt := copiedCache(t, true)
	tpl := templateDir(rt)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const keeps = "kept a copy of initdb's cluster in "
	// startOnce starts a server and returns its cluster's system
	// identifier, which initdb draws anew and a copy shares.
	startOnce := func(t *testing.T, keep bool, says ...string) (id int64) {
		t.Helper()
		log := startChecked(ctx, t, cache, func(s *Server) {
			conn, err := pgx.Connect(ctx, s.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			if err := conn.QueryRow(ctx, "SELECT system_identifier FROM pg_control_system()").Scan(&id); err != nil {
				t.Fatal(err)
			}
		})
		if strings.Contains(log, keeps) != keep {
			t.Errorf("keeps a copy of initdb's cluster: %v, want %v:\n%s", !keep, keep, log)
		}
		for _, w := range says {
			if !strings.Contains(log, w) {
				t.Errorf("Start does not say %q:\n%s", w, log)
			}
		}
		if _, err := os.Stat(filepath.Join(tpl, "global", "pg_control")); err != nil {
			t.Errorf("no whole cluster kept: %v", err)
		}
		if left, _ := filepath.Glob(filepath.Join(cache, ".*")); len(left) > 0 {
			t.Errorf("leftovers in the cache: %v", left)
		}
		return id
	}
	var first, again int64
	t.Run("first start runs initdb", func(t *testing.T) { first = startOnce(t, true, keeps+tpl+": the next starts copy it") })
	fi, err := os.Stat(tpl)
	if err != nil {
		t.Fatal(err)
	}
	// A copy: the same cluster, down to its identifier; the kept one
	// untouched.
	t.Run("next start copies", func(t *testing.T) {
		if id := startOnce(t, false); id != first {
			t.Errorf("system identifier %d, the kept cluster's %d: not a copy", id, first)
		}
		if now, err := os.Stat(tpl); err != nil || !now.ModTime().Equal(fi.ModTime()) {
			t.Errorf("the kept cluster changed: %v, %v", now, err)
		}
	})
	t.Run("a damaged kept cluster", func(t *testing.T) {
		if err := os.Remove(filepath.Join(tpl, "global", "pg_control")); err != nil {
			t.Fatal(err)
		}
		again = startOnce(t, true, "PostgreSQL did not start from the cluster kept from an earlier initdb (", "removing it and running initdb")
		if again == first {
			t.Error("the same system identifier after a new initdb")
		}
	})
	t.Run("and copies again", func(t *testing.T) {
		if id := startOnce(t, false); id != again {
			t.Errorf("system identifier %d, the kept cluster's %d: not a copy", id, again)
		}
	})
}

// BenchmarkStart: a start and stop of the embedded server, its cluster
// copied from the one kept from an earlier initdb, or made by initdb.
func BenchmarkStart(b *testing.B) {
	for _, bc := range []struct {
		name     string
		template bool
	}{{"copy", true}, {"initdb", false}} {
		b.Run(bc.name, func(b *testing.B) {
			v, _ := Lookup(DefaultMajor())
			var as *account
			if os.Geteuid() == 0 {
				as = unprivileged()
			}
			cache := os.Getenv("TXLOAD_CACHE_DIR")
			if cache == "" {
				var err error
				if cache, err = defaultCacheDir(); err != nil {
					b.Skip(err)
				}
			}
			rt, err := ensureRuntime(b.Context(), cache, v, nopWriter{}, as != nil, false)
			if err != nil {
				b.Fatal(err)
			}
			tpl := ""
			if bc.template {
				tpl = templateDir(rt)
			}
			var stopping time.Duration
			for b.Loop() {
				s, _, err := start(b.Context(), v, rt, as, defaultStartTimeout, nil, tpl, nopWriter{})
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				if err := s.Stop(); err != nil {
					b.Fatal(err)
				}
				stopping += time.Since(t0)
			}
			b.ReportMetric(float64(stopping.Milliseconds())/float64(b.N), "stop-ms/op")
		})
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
