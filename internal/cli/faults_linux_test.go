package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// The server freezes (SIGSTOP) before the end of the run: the measured
// window is still the duration, not the duration and the drain timeout;
// what was in flight is the drain, on its own line: cancelled after the
// drain timeout, unanswered for executor.SettleTimeout after it (the
// server still frozen), cut: abandoned if its COMMIT was sent, else
// failed, none committed; and reconciled with the ledger once the server
// thaws.
func TestFrozenServerDrainNotMeasured(t *testing.T) {
	t.Parallel()
	s := pgtest.OwnServer(t) // frozen: a server of its own
	b, err := os.ReadFile(filepath.Join(s.DataDir(), "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	// The postmaster, then each of its children (every backend leads a
	// process group of its own): a stopped postmaster forks no more.
	signal := func(sig syscall.Signal) {
		if err := syscall.Kill(pid, sig); err != nil {
			t.Fatal(err)
		}
		for _, child := range children(pid) {
			_ = syscall.Kill(child, sig)
		}
	}
	t.Cleanup(func() { signal(syscall.SIGCONT) })
	errb, done := txloadAsync(t.Context(), "run", "bank", "--url", s.URL(), "--accounts", "1000", "--isolation", "rc",
		"--duration", "3s", "--drain-timeout", "1s", "--progress", "500ms")
	waitForOutput(t, errb, "1.0s ", done)
	time.Sleep(time.Second)
	signal(syscall.SIGSTOP)
	// The window ends at 3 s, the drain 1 s later, the wait for the
	// cancelled operations' answers 5 s after that; then the audit waits
	// for the server.
	time.Sleep(9 * time.Second)
	signal(syscall.SIGCONT)
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the run did not end a minute after the server thawed")
	}
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "closed loop, 8 workers, 3.00s measured", "DRAIN TIMEOUT: ", "check: ok")
	d := drainLine.FindStringSubmatch(r.stdout)
	if d == nil {
		t.Fatalf("no drain line:\n%s", r.stdout)
	}
	if inFlight, committed := d[1], d[2]; inFlight != "8" || committed != "0" {
		t.Fatalf("drain: %s in flight, %s committed; want the 8 clients' operations, none answered\n%s", inFlight, committed, r.stdout)
	}
	m := ambiguousLine.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no reconciliation line:\n%s", r.stdout)
	}
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so from its ")".
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			if n, err := strconv.Atoi(e.Name()); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
