package cli

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/txload/txload/workload/all"
)

// The hand-made histories of the history package.
func historyFile(name string) string { return filepath.Join("..", "..", "history", "testdata", name) }

func TestCheckHistory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"write skew at serializable", []string{historyFile("write-skew.jsonl")}, ExitFailed, []string{
			"history ../../history/testdata/write-skew.jsonl (JSON lines)",
			"checked 6 attempts: 5 committed, 1 failed, 0 unknown",
			"G2-item: 1 (anti-dependency cycle: a cycle with two or more rw edges; forbidden at serializable)",
			"T1 = line 3, client 1, committed: [r 1 [1]] [append 2 2]",
			"T1 < T2: T1 read key 1 ending with 1, without T2's append of 2, which came next (rw)",
			"verdict at serializable: VIOLATION: G2-item is forbidden",
		}, "txload: the history shows anomalies serializable forbids: G2-item\n"},
		{"write skew at repeatable read", []string{historyFile("write-skew.jsonl"), "--isolation", "repeatable-read"}, ExitOK, []string{
			"G2-item: 1 (anti-dependency cycle: a cycle with two or more rw edges; allowed at repeatable read)",
			"verdict at repeatable read: ok: G2-item is allowed",
		}, ""},
		{"read skew at snapshot isolation", []string{historyFile("read-skew.edn"), "--isolation", "si"}, ExitFailed, []string{
			"history ../../history/testdata/read-skew.edn (EDN)",
			"T2 = line 8, client 0, committed: [r 1 [1]] [r 2 [1 2]]",
			"verdict at repeatable read: VIOLATION: G-single is forbidden",
		}, "txload: the history shows anomalies repeatable read forbids: G-single\n"},
		{"read skew at read committed", []string{historyFile("read-skew.edn"), "--isolation", "rc"}, ExitOK, []string{
			"verdict at read committed: ok: G-single is allowed",
		}, ""},
		{"serial", []string{historyFile("serial.jsonl")}, ExitOK, []string{
			"checked 5 attempts: 3 committed, 1 failed, 1 unknown", "no anomalies found", "verdict at serializable: ok",
		}, ""},
		{"malformed", []string{historyFile("malformed.jsonl")}, ExitUsage, nil,
			"txload: check history: ../../history/testdata/malformed.jsonl, line 3: outcome \"comitted\" is not committed, failed or unknown\n"},
		{"missing", []string{"no-such-history.jsonl"}, ExitUsage, nil,
			"txload: check history: open no-such-history.jsonl: no such file or directory\n"},
		{"bad level", []string{historyFile("serial.jsonl"), "--isolation", "snapshot-serializable"}, ExitUsage, nil,
			"txload: --isolation: \"snapshot-serializable\" is not an isolation level (allowed: read uncommitted, read committed, repeatable read, serializable, or ru, rc, rr, ser; snapshot isolation is repeatable read)\n"},
		{"no file", nil, ExitUsage, nil,
			"txload: check history needs one history file (JSON lines or EDN; - for standard input), got 0 arguments\n"},
		{"two files", []string{"a", "b"}, ExitUsage, nil,
			"txload: check history needs one history file (JSON lines or EDN; - for standard input), got 2 arguments\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := txload(context.Background(), nil, append([]string{"check", "history"}, tc.args...)...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			mustContain(t, r.stdout, tc.stdout...)
			if r.stderr != tc.stderr {
				t.Errorf("stderr %q, want %q", r.stderr, tc.stderr)
			}
		})
	}
}

// A history whose values repeat cannot be checked: the two lines are named.
func TestCheckHistoryDuplicateAppend(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "dup.jsonl")
	lines := `{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["append",1,1]]}

{"client":1,"invoke_ns":0,"complete_ns":6,"outcome":"committed","ops":[["append",1,1]]}
`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	r := txload(context.Background(), nil, "check", "history", path)
	want := "txload: check history: " + path + ": value 1 appended to key 1 twice, by line 1 and line 3: the values appended to a key must be unique\n"
	if r.code != ExitUsage || r.stderr != want || r.stdout != "" {
		t.Errorf("exit %d, stderr %q, stdout %q; want 2, %q", r.code, r.stderr, r.stdout, want)
	}
}

// A history in which a client runs two attempts at once (a line
// duplicated, or moved before an earlier one of its client) cannot be
// checked: the line is named, exit 2.
func TestCheckHistoryClientOverlap(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "twice.jsonl")
	writeFile(t, path, `{"client":2,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["r",7,[]]]}
{"client":1,"invoke_ns":0,"complete_ns":6,"outcome":"committed","ops":[["r",2,[]]]}
{"client":1,"invoke_ns":0,"complete_ns":6,"outcome":"committed","ops":[["r",2,[]]]}
`)
	r := txload(context.Background(), nil, "check", "history", path)
	want := "txload: check history: " + path + ", line 3: client 1 invoked an attempt at 0 ns, before its previous attempt completed at 6 ns: a client runs one attempt at a time, and its attempts come in the order they ran\n"
	if r.code != ExitUsage || r.stderr != want || r.stdout != "" {
		t.Errorf("exit %d, stderr %q, stdout %q; want 2, %q", r.code, r.stderr, r.stdout, want)
	}
}

// FILE - reads the history from standard input, in either format.
func TestCheckHistoryStdin(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(historyFile("read-skew.edn"))
	if err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	ran := false
	root := Root(Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(string(b)), Registry: all.Registry(), Version: "test"}, &ran)
	root.SetArgs([]string{"check", "history", "-", "--isolation", "read-committed"})
	err = root.ExecuteContext(context.Background())
	if code := ExitCode(err, ran); code != ExitOK {
		t.Fatalf("exit %d (%v)\n%s", code, err, out.String())
	}
	mustContain(t, out.String(), "history - (EDN)", "G-single: 1", "verdict at read committed: ok: G-single is allowed")
}

// A history whose reads hold values no attempt in it appended is refused
// at every level, with the read explained (garbage-read): the three files
// of issue 36, which passed as clean.
func TestCheckHistoryGarbageRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A real run at serializable (txload run append on PostgreSQL 18.3),
	// with the committed append of 1 to key 8 deleted (its line 3), which
	// 13 committed reads hold.
	zf, err := os.Open(historyFile("pg-18.3-serializable.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer zf.Close()
	zr, err := gzip.NewReader(zf)
	if err != nil {
		t.Fatal(err)
	}
	real, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(real), "\n")
	if !strings.Contains(lines[2], `"ops":[["append",8,1]]`) {
		t.Fatalf("line 3 is %s", lines[2])
	}
	deleted := filepath.Join(dir, "ser-deleted.jsonl")
	writeFile(t, deleted, strings.Join(slices.Delete(lines, 2, 3), ""))
	// read-skew.edn without T1's two events (its lines 6 and 7).
	edn, err := os.ReadFile(historyFile("read-skew.edn"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.SplitAfter(string(edn), "\n") {
		if !strings.HasPrefix(l, "{:index 3,") && !strings.HasPrefix(l, "{:index 4,") {
			kept = append(kept, l)
		}
	}
	noT1 := filepath.Join(dir, "read-skew-no-t1.edn")
	writeFile(t, noT1, strings.Join(kept, ""))
	// One committed read of [7] from a key nobody appended to.
	one := filepath.Join(dir, "one.jsonl")
	writeFile(t, one, `{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["r",9,[7]]]}`+"\n")

	for _, tc := range []struct {
		name, file, level string
		stdout            []string
	}{
		{"a committed append deleted from a real serializable history", deleted, "serializable", []string{
			"checked 856 attempts: 584 committed, 272 failed, 0 unknown",
			"garbage-read: 13 (a read of a value no attempt in the history appended; forbidden at serializable)",
			"no attempt in the history appended 1 to key 8, committed, failed or unknown: a read of a write the history does not hold",
			"verdict at serializable: VIOLATION: garbage-read is forbidden",
		}},
		{"read skew without the writer, at repeatable read", noT1, "rr", []string{
			"garbage-read: 3 (a read of a value no attempt in the history appended; forbidden at repeatable read)",
			"T1 = line 6, client 0, committed: [r 1 [1]] [r 2 [1 2]]",
			"T1 read key 2 as [1 2], which holds 2; no attempt in the history appended 2 to key 2",
			"verdict at repeatable read: VIOLATION: garbage-read is forbidden",
		}},
		{"one read of a key nobody appended to", one, "read-uncommitted", []string{
			"T1 read key 9 as [7], which holds 7; no attempt in the history appended 7 to key 9",
			"verdict at read uncommitted: VIOLATION: garbage-read is forbidden",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := offline(t, tc.file, tc.level)
			if r.code != ExitFailed {
				t.Errorf("exit %d, want %d\n%s%s", r.code, ExitFailed, r.stdout, r.stderr)
			}
			mustContain(t, r.stdout, tc.stdout...)
			mustContain(t, r.stderr, "forbids: garbage-read")
		})
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A line that gives a key twice, in any case, is refused: encoding/json
// would take the later one, whatever its case, where jq and Python take
// the later one as written, and a reader of G1a (a committed read of a
// failed append) would pass as a failed attempt.
func TestCheckHistoryRepeatedKeyRefused(t *testing.T) {
	t.Parallel()
	failed := `{"clients":2,"isolation":"serializable","client":0,"invoke_ns":0,"complete_ns":5,"outcome":"failed","sqlstate":"40001","ops":[["append",99,1]]}`
	for _, tc := range []struct{ name, reader, again string }{
		{"another case", `{"client":1,"invoke_ns":6,"complete_ns":9,"outcome":"committed","ops":[["r",99,[1]]],"OUTCOME":"failed"}`, "OUTCOME"},
		{"same case", `{"client":1,"invoke_ns":6,"complete_ns":9,"outcome":"committed","ops":[["r",99,[1]]],"outcome":"failed"}`, "outcome"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "h.jsonl")
			if err := os.WriteFile(path, []byte(failed+"\n"+tc.reader+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := txload(t.Context(), nil, "check", "history", path)
			want := "txload: check history: " + path + `, line 2: key "outcome" is given twice (then as "` + tc.again + `"; keys match in any case): which one counts is not clear` + "\n"
			if r.code != ExitUsage || r.stderr != want {
				t.Fatalf("exit %d, want 2 and %q:\n%s\n%s", r.code, want, r.stdout, r.stderr)
			}
		})
	}
}
