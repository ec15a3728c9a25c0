//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv, func() { _ = os.RemoveAll(built.dir) }) }

// These tests run the real binary with the embedded server and send it real
// signals. Each gives the binary a TMPDIR of its own, so that what they
// sweep and what they leave is theirs alone.

// The binary, built once for the tests that run it, which run at once:
// each has a TMPDIR and a server of its own.
var built struct {
	once sync.Once
	dir  string
	out  []byte
	err  error
}

// build compiles txload (once) and marks t parallel.
func build(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds txload and starts embedded servers")
	}
	t.Parallel()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "txload-bin-"); built.err == nil {
			built.out, built.err = exec.Command("go", "build", "-o", filepath.Join(built.dir, "txload"), ".").CombinedOutput()
		}
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return filepath.Join(built.dir, "txload")
}

// privateTemp makes a TMPDIR the embedded server's user (nobody, when root)
// can reach.
func privateTemp(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	for p := tmp; p != os.TempDir(); p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return tmp
}

// proc is a running txload.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *lockedBuffer
	done           chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func start(t *testing.T, bin, tmp string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "DATABASE_URL=")
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.done })
	return p
}

// waitFor polls until ok or fails t after timeout.
func waitFor(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, timeout)
		}
	}
}

func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("txload still running after %s\nstderr:\n%s", timeout, p.stderr)
	}
	return p.cmd.ProcessState.ExitCode()
}

// serverDirs lists the server dirs in tmp.
func serverDirs(tmp string) []string {
	dirs, _ := filepath.Glob(filepath.Join(tmp, "txload-pg-*"))
	return dirs
}

// users lists the processes whose working dir or command line is in dir.
func users(dir string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if strings.Contains(string(cmdline), dir) || strings.HasPrefix(cwd, dir) {
			pids = append(pids, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return pids
}

// A txload killed with SIGKILL cannot clean up: its server dies with it
// (parent-death signal) and the next txload to start a server removes the
// dir it left.
func TestKilledTxloadsDirRemovedByNext(t *testing.T) {
	bin, tmp := build(t), privateTemp(t)
	first := start(t, bin, tmp, "run", "bank", "--accounts", "1000", "--duration", "1m", "--isolation", "rc")
	waitFor(t, "progress line", 2*time.Minute, func() bool { return strings.Contains(first.stderr.String(), "ops/s") })
	dirs := serverDirs(tmp)
	if len(dirs) != 1 {
		t.Fatalf("server dirs %v, want one", dirs)
	}
	left := dirs[0]
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := first.wait(t, 10*time.Second); code != -1 {
		t.Fatalf("exit %d after SIGKILL", code)
	}
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("the killed txload's dir is already gone (%v): nothing to test", err)
	}
	waitFor(t, "end of the killed txload's server", 10*time.Second, func() bool { return len(users(left)) == 0 })

	second := start(t, bin, tmp, "run", "bank", "--accounts", "1000", "--duration", "1s", "--isolation", "rc")
	if code := second.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("second txload: exit %d\n%s", code, second.stderr)
	}
	want := fmt.Sprintf("removed %s, left by txload process %d (started ", left, first.cmd.Process.Pid)
	if !strings.Contains(second.stderr.String(), want) {
		t.Errorf("second txload does not say %q:\n%s", want, second.stderr)
	}
	if dirs := serverDirs(tmp); len(dirs) != 0 {
		t.Errorf("server dirs left: %v", dirs)
	}
}

// SIGHUP (the terminal closed), SIGQUIT (Ctrl-\) and SIGTERM end a run as
// Ctrl-C does: the summary of what ran, exit 130, the server stopped and its
// dir removed.
func TestStopSignals(t *testing.T) {
	bin := build(t)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel() // a TMPDIR and a server of its own
			tmp := privateTemp(t)
			p := start(t, bin, tmp, "run", "bank", "--accounts", "1000", "--duration", "1m", "--isolation", "rc")
			waitFor(t, "progress line", 2*time.Minute, func() bool { return strings.Contains(p.stderr.String(), "ops/s") })
			dirs := serverDirs(tmp)
			if len(dirs) != 1 {
				t.Fatalf("server dirs %v, want one", dirs)
			}
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t, time.Minute); code != 130 {
				t.Errorf("exit %d, want 130\nstderr:\n%s", code, p.stderr)
			}
			for _, want := range []string{"INTERRUPTED", "transfer: ", "act total balance:"} {
				if !strings.Contains(p.stdout.String(), want) {
					t.Errorf("summary lacks %q:\n%s", want, p.stdout)
				}
			}
			if _, err := os.Stat(dirs[0]); !os.IsNotExist(err) {
				t.Errorf("server dir %s still there (%v)", dirs[0], err)
			}
			if pids := users(dirs[0]); len(pids) > 0 {
				t.Errorf("processes left in %s: %v", dirs[0], pids)
			}
		})
	}
}

// Ctrl-C while initdb runs: exit 130, one line, no initdb log, nothing left.
func TestInterruptDuringInitdb(t *testing.T) {
	bin := build(t)
	for attempt := 1; ; attempt++ {
		tmp := privateTemp(t)
		p := start(t, bin, tmp, "run", "bank", "--accounts", "1000", "--duration", "10s")
		var dir string
		// initdb creates data/ first and takes a second or so to fill it.
		waitFor(t, "data dir", 2*time.Minute, func() bool {
			if d := serverDirs(tmp); len(d) == 1 {
				if _, err := os.Stat(filepath.Join(d[0], "data")); err == nil {
					dir = d[0]
					return true
				}
			}
			return false
		})
		if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		code := p.wait(t, time.Minute)
		if strings.Contains(p.stderr.String(), "started PostgreSQL") && attempt < 3 {
			t.Logf("initdb had finished before the signal; again")
			continue
		}
		if code != 130 {
			t.Errorf("exit %d, want 130", code)
		}
		if got, want := p.stderr.String(), "txload: starting the embedded PostgreSQL: interrupted\n"; got != want {
			t.Errorf("stderr:\n%s\nwant:\n%s", got, want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("server dir %s still there (%v)", dir, err)
		}
		if pids := users(dir); len(pids) > 0 {
			t.Errorf("processes left in %s: %v", dir, pids)
		}
		return
	}
}

// Ctrl-C while init loads data into a server of the user's: exit 130, and
// the line says it was interrupted (the error itself may be only the
// connection the cancellation closed).
func TestInterruptDuringLoad(t *testing.T) {
	bin, tmp := build(t), privateTemp(t)
	p := start(t, bin, tmp, "init", "tpcb", "--scale", "20", "--url", srv.NewDatabase(t))
	waitFor(t, "data generation", time.Minute, func() bool { return strings.Contains(p.stderr.String(), "generating data") })
	time.Sleep(100 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute); code != 130 {
		t.Errorf("exit %d, want 130\n%s", code, p.stderr)
	}
	lines := strings.Split(strings.TrimSpace(p.stderr.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "txload: interrupted") {
		t.Errorf("last line %q does not say it was interrupted", last)
	}
}
