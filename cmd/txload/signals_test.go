//go:build linux

package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// check history, report and merge obey the first stop signal, whenever it
// comes: waiting for a FIFO's writer (open(2) blocks until one comes),
// copying what a FIFO gives, reading and checking a large history. They
// exit 130 (or, for a signal before txload handles any, die of it) within
// seconds, leaving nothing in $TMPDIR and no output file. Before, check
// history ran a 15 MB history to its end after SIGINT and exited 0, and
// neither it, report nor merge ended on a FIFO with no writer. Input that
// is not a document (/dev/zero) is refused at its first byte, where report
// and merge copied it to $TMPDIR without end.
func TestSignalsAtRandomMoments(t *testing.T) {
	bin := build(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 37))
	big := bigHistory(t)
	type source int
	const (
		noWriter source = iota // a FIFO no one opens
		endless                // a FIFO fed '{' and white space without end
		file                   // big, the 15 MB history
	)
	cases := []struct {
		name string
		src  source
		args []string // "IN" is the input's path, "OUT" the output's
	}{
		{"check history of a FIFO with no writer", noWriter, []string{"check", "history", "IN"}},
		{"check history of a FIFO being written", endless, []string{"check", "history", "IN"}},
		{"check history of 15 MB", file, []string{"check", "history", "IN"}},
		{"report of a FIFO with no writer", noWriter, []string{"report", "IN", "-o", "OUT"}},
		{"report of a FIFO being written", endless, []string{"report", "IN", "-o", "OUT"}},
		{"merge of a FIFO with no writer", noWriter, []string{"merge", "IN", "-o", "OUT"}},
		{"merge of a FIFO being written", endless, []string{"merge", "IN", "--output", "html", "-o", "OUT"}},
	}
	sigs := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}
	for _, tc := range cases {
		for i, sig := range sigs {
			after := 50*time.Millisecond + time.Duration(rng.Int64N(int64(1500*time.Millisecond)))
			t.Run(fmt.Sprintf("%s/%s-at-%s", tc.name, sig, after.Round(time.Millisecond)), func(t *testing.T) {
				t.Parallel()
				tmp, dir := t.TempDir(), t.TempDir()
				in, out := big, filepath.Join(dir, "out.html")
				if tc.src != file {
					in = filepath.Join(dir, fmt.Sprintf("in-%d.json", i))
					if err := syscall.Mkfifo(in, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				if tc.src == endless {
					stop := feed(t, in)
					defer stop()
				}
				args := make([]string, len(tc.args))
				for j, a := range tc.args {
					args[j] = strings.NewReplacer("IN", in, "OUT", out).Replace(a)
				}
				p := start(t, bin, tmp, args...)
				time.Sleep(after)
				sent := time.Now()
				if err := p.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				code := p.wait(t, 10*time.Second)
				took := time.Since(sent)
				ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
				if code != 130 && !(ws.Signaled() && ws.Signal() == sig) {
					t.Errorf("exit %d (%v), want 130\nstderr:\n%s", code, ws, p.stderr)
				}
				if took > 5*time.Second {
					t.Errorf("ended %s after the signal", took)
				}
				if left := leftIn(tmp); len(left) > 0 {
					t.Errorf("left in $TMPDIR: %v", left)
				}
				if left := leftIn(dir); len(left) > 1 || len(left) == 1 && tc.src == file {
					t.Errorf("left beside the output: %v", left)
				}
			})
		}
	}
	for _, args := range [][]string{{"report", "/dev/zero", "-o", "OUT"}, {"merge", "/dev/zero"}} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			t.Parallel()
			tmp, dir := t.TempDir(), t.TempDir()
			for j, a := range args {
				args[j] = strings.ReplaceAll(a, "OUT", filepath.Join(dir, "out.html"))
			}
			p := start(t, bin, tmp, args...)
			if code := p.wait(t, 10*time.Second); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			want := "txload: /dev/zero: reading a txload JSON document: offset 0: invalid character '\\x00', want '{'\n"
			if got := p.stderr.String(); got != want {
				t.Errorf("stderr %q, want %q", got, want)
			}
			if left := append(leftIn(tmp), leftIn(dir)...); len(left) > 0 {
				t.Errorf("left: %v", left)
			}
		})
	}
}

// bigHistory writes a history of one attempt whose read saw two million
// appends (15 MB on one line: checking it takes seconds), once per test
// binary.
func bigHistory(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(`{"client":0,"intended_ns":1,"invoke_ns":1,"complete_ns":2,"outcome":"committed","ops":[["r",1,[`)
	for i := 1; i <= 2_000_000; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, i)
	}
	b.WriteString("]]]}\n")
	path := filepath.Join(t.TempDir(), "big.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// feed opens the FIFO path for writing (in the background: the open waits
// for the reader) and writes '{' and then white space to it until stop.
func feed(t *testing.T, path string) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		if _, err := f.Write([]byte("{")); err != nil {
			return
		}
		spaces := bytes.Repeat([]byte(" "), 64<<10)
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := f.Write(spaces); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return func() {
		close(done)
		// A writer still waiting for its reader (txload ended before it
		// opened the FIFO) is let go by a reader of the test's own.
		if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			defer f.Close()
		}
		<-ended
	}
}
