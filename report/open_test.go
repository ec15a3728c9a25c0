package report_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/txload/txload/report"
)

// OpenDocuments reads each document from its file (a regular file, or a
// pipe copied first), names it by its file name, and refuses, as an
// *InputError naming the file, what cannot be read, is not a document, or
// is given twice.
func TestOpenDocuments(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	doc := func(seed int) []byte {
		var b bytes.Buffer
		if err := report.WriteJSON(&b, fakeRun(t, seed, time.Unix(5000, 0), 3, nil)); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	one, two := write("one.json", doc(1)), write("two.json", doc(2))
	notDoc := write("notes.txt", []byte("hello\n"))
	fifo := filepath.Join(dir, "pipe.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		paths     []string
		pipe      []byte // written to fifo meanwhile
		wantNames []string
		wantErr   string // the *InputError's message
	}{
		{name: "two files", paths: []string{one, two}, wantNames: []string{"one.json", "two.json"}},
		{name: "a pipe", paths: []string{one, fifo}, pipe: doc(3), wantNames: []string{"one.json", "pipe.json"}},
		{name: "missing", paths: []string{one, filepath.Join(dir, "none.json")}, wantErr: filepath.Join(dir, "none.json") + ": no such file or directory"},
		{name: "a directory", paths: []string{dir}, wantErr: dir + ": is a directory"},
		{name: "not a document", paths: []string{notDoc}, wantErr: notDoc + ": "},
		{name: "same file twice", paths: []string{one, two, filepath.Join(dir, ".", "one.json")},
			wantErr: one + " and " + filepath.Join(dir, ".", "one.json") + " are the same document: give each run once"},
		{name: "same document by a pipe", paths: []string{two, fifo}, pipe: doc(2), wantErr: two + " and " + fifo + " are the same document: give each run once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			if tc.pipe != nil {
				done := make(chan error, 1)
				go func() { done <- os.WriteFile(fifo, tc.pipe, 0o600) }()
				defer func() {
					if err := <-done; err != nil {
						t.Error(err)
					}
				}()
			}
			docs, names, closeDocs, err := report.OpenDocuments(t.Context(), tc.paths)
			if tc.wantErr != "" {
				var ie *report.InputError
				if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want an *InputError %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer closeDocs()
			if strings.Join(names, ",") != strings.Join(tc.wantNames, ",") || len(docs) != len(tc.paths) {
				t.Fatalf("%d documents named %q, want %q", len(docs), names, tc.wantNames)
			}
			for i, d := range docs {
				if d.Workload != "w" || len(d.Runs) != 1 || d.Runs[0].ElapsedSec != 3 {
					t.Errorf("document %d: workload %q, %d runs, want w's one run of 3s", i, d.Workload, len(d.Runs))
				}
			}
			// A pipe's copy is removed as it is made: nothing is left.
			if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) != 0 {
				t.Errorf("left in $TMPDIR: %v", left)
			}
		})
	}
}
