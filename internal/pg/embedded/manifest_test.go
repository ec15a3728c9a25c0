package embedded

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// logBuf collects Start's progress lines and passes them to the test log.
type logBuf struct {
	t *testing.T
	b bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return l.b.Write(p)
}

// TestDamagedCache damages the binaries in a cache and starts a server
// from it each time: Start finds the damage, says what it is, extracts the
// binaries again and starts. The cache begins as a copy of the default one
// (binaries without a manifest, from an older txload), else empty.
func TestDamagedCache(t *testing.T) {
	linuxOnly(t)
	long(t, "downloads the binaries and extracts them five times")
	t.Parallel() // a cache of its own
	cache, rt := copiedCache(t, false)
	v, _ := Lookup(DefaultMajor())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	startOnce := func(t *testing.T) string { return startChecked(ctx, t, cache, nil) }
	t.Run("first start", func(t *testing.T) {
		log := startOnce(t)
		if strings.Contains(log, "damaged") {
			t.Errorf("an intact cache was found damaged:\n%s", log)
		}
		for _, p := range []string{filepath.Join(rt, manifestFile), rt + ".jar"} {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("after the first start: %v", err)
			}
		}
	})
	if t.Failed() {
		return
	}
	postgres := filepath.Join(rt, "bin", "postgres")
	fi, err := os.Stat(postgres)
	if err != nil {
		t.Fatal(err)
	}
	size := fi.Size()

	// The damage a size or a modification time shows is found before the
	// server starts, by ensureRuntime (what Start calls first); damage in
	// place is found when initdb fails, so that case starts the server.
	ensureOnce := func(t *testing.T) string {
		t.Helper()
		log := &logBuf{t: t}
		if _, err := ensureRuntime(ctx, cache, v, log, os.Geteuid() == 0, false); err != nil {
			t.Fatalf("ensureRuntime: %v", err)
		}
		return log.b.String()
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T)
		says   string
		start  bool // found only by a failed start
	}{
		{
			// Found by its size, at the start.
			name: "truncated postgres",
			damage: func(t *testing.T) {
				if err := os.Truncate(postgres, 1000); err != nil {
					t.Fatal(err)
				}
			},
			says: fmt.Sprintf("are damaged (bin/postgres has 1000 bytes, want %d): extracting them again", size),
		},
		{
			// Same size, another modification time: found by its hash.
			name:   "a changed library",
			damage: func(t *testing.T) { flipByte(t, filepath.Join(rt, "lib", "libpq.a"), false) },
			says:   "are damaged (lib/libpq.a has other contents than were extracted (SHA-256 ",
		},
		{
			// Same size and modification time: passes the cheap check,
			// postgres fails to start, and then every file is hashed.
			name:   "postgres damaged in place",
			damage: func(t *testing.T) { flipByte(t, postgres, true) },
			says:   "are damaged (bin/postgres has other contents than were extracted (SHA-256 ",
			start:  true,
		},
		{
			name: "a file missing",
			damage: func(t *testing.T) {
				if err := os.Remove(filepath.Join(rt, "bin", "pg_ctl")); err != nil {
					t.Fatal(err)
				}
			},
			says: "are damaged (bin/pg_ctl is missing): extracting them again",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.damage(t)
			var log string
			if tc.start {
				log = startOnce(t)
			} else {
				log = ensureOnce(t)
			}
			if !strings.Contains(log, tc.says) {
				t.Errorf("Start does not say %q:\n%s", tc.says, log)
			}
			if !damaged(rt) && len(strings.Split(log, "damaged")) > 2 {
				t.Errorf("repaired more than once:\n%s", log)
			}
			if damaged(rt) {
				t.Error("the cache is still damaged")
			}
			if fi, err := os.Stat(postgres); err != nil || fi.Size() != size {
				t.Errorf("bin/postgres after the repair: %v, %v", fi, err)
			}
		})
	}
	leftovers, _ := filepath.Glob(filepath.Join(cache, ".*"))
	if len(leftovers) > 0 {
		t.Errorf("leftovers in the cache: %v", leftovers)
	}
}

// startChecked starts a server from cache, checks that it answers, hands
// it to with (when set) and stops it; it returns what Start logged.
func startChecked(ctx context.Context, t *testing.T, cache string, with func(*Server)) string {
	t.Helper()
	log := &logBuf{t: t}
	s, err := Start(ctx, Options{CacheDir: cache, Log: log})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer s.Stop()
	checkServer(ctx, t, s)
	if with != nil {
		with(s)
	}
	return log.b.String()
}

// copiedCache makes a cache for t alone, reachable by the server user
// (nobody, when root), with a copy of the default cache's binaries when it
// has them; without their manifest (withManifest false) Start fetches and
// extracts them again. It returns the cache and where the binaries are.
func copiedCache(t *testing.T, withManifest bool) (cache, rt string) {
	t.Helper()
	cache = t.TempDir()
	for p := cache; p != os.TempDir(); p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	v, _ := Lookup(DefaultMajor())
	key := v.Full + "-" + runtime.GOOS + "-" + runtime.GOARCH
	rt = filepath.Join(cache, key)
	if def, err := defaultCacheDir(); err == nil {
		if _, err := os.Stat(filepath.Join(def, key, "bin", "postgres")); err == nil {
			if out, err := exec.Command("cp", "-a", filepath.Join(def, key), rt).CombinedOutput(); err != nil {
				t.Fatalf("copying the cache: %v\n%s", err, out)
			}
			if !withManifest {
				os.Remove(filepath.Join(rt, manifestFile))
			}
		}
	}
	return cache, rt
}

// flipByte inverts the first byte of path, keeping its size and, with
// keepTime, its modification time.
func flipByte(t *testing.T, path string, keepTime bool) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if err := os.WriteFile(path, b, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	mtime := fi.ModTime()
	if !keepTime {
		mtime = mtime.Add(time.Second)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRuntimeCheck: what checking the binaries costs at each start
// (sizes and modification times) and after a failed start (every hash).
// It needs the jar in the default cache (kept there by Start since
// manifests exist).
func BenchmarkRuntimeCheck(b *testing.B) {
	def, err := defaultCacheDir()
	if err != nil {
		b.Skip(err)
	}
	v, _ := Lookup(DefaultMajor())
	jar := filepath.Join(def, v.Full+"-"+runtime.GOOS+"-"+runtime.GOARCH+".jar")
	if _, err := os.Stat(jar); err != nil {
		b.Skipf("no jar in the default cache: %v", err)
	}
	rt := filepath.Join(b.TempDir(), "rt")
	if err := extractJar(jar, rt); err != nil {
		b.Fatal(err)
	}
	m, err := readManifest(rt)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d entries", len(m.Files))
	for _, full := range []bool{false, true} {
		b.Run(fmt.Sprintf("full=%v", full), func(b *testing.B) {
			for b.Loop() {
				if problem := m.check(rt, full); problem != "" {
					b.Fatal(problem)
				}
			}
		})
	}
}
