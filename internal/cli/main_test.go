package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
	"github.com/txload/txload/workload/all"
)

var srv *pgtest.Server

// TestMain runs up to four parallel tests at once unless -parallel says
// otherwise: most of them wait on runs of a fixed duration rather than on
// the CPU, so go test's default (one per core) leaves a 2-core machine
// idle. The tests sensitive to timing do not call t.Parallel and run alone.
// Under the race detector, go test's default stays: four at once there
// (52 s and 94 CPU-seconds alone against 64 s and 100) left other packages'
// timing tests too little of the machine in CI.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given && !pgtest.RaceDetector && runtime.GOMAXPROCS(0) < 4 {
		if err := flag.Set("test.parallel", "4"); err != nil {
			panic(err)
		}
	}
	pgtest.Main(m, &srv, func() {
		if dir, err := binDir(); err == nil {
			os.RemoveAll(dir)
		}
	})
}

// tpcbDatabase creates a database for t holding pgbench's tables at scale
// 1 as `txload init tpcb` loads them, and returns its URL: a copy of one
// loaded once for the package (pgtest.NewDatabaseLoaded), for a test that
// needs the tables and not their loading.
func tpcbDatabase(t *testing.T) string {
	t.Helper()
	return tpcbDatabaseOn(t, srv)
}

// tpcbDatabaseOn is tpcbDatabase on the server s.
func tpcbDatabaseOn(t *testing.T, s *pgtest.Server) string {
	t.Helper()
	return s.NewDatabaseLoaded(t, "tpcb", func(url string) error {
		if r := txload(context.Background(), nil, "init", "tpcb", "--url", url); r.code != 0 {
			return fmt.Errorf("txload init tpcb: exit %d\n%s", r.code, r.stderr)
		}
		return nil
	})
}

// timingSensitive skips t under the race detector, which slows the client
// several times over: t asserts a rate, a latency or a schedule that would
// then measure the detector. The plain run checks them; the race run keeps
// the tests that drive the same code for what it does.
func timingSensitive(t *testing.T) {
	t.Helper()
	if pgtest.RaceDetector {
		t.Skip("asserts timing, which the race detector's slowdown distorts")
	}
}

// started runs f in the background (another program beside txload) and
// returns what waits for its error.
func started(f func() error) (wait func() error) {
	done := make(chan error, 1)
	go func() { done <- f() }()
	return func() error { return <-done }
}

// writeBeside is a second writer beside a run, on url: once countSQL
// counts n rows or more (the run's rows are there), it executes sql once.
// wait returns its error, or, if ctx ended first, why (with the last
// count's error: a count that fails, its table not made yet, is tried
// again).
func writeBeside(ctx context.Context, t *testing.T, url, countSQL string, n int64, sql string) (wait func() error) {
	t.Helper()
	conn := pgtest.Conn(t, url)
	return started(func() error {
		var last error
		for ctx.Err() == nil {
			var have int64
			if last = conn.QueryRow(ctx, countSQL).Scan(&have); last == nil && have >= n {
				_, err := conn.Exec(ctx, sql)
				return err
			}
			time.Sleep(20 * time.Millisecond)
		}
		return errors.Join(ctx.Err(), last)
	})
}

// syncBuffer is a buffer the ticker and workers may write concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type result struct {
	stdout, stderr string
	code           int
}

// ran says the command did what was asked, or fell behind an open loop's
// rate and nothing else (BEHIND, exit 1: the last error the runner
// gives): on a loaded machine a test's open loop may, and that is not
// what a test of something else is about.
func (r result) ran() bool {
	return r.code == 0 || r.code == 1 && strings.Contains(r.stderr, "txload: behind: the database did not sustain ")
}

// txload runs the command line in-process, as main does.
func txload(ctx context.Context, env map[string]string, args ...string) result {
	var out, errb syncBuffer
	code := txloadTo(ctx, env, &out, &errb, args...)
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// txloadTo is txload writing to stdout and stderr as it runs: for tests
// that watch a run while it runs.
func txloadTo(ctx context.Context, env map[string]string, stdout, stderr io.Writer, args ...string) int {
	ran := false
	root := Root(Env{
		Stdout: stdout, Stderr: stderr, Registry: all.Registry(), Version: "test",
		Getenv: func(k string) string { return env[k] },
		// pgx reads libpq's variables from the process: so do the tests.
		LookupEnv: func(k string) (string, bool) {
			if v, ok := env[k]; ok {
				return v, true
			}
			if strings.HasPrefix(k, "PG") {
				return os.LookupEnv(k)
			}
			return "", false
		},
	}, &ran)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && !Printed(err) {
		_, _ = io.WriteString(stderr, ErrorLine(err))
	}
	return ExitCode(err, ran)
}

// drainLine is the summary's line on what was in flight when the window
// ended.
var drainLine = regexp.MustCompile(`(?m)^  drain: ([0-9]+) operations? in flight when the window ended, not in the figures below: ([0-9]+) committed and ([0-9]+) failed in the [^ ]+ after it, ([0-9]+) abandoned \(outcome unknown\)$`)

// drained reads the drain line of a run's report: the operations that
// committed and failed after the window (0, 0 if it has none).
func drained(t *testing.T, stdout string) (ok, failed int64) {
	t.Helper()
	m := drainLine.FindStringSubmatch(stdout)
	if m == nil {
		return 0, 0
	}
	ok, _ = strconv.ParseInt(m[2], 10, 64)
	failed, _ = strconv.ParseInt(m[3], 10, 64)
	return ok, failed
}

// allOf is everything run counted: its window and the drain after it, what
// the server's own counts are compared with.
func allOf(t *testing.T, run report.RunDoc) *metrics.Snapshot {
	t.Helper()
	all, err := run.All()
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func readDoc(t *testing.T, path string) *report.Document {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc report.Document
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	asEncodingJSON(t, path, b, &doc)
	return &doc
}

// asEncodingJSON checks that the document b, read into v (its intervals
// and points in memory), is what encoding/json writes of v: the same values
// under the same keys. The run wrote it with its intervals streamed from a
// spool; documents were written whole by encoding/json before.
func asEncodingJSON(t *testing.T, path string, b []byte, v any) {
	t.Helper()
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s is not what encoding/json writes of its content:\n%.2000s\nwant\n%.2000s", path, b, again)
	}
}

func jsonPath(t *testing.T) string { return filepath.Join(t.TempDir(), "run.json") }

func mustContain(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("output lacks %q:\n%s", sub, s)
		}
	}
}
