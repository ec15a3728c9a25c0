package history

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func readAll(t *testing.T, r io.Reader, f Format) []Attempt {
	t.Helper()
	out, err := ReadAll(r, f)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Histories written as JSON lines and as EDN read back as they were, in
// either format by name or by content.
func TestRoundTrip(t *testing.T) {
	for seed := range uint64(20) {
		var rec collect
		simulate(seeded(seed), simConfig{mode: simMode(seed % 3), clients: 5, keys: 4, maxWrites: 6, maxOps: 4,
			attempts: 300, failed: 10, unknown: 10, faults: 2}, &rec)
		for _, tc := range []struct {
			name  string
			write func(io.Writer, []Attempt) error
			f     Format
		}{
			{"jsonl", WriteJSONL, JSONL},
			{"jsonl sniffed", WriteJSONL, Sniff},
			{"edn", WriteEDN, EDN},
			{"edn sniffed", WriteEDN, Sniff},
		} {
			var buf bytes.Buffer
			if err := tc.write(&buf, rec.attempts); err != nil {
				t.Fatal(err)
			}
			got := readAll(t, &buf, tc.f)
			if !reflect.DeepEqual(got, rec.attempts) {
				for i := range min(len(got), len(rec.attempts)) {
					if !reflect.DeepEqual(got[i], rec.attempts[i]) {
						t.Fatalf("seed %d, %s: attempt %d read back as\n%+v\nwritten\n%+v", seed, tc.name, i, got[i], rec.attempts[i])
					}
				}
				t.Fatalf("seed %d, %s: %d attempts read back, %d written", seed, tc.name, len(got), len(rec.attempts))
			}
		}
	}
}

// small is a history of each outcome, concurrent attempts and a read skew.
func small() []Attempt {
	return []Attempt{
		at(0, 0, 30, Committed, R(1), R(2, 1)),
		at(1, 5, 20, Committed, A(1, 1), A(2, 1)),
		{Client: 2, Intended: us(2), Invoke: us(6), Complete: us(25), Outcome: Failed, SQLState: "40001", Ops: []Op{A(2, 2), {Kind: Read, Key: 1}}},
		at(1, 20, 40, Unknown, A(3, 1)),
		at(3, 40, 40, Committed, R(3, 1), R(1, 1)),
	}
}

// The EDN of a small history is the golden file's, which elle-cli reads.
func TestEDNGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteEDN(&buf, small()); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "small.edn")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(want) {
		t.Errorf("EDN:\n%s\nwant (%s):\n%s", buf.String(), golden, want)
	}
	// Attempts come back in the order they completed.
	got := readAll(t, bytes.NewReader(want), Sniff)
	h := small()
	order := []Attempt{h[1], h[2], h[0], h[3], h[4]}
	if !reflect.DeepEqual(got, order) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, order)
	}
}

// Jepsen's and Elle's own shapes of EDN: operations without :process or
// :time, completions without invocations, commas, comments, a vector of
// operations, the nemesis.
func TestReadEDNShapes(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []Attempt
	}{
		{"no process, no time", `{:index 0 :type :invoke  :value [[:append 253 1] [:r 254 nil]]}
{:index 1 :type :ok      :value [[:append 253 1] [:r 254 [1 3]]]}
`, []Attempt{{Outcome: Committed, Ops: []Op{A(253, 1), R(254, 1, 3)}}}},
		{"completions alone", `{:process 0, :type :ok, :value [[:append 7 2] [:r 8 [1]]]}
{:process 1, :type :ok, :value [[:append 7 1] [:append 8 1]]}`,
			[]Attempt{{Outcome: Committed, Ops: []Op{A(7, 2), R(8, 1)}}, {Client: 1, Outcome: Committed, Ops: []Op{A(7, 1), A(8, 1)}}}},
		{"a vector, comments, the nemesis, an unfinished invocation", `; a history
[{:index 0, :time 10, :type :invoke, :process 2, :f :txn, :value [[:append 9 2]]}
 {:type :info, :process :nemesis, :f :start-partition, :value nil}
 {:index 1, :time 20, :type :fail, :process 2, :f :txn, :value [[:append 9 2]], :error [:sqlstate "40001"]}
 {:index 2, :time 30, :type :invoke, :process 2, :f :txn, :value [[:r 9 nil]]}]
`, []Attempt{
			{Client: 2, Intended: 10, Invoke: 10, Complete: 20, Outcome: Failed, Ops: []Op{A(9, 2)}},
			{Client: 2, Intended: 30, Invoke: 30, Complete: 30, Outcome: Unknown, Ops: []Op{{Kind: Read, Key: 9}}},
		}},
		{"tags and discards", `#jepsen.history.Op{:index 0, :time 5, :type :invoke, :process 0, :f :txn, :value [[:r 1 nil]] #_ :ignored}
#jepsen.history.Op{:index 1, :time 6, :type :ok, :process 0, :f :txn, :value [[:r 1 []]]}`,
			[]Attempt{{Intended: 5, Invoke: 5, Complete: 6, Outcome: Committed, Ops: []Op{R(1)}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readAll(t, strings.NewReader(tc.in), Sniff)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("read\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// A malformed history is an error naming its line.
func TestReadErrors(t *testing.T) {
	good := `{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["append",1,1]]}` + "\n"
	for _, tc := range []struct {
		name, in string
		f        Format
		want     string
	}{
		{"not JSON", good + "{\"client\":0,\n", JSONL, "line 2: not JSON"},
		{"unknown outcome", good + good + `{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"comitted","ops":[["append",1,1]]}`, JSONL, `line 3: outcome "comitted" is not committed, failed or unknown`},
		{"missing field", `{"client":0,"complete_ns":5,"outcome":"committed","ops":[]}`, JSONL, `line 1: no "invoke_ns" field`},
		{"float key", `{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["append",1.5,1]]}`, JSONL, "line 1: operation 1: key 1.5 is not an integer"},
		{"overflowing value", `{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["append",1,99999999999999999999]]}`, JSONL, "value 99999999999999999999 is not an integer"},
		{"unknown op", `{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["w",1,1]]}`, JSONL, `line 1: operation 1: "w" is neither "r" nor "append"`},
		{"committed read without result", `{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["r",1,null]]}`, JSONL, "line 1: operation 1: a committed attempt's read must hold its result (a list, [] when empty), not null"},
		{"time backwards", `{"client":0,"invoke_ns":9,"complete_ns":5,"outcome":"committed","ops":[["r",1,[]]]}`, JSONL, "line 1: invoke time 9 ns is after the completion time 5 ns"},
		{"blank lines counted", "\n\n" + `{"client":-1,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["r",1,[]]]}`, JSONL, "line 3: client -1 is negative"},
		{"edn: keyword keys", "{:type :invoke, :process 0, :value [[:append :x 1]]}\n{:type :ok, :process 0, :value [[:append :x 1]]}", EDN, "line 1: key :x in [:append :x 1] is not an integer"},
		{"edn: unclosed", "{:type :ok, :process 0, :value [[:append 1 1]]}\n{:type :ok, :process 0,\n", EDN, "line 3: the file ends inside a form"},
		{"edn: double invoke", "{:type :invoke, :process 0, :value [[:append 1 1]]}\n\n{:type :invoke, :process 0, :value [[:append 1 2]]}", EDN, "line 3: process 0 invoked again before its invocation of line 1 completed"},
		{"edn: other function", "{:type :invoke, :process 0, :f :read, :value nil}", EDN, "line 1: :f :read is not a list-append transaction (:txn)"},
		{"key twice", good + `{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["append",1,2]],"outcome":"failed"}`, JSONL, `line 2: key "outcome" is given twice (then as "outcome"; keys match in any case): which one counts is not clear`},
		{"key in another case", `{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","OUTCOME":"failed","ops":[["append",1,1]]}`, JSONL, `line 1: key "outcome" is given twice (then as "OUTCOME"; keys match in any case)`},
		{"key in another case first", `{"client":0,"invoke_ns":0,"complete_ns":5,"Outcome":"failed","outcome":"committed","ops":[["append",1,1]]}`, JSONL, `line 1: key "Outcome" is given twice (then as "outcome"`},
		{"ops twice", `{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["append",1,1]],"ops":[]}`, JSONL, `line 1: key "ops" is given twice`},
		{"isolation twice", `{"isolation":"serializable","client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["append",1,1]],"Isolation":"read committed"}`, JSONL, `line 1: key "isolation" is given twice (then as "Isolation"`},
		{"edn: key twice", "{:type :invoke, :process 0, :value [[:append 1 1]]}\n{:type :ok, :process 0, :value [[:append 1 1]], :type :fail}", EDN, "line 2: a map gives the key :type twice"},
		{"neither", "hello", Sniff, "neither JSON lines nor EDN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd, err := NewReader(strings.NewReader(tc.in), tc.f)
			for err == nil {
				_, err = rd.Read()
			}
			if err == io.EOF || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			var le *LineError
			if tc.f != Sniff && !errors.As(err, &le) {
				t.Errorf("error %T is not a *LineError", err)
			}
		})
	}
}

// The hand-made histories in testdata, which docs/histories.md checks.
func TestTestdataHistories(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []Class
	}{
		{"write-skew.jsonl", []Class{G2Item}},
		{"read-skew.edn", []Class{GSingle}},
		{"serial.jsonl", nil},
		{"small.edn", []Class{GSingle}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			attempts, err := ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Check(attempts)
			if err != nil {
				t.Fatal(err)
			}
			if got := classesOf(r); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("classes %v, want %v", got, tc.want)
			}
		})
	}
	_, err := ReadFile(filepath.Join("testdata", "malformed.jsonl"))
	if err == nil || err.Error() != `line 3: outcome "comitted" is not committed, failed or unknown` {
		t.Errorf("malformed.jsonl: %v", err)
	}
}

// The fast JSON decoder reads what encoding/json reads, the same way.
func FuzzJSONL(f *testing.F) {
	var buf bytes.Buffer
	_ = WriteJSONL(&buf, small())
	for _, line := range strings.Split(buf.String(), "\n") {
		f.Add([]byte(line))
	}
	f.Add([]byte(`{"ops":[["r",1,[1, 2 ,3]]], "client" :0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","extra":{"a":[1,"x\"y",null,true]}}`))
	f.Add([]byte(`{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["append",-9223372036854775808,9223372036854775807]]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		fast, ok := fastJSONL(line)
		slow, err := slowJSONL(line)
		if ok && err != nil {
			t.Fatalf("fast decoder accepted %q, encoding/json says %v", line, err)
		}
		if ok && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v, encoding/json %+v", line, fast, slow)
		}
		if err == nil {
			// What is read writes back to a line that reads the same.
			again, err := parseJSONL(AppendJSONL(nil, slow))
			if err != nil || !reflect.DeepEqual(again, slow) {
				t.Fatalf("%q: read %+v, written and read again %+v, %v", line, slow, again, err)
			}
		}
	})
}

// The EDN reader fails cleanly on anything, and what it reads writes back
// to EDN that reads the same.
func FuzzEDN(f *testing.F) {
	var buf bytes.Buffer
	_ = WriteEDN(&buf, small())
	f.Add(buf.Bytes())
	f.Add([]byte(`[{:type :ok, :value [[:r 1 [1 2]] #_ [:x] [:append 1 3]]} ; c` + "\n]"))
	f.Add([]byte(`#foo {:type :invoke :process 0 :value [[:append 1 1]]} {:type :info :process 0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ReadAll(bytes.NewReader(data), EDN)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := WriteEDN(&out, got); err != nil {
			t.Fatal(err)
		}
		again, err := ReadAll(bytes.NewReader(out.Bytes()), EDN)
		if err != nil {
			t.Fatalf("%v reading back\n%s", err, out.String())
		}
		if len(again) != len(got) {
			t.Fatalf("read %d attempts, %d back", len(got), len(again))
		}
	})
}

// A history that TestRealServer's load, with 20 clients for 20 s, made on
// PostgreSQL 12.22.0 at serializable: it holds a G2-item cycle, the
// read-only transaction anomaly (T2 reads only; T3, which ran for a
// second, neither saw T1 nor was seen by T2). Such runs showed one in 2 of
// 36 runs on 12.22.0, in 6 of 6 on 12.3.0 and in none of 12 on 18.3.0.
func TestPostgres1222History(t *testing.T) {
	r, err := Check(readGzip(t, "pg-12.22.0-serializable.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if got := classesOf(r); !reflect.DeepEqual(got, []Class{G2Item}) || r.Count(G2Item) != 1 {
		t.Fatalf("classes %v, want one G2-item", got)
	}
	ex := r.Findings[0].Example
	for i, want := range []string{
		"T1 < T2: T2 observed T1's append of 4 to key 87 (wr)",
		"T2 < T3: T2 read key 86 ending with 1, without T3's append of 6, which came next (rw)",
		"T3 < T1: T3 read key 87 empty, and T1's append of 4 was its first value (rw)",
		"a cycle: T1 < T2 < T3 < T1",
	} {
		if ex.Lines[i] != want {
			t.Errorf("line %d: %q, want %q", i, ex.Lines[i], want)
		}
	}
}
