//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A run of append with --history killed with SIGKILL leaves nothing in
// $TMPDIR: its spool of the history is out of the directory from its
// creation, as the interval spool is. Before, a txload-history-* file was
// left there, and no later run removed it.
func TestHistorySpoolGoneAfterKill(t *testing.T) {
	bin, tmp := build(t), t.TempDir()
	hist := filepath.Join(t.TempDir(), "h.jsonl")
	p := start(t, bin, tmp, "run", "append", "--url", srv.NewDatabase(t), "--history", hist, "-c", "2", "-d", "1m")
	waitFor(t, "progress line", time.Minute, func() bool { return strings.Contains(p.stderr.String(), "ops/s") })
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 10*time.Second); code != -1 {
		t.Fatalf("exit %d after SIGKILL", code)
	}
	if left := leftIn(tmp); len(left) > 0 {
		t.Fatalf("left in $TMPDIR after SIGKILL: %v", left)
	}
	if _, err := os.Stat(hist); !os.IsNotExist(err) {
		t.Errorf("--history %s written by a killed run (%v)", hist, err)
	}
}

// leftIn lists what is in dir.
func leftIn(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// A history spool left in $TMPDIR by an earlier txload (one from before
// the spool was removed at its creation, killed with SIGKILL) is removed
// by the next run of append with --history once it has been left
// unchanged for an hour; a newer one, which a running txload may be
// writing, and other files are kept. Before, no run removed them.
func TestStaleHistorySpoolRemoved(t *testing.T) {
	bin, tmp := build(t), t.TempDir()
	files := []struct {
		name string
		age  time.Duration
		kept bool
	}{
		{"txload-history-1111", 2 * time.Hour, false},
		{"txload-history-2222", 25 * time.Hour, false},
		{"txload-history-3333", time.Minute, true},
		{"txload-other-4444", 2 * time.Hour, true},
	}
	for _, f := range files {
		path := filepath.Join(tmp, f.name)
		if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-f.age)
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	hist := filepath.Join(t.TempDir(), "h.jsonl")
	p := start(t, bin, tmp, "run", "append", "--url", srv.NewDatabase(t), "--history", hist, "-c", "2", "-d", "1s")
	if code := p.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr)
	}
	for _, f := range files {
		_, err := os.Stat(filepath.Join(tmp, f.name))
		if kept := err == nil; kept != f.kept {
			t.Errorf("%s (unchanged for %s): kept %v, want %v", f.name, f.age, kept, f.kept)
		}
		if said := strings.Contains(p.stderr.String(), "removed "+filepath.Join(tmp, f.name)); said == f.kept {
			t.Errorf("%s: removal said %v, want %v\nstderr:\n%s", f.name, said, !f.kept, p.stderr)
		}
	}
}
