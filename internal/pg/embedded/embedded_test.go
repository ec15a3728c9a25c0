package embedded

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// testLog sends progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version // zero: an error
	}{
		{"17", Version{Major: "17", Full: "17.5.0"}},
		{"18.3.0", Version{Major: "18", Full: "18.3.0"}},
		{" 18 ", Version{Major: "18", Full: "18.3.0"}},
		// Releases need not be listed: Start finds out whether they exist.
		{"12.3.0", Version{Major: "12", Full: "12.3.0"}},
		{"9.6.24", Version{Major: "9", Full: "9.6.24"}},
		{"12.99.0", Version{Major: "12", Full: "12.99.0"}},
		{"foo", Version{}},
		{"9", Version{}},
		{"12.3", Version{}},
		{"12.3.0.1", Version{}},
		{"12.03.0", Version{}},
		{"0.3.0", Version{}},
		{"-12.3.0", Version{}},
		{"+12.3.0", Version{}},
		{"12.3.x", Version{}},
		{"12..0", Version{}},
		{"12.3.0 ", Version{Major: "12", Full: "12.3.0"}},
		{"99999.1.0", Version{}},
		{"12.3.0/../../x", Version{}},
	} {
		v, err := Lookup(tc.in)
		if tc.want == (Version{}) {
			if err == nil {
				t.Errorf("Lookup(%q) = %v, want an error", tc.in, v)
				continue
			}
			for _, v := range Versions() {
				if !strings.Contains(err.Error(), v.Major+" ("+v.Full+")") {
					t.Errorf("error %q does not list %s", err, v.Major)
				}
			}
			if !strings.Contains(err.Error(), "major.minor.patch") {
				t.Errorf("error %q does not say a release may be given", err)
			}
			continue
		}
		if err != nil || v != tc.want {
			t.Errorf("Lookup(%q) = %v, %v; want %v", tc.in, v, err, tc.want)
		}
	}
	if _, err := Lookup(DefaultMajor()); err != nil {
		t.Fatalf("default major: %v", err)
	}
}

// TestStartRelease starts a release that no major version names: the one
// Jepsen found G2-item anomalies on at serializable (fixed in 12.4).
func TestStartRelease(t *testing.T) {
	linuxOnly(t)
	if testing.Short() {
		t.Skip("fetches PostgreSQL 12.3.0 (12 MB) on first use and starts it")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{Major: "12.3.0", Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	if s.Version() != (Version{Major: "12", Full: "12.3.0"}) {
		t.Errorf("Version() = %v", s.Version())
	}
	checkServer(ctx, t, s)
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil || v != "12.3" {
		t.Errorf("server_version = %q, %v; want 12.3", v, err)
	}
}

// TestStartUnpublished asks for a release that was never published: the
// error names the URL tried and where the published ones are listed.
func TestStartUnpublished(t *testing.T) {
	linuxOnly(t)
	if testing.Short() {
		t.Skip("asks Maven Central for a release that does not exist")
	}
	cache := t.TempDir()
	_, err := Start(t.Context(), Options{Major: "12.99.0", CacheDir: cache, Log: testLog{t}})
	if err == nil {
		t.Fatal("PostgreSQL 12.99.0 started")
	}
	plat, perr := platform()
	if perr != nil {
		t.Skip(perr)
	}
	url := jarURL(plat, Version{Major: "12", Full: "12.99.0"})
	for _, want := range []string{"PostgreSQL 12.99.0", url, "404", releasesURL(url)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !strings.HasSuffix(releasesURL(url), "/embedded-postgres-binaries-"+plat+"/") {
		t.Errorf("releasesURL(%s) = %s", url, releasesURL(url))
	}
	left, _ := filepath.Glob(filepath.Join(cache, "12.99.0*"))
	for _, f := range left {
		if !strings.HasSuffix(f, ".lock") {
			t.Errorf("a failed fetch left %s", f)
		}
	}
}

// long skips t unless TXLOAD_TEST_LONG is 1 (and under -short): the
// switch of pgtest.Long, which this package's tests cannot import (pgtest
// starts its servers with this package). The cache tests that extract the
// binaries again (4 s of CPU each time) or download them are long suites;
// .ci/run runs them.
func long(t *testing.T, what string) {
	t.Helper()
	if testing.Short() || os.Getenv("TXLOAD_TEST_LONG") != "1" {
		t.Skipf("%s: a long suite, run with TXLOAD_TEST_LONG=1 (as .ci/run does)", what)
	}
}

// linuxOnly skips tests that inspect processes through /proc.
func linuxOnly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("inspects /proc")
	}
}

func TestStartStop(t *testing.T) {
	linuxOnly(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	t0 := time.Now()
	s, err := Start(ctx, Options{Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	t.Logf("Start took %s", time.Since(t0).Round(time.Millisecond))

	want := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	if s.URL() != want {
		t.Errorf("URL() = %q, want %q", s.URL(), want)
	}
	checkServer(ctx, t, s)

	pid := s.proc.Pid
	pids := append([]int{pid}, childPIDs(pid)...)
	if len(pids) < 2 {
		t.Errorf("postmaster %d has no children", pid)
	}
	if os.Geteuid() == 0 {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("\nUid:\t%d\t", unprivileged().uid)
		if !strings.Contains(string(status), want) {
			t.Errorf("postmaster does not run as uid %d:\n%s", unprivileged().uid, status)
		}
	}

	dataDir := s.DataDir()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data dir still there: %v", err)
	}
	for _, p := range pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); err == nil {
			t.Errorf("process %d survived Stop", p)
		}
	}
	if left := procsUsing(dataDir); len(left) > 0 {
		t.Errorf("processes still using %s: %v", dataDir, left)
	}
}

// TestParentDeath kills a process holding a server with SIGKILL and checks
// that the parent-death signal takes the server down with it.
func TestParentDeath(t *testing.T) {
	linuxOnly(t)
	if os.Getenv("TXLOAD_PG_HELPER") != "" {
		s, err := Start(t.Context(), Options{})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(s.DataDir())
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestParentDeath$")
	cmd.Env = append(os.Environ(), "TXLOAD_PG_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	dataDir := strings.TrimSpace(line)
	if err != nil || !filepath.IsAbs(dataDir) {
		cmd.Process.Kill()
		t.Fatalf("helper said %q, %v", line, err)
	}
	defer os.RemoveAll(filepath.Dir(dataDir)) // Stop never ran
	if len(procsUsing(dataDir)) == 0 {
		t.Fatal("no server processes found before the kill")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left := procsUsing(dataDir)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			killPIDs(left)
			t.Fatalf("server processes %v outlived their parent", left)
		}
	}
}

func TestStartCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Start(ctx, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with canceled context: %v", err)
	}
}

// TestConcurrentFetch starts servers in parallel against an empty cache, so
// they race to download and extract under the lock.
func TestConcurrentFetch(t *testing.T) {
	long(t, "downloads and extracts the binaries into an empty cache")
	t.Parallel() // a cache of its own
	cache := t.TempDir()
	// The server user (nobody, when root) must reach the cache.
	for p := cache; p != os.TempDir(); p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			s, err := Start(ctx, Options{Major: "17", CacheDir: cache, Log: testLog{t}})
			if err != nil {
				t.Error(err)
				return
			}
			if err := s.Stop(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// The runtime, its lock, the jar (kept to extract again from) and one
	// whole cluster kept from the starts' initdb runs, which raced to keep
	// theirs.
	entries, _ := os.ReadDir(cache)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("leftover in cache: %s", e.Name())
		}
	}
	if len(entries) != 4 {
		t.Errorf("cache holds %d entries, want the runtime, its lock, its jar and a kept cluster", len(entries))
	}
	v, _ := Lookup("17")
	if _, err := os.Stat(filepath.Join(templateDir(filepath.Join(cache, v.Full+"-"+runtime.GOOS+"-"+runtime.GOARCH)), "global", "pg_control")); err != nil {
		t.Errorf("no whole cluster kept: %v", err)
	}
}

// TestAllVersions checks every supported version starts with our flags.
// It downloads all of them, so it only runs with TXLOAD_PG_ALL_VERSIONS=1.
func TestAllVersions(t *testing.T) {
	if os.Getenv("TXLOAD_PG_ALL_VERSIONS") == "" {
		t.Skip("set TXLOAD_PG_ALL_VERSIONS=1 to start every version")
	}
	for _, v := range Versions() {
		t.Run(v.Major, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			t0 := time.Now()
			s, err := Start(ctx, Options{Major: v.Major, Log: testLog{t}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			t.Logf("Start took %s", time.Since(t0).Round(time.Millisecond))
			checkServer(ctx, t, s)
		})
	}
}

func checkServer(ctx context.Context, t *testing.T, s *Server) {
	t.Helper()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var version, who string
	if err := conn.QueryRow(ctx, "SELECT version(), current_user").Scan(&version, &who); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(version, "PostgreSQL "+s.Version().Major+".") {
		t.Errorf("version() = %q, want major %s", version, s.Version().Major)
	}
	if who != "postgres" {
		t.Errorf("current_user = %q", who)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t SELECT g, 'x' FROM generate_series(1, 1000) g"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t WHERE v = 'x'").Scan(&n); err != nil || n != 1000 {
		t.Fatalf("count = %d, %v", n, err)
	}
	// pg_stat_statements is preloaded: its view answers once the extension
	// is created, and counts the blocks of the statement above.
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		t.Fatal(err)
	}
	var calls, blocks int64
	if err := conn.QueryRow(ctx, `SELECT COALESCE(sum(calls), 0), COALESCE(sum(shared_blks_hit + shared_blks_read), 0)
		FROM pg_stat_statements WHERE query LIKE 'SELECT count(*) FROM t WHERE v = $1%'`).Scan(&calls, &blocks); err != nil {
		t.Fatalf("reading pg_stat_statements: %v", err)
	}
	if calls != 1 || blocks == 0 {
		t.Errorf("pg_stat_statements: %d calls, %d blocks of the count; want 1 call and its blocks", calls, blocks)
	}
}

// procsUsing lists processes whose command line or working dir mentions dir.
// Backends rewrite their command line, but keep the data dir as cwd.
func procsUsing(dir string) []int {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, p := range cmdlines {
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		b, _ := os.ReadFile(p)
		cwd, _ := os.Readlink(filepath.Join(filepath.Dir(p), "cwd"))
		if strings.Contains(string(b), dir) || strings.HasPrefix(cwd, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}
