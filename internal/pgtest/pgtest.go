// Package pgtest gives tests a real database: the server in TXLOAD_TEST_URL,
// or an embedded PostgreSQL started once per test binary, with a fresh
// database per test.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pg/embedded"
)

// Server is the server tests run against.
type Server struct {
	base string
	stop func() error
}

// Start returns the server of TXLOAD_TEST_URL, or starts an embedded one.
func Start(ctx context.Context) (*Server, error) {
	if u := os.Getenv("TXLOAD_TEST_URL"); u != "" {
		return &Server{base: u, stop: func() error { return nil }}, nil
	}
	// A package's tests make hundreds of databases, each with statements of
	// its own: room in pg_stat_statements for all of them, so that no test
	// reading it loses an entry to another's (pgio says when it does).
	srv, err := embedded.Start(ctx, embedded.Options{Log: os.Stderr, CacheDir: os.Getenv("TXLOAD_CACHE_DIR"),
		Settings: []string{"pg_stat_statements.max=50000"}})
	if err != nil {
		return nil, fmt.Errorf("starting the embedded test server (set TXLOAD_TEST_URL to use another): %w", err)
	}
	return &Server{base: srv.URL(), stop: srv.Stop}, nil
}

// Main runs a package's tests against one server, then after (cleanups of
// the package's own), and exits. Use it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m, &srv) }
func Main(m *testing.M, srv **Server, after ...func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	s, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*srv = s
	code := m.Run()
	if err := s.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the test server:", err)
	}
	for _, f := range after {
		f()
	}
	os.Exit(code)
}

// URL is the server's own URL.
func (s *Server) URL() string { return s.base }

// NewDatabase creates an empty database for t, dropped when t ends, and
// returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "txload_test_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	exec(t, ctx, s.base, "CREATE DATABASE "+name+createStrategy(t, ctx, s.base))
	t.Cleanup(func() {
		exec(t, ctx, s.base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(s.base)
	if err != nil {
		t.Fatalf("parsing the test server URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// CreateStrategy is the clause that makes CREATE DATABASE copy the
// template's files (PostgreSQL 15 and later) instead of writing all of it
// to the WAL, its default since 15: 15 ms a database instead of 90 ms,
// and a package's tests make hundreds. Empty on other servers.
func createStrategy(t testing.TB, ctx context.Context, dsn string) string {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&v); err != nil {
		t.Fatalf("reading the test server's version: %v", err)
	}
	if v < 150000 { // CockroachDB says 130000
		return ""
	}
	return " STRATEGY file_copy"
}

func exec(t testing.TB, ctx context.Context, dsn, sql string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// Conn opens a connection to dsn, closed when t ends.
func Conn(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

// OutsideRace skips t under the race detector when t's time goes to
// another program (pgbench, chromium) and to comparing its output with
// txload's: the detector sees none of that program, and the txload code t
// drives runs under the detector in other tests. The plain run checks t.
func OutsideRace(t testing.TB, other string) {
	t.Helper()
	if RaceDetector {
		t.Skipf("compares with %s: checked in the run without the race detector", other)
	}
}
