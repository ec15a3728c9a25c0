package pgtest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// NewDatabaseLoaded loads once per server and name, and hands each test a
// copy of its own: what one test writes, no other sees. Stop drops what
// was loaded, and only that.
func TestNewDatabaseLoaded(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	on, err := At(ctx, s.URL()) // Stop drops the loaded ones, not the server
	if err != nil {
		t.Fatal(err)
	}
	var loads atomic.Int64
	load := func(url string) error {
		loads.Add(1)
		return run(ctx, url, "CREATE TABLE t (v int); INSERT INTO t VALUES (1)")
	}
	rows := func(t *testing.T, url string) int {
		t.Helper()
		var n int
		if err := Conn(t, url).QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	t.Run("copies", func(t *testing.T) {
		for i := range 4 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				url := on.NewDatabaseLoaded(t, "one row", load)
				if n := rows(t, url); n != 1 {
					t.Fatalf("%d rows in a copy, want the 1 loaded", n)
				}
				if err := run(ctx, url, "INSERT INTO t VALUES (2)"); err != nil {
					t.Fatal(err)
				}
				if n := rows(t, url); n != 2 {
					t.Fatalf("%d rows after an insert, want 2", n)
				}
			})
		}
	})
	want := int64(1)
	if on.strategy == "" {
		want = 4 // no copies: loaded into each
	}
	if n := loads.Load(); n != want {
		t.Errorf("loaded %d times for 4 databases, want %d", n, want)
	}
	templates := func() int {
		var n int
		if err := Conn(t, s.URL()).QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname LIKE 'txload_template_%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := templates(); n != int(want%4) {
		t.Errorf("%d loaded databases on the server, want %d", n, want%4)
	}
	if err := on.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := templates(); n != 0 {
		t.Errorf("%d loaded databases left after Stop", n)
	}
}
