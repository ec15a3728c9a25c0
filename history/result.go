package history

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Result is what a check found.
type Result struct {
	Attempts                   int
	Committed, Failed, Unknown int
	Findings                   []Finding // the classes found, in class order
	// Incomplete counts, per class, the components where the search for a
	// cycle of that class stopped at its budget without finding one: the
	// class may be there. Never set for G0 and G1c, decided exactly.
	Incomplete map[Class]int
	Stats      Stats
	// Final is what the final read found (Checker.CheckFinal), nil when
	// there was none.
	Final *FinalRead
}

// Finding is one class found: how many times, and one example.
type Finding struct {
	Class Class
	// Count is the number of instances: for a cycle class, the strongly
	// connected components holding a cycle of that class; for a lost
	// append, the appends; otherwise the reads.
	Count   int
	Example *Example
}

// Example is one instance of a class, explained: the transactions (named
// T1, T2, ... in Lines) and a sentence per fact, for a cycle one per edge.
type Example struct {
	Txns  []ExampleTxn
	Lines []string
	rank  []int64 // the least rank is the example shown
}

// ExampleTxn is a transaction of an example: Index is its attempt's number
// in the history (from 0, in the order attempts were added).
type ExampleTxn struct {
	Name    string
	Index   int
	Attempt Attempt
	// Final says it is the final read (Index -1), Attempt its read of the
	// example's key only; Partial, that Attempt holds only the operation
	// the example is about (of a key final before the final read: the
	// rest of the attempt was not kept), its client and times unknown.
	Final, Partial bool
}

// Count returns how many instances of c were found.
func (r *Result) Count(c Class) int {
	for _, f := range r.Findings {
		if f.Class == c {
			return f.Count
		}
	}
	return 0
}

// Verdict is a result judged against an isolation level.
type Verdict struct {
	Level Level
	// Forbidden and Allowed are the classes found that the level forbids
	// and allows.
	Forbidden, Allowed []Class
	// Undecided are the classes the level forbids whose search stopped at
	// its budget somewhere, none found.
	Undecided []Class
	// Violation: a class the level forbids was found.
	Violation bool
}

// Verdict judges r against level l.
func (r *Result) Verdict(l Level) Verdict {
	v := Verdict{Level: l}
	for _, f := range r.Findings {
		if l.Forbids(f.Class) {
			v.Forbidden = append(v.Forbidden, f.Class)
		} else {
			v.Allowed = append(v.Allowed, f.Class)
		}
	}
	for _, c := range Classes() {
		if r.Incomplete[c] > 0 && l.Forbids(c) && r.Count(c) == 0 {
			v.Undecided = append(v.Undecided, c)
		}
	}
	v.Violation = len(v.Forbidden) > 0
	return v
}

// WriteText writes the result as people read it: the attempts checked,
// each class found with its count and an explained example, and the
// verdict at level l. name labels an attempt by its number (nil: "attempt
// N"); the command line names the line of the file.
func (r *Result) WriteText(w io.Writer, l Level, name func(index int) string) error {
	if name == nil {
		name = func(i int) string { return fmt.Sprintf("attempt %d", i) }
	}
	var b strings.Builder
	fmt.Fprintf(&b, "checked %d attempt%s: %d committed, %d failed, %d unknown\n", r.Attempts, plural(r.Attempts), r.Committed, r.Failed, r.Unknown)
	if f := r.Final; f != nil {
		fmt.Fprintf(&b, "%s\n", f.Line())
	}
	if len(r.Findings) == 0 {
		b.WriteString("no anomalies found\n")
	}
	for _, f := range r.Findings {
		b.WriteString("\n")
		b.WriteString(f.Text(l, name))
	}
	for _, c := range Classes() {
		if n := r.Incomplete[c]; n > 0 && r.Count(c) == 0 {
			fmt.Fprintf(&b, "\n%s: not ruled out: its search stopped at its budget in %d component(s)\n", c, n)
		}
	}
	b.WriteString("\n")
	b.WriteString(r.VerdictLine(l))
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Text is f's block of the text WriteText writes: its class, count and
// meaning, whether level l allows it, and its example explained, on lines
// that end with a newline. name labels an attempt by its number.
func (f Finding) Text(l Level, name func(index int) string) string {
	var b strings.Builder
	verb := "allowed"
	if l.Forbids(f.Class) {
		verb = "forbidden"
	}
	fmt.Fprintf(&b, "%s: %d (%s; %s at %s)\n", f.Class, f.Count, f.Class.Meaning(), verb, l)
	if f.Example == nil {
		return b.String()
	}
	b.WriteString("  for example:\n")
	for _, t := range f.Example.Txns {
		fmt.Fprintf(&b, "    %s = %s\n", t.Name, t.describe(name))
	}
	for _, line := range f.Example.Lines {
		fmt.Fprintf(&b, "    %s\n", line)
	}
	return b.String()
}

// VerdictLine is the verdict at level l, on one line without its newline:
// "verdict at serializable: VIOLATION: G2-item is forbidden".
func (r *Result) VerdictLine(l Level) string {
	v := r.Verdict(l)
	switch {
	case v.Violation:
		s := fmt.Sprintf("verdict at %s: VIOLATION: %s %s forbidden", l, classList(v.Forbidden), isAre(len(v.Forbidden)))
		if len(v.Allowed) > 0 {
			s += fmt.Sprintf(" (%s allowed)", classList(v.Allowed))
		}
		return s
	case len(v.Undecided) > 0:
		return fmt.Sprintf("verdict at %s: unknown: %s not ruled out", l, classList(v.Undecided))
	case len(v.Allowed) > 0:
		return fmt.Sprintf("verdict at %s: ok: %s %s allowed", l, classList(v.Allowed), isAre(len(v.Allowed)))
	}
	return fmt.Sprintf("verdict at %s: ok", l)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func classList(cs []Class) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return strings.Join(s, ", ")
}

func (t ExampleTxn) describe(name func(int) string) string {
	a := t.Attempt
	outcome := a.Outcome.String()
	if a.SQLState != "" {
		outcome += " (SQLSTATE " + a.SQLState + ")"
	}
	ops := make([]string, len(a.Ops))
	for i, op := range a.Ops {
		ops[i] = op.String()
	}
	switch {
	case t.Final:
		return "the final read, in one snapshot after every attempt ended: " + strings.Join(ops, " ")
	case t.Partial:
		return fmt.Sprintf("%s, %s: … %s …", name(t.Index), outcome, strings.Join(ops, " "))
	}
	return fmt.Sprintf("%s, client %d, %s: %s", name(t.Index), a.Client, outcome, strings.Join(ops, " "))
}

// result gathers what the checker found.
func (c *Checker) result() *Result {
	r := &Result{
		Attempts: int(c.n), Committed: c.counts[Committed], Failed: c.counts[Failed], Unknown: c.counts[Unknown],
		Incomplete: map[Class]int{}, Stats: c.Stats(),
	}
	for _, cl := range Classes() {
		if c.found[cl] > 0 {
			r.Findings = append(r.Findings, Finding{Class: cl, Count: c.found[cl], Example: c.examples[cl]})
		}
		if c.incomplete[cl] > 0 {
			r.Incomplete[cl] = c.incomplete[cl]
		}
	}
	return r
}

// report counts an instance of class; build makes its example, called only
// if rank is less than the example kept's.
func (c *Checker) report(class Class, rank []int64, build func() *Example) {
	c.found[class]++
	if old := c.examples[class]; old == nil || slices.Compare(rank, old.rank) < 0 {
		ex := build()
		ex.rank = rank
		c.examples[class] = ex
	}
}

func opRank(t *txn, op int) []int64 { return []int64{int64(t.id), int64(op)} }

// attempt rebuilds the attempt t was made from.
func (t *txn) attempt() Attempt {
	a := Attempt{
		Client: int(t.client), Intended: t.intended, Invoke: t.invoke, Complete: t.complete,
		Outcome: t.outcome, SQLState: t.sqlstate, Ops: make([]Op, len(t.ops)),
	}
	for i, m := range t.ops {
		op := Op{Kind: m.kind, Key: m.key, Value: m.value}
		if m.kind == Read && m.read != nil {
			op.List = slices.Clone(m.read.vals)
		}
		a.Ops[i] = op
	}
	return a
}

// exampleOf starts an example; name adds a transaction and returns its name.
type exampleOf struct {
	ex    *Example
	names map[int32]string
}

func newExample() *exampleOf { return &exampleOf{ex: &Example{}, names: map[int32]string{}} }

func (e *exampleOf) name(t *txn) string {
	if n, ok := e.names[t.id]; ok {
		return n
	}
	n := fmt.Sprintf("T%d", len(e.ex.Txns)+1)
	e.names[t.id] = n
	e.ex.Txns = append(e.ex.Txns, ExampleTxn{Name: n, Index: int(t.id), Attempt: t.attempt(), Final: t.id == finalID, Partial: t.partial})
	return n
}

func (e *exampleOf) line(format string, args ...any) {
	e.ex.Lines = append(e.ex.Lines, fmt.Sprintf(format, args...))
}

func readOf(t *txn, op int) []int64 {
	if r := t.ops[op].read; r != nil {
		return r.vals
	}
	return nil
}

func duplicateExample(t *txn, op int) *Example {
	e := newExample()
	list := readOf(t, op)
	dup := int64(0)
	for i, v := range list {
		if slices.Contains(list[:i], v) {
			dup = v
			break
		}
	}
	e.line("%s read key %d as %s, which holds %d more than once: each value is appended once", e.name(t), t.ops[op].key, listString(list), dup)
	return e.ex
}

func incompatibleExample(t *txn, op int, longest *txn) *Example {
	e := newExample()
	k := t.ops[op].key
	list := readOf(t, op)
	full := longestRead(longest, k)
	at := 0
	for at < len(list) && at < len(full) && list[at] == full[at] {
		at++
	}
	n1, n2 := e.name(t), e.name(longest)
	if at < len(list) && at < len(full) {
		e.line("%s read key %d as %s, which is not a prefix of %s, the longest read of key %d (%s's): at position %d, %d against %d",
			n1, k, listString(list), listString(full), k, n2, at+1, list[at], full[at])
	} else {
		e.line("%s read key %d as %s, which is not a prefix of %s, the longest read of key %d (%s's)", n1, k, listString(list), listString(full), k, n2)
	}
	e.line("no single order of the appends to key %d explains both reads", k)
	return e.ex
}

// longestRead is key k's longest read (the version order) among
// longest's reads of it.
func longestRead(longest *txn, k int64) []int64 {
	var full []int64
	for _, m := range longest.ops {
		if m.key == k && m.kind == Read && m.read != nil && m.read.onV && len(m.read.vals) >= len(full) {
			full = m.read.vals
		}
	}
	return full
}

// appendOrderExample: t appended to a key at ops first and then, and the
// key's longest read (longest's) holds the second before the first.
func appendOrderExample(t *txn, first, then int, longest *txn) *Example {
	e := newExample()
	k := t.ops[first].key
	full := longestRead(longest, k)
	n1, n2 := e.name(t), e.name(longest)
	a, b := t.ops[first].value, t.ops[then].value
	e.line("%s appended %d, then %d, to key %d; but %s, the longest read of key %d (%s's), holds %d before %d",
		n1, a, b, k, listString(full), k, n2, b, a)
	e.line("no single order of the appends to key %d explains both: a list grows in the order its appends were made", k)
	return e.ex
}

func abortedExample(t *txn, op int, v int64, failed *txn) *Example {
	e := newExample()
	k := t.ops[op].key
	n1, n2 := e.name(t), e.name(failed)
	how := "failed"
	switch {
	case failed.outcome == Unknown:
		how = "is recorded unknown, but its SQLSTATE " + failed.sqlstate + " says it rolled back"
	case failed.sqlstate != "":
		how += " (SQLSTATE " + failed.sqlstate + ")"
	}
	e.line("%s read key %d as %s, which holds %d; only %s appended %d to key %d, and %s %s: an aborted read",
		n1, k, listString(readOf(t, op)), v, n2, v, k, n2, how)
	return e.ex
}

func garbageExample(t *txn, op int, v int64) *Example {
	e := newExample()
	k := t.ops[op].key
	e.line("%s read key %d as %s, which holds %d; no attempt in the history appended %d to key %d, committed, failed or unknown: a read of a write the history does not hold",
		e.name(t), k, listString(readOf(t, op)), v, v, k)
	return e.ex
}

func intermediateExample(t *txn, op int, w *txn, v, later int64) *Example {
	e := newExample()
	k := t.ops[op].key
	n1, n2 := e.name(t), e.name(w)
	e.line("%s read key %d as %s, ending with %s's append of %d; but %s appended %d to key %d after %d: %s saw a state %s never committed",
		n1, k, listString(readOf(t, op)), n2, v, n2, later, k, v, n1, n2)
	return e.ex
}

func internalExample(t *txn, ops []Op, op int, prev, own []int64, ownOK bool) *Example {
	e := &exampleOf{ex: &Example{}, names: map[int32]string{}}
	a := t.attempt()
	a.Ops = ops
	e.names[t.id] = "T1"
	e.ex.Txns = append(e.ex.Txns, ExampleTxn{Name: "T1", Index: int(t.id), Attempt: cloneAttempt(a)})
	k, l := ops[op].Key, ops[op].List
	if !ownOK {
		e.line("T1 read key %d as %s, which does not end with its own appends to key %d, %s", k, listString(l), k, listString(own))
	} else {
		e.line("T1 read key %d as %s, which does not extend its own earlier read of key %d, %s: a list only grows", k, listString(l), k, listString(prev))
	}
	return e.ex
}

func cloneAttempt(a Attempt) Attempt {
	ops := make([]Op, len(a.Ops))
	for i, op := range a.Ops {
		if op.List != nil {
			op.List = slices.Clone(op.List)
		}
		ops[i] = op
	}
	a.Ops = ops
	return a
}

func futureExample(t *txn, op int, v int64, w *txn) *Example {
	e := newExample()
	k := t.ops[op].key
	n1, n2 := e.name(t), e.name(w)
	e.line("%s read key %d as %s, which holds %d, and completed at %s; %s appended %d to key %d, but was invoked at %s, after that: a read of a write not yet begun",
		n1, k, listString(readOf(t, op)), v, seconds(t.complete), n2, v, k, seconds(w.invoke))
	return e.ex
}

func lostExample(w *txn, op int, reader *txn, readOp int) *Example {
	e := newExample()
	k, v := w.ops[op].key, w.ops[op].value
	n1, n2 := e.name(w), e.name(reader)
	e.line("%s appended %d to key %d and committed at %s; %s started at %s, after that, and read key %d as %s, without %d",
		n1, v, k, seconds(w.complete), n2, seconds(reader.invoke), k, listString(readOf(reader, readOp)), v)
	e.line("no read of key %d holds %d: the append was lost", k, v)
	return e.ex
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.6f s", d.Seconds()) }
