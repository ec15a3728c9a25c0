package history

import (
	"fmt"
	"slices"
	"time"
)

// keyState is what the checker knows of one key until it is final.
type keyState struct {
	key      int64
	retired  bool
	retireAt time.Duration
	txns     []int32 // the attempts that touch the key, each once, in order

	// The committed reads of the key form a trie of states: reads that
	// agree on an order of appends lie on one path. The main path (the
	// longest agreeing chain seen so far) is kept as a slice for speed;
	// states off it are found in branches.
	main     []*rnode // main[i] is the state of i values
	mainVals []int64
	mainSet  map[int64]struct{} // the values of mainVals
	branches map[branchKey]*rnode
}

type branchKey struct {
	parent *rnode
	v      int64
}

// rnode is a state of a key some read returned.
type rnode struct {
	vals   []int64 // shared with the states it extends; never appended to
	parent *rnode
	first  int32 // the first attempt that read exactly this state
	dup    bool  // vals holds a value twice
	onV    bool  // scratch of finalize: a prefix of the version order
}

// loose keeps the list of a read that is not part of any trie (a failed or
// unknown attempt's).
func loose(list []int64) *rnode {
	return &rnode{vals: slices.Clip(slices.Clone(list)), first: -1}
}

// insert returns the state list is, adding it (and the states it extends)
// to the trie if new; reader is the attempt that read it.
func (ks *keyState) insert(list []int64, reader int32) *rnode {
	if ks.main == nil {
		ks.main = []*rnode{{vals: []int64{}, first: reader}}
	}
	n := len(list)
	m := len(ks.mainVals)
	var node *rnode
	switch {
	case n <= m && slices.Equal(list, ks.mainVals[:n]):
		node = ks.main[n]
	case n > m && slices.Equal(list[:m], ks.mainVals):
		if ks.mainSet == nil {
			ks.mainSet = map[int64]struct{}{}
		}
		for i := m; i < n; i++ {
			v := list[i]
			ks.mainVals = append(ks.mainVals, v)
			parent := ks.main[i]
			_, dup := ks.mainSet[v]
			ks.mainSet[v] = struct{}{}
			ks.main = append(ks.main, &rnode{vals: ks.mainVals[: i+1 : i+1], parent: parent, first: reader, dup: dup || parent.dup})
		}
		node = ks.main[n]
	default:
		node = ks.branch(list, reader)
	}
	if reader < node.first {
		node.first = reader
	}
	return node
}

// branch walks (and grows) the trie off the main path.
func (ks *keyState) branch(list []int64, reader int32) *rnode {
	if ks.branches == nil {
		ks.branches = map[branchKey]*rnode{}
	}
	var owned []int64 // one copy of list for the states made here
	node := ks.main[0]
	for i, v := range list {
		if d := len(node.vals); node == ks.main[min(d, len(ks.main)-1)] && d < len(ks.mainVals) && ks.mainVals[d] == v {
			node = ks.main[d+1]
			continue
		}
		next := ks.branches[branchKey{node, v}]
		if next == nil {
			if owned == nil {
				owned = slices.Clone(list)
			}
			next = newNode(node, owned[:i+1:i+1], reader)
			ks.branches[branchKey{node, v}] = next
		}
		node = next
	}
	return node
}

// newNode makes a state off the main path (rare: a read that disagrees).
func newNode(parent *rnode, vals []int64, reader int32) *rnode {
	v := vals[len(vals)-1]
	dup := parent.dup || slices.Contains(parent.vals, v)
	return &rnode{vals: vals, parent: parent, first: reader, dup: dup}
}

// versionOrder returns the deepest state (ties: the one read first).
func (ks *keyState) versionOrder() *rnode {
	if ks.main == nil {
		return nil
	}
	best := ks.main[len(ks.main)-1]
	better := func(n *rnode) bool {
		return len(n.vals) > len(best.vals) || (len(n.vals) == len(best.vals) && n.first < best.first)
	}
	for _, n := range ks.branches {
		if better(n) {
			best = n
		}
	}
	return best
}

// writer is who appended a value to the key: ok is the committed or
// unknown attempt that did (at most one), failed the first failed one.
type writer struct {
	ok, failed     *txn
	okOp, failedOp int
}

// rolledBack says an attempt whose error has SQLSTATE s did not commit,
// whatever outcome the history gives it: a serialization failure or a
// deadlock rolls the transaction back.
func rolledBack(s string) bool { return s == "40001" || s == "40P01" }

// finalize draws the key's edges and reports its anomalies, then drops it.
func (c *Checker) finalize(ks *keyState) error {
	delete(c.keys, ks.key)
	if ks.retired {
		c.retiredKeys.add(ks.key)
	}
	k := ks.key
	txns := make([]*txn, len(ks.txns))
	for i, id := range ks.txns {
		txns[i] = c.txns[id]
	}

	writers := map[int64]*writer{}
	for _, t := range txns {
		for i, op := range t.ops {
			if op.key != k || op.kind != Append {
				continue
			}
			w := writers[op.value]
			if w == nil {
				w = &writer{}
				writers[op.value] = w
			}
			switch {
			case t.outcome == Failed || (t.outcome == Unknown && rolledBack(t.sqlstate)):
				if w.failed == nil {
					w.failed, w.failedOp = t, i
				}
			case w.ok != nil:
				return c.fail(&DuplicateAppendError{Key: k, Value: op.value, First: int(w.ok.id), Second: int(t.id)})
			default:
				w.ok, w.okOp = t, i
			}
		}
	}

	// The version order: the longest read; every read should be a prefix.
	// A value read twice (a duplicate) takes the place it first had, as
	// in Elle.
	var vorder []int64
	leaf := ks.versionOrder()
	if leaf != nil {
		for n := leaf; n != nil; n = n.parent {
			n.onV = true
		}
	}
	pos := map[int64]int{}
	if leaf != nil {
		vorder = make([]int64, 0, len(leaf.vals))
		for _, v := range leaf.vals {
			if _, ok := pos[v]; !ok {
				pos[v] = len(vorder)
				vorder = append(vorder, v)
			}
		}
	}
	seen := func(v int64) bool { // in any committed read
		if _, ok := pos[v]; ok {
			return true
		}
		for _, n := range ks.branches {
			if n.vals[len(n.vals)-1] == v {
				return true
			}
		}
		return false
	}
	okWriter := func(v int64) *txn {
		if w := writers[v]; w != nil {
			return w.ok
		}
		return nil
	}

	// Committed appends no read holds come after the whole version order.
	type unread struct {
		t  *txn
		op int
	}
	var after []unread
	for _, t := range txns {
		if t.outcome != Committed {
			continue
		}
		for i, op := range t.ops {
			if op.key == k && op.kind == Append {
				if _, ok := pos[op.value]; !ok {
					after = append(after, unread{t, i})
				}
			}
		}
	}

	// A committed attempt's appends to the key stand in the version order
	// in the order it made them: one read the other way round (retest 16:
	// an attempt's two appends swapped in the file, ten later reads
	// holding the first order) is explained by no order of appends.
	for _, t := range txns {
		if t.outcome != Committed {
			continue
		}
		prevOp := -1
		for i, op := range t.ops {
			if op.key != k || op.kind != Append {
				continue
			}
			p, ok := pos[op.value]
			if !ok {
				continue
			}
			if prevOp >= 0 && pos[t.ops[prevOp].value] > p {
				first := prevOp
				c.report(IncompatibleOrder, opRank(t, i), func() *Example { return appendOrderExample(t, first, i, c.txns[leaf.first]) })
			}
			prevOp = i
		}
	}

	for _, t := range txns {
		if t.outcome != Committed {
			continue
		}
		for i, op := range t.ops {
			if op.key != k || op.kind != Read {
				continue
			}
			n := op.read
			if n.dup {
				c.report(DuplicateElements, opRank(t, i), func() *Example { return duplicateExample(t, i) })
			}
			if !n.onV {
				c.report(IncompatibleOrder, opRank(t, i), func() *Example { return incompatibleExample(t, i, c.txns[leaf.first]) })
			}
			for _, v := range n.vals {
				if w := writers[v]; w != nil && w.ok == nil && w.failed != nil {
					c.report(G1a, opRank(t, i), func() *Example { return abortedExample(t, i, v, w.failed) })
					break
				}
			}
			for _, v := range n.vals {
				if writers[v] == nil {
					c.report(GarbageRead, opRank(t, i), func() *Example { return garbageExample(t, i, v) })
					break
				}
			}
			for _, v := range n.vals {
				if w := writers[v]; w != nil && w.ok != nil && w.ok != t && w.ok.invoke > t.complete {
					c.report(FutureRead, opRank(t, i), func() *Example { return futureExample(t, i, v, w.ok) })
					break
				}
			}
			var last int64
			var next int64
			hasNext := false
			if len(n.vals) == 0 {
				if len(vorder) > 0 {
					next, hasNext = vorder[0], true
				}
			} else {
				last = n.vals[len(n.vals)-1]
				if w := okWriter(last); w != nil && w != t {
					if later, ok := appendedAfter(w, k, last); ok {
						c.report(G1b, opRank(t, i), func() *Example { return intermediateExample(t, i, w, last, later) })
					}
					c.addEdge(w, t, edge{kind: wr, key: k, x: last})
				}
				if p, ok := pos[last]; ok && p+1 < len(vorder) {
					next, hasNext = vorder[p+1], true
				}
			}
			init := len(n.vals) == 0
			if hasNext {
				if w := okWriter(next); w != nil && w != t {
					c.addEdge(t, w, edge{kind: rw, init: init, key: k, x: last, y: next})
				}
			} else if n == leaf {
				// It saw the whole order: the unread appends overwrote it.
				for _, u := range after {
					if u.t != t {
						c.addEdge(t, u.t, edge{kind: rw, init: init, key: k, x: last, y: u.t.ops[u.op].value})
					}
				}
			}
		}
	}

	for i := 0; i+1 < len(vorder); i++ {
		a, b := okWriter(vorder[i]), okWriter(vorder[i+1])
		if a != nil && b != nil && a != b {
			c.addEdge(a, b, edge{kind: ww, key: k, x: vorder[i], y: vorder[i+1]})
		}
	}
	if len(vorder) > 0 {
		if a := okWriter(vorder[len(vorder)-1]); a != nil {
			for _, u := range after {
				if u.t != a {
					c.addEdge(a, u.t, edge{kind: ww, key: k, x: vorder[len(vorder)-1], y: u.t.ops[u.op].value})
				}
			}
		}
	}

	// Lost appends: committed, in no read, though committed attempts that
	// started after the commit read the key.
	for _, u := range after {
		v := u.t.ops[u.op].value
		if seen(v) {
			continue
		}
		var reader *txn
		readOp := 0
		for _, t := range txns {
			if t.outcome != Committed || t.invoke <= u.t.complete {
				continue
			}
			for i, op := range t.ops {
				if op.key == k && op.kind == Read && (reader == nil || t.invoke < reader.invoke) {
					reader, readOp = t, i
					break
				}
			}
		}
		if reader != nil {
			c.report(LostAppend, opRank(u.t, u.op), func() *Example { return lostExample(u.t, u.op, reader, readOp) })
		}
	}

	if c.final != nil {
		c.keepFinal(k, vorder, leaf, writers, pos)
	}
	for _, t := range txns {
		t.open--
		if t.open == 0 {
			c.closeTxn(t)
		}
	}
	return nil
}

// appendedAfter returns the value t appended to key after v, if any.
func appendedAfter(t *txn, key, v int64) (int64, bool) {
	found := false
	for _, op := range t.ops {
		if op.key != key || op.kind != Append {
			continue
		}
		if found {
			return op.value, true
		}
		found = op.value == v
	}
	return 0, false
}

// addEdge adds the edge from -> e.to (given as a txn), keeping one edge of
// each kind between two txns: the one with the least witness.
func (c *Checker) addEdge(from, to *txn, e edge) {
	e.to = to.id
	for i := range from.out {
		f := &from.out[i]
		if f.to == e.to && f.kind == e.kind {
			if e.less(*f) {
				*f = e
			}
			return
		}
	}
	from.out = append(from.out, e)
	to.inDeg++
}

// closeTxn is called when every key of t is final: all its edges are known.
// One with no edge in or no edge out is on no cycle and is dropped at once.
func (c *Checker) closeTxn(t *txn) {
	if t.inDeg == 0 || len(t.out) == 0 {
		c.drop(t)
		return
	}
	c.closedLive++
}

func (c *Checker) drop(t *txn) {
	delete(c.txns, t.id)
	c.stats.Dropped++
}

// spans is a set of integers kept as sorted, disjoint, non-adjacent
// ranges: the keys retired and dropped, which a workload numbers in order,
// take a few ranges.
type spans []span

type span struct{ lo, hi int64 }

func (s spans) find(k int64) int {
	i, _ := slices.BinarySearchFunc(s, k, func(sp span, k int64) int {
		switch {
		case sp.hi < k:
			return -1
		case sp.lo > k:
			return 1
		}
		return 0
	})
	return i
}

func (s spans) contains(k int64) bool {
	i := s.find(k)
	return i < len(s) && s[i].lo <= k && k <= s[i].hi
}

func (s *spans) add(k int64) {
	if s.contains(k) {
		return
	}
	i := s.find(k) // the first span above k
	a := *s
	joinLow := i > 0 && a[i-1].hi == k-1
	joinHigh := i < len(a) && a[i].lo == k+1
	switch {
	case joinLow && joinHigh:
		a[i-1].hi = a[i].hi
		*s = slices.Delete(a, i, i+1)
	case joinLow:
		a[i-1].hi = k
	case joinHigh:
		a[i].lo = k
	default:
		*s = slices.Insert(a, i, span{k, k})
	}
}

// DuplicateAppendError is a history that cannot be checked: two attempts
// that committed or may have (numbered First and Second) appended the same
// value to a key, which must be unique.
type DuplicateAppendError struct {
	Key, Value    int64
	First, Second int
}

func (e *DuplicateAppendError) Error() string {
	return e.Describe(func(i int) string { return fmt.Sprintf("attempt %d", i) })
}

// Describe says what is wrong, naming the attempts with name.
func (e *DuplicateAppendError) Describe(name func(int) string) string {
	return fmt.Sprintf("value %d appended to key %d twice, by %s and %s: the values appended to a key must be unique",
		e.Value, e.Key, name(e.First), name(e.Second))
}
