package history

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A tampering changes a copy of a history. apply returns the tampered
// history and what it did, or ok false when the history holds nothing it
// applies to.
type tampering struct {
	name  string
	apply func(h []Attempt) (out []Attempt, did string, ok bool)
	// allowed says why the tampered history is one a legal run could have
	// written: then the check must pass it ("" : it must be refused).
	allowed string
	// passesOnlyIf, for a tampering that is sometimes legal, says when a
	// pass is right; the check must refuse it otherwise.
	passesOnlyIf func(before, tampered []Attempt) (string, bool)
}

// A tamperSource is a history the check passes at its level.
type tamperSource struct {
	name    string
	level   Level
	history []Attempt
}

// TestTamperedHistories takes histories the check passes (real runs of
// txload run append on PostgreSQL 18.3 at each level, and the hand-made
// files of testdata), applies each tampering of the catalogue to each, one
// at a time, and checks the result offline in JSON lines and in EDN: a
// tampering must be refused (a class the level forbids, or a history that
// cannot be checked, exit 1 or 2), unless the tampered history is one a
// legal run could have written, which the catalogue says why; those must
// pass, so that the check does not accuse clean data. The table it logs
// is the one of docs/histories.md.
func TestTamperedHistories(t *testing.T) {
	sources := tamperSources(t)
	var table strings.Builder
	table.WriteString("| tampering |")
	for _, s := range sources {
		fmt.Fprintf(&table, " %s (%s) |", strings.TrimSuffix(s.name, ".jsonl.gz"), shortLevel(s.level))
	}
	table.WriteString(" why it may pass |\n|---|")
	for range sources {
		table.WriteString("---|")
	}
	table.WriteString("---|\n")
	for _, s := range sources {
		if got := verdictOf(t, s.history, s.level, JSONL); got != "passes" {
			t.Fatalf("%s untampered: %s", s.name, got)
		}
	}
	for _, tp := range tamperings() {
		fmt.Fprintf(&table, "| %s |", tp.name)
		why := tp.allowed
		for _, s := range sources {
			h, did, ok := tp.apply(cloneHistory(s.history))
			if !ok {
				table.WriteString(" — |")
				continue
			}
			got := verdictOf(t, h, s.level, JSONL)
			if edn := verdictOf(t, h, s.level, EDN); (got == "passes") != (edn == "passes") {
				t.Errorf("%s on %s (%s): JSON lines %s, EDN %s", tp.name, s.name, did, got, edn)
			}
			passed := got == "passes"
			switch {
			case tp.passesOnlyIf != nil:
				reason, legal := tp.passesOnlyIf(s.history, h)
				if passed && !legal {
					t.Errorf("%s on %s (%s): passed, though not: %s", tp.name, s.name, did, reason)
				}
				if passed {
					why = "where " + reason
				}
			case tp.allowed == "" && passed:
				t.Errorf("%s on %s (%s): passed, want refused", tp.name, s.name, did)
			case tp.allowed != "" && !passed:
				t.Errorf("%s on %s (%s): %s, want passed: %s", tp.name, s.name, did, got, tp.allowed)
			}
			t.Logf("%s on %s: %s: %s", tp.name, s.name, did, got)
			fmt.Fprintf(&table, " %s |", got)
		}
		fmt.Fprintf(&table, " %s |\n", why)
	}
	t.Logf("\n%s", table.String())
}

func shortLevel(l Level) string {
	return [...]string{"ru", "rc", "rr", "ser"}[l]
}

// verdictOf writes h in format f, checks it as check history does, and
// says what came of it: "passes", the classes the level forbids found
// ("G1a, garbage-read": exit 1), or why the history cannot be checked
// ("exit 2: ...").
func verdictOf(t *testing.T, h []Attempt, l Level, f Format) string {
	t.Helper()
	var buf bytes.Buffer
	write := WriteJSONL
	if f == EDN {
		write = WriteEDN
	}
	if err := write(&buf, h); err != nil {
		t.Fatal(err)
	}
	file, err := CheckFile(&buf, "tampered", f)
	if ie := (*InputError)(nil); errors.As(err, &ie) {
		return "exit 2: " + inputReason(ie)
	} else if err != nil {
		t.Fatal(err)
	}
	v := file.Result.Verdict(l)
	if v.Violation {
		return classList(v.Forbidden)
	}
	return "passes"
}

// inputReason is the gist of why a history cannot be checked.
func inputReason(e *InputError) string {
	s := e.Error()
	switch {
	case strings.Contains(s, "one attempt at a time"):
		return "a client ran two attempts at once"
	case strings.Contains(s, "must be unique"):
		return "a value appended twice"
	case strings.Contains(s, "invoked again before"):
		return "a client ran two attempts at once"
	case strings.Contains(s, "has its result"):
		return "a committed read without its result"
	case strings.Contains(s, "after the completion time"):
		return "invoked after it completed"
	}
	return s
}

func tamperSources(t *testing.T) []tamperSource {
	t.Helper()
	var out []tamperSource
	for _, l := range []Level{Serializable, RepeatableRead, ReadCommitted} {
		name := fmt.Sprintf("pg-18.3-%s.jsonl.gz", strings.ReplaceAll(l.String(), " ", "-"))
		out = append(out, tamperSource{name, l, readGzip(t, name)})
	}
	for _, f := range []struct {
		name  string
		level Level
	}{
		{"serial.jsonl", Serializable}, {"small.edn", ReadCommitted},
		{"write-skew.jsonl", RepeatableRead}, {"read-skew.edn", ReadCommitted},
	} {
		h, err := ReadFile(filepath.Join("testdata", f.name))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tamperSource{f.name, f.level, h})
	}
	return out
}

func readGzip(t *testing.T, name string) []Attempt {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ReadAll(zr, JSONL)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func cloneHistory(h []Attempt) []Attempt {
	out := make([]Attempt, len(h))
	for i, a := range h {
		out[i] = cloneAttempt(a)
	}
	return out
}

// A site is an operation of a history: attempt i, operation j.
type site struct{ i, j int }

// appends lists the appends of attempts with outcome o, in file order.
func appends(h []Attempt, o Outcome) []site {
	var out []site
	for i, a := range h {
		for j, op := range a.Ops {
			if op.Kind == Append && a.Outcome == o {
				out = append(out, site{i, j})
			}
		}
	}
	return out
}

// reads lists the committed reads, in file order.
func reads(h []Attempt) []site {
	var out []site
	for i, a := range h {
		for j, op := range a.Ops {
			if op.Kind == Read && a.Outcome == Committed {
				out = append(out, site{i, j})
			}
		}
	}
	return out
}

// holders are the committed reads of key k holding v, by attempts other
// than not.
func holders(h []Attempt, k, v int64, not int) []site {
	var out []site
	for _, r := range reads(h) {
		op := h[r.i].Ops[r.j]
		if r.i != not && op.Key == k && slices.Contains(op.List, v) {
			out = append(out, r)
		}
	}
	return out
}

// readByOthers is the first committed append of a value a committed read
// of another attempt holds.
func readByOthers(h []Attempt) (site, bool) {
	for _, s := range appends(h, Committed) {
		op := h[s.i].Ops[s.j]
		if len(holders(h, op.Key, op.Value, s.i)) > 0 {
			return s, true
		}
	}
	return site{}, false
}

// readByNone is the first committed append no committed read holds.
func readByNone(h []Attempt) (site, bool) {
	for _, s := range appends(h, Committed) {
		op := h[s.i].Ops[s.j]
		if len(holders(h, op.Key, op.Value, -1)) == 0 {
			return s, true
		}
	}
	return site{}, false
}

// deleteOp removes operation s, and its attempt if that leaves it empty.
func deleteOp(h []Attempt, s site) []Attempt {
	h[s.i].Ops = slices.Delete(h[s.i].Ops, s.j, s.j+1)
	if len(h[s.i].Ops) == 0 {
		return slices.Delete(h, s.i, s.i+1)
	}
	return h
}

// freshKey is a key no attempt touches.
func freshKey(h []Attempt) int64 {
	k := int64(0)
	for _, a := range h {
		for _, op := range a.Ops {
			k = max(k, op.Key+1)
		}
	}
	return k
}

// writtenTo says whether some attempt appended v to k.
func writtenTo(h []Attempt, k, v int64) bool {
	for _, a := range h {
		for _, op := range a.Ops {
			if op.Kind == Append && op.Key == k && op.Value == v {
				return true
			}
		}
	}
	return false
}

func tamperings() []tampering {
	return []tampering{
		{
			name: "a committed append deleted, read by others",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				s, ok := readByOthers(h)
				if !ok {
					return nil, "", false
				}
				op := h[s.i].Ops[s.j]
				return deleteOp(h, s), fmt.Sprintf("deleted %s of attempt %d, which %d reads hold", op, s.i, len(holders(h, op.Key, op.Value, s.i))), true
			},
		},
		{
			name: "a committed attempt deleted, its append read by others",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				s, ok := readByOthers(h)
				if !ok {
					return nil, "", false
				}
				return slices.Delete(h, s.i, s.i+1), fmt.Sprintf("deleted attempt %d", s.i), true
			},
		},
		{
			name: "a committed append deleted, read by none",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				s, ok := readByNone(h)
				if !ok {
					return nil, "", false
				}
				did := fmt.Sprintf("deleted %s of attempt %d", h[s.i].Ops[s.j], s.i)
				return deleteOp(h, s), did, true
			},
			allowed: "no read saw the value: the same run without that append would have written this history",
		},
		{
			// The reader's times set before the writer's invocation, on
			// a client of its own (so no client runs two attempts at once).
			name: "a read moved before the append it holds was invoked",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				client := 0
				for _, a := range h {
					client = max(client, a.Client+1)
				}
				for _, s := range appends(h, Committed) {
					w, op := h[s.i], h[s.i].Ops[s.j]
					rs := holders(h, op.Key, op.Value, s.i)
					if len(rs) == 0 || w.Invoke < 2 {
						continue
					}
					r := &h[rs[0].i]
					d := r.Complete - r.Invoke
					r.Client, r.Complete = client, w.Invoke-1
					r.Invoke = max(0, r.Complete-d)
					r.Intended = r.Invoke
					return h, fmt.Sprintf("attempt %d, which reads %s, completed before attempt %d was invoked", rs[0].i, op, s.i), true
				}
				return nil, "", false
			},
		},
		{
			name: "a read-only committed attempt deleted",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				for i, a := range h {
					if a.Outcome == Committed && !slices.ContainsFunc(a.Ops, func(op Op) bool { return op.Kind == Append }) {
						return slices.Delete(h, i, i+1), fmt.Sprintf("deleted attempt %d", i), true
					}
				}
				return nil, "", false
			},
			allowed: "it wrote nothing: a run whose client never ran it would have written this history (a transaction less removes edges, never adds one)",
		},
		{
			name: "a committed attempt duplicated",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				for i, a := range h {
					if a.Outcome == Committed {
						return slices.Insert(h, i+1, cloneAttempt(a)), fmt.Sprintf("attempt %d twice", i), true
					}
				}
				return nil, "", false
			},
		},
		{
			name: "a failed attempt duplicated",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				for i, a := range h {
					if a.Outcome == Failed {
						return slices.Insert(h, i+1, cloneAttempt(a)), fmt.Sprintf("attempt %d twice", i), true
					}
				}
				return nil, "", false
			},
		},
		{
			name: "a committed append duplicated into another client's attempt",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				for _, s := range appends(h, Committed) {
					for i, a := range h {
						if a.Outcome == Committed && a.Client != h[s.i].Client {
							op := h[s.i].Ops[s.j]
							h[i].Ops = append(h[i].Ops, op)
							return h, fmt.Sprintf("%s of attempt %d added to attempt %d", op, s.i, i), true
						}
					}
				}
				return nil, "", false
			},
		},
		{
			name: "a read's last two values swapped, another read holding both",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				for _, r := range reads(h) {
					op := h[r.i].Ops[r.j]
					n := len(op.List)
					if n < 2 {
						continue
					}
					x, y := op.List[n-2], op.List[n-1]
					for _, o := range holders(h, op.Key, y, r.i) {
						if slices.Contains(h[o.i].Ops[o.j].List, x) {
							was := listString(op.List)
							op.List[n-2], op.List[n-1] = y, x
							return h, fmt.Sprintf("attempt %d read key %d as %s, now %s", r.i, op.Key, was, listString(op.List)), true
						}
					}
				}
				return nil, "", false
			},
		},
		{
			// Retest 16: ten later reads held the first order.
			name: "an attempt's two appends to one key swapped, another read holding both",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				for _, s := range appends(h, Committed) {
					a := h[s.i]
					for j := s.j + 1; j < len(a.Ops); j++ {
						o1, o2 := a.Ops[s.j], a.Ops[j]
						if o2.Kind != Append || o2.Key != o1.Key {
							continue
						}
						for _, r := range holders(h, o1.Key, o1.Value, s.i) {
							if slices.Contains(h[r.i].Ops[r.j].List, o2.Value) {
								a.Ops[s.j].Value, a.Ops[j].Value = o2.Value, o1.Value
								return h, fmt.Sprintf("swapped %s and %s of attempt %d, which attempt %d reads", o1, o2, s.i, r.i), true
							}
						}
					}
				}
				return nil, "", false
			},
		},
		{
			name: "a read given a value nobody appended",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				rs := reads(h)
				if len(rs) == 0 {
					return nil, "", false
				}
				r := rs[len(rs)/2]
				op := &h[r.i].Ops[r.j]
				v := int64(1_000_000)
				op.List = append(slices.Clone(op.List), v)
				return h, fmt.Sprintf("attempt %d's read of key %d given %d", r.i, op.Key, v), true
			},
		},
		{
			name: "a read given a value only a failed attempt appended",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				for _, s := range appends(h, Failed) {
					a := h[s.i].Ops[s.j]
					if len(holders(h, a.Key, a.Value, -1)) > 0 {
						continue
					}
					for _, r := range reads(h) {
						op := &h[r.i].Ops[r.j]
						if op.Key == a.Key && r.i != s.i {
							op.List = append(slices.Clone(op.List), a.Value)
							return h, fmt.Sprintf("attempt %d's read of key %d given %d, of failed attempt %d", r.i, a.Key, a.Value, s.i), true
						}
					}
				}
				return nil, "", false
			},
		},
		{
			name: "a read's first value cut, another read holding it",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				for _, r := range reads(h) {
					op := &h[r.i].Ops[r.j]
					if len(op.List) < 2 || len(holders(h, op.Key, op.List[0], r.i)) == 0 {
						continue
					}
					was := listString(op.List)
					op.List = op.List[1:]
					return h, fmt.Sprintf("attempt %d read key %d as %s, now %s", r.i, op.Key, was, listString(op.List)), true
				}
				return nil, "", false
			},
		},
		{
			name: "a committed value cut from every read, read after its commit",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				for _, s := range appends(h, Committed) {
					w := h[s.i]
					a := w.Ops[s.j]
					hs := holders(h, a.Key, a.Value, -1)
					// The last value of every read that holds it, and
					// a reader invoked after its commit.
					last, later := len(hs) > 0, false
					for _, o := range hs {
						l := h[o.i].Ops[o.j].List
						last = last && l[len(l)-1] == a.Value && o.i != s.i
						later = later || h[o.i].Invoke > w.Complete
					}
					if !last || !later {
						continue
					}
					for _, o := range hs {
						op := &h[o.i].Ops[o.j]
						op.List = op.List[:len(op.List)-1]
					}
					return h, fmt.Sprintf("%s of attempt %d cut from %d reads", a, s.i, len(hs)), true
				}
				return nil, "", false
			},
		},
		{
			name: "an outcome changed from committed to failed, its append read",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				s, ok := readByOthers(h)
				if !ok {
					return nil, "", false
				}
				h[s.i].Outcome, h[s.i].SQLState = Failed, "40001"
				return h, fmt.Sprintf("attempt %d failed", s.i), true
			},
		},
		{
			name:  "an outcome changed from failed to committed",
			apply: recast(Failed, Committed),
			passesOnlyIf: func(before, h []Attempt) (string, bool) {
				// Its appends no read holds (it failed, at a level that
				// forbids aborted reads): lost, if a committed attempt
				// invoked after it read their key.
				return "no committed attempt invoked after it read a key it appended to: its appends may come last", !lostBy(before, h)
			},
		},
		{
			name:    "an outcome changed from committed to unknown",
			apply:   recast(Committed, Unknown),
			allowed: "an acknowledgement can be lost: a run whose connection broke at that commit would have written it",
		},
		{
			name:    "an outcome changed from failed to unknown",
			apply:   recast(Failed, Unknown),
			allowed: "an attempt of unknown outcome may not have committed; no read holds its appends (the history passed at a level that forbids aborted reads)",
		},
		{
			name:  "an append's key changed, its value read by others",
			apply: changeReadAppend(func(h []Attempt, op *Op) { op.Key = freshKey(h) }),
		},
		{
			name:  "an append's value changed, read by others",
			apply: changeReadAppend(func(_ []Attempt, op *Op) { op.Value = 2_000_000 }),
		},
		{
			name: "a read's key changed to one never given its values",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				for _, r := range reads(h) {
					op := &h[r.i].Ops[r.j]
					if len(op.List) == 0 {
						continue
					}
					was := op.Key
					op.Key = freshKey(h)
					return h, fmt.Sprintf("attempt %d's read of key %d, %s, now of key %d", r.i, was, listString(op.List), op.Key), true
				}
				return nil, "", false
			},
		},
		{
			name: "a read's key changed to another key holding the same values",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				// Values restart at 1 on each key: [1 2] can be a
				// read of either.
				for _, r := range reads(h) {
					op := &h[r.i].Ops[r.j]
					if len(op.List) == 0 {
						continue
					}
					for _, a := range h {
						for _, o := range a.Ops {
							if o.Key != op.Key && !slices.ContainsFunc(op.List, func(v int64) bool { return !writtenTo(h, o.Key, v) }) {
								was := op.Key
								op.Key = o.Key
								return h, fmt.Sprintf("attempt %d's read of key %d, %s, now of key %d", r.i, was, listString(op.List), op.Key), true
							}
						}
					}
				}
				return nil, "", false
			},
			passesOnlyIf: func(before, h []Attempt) (string, bool) {
				return "the moved read is a prefix of the other key's longest read, as a read of that key could be", movedFits(before, h)
			},
		},
		{
			name: "an attempt's invocation moved after its completion",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				// A committed append: in EDN, an invocation after its
				// completion is a completion without one (Jepsen's
				// histories have them) and an attempt never completed,
				// of unknown outcome, which repeats the committed value.
				as := appends(h, Committed)
				if len(as) == 0 {
					return nil, "", false
				}
				i := as[len(as)/2].i
				h[i].Invoke = h[i].Complete + 1
				return h, fmt.Sprintf("attempt %d invoked 1 ns after it completed", i), true
			},
		},
		{
			name: "two attempts of different clients swapped in the file",
			apply: func(h []Attempt) ([]Attempt, string, bool) {
				for i := 0; i+1 < len(h); i++ {
					if h[i].Client != h[i+1].Client {
						h[i], h[i+1] = h[i+1], h[i]
						return h, fmt.Sprintf("attempts %d and %d swapped", i, i+1), true
					}
				}
				return nil, "", false
			},
			allowed: "offline, the order of the lines matters only within a client (its attempts in the order they ran); EDN is written in time order whatever the order of the attempts",
		},
	}
}

// lostBy says whether the attempt that failed before and committed in
// after has an append whose key a committed attempt invoked after its
// completion reads: then that append is lost.
func lostBy(before, after []Attempt) bool {
	for i := range before {
		w := after[i]
		if before[i].Outcome != Failed || w.Outcome != Committed {
			continue
		}
		for _, a := range w.Ops {
			if a.Kind != Append {
				continue
			}
			for _, r := range after {
				if r.Outcome == Committed && r.Invoke > w.Complete && slices.ContainsFunc(r.Ops, func(op Op) bool { return op.Kind == Read && op.Key == a.Key }) {
					return true
				}
			}
		}
	}
	return false
}

// movedFits says whether the read whose key differs between before and
// after is a prefix of the longest committed read of its new key.
func movedFits(before, after []Attempt) bool {
	for _, r := range reads(after) {
		op := after[r.i].Ops[r.j]
		if before[r.i].Ops[r.j].Key == op.Key {
			continue
		}
		var longest []int64
		for _, o := range reads(after) {
			if l := after[o.i].Ops[o.j]; o != r && l.Key == op.Key && len(l.List) > len(longest) {
				longest = l.List
			}
		}
		return isPrefix(op.List, longest)
	}
	return false
}

// recast changes the outcome of the first attempt with outcome from to to.
func recast(from, to Outcome) func(h []Attempt) ([]Attempt, string, bool) {
	return func(h []Attempt) ([]Attempt, string, bool) {
		for i, a := range h {
			if a.Outcome != from {
				continue
			}
			h[i].Outcome, h[i].SQLState = to, ""
			if to == Failed {
				h[i].SQLState = "40001"
			}
			for j, op := range h[i].Ops {
				if to == Committed && op.Kind == Read && op.List == nil {
					// A read that never ran: give it one, so the
					// attempt is well-formed.
					h[i].Ops[j].List = []int64{}
				}
			}
			return h, fmt.Sprintf("attempt %d %s: %v", i, to, h[i].Ops), true
		}
		return nil, "", false
	}
}

// changeReadAppend changes the first committed append a read of another
// attempt holds.
func changeReadAppend(change func(h []Attempt, op *Op)) func(h []Attempt) ([]Attempt, string, bool) {
	return func(h []Attempt) ([]Attempt, string, bool) {
		s, ok := readByOthers(h)
		if !ok {
			return nil, "", false
		}
		op := &h[s.i].Ops[s.j]
		was := op.String()
		change(h, op)
		return h, fmt.Sprintf("attempt %d's %s now %s", s.i, was, op), true
	}
}
