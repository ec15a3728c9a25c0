package history

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckFile reads and checks whole files: the verdict's error at each
// level, the attempts named by their lines, and the input errors (a
// malformed line, an element appended twice, a file in no format) as
// *InputError naming the file and, where there is one, the line.
func TestCheckFile(t *testing.T) {
	dup := "{\"client\":0,\"invoke_ns\":0,\"complete_ns\":5,\"outcome\":\"committed\",\"ops\":[[\"append\",1,1]]}\n\n" +
		"{\"client\":1,\"invoke_ns\":0,\"complete_ns\":6,\"outcome\":\"committed\",\"ops\":[[\"append\",1,1]]}\n"
	for _, c := range []struct {
		name, file, text string // file in testdata, or text
		level            string
		wantErr          string // the verdict's error, or the input error
		wantInput        bool
		wantFormat       Format
	}{
		{name: "serial", file: "serial.jsonl", level: "serializable", wantFormat: JSONL},
		{name: "write skew at serializable", file: "write-skew.jsonl", level: "serializable", wantErr: "the history shows anomalies serializable forbids: G2-item", wantFormat: JSONL},
		{name: "write skew at repeatable read", file: "write-skew.jsonl", level: "rr", wantFormat: JSONL},
		{name: "read skew at repeatable read", file: "read-skew.edn", level: "rr", wantErr: "the history shows anomalies repeatable read forbids: G-single", wantFormat: EDN},
		{name: "malformed", file: "malformed.jsonl", level: "serializable", wantInput: true,
			wantErr: "malformed.jsonl, line 3: outcome \"comitted\" is not committed, failed or unknown"},
		{name: "duplicate append", text: dup, level: "serializable", wantInput: true,
			wantErr: "dup.jsonl: value 1 appended to key 1 twice, by line 1 and line 3: the values appended to a key must be unique"},
		{name: "no format", text: "hello\n", level: "serializable", wantInput: true, wantErr: "dup.jsonl: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join("testdata", c.file)
			if c.file == "" {
				path = filepath.Join(t.TempDir(), "dup.jsonl")
				if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			in, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			level, err := ParseLevel(c.level)
			if err != nil {
				t.Fatal(err)
			}
			f, err := CheckFile(in, filepath.Base(path), Sniff)
			var ie *InputError
			if c.wantInput {
				if !errors.As(err, &ie) || !strings.HasPrefix(ie.Error(), c.wantErr) {
					t.Fatalf("CheckFile: %v, want an input error %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Format != c.wantFormat {
				t.Errorf("format %v, want %v", f.Format, c.wantFormat)
			}
			got := ""
			if err := f.Result.Verdict(level).Err(); err != nil {
				got = err.Error()
			}
			if got != c.wantErr {
				t.Errorf("verdict's error %q, want %q", got, c.wantErr)
			}
			var b strings.Builder
			if err := f.Result.WriteText(&b, level, f.Name); err != nil {
				t.Fatal(err)
			}
			if c.wantErr != "" && !strings.Contains(b.String(), "= line ") {
				t.Errorf("the example names no line:\n%s", b.String())
			}
		})
	}
}
