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
