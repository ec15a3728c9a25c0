//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/report"
)

// The reconciliation line of bank, tpcb-like and vote.
var reconciled = regexp.MustCompile(`(?m)^ambiguous:\s+(\d+) \((-?\d+) of them committed, per the [a-z ]+: (\d+) rows? = (\d+) committed \+ (-?\d+)\)$`)

// A run interrupted at any moment (SIGINT or SIGTERM, on the embedded server
// or by URL, during start-up, loading or load) never accuses the database:
// what was in flight has an unknown outcome, is reconciled like any
// ambiguous commit, and no VIOLATION is printed; committed (window and
// drain) plus the unknown ones that committed is the server's own count,
// every time. Five moments a workload in go test ./..., twenty with the
// long suites (pgtest.Longer: .ci/run).
func TestInterruptAtRandomMoments(t *testing.T) {
	bin := build(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 24))
	type workload struct {
		name  string
		args  []string
		op    string // the operation whose commits the server counts
		count string // the server's count of what committed
	}
	workloads := []workload{
		{"bank", []string{"run", "bank", "--accounts", "10000", "--isolation", "rc"}, "transfer", "SELECT count(*) FROM bank_ledger"},
		{"tpcb-like", []string{"run", "tpcb-like", "--init", "fresh"}, "tpcb-like", "SELECT count(*) FROM pgbench_history"},
		{"vote", []string{"run", "vote", "--articles", "1000", "--write-every", "2", "--rate", "3000"}, "write", "SELECT count(*) FROM vote"},
	}
	moments := 5
	if pgtest.Longer() {
		moments = 20
	}
	type trial struct {
		w        workload
		n        int
		sig      syscall.Signal
		embedded bool
		after    time.Duration
	}
	var trials []trial
	for _, w := range workloads {
		for i := range moments {
			sig := syscall.SIGINT
			if i%2 == 1 {
				sig = syscall.SIGTERM
			}
			// Embedded one time in five: it starts a server each time.
			trials = append(trials, trial{w: w, n: i, sig: sig, embedded: i%5 == 0,
				after: time.Duration(rng.Int64N(int64(2500 * time.Millisecond)))})
		}
	}
	sem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for _, tr := range trials {
		name := fmt.Sprintf("%s/%d-%s-%s-at-%s", tr.w.name, tr.n, map[bool]string{true: "embedded", false: "url"}[tr.embedded],
			strings.ToUpper(tr.sig.String()[:3]), tr.after.Round(time.Millisecond))
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t.Run(name, func(t *testing.T) {
				interruptOnce(t, bin, tr.w.args, tr.w.op, tr.w.count, tr.sig, tr.embedded, tr.after)
			})
		}()
	}
	wg.Wait()
}

func interruptOnce(t *testing.T, bin string, args []string, opName, countSQL string, sig syscall.Signal, embedded bool, after time.Duration) {
	tmp := privateTemp(t)
	js := filepath.Join(tmp, "run.json")
	url := ""
	args = append(append([]string{}, args...), "--duration", "30s", "--progress", "0", "--json", js)
	if !embedded {
		url = srv.NewDatabase(t)
		args = append(args, "--url", url)
	}
	p := start(t, bin, tmp, args...)
	select {
	case <-p.done:
		t.Fatalf("exit %d before the interrupt\n%s\n%s", p.cmd.ProcessState.ExitCode(), p.stdout, p.stderr)
	case <-time.After(after):
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t, time.Minute)
	out, errs := p.stdout.String(), p.stderr.String()
	if code == -1 && out == "" && errs == "" && len(serverDirs(tmp)) == 0 {
		// The signal came before txload had installed its handlers (its
		// first milliseconds): it died of it, having done nothing.
		return
	}
	if code != 130 {
		t.Fatalf("exit %d after %s, want 130\nstdout:\n%s\nstderr:\n%s", code, sig, out, errs)
	}
	if strings.Contains(out, "VIOLATION") {
		t.Fatalf("an interrupt accused the database:\n%s\nstderr:\n%s", out, errs)
	}
	m := reconciled.FindStringSubmatch(out)
	if m == nil {
		// Interrupted before the load ran (starting the server, loading
		// the schema): nothing to reconcile, and no report.
		if strings.Contains(out, " ok, ") {
			t.Fatalf("a report without its reconciliation:\n%s", out)
		}
		return
	}
	n := make([]int64, len(m))
	for i := 1; i < len(m); i++ {
		n[i], _ = strconv.ParseInt(m[i], 10, 64)
	}
	unknown, committedUnknown, rows, committed := n[1], n[2], n[3], n[4]
	if committedUnknown < 0 || committedUnknown > unknown || committed+committedUnknown != rows {
		t.Fatalf("the reconciliation contradicts itself: %s\n%s", m[0], out)
	}
	// Committed is what the --json counts, window and drain.
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var doc report.Document
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Runs) != 1 {
		t.Fatalf("--json: %v, %d runs", err, len(doc.Runs))
	}
	all, err := doc.Runs[0].All()
	if err != nil {
		t.Fatal(err)
	}
	var ok int64
	for _, op := range all.Ops {
		if op.Name == opName {
			ok = op.OK
		}
	}
	if ok != committed {
		t.Fatalf("the --json counts %d %s committed, the reconciliation %d:\n%s", ok, opName, committed, out)
	}
	if c := doc.Runs[0].Check; c == nil || len(c.Violations) > 0 {
		t.Fatalf("--json's check: %+v", c)
	}
	if !strings.Contains(out, "INTERRUPTED: the figures cover what ran before "+map[syscall.Signal]string{syscall.SIGINT: "Ctrl-C (SIGINT)", syscall.SIGTERM: "SIGTERM"}[sig]) {
		t.Errorf("the report does not name %s:\n%s", sig, out)
	}
	if embedded {
		return
	}
	// By URL the server is there to count for itself.
	conn := pgtest.Conn(t, url)
	var server int64
	if err := conn.QueryRow(context.Background(), countSQL).Scan(&server); err != nil {
		t.Fatal(err)
	}
	if server != rows {
		t.Fatalf("the server holds %d rows, the report says %d:\n%s", server, rows, out)
	}
}

// A closed output (`txload run … 2>&1 | head -1`) ends the run as an
// interrupt does, cleanly: no death by SIGPIPE in the middle of a write,
// the embedded server stopped and its dir removed.
func TestClosedOutputEndsRun(t *testing.T) {
	bin, tmp := build(t), privateTemp(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "bank", "--accounts", "1000", "--isolation", "rc", "--duration", "1m", "--progress", "100ms")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "DATABASE_URL=")
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	// Read up to the first progress line, as head would, then go away.
	buf := make([]byte, 4096)
	var got string
	for !strings.Contains(got, "ops/s") {
		n, err := r.Read(buf)
		if err != nil {
			t.Fatalf("reading txload's output: %v after %q", err, got)
		}
		got += string(buf[:n])
	}
	r.Close()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("txload still running a minute after its output closed")
	}
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
		t.Fatalf("txload died of %s", ws.Signal())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d after its output closed, want 130 (interrupted)", code)
	}
	if dirs := serverDirs(tmp); len(dirs) != 0 {
		t.Fatalf("server dirs left: %v", dirs)
	}
}
