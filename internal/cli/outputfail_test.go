package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An output that cannot be written fails the command: exit 1, the error
// on stderr, and no "wrote" line, whichever output it is: a file written
// as the run goes (--histogram, --cpuprofile), one written at the end
// (merge -o, report -o), or the report on stdout.
func TestOutputWriteFailureFails(t *testing.T) {
	t.Parallel()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full here:", err)
	}
	defer full.Close()
	url := srv.NewDatabase(t)
	tpcb := tpcbDatabase(t)
	doc := filepath.Join(t.TempDir(), "run.json")
	run := []string{"run", "bank", "--url", url, "--accounts", "100", "-c", "1", "--duration", "1s", "--isolation", "rc"}
	if r := txload(t.Context(), nil, append(run, "--json", doc)...); r.code != 0 {
		t.Fatalf("the clean run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, tc := range []struct {
		name string
		args []string
		// stdout: where the report goes (nil: a buffer).
		stdout io.Writer
		want   string
	}{
		{name: "run --histogram", args: append(run, "--histogram", "/dev/full"), want: "writing --histogram /dev/full: write /dev/full: no space left on device"},
		{name: "run --cpuprofile", args: append(run, "--cpuprofile", "/dev/full"), want: "writing --cpuprofile /dev/full: write /dev/full: no space left on device"},
		{name: "pgbench --histogram", args: []string{"pgbench", "-n", "-t", "20", "--histogram", "/dev/full", tpcb}, want: "writing --histogram /dev/full: write /dev/full: no space left on device"},
		{name: "lag --histogram", args: []string{"lag", "--source", tpcb, "--dest", tpcb, "--workload", "tpcb-like", "-c", "1", "--duration", "1s", "--histogram", "/dev/full"}, want: "--histogram: write /dev/full: no space left on device"}, // its header's write fails
		{name: "merge -o text", args: []string{"merge", doc, "-o", "/dev/full"}, want: "writing /dev/full: write /dev/full: no space left on device"},
		{name: "merge --output pgbench -o", args: []string{"merge", doc, "--output", "pgbench", "-o", "/dev/full"}, want: "writing /dev/full: write /dev/full: no space left on device"},
		{name: "merge --output json -o", args: []string{"merge", doc, "--output", "json", "-o", "/dev/full"}, want: "writing /dev/full: writing JSON: write /dev/full: no space left on device"},
		{name: "report -o", args: []string{"report", doc, "-o", "/dev/full"}, want: "no space left on device"},
		{name: "run's report on stdout", args: run, stdout: full, want: "txload: writing the report to stdout: write /dev/full: no space left on device"},
		{name: "check's report on stdout", args: []string{"check", "bank", "--url", url}, stdout: full, want: "txload: writing the report to stdout: write /dev/full: no space left on device"},
		{name: "merge's report on stdout", args: []string{"merge", doc}, stdout: full, want: "txload: writing the report to stdout: write /dev/full: no space left on device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb syncBuffer
			stdout := tc.stdout
			if stdout == nil {
				stdout = &out
			}
			code := txloadTo(t.Context(), nil, stdout, &errb, tc.args...)
			stderr := errb.String()
			if code != ExitFailed || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want 1 and %q on stderr:\n%s", code, tc.want, stderr)
			}
			if strings.Contains(stderr, "wrote /dev/full") {
				t.Fatalf("said it wrote what it could not:\n%s", stderr)
			}
		})
	}
}

// A --histogram whose directory is removed while the run writes it is no
// file anyone can read: the run fails and does not say it wrote it.
func TestHistogramRemovedDuringRunFails(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	dir := filepath.Join(t.TempDir(), "out")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hlog := filepath.Join(dir, "run.hlog")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	removed := make(chan error, 1)
	go func() {
		// The file is created before the load and closed after it: 3 s.
		for {
			if _, err := os.Stat(hlog); err == nil {
				removed <- os.RemoveAll(dir)
				return
			}
			select {
			case <-ctx.Done():
				removed <- ctx.Err()
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	r := txload(t.Context(), nil, "run", "bank", "--url", url, "--accounts", "100", "-c", "1", "--duration", "3s",
		"--isolation", "rc", "--histogram", hlog)
	cancel()
	if err := <-removed; err != nil {
		t.Fatalf("the run ended before its --histogram was created: %v\n%s", err, r.stderr)
	}
	want := "txload: writing --histogram " + hlog + ": the file was removed or replaced while it was written"
	if r.code != ExitFailed || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "wrote "+hlog) {
		t.Fatalf("exit %d, want 1 and %q, no wrote line:\n%s", r.code, want, r.stderr)
	}
}

// An output that is a FIFO no process reads is refused when it is opened,
// at once: a blocking open would wait for a reader, deaf to every stop
// signal but a second one.
func TestOutputFIFOWithoutReaderRefused(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	dir := t.TempDir()
	for _, flag := range []string{"--json", "--histogram"} {
		t.Run(flag, func(t *testing.T) {
			fifo := filepath.Join(dir, strings.TrimPrefix(flag, "--")+".fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skip("no FIFO here:", err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			go func() {
				// Where the open waits (the old code), a reader ends the
				// wait once the test has given up.
				<-ctx.Done()
				if f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
					_, _ = io.Copy(io.Discard, f)
					f.Close()
				}
			}()
			r := txload(ctx, nil, "run", "bank", "--url", url, "--accounts", "100", "-c", "1", "--duration", "1s",
				"--isolation", "rc", flag, fifo)
			if ctx.Err() != nil {
				t.Fatalf("the run waited for the FIFO's reader: %v", ctx.Err())
			}
			want := "open " + fifo + ": a FIFO that no process reads: start its reader first"
			if r.code != ExitFailed || !strings.Contains(r.stderr, want) {
				t.Fatalf("exit %d, want 1 and %q:\n%s", r.code, want, r.stderr)
			}
		})
	}
}
