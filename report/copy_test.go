package report

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// What is copied of a document from a pipe has a bound, its first byte
// must be able to begin a document, and the copy ends with its context,
// a read waiting on the pipe included.
func TestCopyDocument(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string // written to the pipe, then closed
		open  bool   // the pipe stays open, nothing more written
		want  string // the error; "" none
	}{
		{"a document", "  {\"a\": 1}", false, ""},
		{"over the bound", "{" + strings.Repeat(" ", 2000), false, "more than 0 MiB from a pipe or a device (the most txload copies to read): write it to a file and give its path"},
		{"not a document", "\x00\x00", false, `reading a txload JSON document: offset 0: invalid character '\x00', want '{'`},
		{"not a document, after white space", "\n\t x", false, `reading a txload JSON document: offset 3: invalid character 'x', want '{'`},
		{"a pipe that gives nothing more", "{", true, "context deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			go func() {
				_, _ = io.WriteString(w, tc.input)
				if !tc.open {
					w.Close()
				}
			}()
			defer w.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			var dst bytes.Buffer
			start := time.Now()
			_, err = copyDocument(ctx, &dst, r, 1000)
			if tc.want == "" {
				if err != nil || dst.String() != tc.input {
					t.Fatalf("copied %q, %v; want %q", dst.String(), err, tc.input)
				}
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}
