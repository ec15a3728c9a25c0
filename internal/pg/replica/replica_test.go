package replica

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pg/embedded"
)

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func start(t *testing.T, ctx context.Context, settings []string) *embedded.Server {
	t.Helper()
	s, err := embedded.Start(ctx, embedded.Options{Log: testLog{t}, CacheDir: os.Getenv("TXLOAD_CACHE_DIR"), Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func run(t *testing.T, ctx context.Context, url string, sqls ...string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range sqls {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func count(t *testing.T, ctx context.Context, url, sql string) int64 {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// eventually waits for a count to reach want.
func eventually(t *testing.T, ctx context.Context, url, sql string, want int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := count(t, ctx, url, sql)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", sql, n, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Logical replication: the initial copy, then changes streamed, for tables
// with and without a primary key (the latter given REPLICA IDENTITY FULL,
// so that its updates publish).
func TestLogical(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two servers of its own")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	src := start(t, ctx, SourceSettings())
	dst := start(t, ctx, nil)
	ddl := "CREATE TABLE k (id INT PRIMARY KEY, v INT); CREATE TABLE h (x INT)"
	run(t, ctx, src.URL(), ddl, "INSERT INTO k SELECT g, g FROM generate_series(1, 1000) g", "INSERT INTO h VALUES (1), (2)")
	run(t, ctx, dst.URL(), ddl)
	l, err := StartLogical(ctx, src.URL(), dst.URL(), src.URL(), "txload_test", []string{"k", "h"})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, ctx, dst.URL(), "SELECT count(*) FROM k"); n != 1000 {
		t.Errorf("after the initial copy the destination has %d rows, want 1000", n)
	}
	run(t, ctx, src.URL(), "UPDATE k SET v = -v WHERE id <= 10", "DELETE FROM k WHERE id > 990", "UPDATE h SET x = 3 WHERE x = 2")
	eventually(t, ctx, dst.URL(), "SELECT count(*) FROM k WHERE v < 0", 10)
	eventually(t, ctx, dst.URL(), "SELECT count(*) FROM k", 990)
	eventually(t, ctx, dst.URL(), "SELECT count(*) FROM h WHERE x = 3", 1)
	if err := l.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, ctx, src.URL(), "SELECT count(*) FROM pg_replication_slots"); n != 0 {
		t.Errorf("%d replication slots left on the source", n)
	}
}

// A standby built by a base backup while the primary takes writes: it has
// every row, streams what follows, answers reads and refuses writes.
func TestStandby(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two servers of its own")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	src := start(t, ctx, SourceSettings())
	dst := start(t, ctx, nil)
	run(t, ctx, src.URL(), "CREATE TABLE k (id INT PRIMARY KEY, v TEXT)", "INSERT INTO k SELECT g, repeat('x', 100) FROM generate_series(1, 100000) g")
	// Writes during the backup.
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := pgx.Connect(ctx, src.URL())
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		for i := 1; i <= 200; i++ {
			_, _ = conn.Exec(ctx, "UPDATE k SET v = 'y' WHERE id = $1", i)
		}
	}()
	if err := Standby(ctx, src, dst, "txload_standby"); err != nil {
		t.Fatal(err)
	}
	<-done
	if n := count(t, ctx, dst.URL(), "SELECT pg_is_in_recovery()::int"); n != 1 {
		t.Fatal("the standby is not in recovery")
	}
	eventually(t, ctx, dst.URL(), "SELECT count(*) FROM k WHERE v = 'y'", 200)
	run(t, ctx, src.URL(), "INSERT INTO k VALUES (0, 'z')")
	eventually(t, ctx, dst.URL(), "SELECT count(*) FROM k", 100001)
	conn, err := pgx.Connect(ctx, dst.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "INSERT INTO k VALUES (-1, 'no')"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a write on the standby: %v", err)
	}
	if n := count(t, ctx, src.URL(), "SELECT count(*) FROM pg_stat_replication WHERE application_name = 'txload_standby' AND state = 'streaming'"); n != 1 {
		t.Errorf("pg_stat_replication shows %d streaming standbys", n)
	}
}
