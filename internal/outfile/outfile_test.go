//go:build unix

package outfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func write(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

func umask() os.FileMode {
	old := syscall.Umask(0o022)
	syscall.Umask(old)
	return os.FileMode(old)
}

// A regular file, absent or present, is replaced atomically, with mode 0644
// less the umask; a failed write leaves it as it was.
func TestWriteRegular(t *testing.T) {
	dir := t.TempDir()
	want := os.FileMode(0o644) &^ umask()
	for _, tc := range []struct {
		name   string
		before func(path string)
	}{
		{"absent", func(string) {}},
		{"existing 0600", func(p string) { os.WriteFile(p, []byte("old contents, longer"), 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			tc.before(path)
			if err := Check(path); err != nil {
				t.Fatal(err)
			}
			if err := Write(t.Context(), path, write("new")); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			st, _ := os.Stat(path)
			if string(b) != "new" || st.Mode().Perm() != want {
				t.Fatalf("contents %q mode %v, want %q %v", b, st.Mode().Perm(), "new", want)
			}
			boom := errors.New("boom")
			if err := Write(t.Context(), path, func(w io.Writer) error { io.WriteString(w, "half"); return boom }); err != boom {
				t.Fatalf("failed write: %v", err)
			}
			if b, _ := os.ReadFile(path); string(b) != "new" {
				t.Fatalf("a failed write changed the file: %q", b)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp-*")); len(left) > 0 {
				t.Fatalf("temporary files left: %v", left)
			}
		})
	}
}

// A symlink is written through: its target changes, the link stays a link;
// a dangling one creates the file it names.
func TestWriteThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.json")
	os.WriteFile(target, []byte("old"), 0o644)
	link := filepath.Join(dir, "link.json")
	os.Symlink("real.json", link)
	dangling := filepath.Join(dir, "dangling.json")
	os.Symlink("made.json", dangling)
	for _, p := range []string{link, dangling} {
		if err := Check(p); err != nil {
			t.Fatal(err)
		}
		if err := Write(t.Context(), p, write("new")); err != nil {
			t.Fatal(err)
		}
		if li, _ := os.Lstat(p); li.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s was replaced by a regular file", p)
		}
	}
	for _, p := range []string{target, filepath.Join(dir, "made.json")} {
		if b, _ := os.ReadFile(p); string(b) != "new" {
			t.Fatalf("%s holds %q, want the write", p, b)
		}
	}
}

// A character device and a FIFO are written to, never replaced: /dev/null
// stays a device, a FIFO's reader gets the bytes, /dev/full's error is
// returned.
func TestWriteThroughDevicesAndPipes(t *testing.T) {
	if err := Check("/dev/null"); err != nil {
		t.Fatal(err)
	}
	if err := Write(t.Context(), "/dev/null", write("x")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat("/dev/null"); st.Mode()&os.ModeCharDevice == 0 {
		t.Fatal("/dev/null is no longer a character device")
	}
	if _, err := os.Stat("/dev/full"); err == nil {
		if err := Write(t.Context(), "/dev/full", write("x")); err == nil || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("writing /dev/full: %v, want no space left", err)
		}
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	if err := Check(fifo); err != nil {
		t.Fatal(err)
	}
	// With no reader, the open is refused at once: a blocking one would
	// wait for a reader, deaf to stop signals.
	if err := Write(t.Context(), fifo, write("lost")); err == nil || !strings.Contains(err.Error(), "a FIFO that no process reads") {
		t.Fatalf("writing a FIFO with no reader: %v", err)
	}
	// Its reader open (as `cat fifo &` would be) before it is written.
	rd, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if err := Write(t.Context(), fifo, write("through")); err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(rd); string(b) != "through" {
		t.Fatalf("the FIFO's reader got %q", b)
	}
	if st, _ := os.Lstat(fifo); st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatal("the FIFO was replaced")
	}
	// An inherited pipe named by /dev/fd/N, as a shell's >(cat) passes it.
	r, w, _ := os.Pipe()
	defer r.Close()
	name := "/dev/fd/" + strconv.Itoa(int(w.Fd()))
	if err := Check(name); err != nil {
		t.Fatal(err)
	}
	if err := Write(t.Context(), name, write("piped")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if b, _ := io.ReadAll(r); string(b) != "piped" {
		t.Fatalf("the pipe got %q", b)
	}
}

// Check refuses what cannot be written, before anything runs.
func TestCheckRefuses(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro.json")
	os.WriteFile(ro, nil, 0o444)
	for _, tc := range []struct{ path, want string }{
		{dir, "is a directory"},
		{filepath.Join(dir, "missing", "x.json"), "does not exist"},
	} {
		if err := Check(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
	if os.Geteuid() != 0 {
		if err := Check(ro); err == nil {
			t.Errorf("Check of a read-only file passed")
		}
	}
}

// An output may not be an input or another output, by whatever path it is
// reached.
func TestConflicts(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "s.sql")
	os.WriteFile(in, nil, 0o644)
	os.Symlink("s.sql", filepath.Join(dir, "alias.sql"))
	out := func(flag, p string) File { return File{Flag: flag, Path: p} }
	for _, tc := range []struct {
		name    string
		outs    []File
		ins     []File
		wantErr string
	}{
		{"distinct", []File{out("--json", filepath.Join(dir, "a.json")), out("--html", filepath.Join(dir, "a.html"))}, []File{{"--file", in}}, ""},
		{"output is an input", []File{out("--json", in)}, []File{{"--file", in}}, "--json " + in + " is also its --file"},
		{"through a symlink", []File{out("--json", filepath.Join(dir, "alias.sql"))}, []File{{"--file", in}}, "is also its --file"},
		{"relative and absolute", []File{out("--json", filepath.Join(dir, "x.json")), out("--html", filepath.Join(dir, ".", "x.json"))}, nil, "are the same file"},
		{"stdout twice", []File{out("--json", "/dev/stdout"), out("--html", "/dev/fd/1")}, nil, "are the same file"},
		{"/dev/null twice", []File{out("--json", os.DevNull), out("--html", os.DevNull)}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Conflicts(tc.outs, tc.ins)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Conflicts = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// /dev/stdout redirected to a file is written where the descriptor points,
// after what was written there: never the file replaced or overwritten
// from its start.
func TestWriteDescriptorAtItsOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("report\n")
	name := "/dev/fd/" + strconv.Itoa(int(f.Fd()))
	if err := Check(name); err != nil {
		t.Fatal(err)
	}
	if err := Write(t.Context(), name, write("json\n")); err != nil {
		t.Fatal(err)
	}
	f.WriteString("more\n")
	if b, _ := os.ReadFile(path); string(b) != "report\njson\nmore\n" {
		t.Fatalf("the file holds %q", b)
	}
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := Check("/dev/fd/" + strconv.Itoa(int(r.Fd()))); err == nil {
		t.Fatal("a descriptor open for reading only passed the check")
	}
}

// A write that fails is an error even where the write function drops it
// (a report printed with fmt.Fprintf), and a Stream's Close says so, or
// that its file was removed while it was written.
func TestFailedWritesReported(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	dropping := func(w io.Writer) error { fmt.Fprintf(w, "lost"); return nil }
	if err := Write(t.Context(), "/dev/full", dropping); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Write /dev/full with its errors dropped: %v, want no space left", err)
	}
	s, err := CreateStream(t.Context(), "/dev/full")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(s, "lost")
	if err := s.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Stream /dev/full: %v, want no space left", err)
	}
	dir := filepath.Join(t.TempDir(), "gone")
	os.Mkdir(dir, 0o755)
	s, err = CreateStream(t.Context(), filepath.Join(dir, "x.hlog"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(s, "kept nowhere")
	os.RemoveAll(dir)
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("Stream of a removed file: %v, want it said removed", err)
	}
}

// A write to a pipe or FIFO whose reader takes nothing returns when the
// context ends (a stop signal), where it waited on the reader; once the
// context has ended, a write is made as the file takes it (an
// interrupted run's report). A stalled >(sleep 25) held a SIGTERM 18 s.
func TestWriteStalledReaderStops(t *testing.T) {
	big := strings.Repeat("x", 1<<20) // past any pipe's buffer
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	rd, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0) // open, never read
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil { // blocking, as a shell's stdout pipe
		t.Fatal(err)
	}
	pr, pw := os.NewFile(uintptr(p[0]), "pipe-r"), os.NewFile(uintptr(p[1]), "pipe-w")
	defer pr.Close()
	defer pw.Close()
	for name, write := range map[string]func(ctx context.Context) error{
		"FIFO": func(ctx context.Context) error { return Write(ctx, fifo, write(big)) },
		"blocking pipe": func(ctx context.Context) error {
			w := Watch(pw).StopOn(ctx)
			_, err := io.WriteString(w, big)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(200*time.Millisecond, cancel)
			done := make(chan error, 1)
			go func() { done <- write(ctx) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "interrupted while its reader took nothing") {
					t.Fatalf("the stalled write ended with %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the write to a reader that takes nothing did not return when its context ended")
			}
		})
	}
	// A writer whose write the stop cut writes nothing after it: the
	// summary after the stop to a reader that took nothing.
	ctx, cancel := context.WithCancel(t.Context())
	w := Watch(pw).StopOn(ctx)
	time.AfterFunc(200*time.Millisecond, cancel)
	if _, err := io.WriteString(w, big); err == nil {
		t.Fatal("the stalled write was not cut")
	}
	start := time.Now()
	if _, err := io.WriteString(w, "the summary\n"); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("a write after the cut one: %v after %s, want an error at once", err, time.Since(start))
	}
}

// Diagnostics (stderr): after the stop, a line its reader does not take
// waits at most a second, and the lines after it are dropped at once: a
// stopped run's last lines to a pager not scrolled held it 30 s.
func TestDiagnosticsAfterStop(t *testing.T) {
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	pr, pw := os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	defer pr.Close()
	defer pw.Close()
	ctx, cancel := context.WithCancel(t.Context())
	w := Watch(pw).Diagnostics(ctx)
	if _, err := io.WriteString(w, "before the stop\n"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := io.WriteString(w, strings.Repeat("x", 1<<20)); done <- err }() // fills the pipe
	time.Sleep(100 * time.Millisecond)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the stalled write did not end at the stop")
	}
	start := time.Now()
	for range 100 {
		if _, err := io.WriteString(w, "a line after the stop\n"); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("100 lines after the stop to a reader that takes nothing took %s", took)
	}
}
