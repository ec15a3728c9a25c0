package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// privateTemp points TMPDIR at a fresh dir for t, so that the sweep sees only
// what t made. The server user (nobody, when root) must reach it.
func privateTemp(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	for p := tmp; p != os.TempDir(); p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", tmp)
	return tmp
}

// TestRemoveStaleDirs: which server dirs the sweep at Start removes. No
// server runs here: the dirs are made by hand.
func TestRemoveStaleDirs(t *testing.T) {
	linuxOnly(t)
	tmp := privateTemp(t)
	old := time.Now().Add(-2 * time.Hour)
	// age sets the modification time of dir and its entries.
	age := func(dir string, mtime time.Time) {
		for _, p := range []string{filepath.Join(dir, "data"), filepath.Join(dir, "postgres.log"), dir} {
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk := func(name string, mtime time.Time) string {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "postgres.log"), []byte("log\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if !mtime.IsZero() {
			age(dir, mtime)
		}
		return dir
	}
	// Owned by a live process: this one holds the lock.
	live := mk(tempPrefix+"live", time.Time{})
	f, err := own(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Owned by a process that is gone: the lock is free.
	gone := mk(tempPrefix+"gone", time.Time{})
	g, err := own(gone)
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	// Made before owner files, or by a txload killed before it locked one.
	oldUnused := mk(tempPrefix+"old", old)
	young := mk(tempPrefix+"young", time.Time{})
	// A server halted by its owner for a while: no process, a fresh log.
	halted := mk(tempPrefix+"halted", old)
	if err := os.WriteFile(filepath.Join(halted, "postgres.log"), []byte("LOG:  database system is shut down\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// In use by a process that is not PostgreSQL's (someone's shell): kept,
	// with or without a lock.
	sleepIn := func(dir string) *exec.Cmd {
		c := exec.Command("sleep", "60")
		c.Dir = filepath.Join(dir, "data")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c
	}
	oldBusy := mk(tempPrefix+"busy", old)
	sleeper := sleepIn(oldBusy)
	age(oldBusy, old)
	goneBusy := mk(tempPrefix+"gonebusy", time.Time{})
	if g, err := own(goneBusy); err != nil {
		t.Fatal(err)
	} else {
		g.Close()
	}
	sleeper2 := sleepIn(goneBusy)
	// Not ours.
	other := filepath.Join(tmp, "txload-pgbouncer-x")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}

	var log bytes.Buffer
	removeStale(tmp, &log)
	t.Logf("log:\n%s", log.String())
	for _, tc := range []struct {
		dir  string
		kept bool
		says string
	}{
		{live, true, ""},
		{gone, false, fmt.Sprintf("removed %s, left by txload process %d (started ", gone, os.Getpid())},
		{oldUnused, false, fmt.Sprintf("removed %s, left by an earlier txload\n", oldUnused)},
		{young, true, ""},
		{halted, true, ""},
		{oldBusy, true, ""},
		{goneBusy, true, fmt.Sprintf("leaving %s: abandoned, but processes [%d] that are not PostgreSQL's use it\n", goneBusy, sleeper2.Process.Pid)},
		{other, true, ""},
	} {
		_, err := os.Stat(tc.dir)
		if kept := err == nil; kept != tc.kept {
			t.Errorf("%s: kept = %v, want %v (%v)", filepath.Base(tc.dir), kept, tc.kept, err)
		}
		if tc.says != "" && !strings.Contains(log.String(), tc.says) {
			t.Errorf("log does not say %q", tc.says)
		}
		if tc.kept && tc.says == "" && strings.Contains(log.String(), tc.dir) {
			t.Errorf("log mentions %s, which was kept", tc.dir)
		}
	}
	if sleeper.ProcessState != nil || sleeper2.ProcessState != nil {
		t.Error("a process that is not PostgreSQL's was stopped")
	}
}

// TestRemoveStaleServer: a server whose txload is gone but which survived
// (no parent-death signal reached it) is stopped before its dir is
// removed; a server whose owner lives is left alone.
func TestRemoveStaleServer(t *testing.T) {
	linuxOnly(t)
	tmp := privateTemp(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start := func() *Server {
		s, err := Start(ctx, Options{Log: testLog{t}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop() })
		if !strings.HasPrefix(s.dir, tmp) {
			t.Fatalf("server dir %s is not in TMPDIR %s", s.dir, tmp)
		}
		return s
	}
	kept, abandoned := start(), start()
	pid := abandoned.proc.Pid
	if len(procsUsing(abandoned.dir)) < 2 {
		t.Fatalf("no server processes in %s", abandoned.dir)
	}
	// As if its txload had died: the lock goes, the server stays.
	abandoned.owner.Close()

	var log bytes.Buffer
	removeStale(tmp, &log)
	t.Logf("log:\n%s", log.String())

	if want := fmt.Sprintf("stopping PostgreSQL (pid %d) left running in %s\n", pid, abandoned.dir); !strings.Contains(log.String(), want) {
		t.Errorf("log does not say %q", want)
	}
	if want := fmt.Sprintf("removed %s, left by txload process %d", abandoned.dir, os.Getpid()); !strings.Contains(log.String(), want) {
		t.Errorf("log does not say %q", want)
	}
	select {
	case <-abandoned.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("the abandoned postmaster %d is still running", pid)
	}
	if left := procsUsing(abandoned.dir); len(left) > 0 {
		t.Errorf("processes %v still use %s", left, abandoned.dir)
	}
	if _, err := os.Stat(abandoned.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("abandoned dir still there: %v", err)
	}
	if _, err := os.Stat(kept.DataDir()); err != nil {
		t.Errorf("the live server's data dir: %v", err)
	}
	checkServer(ctx, t, kept)
}

// A process that exited counts as ended before its parent reaps it (a
// zombie keeps its pid and fails /proc/PID/exe): the stale-dir check must
// not take a backend that just closed for a stranger using the dir.
func TestEnded(t *testing.T) {
	linuxOnly(t)
	if ended(os.Getpid()) {
		t.Fatal("this process counts as ended")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !ended(cmd.Process.Pid) { // a zombie until Wait
		if time.Now().After(deadline) {
			t.Fatal("an exited, unreaped child does not count as ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !alive(cmd.Process.Pid) {
		t.Error("the zombie was already reaped: the test shows nothing")
	}
	_ = cmd.Wait()
	if !ended(cmd.Process.Pid) {
		t.Error("a reaped child does not count as ended")
	}
}
