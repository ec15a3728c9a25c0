package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// lineCounter counts the lines written to it, keeping none.
type lineCounter struct{ n atomic.Int64 }

func (c *lineCounter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' {
			c.n.Add(1)
		}
	}
	return len(p), nil
}

// slope is the slope of the least-squares line through the points.
func slope(xs, ys []float64) float64 {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/float64(len(xs)), my/float64(len(ys))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	return num / den
}

// liveHeap is the process's live heap after a full collection: the least
// of ten, as what the run allocates while the collector runs counts as
// live until the next.
func liveHeap() uint64 {
	var least uint64
	for i := range 10 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		if v := s[0].Value.Uint64(); i == 0 || v < least {
			least = v
		}
	}
	return least
}

// heapGrowth samples the live heap each time count reaches from, from +
// step, ... to (the run, in another goroutine, sends its exit code on done
// if it ends first): the counts and the heaps, and it logs the slope of
// the least-squares line through them, the growth per count.
func heapGrowth(t *testing.T, count func() int64, from, to, step int64, done <-chan int) (xs, ys []float64) {
	t.Helper()
	for n := from; n <= to; n += step {
		for count() < n {
			select {
			case code := <-done:
				t.Fatalf("the run ended (exit %d) at %d, before %d", code, count(), n)
			case <-time.After(10 * time.Millisecond):
			}
		}
		heap := liveHeap()
		xs, ys = append(xs, float64(count())), append(ys, float64(heap))
	}
	t.Logf("live heap %.0f B at %.0f ... %.0f B at %.0f: %+.2f B each", ys[0], xs[0], ys[len(ys)-1], xs[len(xs)-1], slope(xs, ys))
	return xs, ys
}

// A run of thousands of progress intervals (--progress 1ms), with every
// output that takes them (--json, --html, --histogram, --metrics-addr),
// holds nothing per interval: from its 2,000th progress line to its
// 10,000th, its live heap (after a collection, every 1,000 lines) grows by
// less than 64 bytes an interval (the slope of the least-squares line; 3
// B measured). When the run kept its intervals in memory for the document
// (before 64a9f2c) it grew by 790 to 965 bytes an interval here (intervals of a
// millisecond of 8 clients; a 24-hour run at one a second of 1,500 ops/s
// held 3 KB each, 250 MB). The document has every interval, and the run
// leaves no file in $TMPDIR. A long suite (pgtest.Long): .ci/run runs it.
func TestLongRunHeapBounded(t *testing.T) {
	// Not parallel: the heap measured is the process's, and no other test
	// runs beside one that is not parallel.
	pgtest.Long(t, "a run of 10,000 intervals, its heap sampled")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "select-only", "--url", url); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	out := t.TempDir()
	js, html, hlog := filepath.Join(out, "run.json"), filepath.Join(out, "run.html"), filepath.Join(out, "run.hlog")
	var lines lineCounter
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- txloadTo(ctx, nil, io.Discard, &lines, "run", "select-only", "--url", url, "--concurrency", "8",
			"--duration", "10m", "--progress", "1ms", "--json", js, "--html", html, "--histogram", hlog, "--metrics-addr", "127.0.0.1:0")
	}()
	xs, ys := heapGrowth(t, lines.n.Load, 2000, 10000, 1000, done)
	cancel()
	if code := <-done; code != ExitInterrupted {
		t.Fatalf("exit %d, want %d (interrupted)", code, ExitInterrupted)
	}
	if per := slope(xs, ys); per >= 64 {
		t.Errorf("the live heap grew by %.0f bytes an interval (%.0f B to %.0f B over %.0f intervals): something is kept per interval",
			per, ys[0], ys[len(ys)-1], xs[len(xs)-1]-xs[0])
	}
	atTo := int(xs[len(xs)-1])
	run := readDoc(t, js).Runs[0]
	if n := len(run.Intervals); n < atTo-10 {
		t.Errorf("the document has %d intervals, the run printed %d lines by then", n, atTo)
	}
	for _, p := range []string{html, hlog} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("the run left %s in $TMPDIR", e.Name())
	}
}

// A run interrupted leaves nothing half-written for a later reader and no
// spool in $TMPDIR: killed (SIGKILL, nothing of txload runs after it), no
// document and no HTML page at all, and nothing in $TMPDIR (the spool is
// unlinked as it is made); stopped (SIGINT, Ctrl-C), a whole document that
// says it was interrupted, which txload report reads, and nothing in
// $TMPDIR either.
func TestInterruptedLongRunOutputs(t *testing.T) {
	t.Parallel()
	bin := buildTxload(t)
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "select-only", "--url", url); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp, out := t.TempDir(), t.TempDir()
			js, html := filepath.Join(out, "run.json"), filepath.Join(out, "run.html")
			cmd := exec.Command(bin, "run", "select-only", "--url", url, "--concurrency", "4", "--duration", "10m",
				"--progress", "1ms", "--json", js, "--html", html)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			// A thousand intervals spooled, then the signal.
			sc := bufio.NewScanner(stderr)
			for n := 0; n < 1000 && sc.Scan(); {
				if strings.Contains(sc.Text(), "ops/s") {
					n++
				}
			}
			spooled, _ := filepath.Glob(filepath.Join(tmp, "txload-*"))
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			go io.Copy(io.Discard, stderr)
			_ = cmd.Wait()
			left, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range left {
				t.Errorf("the run left %s in $TMPDIR", e.Name())
			}
			if len(spooled) != 0 {
				t.Errorf("the spool was named in $TMPDIR during the run: %v", spooled)
			}
			outs, _ := os.ReadDir(out)
			if sig == syscall.SIGKILL {
				for _, e := range outs {
					t.Errorf("a killed run left %s", e.Name())
				}
				return
			}
			if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted {
				t.Fatalf("exit %d, want %d", code, ExitInterrupted)
			}
			run := readDoc(t, js).Runs[0]
			if !run.Interrupted || len(run.Intervals) < 1000 {
				t.Errorf("interrupted %v, %d intervals", run.Interrupted, len(run.Intervals))
			}
			if r := txload(t.Context(), nil, "report", js, "-o", filepath.Join(out, "again.html")); r.code != 0 {
				t.Errorf("txload report: exit %d\n%s", r.code, r.stderr)
			}
			if len(outs) != 2 {
				t.Errorf("the run wrote %d files, want the document and the page", len(outs))
			}
		})
	}
}

// txload pgbench -l writes each transaction to its log as it ends, and
// holds none: from its 20,000th logged transaction to its 100,000th, its
// live heap grows by less than 8 bytes a transaction. A long suite
// (pgtest.Long): .ci/run runs it.
func TestPgbenchTxnLogHeapBounded(t *testing.T) {
	// Not parallel: the heap measured is the process's.
	pgtest.Long(t, "100,000 transactions, the heap sampled")
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "pgbench", "-i", "-s", "1", url); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	prefix := filepath.Join(t.TempDir(), "lg")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- txloadTo(ctx, nil, io.Discard, io.Discard, "pgbench", "-n", "-S", "-c", "4", "-T", "600", "-l", "--log-prefix", prefix, url)
	}()
	log := fmt.Sprintf("%s.%d", prefix, os.Getpid())
	// Logged transactions: the log's lines (flushed 64 KB at a time).
	logged := func() int64 {
		b, err := os.ReadFile(log)
		if err != nil {
			return 0
		}
		return int64(bytes.Count(b, []byte{'\n'}))
	}
	xs, ys := heapGrowth(t, logged, 20000, 100000, 10000, done)
	cancel()
	<-done
	if per := slope(xs, ys); per >= 8 {
		t.Errorf("the live heap grew by %.1f bytes a transaction (%.0f B to %.0f B over %.0f transactions)", per, ys[0], ys[len(ys)-1], xs[len(xs)-1]-xs[0])
	}
}
