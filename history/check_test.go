package history

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// at is an attempt by client, invoked at invoke µs and completed at
// complete µs.
func at(client int, invoke, complete int, o Outcome, ops ...Op) Attempt {
	a := Attempt{Client: client, Intended: us(invoke), Invoke: us(invoke), Complete: us(complete), Outcome: o, Ops: ops}
	if o == Failed {
		a.SQLState = "40001"
	}
	return a
}

func us(n int) time.Duration { return time.Duration(n) * time.Microsecond }

// classes found, by name.
func classesOf(r *Result) []Class {
	var out []Class
	for _, f := range r.Findings {
		out = append(out, f.Class)
	}
	return out
}

// Each history holds one anomaly, made by hand; the checker finds exactly
// its classes and explains it.
func TestAnomalies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		history []Attempt
		want    []Class // every class found, no other
		lines   []string
	}{
		{
			name: "G0: two transactions append to two keys in opposite orders",
			history: []Attempt{
				at(0, 0, 10, Committed, A(1, 1), A(2, 2)),
				at(1, 0, 10, Committed, A(1, 2), A(2, 1)),
				at(2, 20, 30, Committed, R(1, 1, 2), R(2, 1, 2)),
			},
			want: []Class{G0},
			lines: []string{
				"T1 < T2: T2 appended 2 after T1 appended 1 to key 1 (ww)",
				"T2 < T1: T1 appended 2 after T2 appended 1 to key 2 (ww)",
				"a cycle: T1 < T2 < T1",
			},
		},
		{
			name: "G1a: a read of a failed append",
			history: []Attempt{
				at(0, 0, 10, Failed, A(1, 1)),
				at(1, 20, 30, Committed, R(1, 1)),
			},
			want:  []Class{G1a},
			lines: []string{"T1 read key 1 as [1], which holds 1; only T2 appended 1 to key 1, and T2 failed (SQLSTATE 40001): an aborted read"},
		},
		{
			name: "garbage read: a read of a value no attempt appended",
			history: []Attempt{
				at(0, 0, 10, Committed, A(1, 1)),
				at(1, 20, 30, Committed, R(1, 1, 7)),
			},
			want:  []Class{GarbageRead},
			lines: []string{"T1 read key 1 as [1 7], which holds 7; no attempt in the history appended 7 to key 1, committed, failed or unknown: a read of a write the history does not hold"},
		},
		{
			name: "G1a: a read of an append recorded unknown with SQLSTATE 40001, a rollback",
			history: []Attempt{
				{Client: 0, Invoke: us(0), Complete: us(10), Outcome: Unknown, SQLState: "40001", Ops: []Op{A(1, 1)}},
				at(1, 20, 30, Committed, R(1, 1)),
			},
			want:  []Class{G1a},
			lines: []string{"T1 read key 1 as [1], which holds 1; only T2 appended 1 to key 1, and T2 is recorded unknown, but its SQLSTATE 40001 says it rolled back: an aborted read"},
		},
		{
			name: "future read: a read of an append invoked after the read completed",
			history: []Attempt{
				at(0, 0, 10, Committed, R(1, 1)),
				at(1, 20, 30, Committed, A(1, 1)),
			},
			want:  []Class{FutureRead},
			lines: []string{"T1 read key 1 as [1], which holds 1, and completed at 0.000010 s; T2 appended 1 to key 1, but was invoked at 0.000020 s, after that: a read of a write not yet begun"},
		},
		{
			// The intermediate read is a G-single cycle too: T2 read T1's
			// write (wr) and missed T1's next append to that key (rw).
			name: "G1b: a read of a state between two appends of one transaction",
			history: []Attempt{
				at(0, 0, 10, Committed, A(1, 1), A(1, 2)),
				at(1, 5, 15, Committed, R(1, 1)),
				at(2, 20, 30, Committed, R(1, 1, 2)),
			},
			want:  []Class{G1b, GSingle},
			lines: []string{"T1 read key 1 as [1], ending with T2's append of 1; but T2 appended 2 to key 1 after 1: T1 saw a state T2 never committed"},
		},
		{
			name: "G1c: each transaction reads the other's append",
			history: []Attempt{
				at(0, 0, 10, Committed, A(1, 1), R(2, 1)),
				at(1, 0, 10, Committed, A(2, 1), R(1, 1)),
			},
			want: []Class{G1c},
			lines: []string{
				"T1 < T2: T2 observed T1's append of 1 to key 1 (wr)",
				"T2 < T1: T1 observed T2's append of 1 to key 2 (wr)",
				"a cycle: T1 < T2 < T1",
			},
		},
		{
			name: "G-single: a read skew",
			history: []Attempt{
				at(0, 0, 30, Committed, R(1), R(2, 1)),
				at(1, 5, 20, Committed, A(1, 1), A(2, 1)),
			},
			want: []Class{GSingle},
			lines: []string{
				"T1 < T2: T1 read key 1 empty, and T2's append of 1 was its first value (rw)",
				"T2 < T1: T1 observed T2's append of 1 to key 2 (wr)",
				"a cycle: T1 < T2 < T1",
			},
		},
		{
			name: "G2-item: a write skew",
			history: []Attempt{
				at(0, 0, 10, Committed, R(1), A(2, 1)),
				at(1, 0, 10, Committed, R(2), A(1, 1)),
			},
			want: []Class{G2Item},
			lines: []string{
				"T1 < T2: T1 read key 1 empty, and T2's append of 1 was its first value (rw)",
				"T2 < T1: T2 read key 2 empty, and T1's append of 1 was its first value (rw)",
			},
		},
		{
			name: "G-nonadjacent: two rw edges, apart",
			history: []Attempt{
				at(0, 0, 10, Committed, R(1), R(4, 1)),
				at(1, 0, 10, Committed, A(1, 1), A(2, 1)),
				at(2, 0, 10, Committed, R(2, 1), R(3)),
				at(3, 0, 10, Committed, A(3, 1), A(4, 1)),
			},
			want: []Class{GNonadjacent, G2Item},
			lines: []string{
				"T1 < T2: T1 read key 1 empty, and T2's append of 1 was its first value (rw)",
				"T2 < T3: T3 observed T2's append of 1 to key 2 (wr)",
				"T3 < T4: T3 read key 3 empty, and T4's append of 1 was its first value (rw)",
				"T4 < T1: T1 observed T4's append of 1 to key 4 (wr)",
				"a cycle: T1 < T2 < T3 < T4 < T1",
			},
		},
		{
			name: "internal: a read that misses the transaction's own append",
			history: []Attempt{
				at(0, 0, 10, Committed, A(1, 1), R(1)),
			},
			want:  []Class{Internal},
			lines: []string{"T1 read key 1 as [], which does not end with its own appends to key 1, [1]"},
		},
		{
			// Going back on its own read is a G-single cycle too: the
			// attempt read 2, then missed it.
			name: "internal: a read that goes back on the transaction's own read",
			history: []Attempt{
				at(0, 0, 10, Committed, A(1, 1)),
				at(1, 0, 10, Committed, A(1, 2)),
				at(2, 20, 30, Committed, R(1, 1, 2), R(1, 1)),
			},
			want:  []Class{GSingle, Internal},
			lines: []string{"T1 read key 1 as [1], which does not extend its own earlier read of key 1, [1 2]: a list only grows"},
		},
		{
			// Read committed takes a snapshot per statement: a second
			// read may see more, before the attempt's own append.
			name: "none: a read that sees more than the attempt's earlier read, then its own append",
			history: []Attempt{
				at(0, 0, 10, Committed, A(1, 1)),
				at(1, 0, 30, Committed, R(1, 1), A(1, 3), R(1, 1, 2, 3)),
				at(2, 12, 18, Committed, A(1, 2)),
				at(3, 40, 50, Committed, R(1, 1, 2, 3)),
			},
			want: []Class{GSingle},
		},
		{
			name: "incompatible order: two reads disagree on the order of appends",
			history: []Attempt{
				at(0, 0, 10, Committed, A(1, 1)),
				at(1, 0, 10, Committed, A(1, 2)),
				at(2, 20, 30, Committed, R(1, 1, 2)),
				at(3, 20, 30, Committed, R(1, 2, 1)),
			},
			want: []Class{IncompatibleOrder},
			lines: []string{
				"T1 read key 1 as [2 1], which is not a prefix of [1 2], the longest read of key 1 (T2's): at position 1, 2 against 1",
				"no single order of the appends to key 1 explains both reads",
			},
		},
		{
			name: "duplicate elements: a value read twice",
			history: []Attempt{
				at(0, 0, 10, Committed, A(1, 1)),
				at(1, 20, 30, Committed, R(1, 1, 1)),
			},
			want:  []Class{DuplicateElements},
			lines: []string{"T1 read key 1 as [1 1], which holds 1 more than once: each value is appended once"},
		},
		{
			name: "lost append: committed, then never seen by a later read",
			history: []Attempt{
				at(0, 0, 10, Committed, A(1, 1)),
				at(1, 20, 30, Committed, R(1)),
			},
			want: []Class{LostAppend},
			lines: []string{
				"T1 appended 1 to key 1 and committed at 0.000010 s; T2 started at 0.000020 s, after that, and read key 1 as [], without 1",
				"no read of key 1 holds 1: the append was lost",
			},
		},
		{
			name: "none: a serial history with a failed and an unknown attempt",
			history: []Attempt{
				at(0, 0, 10, Committed, A(1, 1), R(1, 1)),
				at(1, 20, 30, Failed, A(1, 2)),
				at(2, 40, 50, Unknown, A(1, 3)),
				at(0, 60, 70, Committed, R(1, 1, 3), A(2, 1)),
				at(1, 80, 90, Unknown, A(2, 2)),
				at(3, 100, 110, Committed, R(2, 1)),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Check(tc.history)
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			if err := r.WriteText(&text, Serializable, nil); err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + text.String())
			if got := classesOf(r); !slices.Equal(got, tc.want) {
				t.Fatalf("classes %v, want %v", got, tc.want)
			}
			if len(tc.want) == 0 {
				return
			}
			var lines []string // of every example
			for _, f := range r.Findings {
				lines = append(lines, f.Example.Lines...)
			}
			for _, want := range tc.lines {
				if !slices.Contains(lines, want) {
					t.Errorf("explanations lack %q:\n%s", want, strings.Join(lines, "\n"))
				}
			}
			// Serializable forbids every class: a violation.
			if !r.Verdict(Serializable).Violation {
				t.Errorf("no violation at serializable")
			}
		})
	}
}
