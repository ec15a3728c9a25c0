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

// The writers record the level on the first line or map only, the reader
// takes it back in either format, and JudgedAt goes by --isolation, else
// the file's level, else serializable (saying so).
func TestFileLevel(t *testing.T) {
	attempts := []Attempt{
		{Client: 0, Invoke: 1, Complete: 5, Outcome: Committed, Ops: []Op{{Kind: Append, Key: 1, Value: 1}}},
		{Client: 1, Invoke: 6, Complete: 9, Outcome: Committed, Ops: []Op{{Kind: Read, Key: 1, List: []int64{1}}}},
	}
	write := func(format Format) func(l Level, set bool) string {
		return func(l Level, set bool) string {
			if !set {
				return writeAs(t, format, attempts, "", 0)
			}
			return writeAs(t, format, attempts, l.String(), 0)
		}
	}
	for _, format := range []Format{JSONL, EDN} {
		for _, tc := range []struct {
			name     string
			set      bool
			recorded Level
			given    Level
			isGiven  bool
			want     Level
			note     string
		}{
			{"recorded", true, ReadCommitted, Serializable, false, ReadCommitted, ""},
			{"recorded, the same given", true, RepeatableRead, RepeatableRead, true, RepeatableRead, ""},
			{"recorded, another given", true, ReadCommitted, Serializable, true, Serializable, "serializable, from --isolation: the history records read committed"},
			{"none recorded", false, 0, Serializable, false, Serializable, "serializable assumed: the history records no level"},
			{"none recorded, given", false, 0, ReadCommitted, true, ReadCommitted, ""},
			// No txload run records read uncommitted: judged at read
			// committed, as PostgreSQL runs it, unless given.
			{"read uncommitted recorded", true, ReadUncommitted, Serializable, false, ReadCommitted, "read committed: the history records read uncommitted"},
			{"read uncommitted recorded and given", true, ReadUncommitted, ReadUncommitted, true, ReadUncommitted, ""},
		} {
			t.Run(format.String()+"/"+tc.name, func(t *testing.T) {
				text := write(format)(tc.recorded, tc.set)
				if n := strings.Count(text, "isolation"); n != map[bool]int{true: 1, false: 0}[tc.set] {
					t.Errorf("the level is written %d times:\n%s", n, text)
				}
				f, err := CheckFile(strings.NewReader(text), "h", format)
				if err != nil {
					t.Fatal(err)
				}
				if f.Recorded != tc.set || (tc.set && f.Level != tc.recorded) || f.Result.Attempts != len(attempts) {
					t.Fatalf("read back %v (recorded %v), %d attempts:\n%s", f.Level, f.Recorded, f.Result.Attempts, text)
				}
				level, note := f.JudgedAt(tc.given, tc.isGiven)
				if level != tc.want || !strings.HasPrefix(note, tc.note) || (tc.note == "") != (note == "") {
					t.Errorf("JudgedAt = %v, %q; want %v, %q", level, note, tc.want, tc.note)
				}
			})
		}
	}
}

// A history records its run's number of clients on its first line (JSON
// lines' "clients", EDN's :clients), read back in either format; an
// attempt by a client numbered that or more is named (File.Beyond); a
// file that records none says what is assumed.
func TestFileClients(t *testing.T) {
	attempts := []Attempt{
		{Client: 0, Invoke: 1, Complete: 5, Outcome: Committed, Ops: []Op{{Kind: Append, Key: 1, Value: 1}}},
		{Client: 1, Invoke: 6, Complete: 9, Outcome: Committed, Ops: []Op{{Kind: Read, Key: 1, List: []int64{1}}}},
		{Client: 2, Invoke: 10, Complete: 12, Outcome: Committed, Ops: []Op{{Kind: Read, Key: 1, List: []int64{1}}}},
	}
	for _, tc := range []struct {
		clients int // recorded; 0 none
		beyond  string
	}{
		{0, ""},
		{3, ""},
		{2, "1 by a client the run did not have (it recorded 2, numbered 0 to 1), the first at line "},
	} {
		for _, format := range []Format{JSONL, EDN} {
			text := writeAs(t, format, attempts, "", tc.clients)
			f, err := CheckFile(strings.NewReader(text), "h", format)
			if err != nil {
				t.Fatalf("%v, %d clients: %v\n%s", format, tc.clients, err, text)
			}
			if f.ClientsRecorded != (tc.clients > 0) || f.Clients != tc.clients || (f.ClientsNote() == "") != (tc.clients > 0) {
				t.Errorf("%v: read back %d clients (recorded %v, note %q), wrote %d\n%s", format, f.Clients, f.ClientsRecorded, f.ClientsNote(), tc.clients, text)
			}
			if got := f.Beyond(); !strings.HasPrefix(got, tc.beyond) || (got == "") != (tc.beyond == "") {
				t.Errorf("%v, %d clients: Beyond() = %q, want %q…", format, tc.clients, got, tc.beyond)
			}
		}
	}
}

// writeAs writes attempts in format, recording level (a name; "" none)
// and clients (0 none) as a run does.
func writeAs(t *testing.T, format Format, attempts []Attempt, level string, clients int) string {
	t.Helper()
	var b strings.Builder
	var w interface {
		SetLevel(Level)
		SetClients(int)
		Flush() error
	}
	var put func(Attempt) error
	if format == JSONL {
		jw := NewJSONLWriter(&b)
		w, put = jw, jw.Write
	} else {
		ew := NewEDNWriter(&b)
		w, put = ew, func(a Attempt) error {
			if err := ew.Invoke(a); err != nil {
				return err
			}
			return ew.Complete(a)
		}
	}
	if level != "" {
		l, err := ParseLevel(level)
		if err != nil {
			t.Fatal(err)
		}
		w.SetLevel(l)
	}
	w.SetClients(clients)
	for _, a := range attempts {
		if err := put(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
