// Package pgtest gives tests a real database: the server in TXLOAD_TEST_URL,
// or an embedded PostgreSQL started once per test binary, with a fresh
// database per test.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pg/embedded"
)

// Server is the server tests run against.
type Server struct {
	base string
	stop func() error
	// strategy ends CREATE DATABASE: see createStrategy.
	strategy string

	mu        sync.Mutex
	templates map[string]*template // NewDatabaseLoaded's, by name
}

// template is a database loaded once, which NewDatabaseLoaded copies.
type template struct {
	once sync.Once
	name string // the database, once loaded
	url  string
	err  error
}

// Start returns the server of TXLOAD_TEST_URL, or starts an embedded one.
func Start(ctx context.Context) (*Server, error) {
	return start(ctx, os.Getenv("TXLOAD_TEST_URL"))
}

// At is the server at url, which the caller started and stops (a test's
// own, from OwnServer): its databases are made as Start's are, and Stop
// only drops those NewDatabaseLoaded loaded.
func At(ctx context.Context, url string) (*Server, error) { return start(ctx, url) }

// StartEmbedded starts an embedded server whatever TXLOAD_TEST_URL says:
// for tests whose output names the server (the docs' samples).
func StartEmbedded(ctx context.Context) (*Server, error) { return start(ctx, "") }

func start(ctx context.Context, base string) (*Server, error) {
	s := &Server{base: base, stop: func() error { return nil }}
	if s.base == "" {
		// A package's tests make hundreds of databases, each with statements
		// of its own: room in pg_stat_statements for all of them, so that no
		// test reading it loses an entry to another's (pgio says when it
		// does).
		srv, err := embedded.Start(ctx, embedded.Options{Log: os.Stderr, CacheDir: os.Getenv("TXLOAD_CACHE_DIR"),
			Settings: []string{"pg_stat_statements.max=50000"}})
		if err != nil {
			return nil, fmt.Errorf("starting the embedded test server (set TXLOAD_TEST_URL to use another): %w", err)
		}
		s.base, s.stop = srv.URL(), srv.Stop
	}
	var err error
	if s.strategy, err = createStrategy(ctx, s.base); err != nil {
		_ = s.stop()
		return nil, err
	}
	return s, nil
}

// OwnServer starts an embedded server for t alone, with settings
// ("name=value") beside txload's own, and stops it when t ends; under
// -short it skips t.
func OwnServer(t testing.TB, settings ...string) *embedded.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a server of its own")
	}
	s, err := embedded.Start(t.Context(), embedded.Options{CacheDir: os.Getenv("TXLOAD_CACHE_DIR"), Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
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
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the test server:", err)
	}
	for _, f := range after {
		f()
	}
	os.Exit(code)
}

// Stop drops the databases NewDatabaseLoaded loaded, and stops the server
// if Start started it.
func (s *Server) Stop() error {
	s.mu.Lock()
	var names []string
	for _, tpl := range s.templates {
		if tpl.name != "" {
			names = append(names, tpl.name)
		}
	}
	s.templates = nil
	s.mu.Unlock()
	var errs []error
	for _, name := range names {
		if err := run(context.Background(), s.base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, s.stop())...)
}

// URL is the server's own URL.
func (s *Server) URL() string { return s.base }

// NewDatabase creates an empty database for t, dropped when t ends, and
// returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	return s.newDatabase(t, "")
}

// NewDatabaseEncoding creates an empty database in encoding (SQL_ASCII,
// LATIN1, UTF8, ...) with the C locale, as `initdb --locale C` or `CREATE
// DATABASE ... ENCODING` make them, dropped when t ends, and returns its
// URL.
func (s *Server) NewDatabaseEncoding(t testing.TB, encoding string) string {
	t.Helper()
	return s.newDatabase(t, fmt.Sprintf(" ENCODING '%s' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0", encoding))
}

// NewDatabaseLoaded creates a database for t holding what load put into
// an empty database, dropped when t ends, and returns its URL. The first
// call for a name loads a database once for the server (load gets its URL
// and returns an error if it failed); every call copies it (CREATE
// DATABASE … TEMPLATE, the files copied on PostgreSQL 15 and later: tens
// of milliseconds for pgbench's tables at scale 1, which take a second of
// CPU to load). On a server where databases are not copied as files
// (CockroachDB, PostgreSQL before 15), load runs into t's own database.
// The loaded databases are dropped by Stop.
func (s *Server) NewDatabaseLoaded(t testing.TB, name string, load func(url string) error) string {
	t.Helper()
	if s.strategy == "" {
		db := s.NewDatabase(t)
		if err := load(db); err != nil {
			t.Fatalf("loading %s: %v", name, err)
		}
		return db
	}
	s.mu.Lock()
	if s.templates == nil {
		s.templates = map[string]*template{}
	}
	tpl := s.templates[name]
	if tpl == nil {
		tpl = &template{}
		s.templates[name] = tpl
	}
	s.mu.Unlock()
	tpl.once.Do(func() {
		ctx := context.Background()
		db := "txload_template_" + randomName()
		u, err := s.urlOf(db)
		if err != nil {
			tpl.err = err
			return
		}
		if tpl.err = run(ctx, s.base, "CREATE DATABASE "+db+s.strategy); tpl.err != nil {
			return
		}
		if tpl.err = load(u); tpl.err != nil {
			_ = run(ctx, s.base, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
			return
		}
		s.mu.Lock()
		tpl.name, tpl.url = db, u
		s.mu.Unlock()
	})
	if tpl.err != nil {
		t.Fatalf("loading %s: %v", name, tpl.err)
	}
	return s.CopyDatabase(t, tpl.url)
}

// newDatabase creates a database with the options of CREATE DATABASE in
// with, dropped when t ends, and returns its URL.
func (s *Server) newDatabase(t testing.TB, with string) string {
	t.Helper()
	name := "txload_test_" + randomName()
	ctx := context.Background()
	exec(t, ctx, s.base, "CREATE DATABASE "+name+with+s.strategy)
	t.Cleanup(func() {
		exec(t, ctx, s.base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := s.urlOf(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// randomName is 12 hexadecimal digits, for a database's name.
func randomName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// urlOf is the server's URL with the database name.
func (s *Server) urlOf(name string) (string, error) {
	u, err := url.Parse(s.base)
	if err != nil {
		return "", fmt.Errorf("parsing the test server URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// createStrategy returns the clause that makes CREATE DATABASE copy the
// template's files (PostgreSQL 15 and later) instead of writing all of it
// to the WAL, its default since 15: 15 ms a database instead of 90 ms,
// and a package's tests make hundreds. Empty on other servers.
func createStrategy(ctx context.Context, dsn string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", fmt.Errorf("connecting to the test server: %w", err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&v); err != nil {
		return "", fmt.Errorf("reading the test server's version: %w", err)
	}
	if v < 150000 { // CockroachDB says 130000
		return "", nil
	}
	return " STRATEGY file_copy", nil
}

func exec(t testing.TB, ctx context.Context, dsn, sql string) {
	t.Helper()
	if err := run(ctx, dsn, sql); err != nil {
		t.Fatal(err)
	}
}

// run runs sql on a connection of its own to dsn.
func run(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connecting to the test server: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
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

// CopyDatabase creates a copy of the database of src (CREATE DATABASE …
// TEMPLATE), dropped when t ends, and returns its URL: a test tampers with
// the copy and keeps the original. It waits for the sessions of src that
// are ending (a command that just returned) to be gone.
func (s *Server) CopyDatabase(t testing.TB, src string) string {
	t.Helper()
	su, err := url.Parse(src)
	if err != nil {
		t.Fatalf("parsing %s: %v", src, err)
	}
	name := "txload_test_" + randomName()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.base)
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	defer conn.Close(ctx)
	sql := "CREATE DATABASE " + name + " TEMPLATE " + strings.TrimPrefix(su.Path, "/") + s.strategy
	for tries := 0; ; tries++ {
		_, err = conn.Exec(ctx, sql)
		// 55006: the template is being accessed by other users.
		if err == nil || tries == 100 || !strings.Contains(err.Error(), "55006") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	t.Cleanup(func() { exec(t, ctx, s.base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u, err := s.urlOf(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// LongEnv is the switch that runs the long suites: the comparisons case by
// case with another program, the published findings on old releases, the
// docs' long samples. `.ci/run` sets it; `go test ./...` leaves them out.
const LongEnv = "TXLOAD_TEST_LONG"

// Long skips t unless LongEnv is 1 (and under -short), saying what it does
// and how to run it.
func Long(t testing.TB, what string) {
	t.Helper()
	if !Longer() {
		t.Skipf("%s: a long suite, run with %s=1 (as .ci/run does)", what, LongEnv)
	}
}

// Longer reports whether the long suites run (LongEnv is 1, and not
// -short): a test that tries random moments tries more of them then.
func Longer() bool { return !testing.Short() && os.Getenv(LongEnv) == "1" }
