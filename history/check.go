package history

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"time"
)

// Checker checks a list-append history, online (fed attempts as they
// complete, with Retire and Progress saying which keys no attempt will
// touch any more) or offline (every attempt, then Close). Both find the
// same anomalies; see Progress for what online mode needs of its caller.
//
// For each key, the version order is its longest committed read (ties: the
// one an earlier attempt read). From it come the edges between the
// transactions (as Elle's list-append checker derives them): ww from the
// writer of each value to the writer of the next; wr from the writer of the
// value a read ends with to the reader; rw from a reader to the writer of
// the value that follows the last it saw. Committed and unknown attempts
// whose appends were read are transactions of the graph; the reads of an
// attempt of unknown outcome are not used (they are valid only if it
// committed), nor its appends that no read holds.
//
// A Checker is not safe for concurrent use.
type Checker struct {
	n         int32 // attempts added
	counts    [4]int
	txns      map[int32]*txn
	keys      map[int64]*keyState
	pending   retireHeap // retired keys waiting for Progress to pass their time
	watermark time.Duration
	err       error // a history that cannot be checked: the first error

	found      [numClasses]int
	examples   [numClasses]*Example
	incomplete [numClasses]int

	closedLive int // closed transactions still held (reachable from open ones)
	sweepAt    int // sweep when closedLive reaches this
	minSweep   int // the least sweepAt
	stats      Stats
	budget     int // edge visits per class search in one component
	epoch      int32
	// retiredKeys are the keys retired and dropped: an attempt that
	// touches one breaks the promise of Retire.
	retiredKeys spans
	// lastDone is when each client's latest attempt completed: a client
	// runs one attempt at a time, so its next one is invoked after that.
	lastDone map[int32]time.Duration
	// final holds, after ExpectFinal, what a final read of each key
	// finalized is held to (CheckFinal).
	final  map[int64]finalKey
	closed bool
}

// Stats say how much of the history the checker holds.
type Stats struct {
	Attempts  int // attempts added
	LiveTxns  int // attempts held now
	LiveKeys  int // keys held now
	PeakTxns  int // the most attempts held at once
	PeakKeys  int // the most keys held at once
	Sweeps    int // searches of the closed part of the graph
	Dropped   int // attempts dropped
	SCCs      int // strongly connected components of two or more transactions
	LargestSC int // transactions in the largest of them
}

// NewChecker returns an empty checker.
func NewChecker() *Checker {
	return &Checker{
		txns:     map[int32]*txn{},
		keys:     map[int64]*keyState{},
		lastDone: map[int32]time.Duration{},
		sweepAt:  defaultMinSweep,
		minSweep: defaultMinSweep,
		budget:   defaultBudget,
	}
}

const (
	defaultMinSweep = 4096
	// defaultBudget bounds the edges one search for one class visits in
	// one component (Elle bounds it by time: 1 s per component). Existence
	// of G0 and G1c cycles is always decided exactly; so is every class at
	// serializable, where any cycle is a violation.
	defaultBudget = 4_000_000
)

// txn is what the checker keeps of an attempt.
type txn struct {
	id       int32
	client   int32
	outcome  Outcome
	partial  bool  // an example's: ops holds only the operation it is about
	open     int32 // keys of ops not yet final
	inDeg    int32
	mark     int32 // sweep scratch
	intended time.Duration
	invoke   time.Duration
	complete time.Duration
	sqlstate string
	ops      []mop
	out      []edge
}

// mop is an operation: a read holds the state it returned, shared with the
// other reads of that state.
type mop struct {
	kind  OpKind
	key   int64
	value int64
	read  *rnode // nil: a read that did not return
}

type edgeKind uint8

const (
	ww edgeKind = 1 << iota
	wr
	rw
)

func (k edgeKind) String() string {
	switch k {
	case ww:
		return "ww"
	case wr:
		return "wr"
	case rw:
		return "rw"
	}
	return "?"
}

// edge is a dependency from the txn holding it to txn to, with the
// operations that make it: for ww, to appended y after the holder appended
// x to key; for wr, to read key ending with the holder's append of x; for
// rw, the holder read key ending with x (or empty: init), and to appended
// y, the next value.
type edge struct {
	to   int32
	kind edgeKind
	init bool
	key  int64
	x, y int64
}

// less orders the witnesses of one kind of edge between two txns: the
// least is kept, whatever order the keys were finalized in.
func (e edge) less(f edge) bool {
	if e.key != f.key {
		return e.key < f.key
	}
	if e.init != f.init {
		return e.init
	}
	if e.x != f.x {
		return e.x < f.x
	}
	return e.y < f.y
}

// Add checks and keeps a completed attempt. Attempts are numbered from 0
// in the order they are added.
func (c *Checker) Add(a Attempt) error {
	if c.err != nil {
		return c.err
	}
	if err := a.Validate(); err != nil {
		return fmt.Errorf("attempt %d: %w", c.n, err)
	}
	if a.Invoke < c.watermark {
		return c.fail(fmt.Errorf("attempt %d was invoked at %d ns, before the progress mark %d ns", c.n, a.Invoke, c.watermark))
	}
	if done, ok := c.lastDone[int32(a.Client)]; ok && a.Invoke < done {
		return c.fail(fmt.Errorf("client %d invoked an attempt at %d ns, before its previous attempt completed at %d ns: a client runs one attempt at a time, and its attempts come in the order they ran",
			a.Client, a.Invoke, done))
	}
	c.lastDone[int32(a.Client)] = a.Complete
	t := &txn{
		id: c.n, client: int32(a.Client), outcome: a.Outcome, intended: a.Intended,
		invoke: a.Invoke, complete: a.Complete, sqlstate: a.SQLState, ops: make([]mop, len(a.Ops)),
	}
	c.n++
	c.counts[a.Outcome]++
	c.stats.Attempts++
	if a.Outcome == Committed {
		c.internal(t, a.Ops)
	}
	for i, op := range a.Ops {
		ks := c.keys[op.Key]
		if ks == nil {
			if c.retiredKeys.contains(op.Key) {
				return c.fail(fmt.Errorf("attempt %d (invoked at %d ns) touches key %d, retired and final before that", t.id, a.Invoke, op.Key))
			}
			ks = &keyState{key: op.Key}
			c.keys[op.Key] = ks
		}
		if ks.retired && a.Invoke >= ks.retireAt {
			return c.fail(fmt.Errorf("attempt %d (invoked at %d ns) touches key %d, retired at %d ns", t.id, a.Invoke, op.Key, ks.retireAt))
		}
		m := mop{kind: op.Kind, key: op.Key, value: op.Value}
		if op.Kind == Read && op.List != nil {
			if a.Outcome == Committed {
				m.read = ks.insert(op.List, t.id)
			} else {
				m.read = loose(op.List)
			}
		}
		t.ops[i] = m
		if len(ks.txns) == 0 || ks.txns[len(ks.txns)-1] != t.id {
			ks.txns = append(ks.txns, t.id)
			t.open++
		}
	}
	c.txns[t.id] = t
	c.stats.PeakTxns = max(c.stats.PeakTxns, len(c.txns))
	c.stats.PeakKeys = max(c.stats.PeakKeys, len(c.keys))
	return nil
}

func (c *Checker) fail(err error) error {
	if c.err == nil {
		c.err = err
	}
	return c.err
}

// Retire says that no attempt invoked at or after at touches key: the
// workload took it out of the keys it draws from. Once Progress passes at,
// the key's version order is final: its edges are drawn, and its state
// dropped.
func (c *Checker) Retire(key int64, at time.Duration) error {
	if c.err != nil {
		return c.err
	}
	ks := c.keys[key]
	if (ks != nil && ks.retired) || c.retiredKeys.contains(key) {
		return c.fail(fmt.Errorf("key %d retired twice", key))
	}
	if ks == nil {
		ks = &keyState{key: key}
		c.keys[key] = ks
	}
	ks.retired, ks.retireAt = true, at
	heap.Push(&c.pending, ks)
	return nil
}

// Progress says that every attempt invoked before t has been added: the
// attempts still running were invoked at or after t. Keys retired at or
// before t are final then, and the transactions whose keys are all final
// and that no transaction still open can reach are searched for cycles and
// dropped.
//
// Online mode misses nothing the offline check of the same attempts finds,
// and reports the same counts and examples, as long as the caller keeps
// the two promises (an attempt that breaks one is an error): no attempt
// touches a key at or after its retirement, and none invoked before a
// progress mark comes after it. Its memory is bounded by the attempts that
// touch a key not yet final, plus the finished ones a path of dependencies
// leads to from those (in a history whose dependencies follow real time,
// as a single PostgreSQL server's do, the recent ones).
func (c *Checker) Progress(t time.Duration) error {
	if c.err != nil {
		return c.err
	}
	c.watermark = max(c.watermark, t)
	for c.pending.Len() > 0 && c.pending[0].retireAt <= c.watermark {
		ks := heap.Pop(&c.pending).(*keyState)
		if err := c.finalize(ks); err != nil {
			return err
		}
	}
	if c.closedLive >= c.sweepAt {
		c.sweep(false)
	}
	return nil
}

// Close finishes the check: every key is final, every cycle searched.
func (c *Checker) Close() (*Result, error) {
	if c.err != nil {
		return nil, c.err
	}
	ks := make([]*keyState, 0, len(c.keys))
	for _, k := range c.keys {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b *keyState) int { return cmp.Compare(a.key, b.key) })
	for _, k := range ks {
		if err := c.finalize(k); err != nil {
			return nil, err
		}
	}
	c.pending = nil
	c.sweep(true)
	c.closed = true
	return c.result(), nil
}

// Stats says how much the checker holds now.
func (c *Checker) Stats() Stats {
	s := c.stats
	s.LiveTxns, s.LiveKeys = len(c.txns), len(c.keys)
	return s
}

// Check checks a whole history.
func Check(attempts []Attempt) (*Result, error) {
	c := NewChecker()
	for _, a := range attempts {
		if err := c.Add(a); err != nil {
			return nil, err
		}
	}
	return c.Close()
}

// internal checks a committed attempt against itself, as any level
// requires: a read of a key ends with the attempt's own appends to it since
// its previous read of the key (or since it began), and what comes before
// them extends that previous read (a list only grows). A read that sees
// more than the previous one did (a non-repeatable read, which read
// committed allows) is not internal: the graph shows it as a G-single
// cycle.
func (c *Checker) internal(t *txn, ops []Op) {
	type seen struct {
		read []int64 // the previous read of the key (nil: none)
		own  []int64 // the attempt's appends to the key since
	}
	// Only a key an attempt touches twice can contradict itself.
	repeated := false
	for i := 1; i < len(ops) && !repeated; i++ {
		for j := range i {
			if ops[j].Key == ops[i].Key {
				repeated = true
				break
			}
		}
	}
	if !repeated {
		return
	}
	state := map[int64]*seen{}
	for i, op := range ops {
		e := state[op.Key]
		if e == nil {
			e = &seen{}
			state[op.Key] = e
		}
		if op.Kind == Append {
			e.own = append(e.own, op.Value)
			continue
		}
		l := op.List
		ownOK := len(l) >= len(e.own) && slices.Equal(l[len(l)-len(e.own):], e.own)
		if !ownOK || (e.read != nil && !isPrefix(e.read, l[:len(l)-len(e.own)])) {
			c.report(Internal, opRank(t, i), func() *Example { return internalExample(t, ops, i, e.read, e.own, ownOK) })
			return
		}
		e.read, e.own = l, nil
	}
}

func isPrefix(a, b []int64) bool { return len(a) <= len(b) && slices.Equal(a, b[:len(a)]) }

// retireHeap orders retired keys by retirement time, then key.
type retireHeap []*keyState

func (h retireHeap) Len() int { return len(h) }
func (h retireHeap) Less(i, j int) bool {
	if h[i].retireAt != h[j].retireAt {
		return h[i].retireAt < h[j].retireAt
	}
	return h[i].key < h[j].key
}
func (h retireHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *retireHeap) Push(x any)   { *h = append(*h, x.(*keyState)) }
func (h *retireHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
