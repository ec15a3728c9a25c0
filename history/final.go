package history

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A final read is Jepsen's: once every attempt of a history has ended, one
// transaction reads every key in one snapshot. Whatever the level, it must
// hold each key's version order (the values the history's committed reads
// put in an order), in that order, then every other committed append, and
// nothing else: a value missing is a lost append, values out of the order
// an incompatible order, a value no attempt appended a garbage read, one
// only failed attempts appended an aborted read (G1a), a value twice
// duplicate elements. It reads the database, not the history: what was
// changed after the run, or behind it, shows.
//
// A key is final (its version order known, its state dropped) when it
// retires, long before the final read comes; ExpectFinal makes the checker
// keep, for each key it finalizes, what the final read is held to.

// FinalRead is what a final read found.
type FinalRead struct {
	// Keys is the number of keys it read a list for, Elements the values
	// in those lists.
	Keys, Elements int
	// Missing counts the keys the history holds committed appends to that
	// it found no list for (read as empty: their appends are lost).
	Missing int
	// Counts are the anomalies it found, by class; they are counted in the
	// Result's Findings too.
	Counts map[Class]int
}

// finalKey is what the final read of a key is held to: its version order
// and who appended each of its values.
type finalKey struct {
	order   []int64
	longest int32      // the attempt whose read is the version order
	vals    []finalVal // every value appended to the key, by value
}

// finalVal is a value appended to a key: by attempt id, committed or of
// unknown outcome, or (how Failed) only by failed attempts, id the first.
type finalVal struct {
	v    int64
	id   int32
	how  Outcome
	read bool // in the version order: an unknown append a read holds committed
}

// must says whether the final read must hold the value.
func (f finalVal) must() bool { return f.how == Committed || (f.how == Unknown && f.read) }

// finalID is the id of the final read in examples: it is no attempt.
const finalID int32 = -1

// ExpectFinal tells the checker that a final read will follow the history
// (CheckFinal): each key it finalizes from now on leaves what the final
// read is held to, its version order and the writer of each value (about
// 24 bytes a value appended, for the whole history). Call it before the
// first key is final.
func (c *Checker) ExpectFinal() error {
	switch {
	case c.err != nil:
		return c.err
	case c.closed || len(c.retiredKeys) > 0:
		return errors.New("a final read must be expected before the first key is final")
	}
	if c.final == nil {
		c.final = map[int64]finalKey{}
	}
	return nil
}

// keepFinal keeps what the final read of key k is held to (finalize).
func (c *Checker) keepFinal(k int64, order []int64, leaf *rnode, writers map[int64]*writer, pos map[int64]int) {
	fk := finalKey{order: order, longest: -1}
	if leaf != nil {
		fk.longest = leaf.first
	}
	fk.vals = make([]finalVal, 0, len(writers))
	for v, w := range writers {
		_, read := pos[v]
		switch {
		case w.ok != nil:
			fk.vals = append(fk.vals, finalVal{v: v, id: w.ok.id, how: w.ok.outcome, read: read})
		case w.failed != nil:
			fk.vals = append(fk.vals, finalVal{v: v, id: w.failed.id, how: Failed, read: read})
		}
	}
	slices.SortFunc(fk.vals, func(a, b finalVal) int { return cmp.Compare(a.v, b.v) })
	c.final[k] = fk
}

// writerOf returns who appended v, or nil.
func (fk *finalKey) writerOf(v int64) *finalVal {
	if fk == nil {
		return nil
	}
	i, ok := slices.BinarySearchFunc(fk.vals, v, func(f finalVal, v int64) int { return cmp.Compare(f.v, v) })
	if !ok {
		return nil
	}
	return &fk.vals[i]
}

// FinalRange is the keys a final read must read, once the checker is
// closed: from the least key the history touches to the largest one it
// must find a list for (a committed append, or one of unknown outcome a
// committed read held); ok false when there is none.
func (c *Checker) FinalRange() (lo, hi int64, ok bool) {
	first := true
	for k, fk := range c.final {
		if first || k < lo {
			lo = k
		}
		first = false
		if slices.ContainsFunc(fk.vals, finalVal.must) && (!ok || k > hi) {
			hi, ok = k, true
		}
	}
	return lo, hi, ok
}

// CheckFinal holds a final read of the keys lo to hi to the history, once
// the checker is closed: scan calls read once for each key the final read
// found a list for, in any order; a key of lo to hi it does not name is
// read as empty, one outside them is not held to anything. It returns the
// history's Result with the final read's anomalies added, and described in
// Result.Final. An error of scan's is returned as it is.
func (c *Checker) CheckFinal(lo, hi int64, scan func(read func(key int64, list []int64) error) error) (*Result, error) {
	switch {
	case c.err != nil:
		return nil, c.err
	case !c.closed || c.final == nil:
		return nil, errors.New("a final read is checked after ExpectFinal and Close")
	}
	fr := &FinalRead{Counts: map[Class]int{}}
	before := c.found
	seen := map[int64]bool{}
	err := scan(func(key int64, list []int64) error {
		if seen[key] {
			return fmt.Errorf("the final read gave key %d twice", key)
		}
		seen[key] = true
		fr.Keys++
		fr.Elements += len(list)
		if fk, ok := c.final[key]; ok {
			c.checkFinal(key, list, &fk)
			delete(c.final, key)
		} else {
			c.checkFinal(key, list, nil)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for key, fk := range c.final {
		if lo <= key && key <= hi && slices.ContainsFunc(fk.vals, finalVal.must) {
			fr.Missing++
			c.checkFinal(key, []int64{}, &fk)
		}
	}
	c.final = nil
	for cl, n := range c.found {
		if d := n - before[cl]; d > 0 {
			fr.Counts[Class(cl)] = d
		}
	}
	r := c.result()
	r.Final = fr
	return r, nil
}

// checkFinal holds the final read of key, list, to fk (nil: no attempt
// appended to key).
func (c *Checker) checkFinal(key int64, list []int64, fk *finalKey) {
	ft := &txn{id: finalID, outcome: Committed, ops: []mop{{kind: Read, key: key, read: &rnode{vals: list, first: finalID}}}}
	rank := []int64{int64(c.n), key}
	held := make(map[int64]struct{}, len(list))
	unique := make([]int64, 0, len(list)) // list without its repeats
	for _, v := range list {
		if _, ok := held[v]; !ok {
			held[v] = struct{}{}
			unique = append(unique, v)
		}
	}
	if len(unique) < len(list) {
		c.report(DuplicateElements, rank, func() *Example { return duplicateExample(ft, 0) })
	}
	for _, v := range list {
		if fk.writerOf(v) == nil {
			c.report(GarbageRead, rank, func() *Example { return garbageExample(ft, 0, v) })
			break
		}
	}
	for _, v := range list {
		if w := fk.writerOf(v); w != nil && w.how == Failed {
			c.report(G1a, rank, func() *Example { return abortedExample(ft, 0, v, w.partial(key)) })
			break
		}
	}
	if fk == nil {
		return
	}
	// The version order, without the values the read lost (lost appends,
	// below), must begin what the read holds.
	var order []int64
	for _, v := range fk.order {
		if _, ok := held[v]; ok {
			order = append(order, v)
		}
	}
	if !isPrefix(order, unique) {
		c.report(IncompatibleOrder, rank, func() *Example { return finalOrderExample(ft, fk, key, order, unique) })
	}
	for i := range fk.vals {
		w := &fk.vals[i]
		if _, ok := held[w.v]; !ok && w.must() {
			c.report(LostAppend, []int64{int64(c.n), key, w.v}, func() *Example { return finalLostExample(w.partial(key), ft, key, w) })
		}
	}
}

// partial is the writer of f as an example shows it: the append alone.
func (f *finalVal) partial(key int64) *txn {
	return &txn{id: f.id, outcome: f.how, partial: true, ops: []mop{{kind: Append, key: key, value: f.v}}}
}

func finalOrderExample(ft *txn, fk *finalKey, key int64, order, unique []int64) *Example {
	e := newExample()
	longest := &txn{id: fk.longest, outcome: Committed, partial: true,
		ops: []mop{{kind: Read, key: key, read: &rnode{vals: fk.order, first: fk.longest}}}}
	n1, n2 := e.name(ft), e.name(longest)
	at := 0
	for order[at] == unique[at] {
		at++
	}
	e.line("%s read key %d as %s, which does not extend %s, the longest read of key %d before it (%s's): at position %d, %d against %d",
		n1, key, listString(readOf(ft, 0)), listString(fk.order), key, n2, at+1, unique[at], order[at])
	e.line("no single order of the appends to key %d explains both reads", key)
	return e.ex
}

func finalLostExample(w, ft *txn, key int64, f *finalVal) *Example {
	e := newExample()
	n1, n2 := e.name(w), e.name(ft)
	list := listString(readOf(ft, 0))
	if f.how == Committed {
		e.line("%s appended %d to key %d and committed; %s read key %d as %s after every attempt had ended, without %d", n1, f.v, key, n2, key, list, f.v)
	} else {
		e.line("%s appended %d to key %d, its outcome unknown, and committed reads held %d: it committed; %s read key %d as %s after every attempt had ended, without %d",
			n1, f.v, key, f.v, n2, key, list, f.v)
	}
	e.line("the final read of key %d does not hold %d: the append was lost", key, f.v)
	return e.ex
}

// Line says what the final read found, in one line: "final read: 96
// keys, 2841 elements: ok", or the classes it found with their counts.
func (f *FinalRead) Line() string {
	found := "ok"
	if fs := f.Found(); len(fs) > 0 {
		found = strings.Join(fs, ", ")
	}
	return "final read: " + f.Summary() + ": " + found
}

// Summary says what the final read read: "96 keys, 2841 elements", and
// the keys it found no list for.
func (f *FinalRead) Summary() string {
	s := fmt.Sprintf("%d key%s, %d element%s", f.Keys, plural(f.Keys), f.Elements, plural(f.Elements))
	if f.Missing > 0 {
		s += fmt.Sprintf(", %d key%s with committed appends not found", f.Missing, plural(f.Missing))
	}
	return s
}

// Found lists the classes the final read found, with their counts:
// "lost-append 1".
func (f *FinalRead) Found() []string {
	var found []string
	for _, c := range Classes() {
		if n := f.Counts[c]; n > 0 {
			found = append(found, fmt.Sprintf("%s %d", c, n))
		}
	}
	return found
}
