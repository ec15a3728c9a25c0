package history

import (
	"math/rand/v2"
	"slices"
	"time"
)

// source gives the simulator its choices: a seeded generator, or the bytes
// of a fuzz input.
type source interface{ intn(n int) int }

type randSource struct{ r *rand.Rand }

func (s randSource) intn(n int) int { return s.r.IntN(n) }

func seeded(seed uint64) source {
	return randSource{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// byteSource reads choices from bytes; 0 once they run out.
type byteSource struct{ b []byte }

func (s *byteSource) intn(n int) int {
	if len(s.b) == 0 || n <= 1 {
		return 0
	}
	v := int(s.b[0])
	if n > 256 && len(s.b) > 1 {
		v = v<<8 | int(s.b[1])
		s.b = s.b[1:]
	}
	s.b = s.b[1:]
	return v % n
}

func chance(s source, percent int) bool { return percent > 0 && s.intn(100) < percent }

// sink receives what a simulated workload produces: attempts as they
// complete, keys as they retire, progress marks.
type sink interface {
	add(Attempt)
	retire(key int64, at time.Duration)
	progress(t time.Duration)
}

type simMode int

const (
	serial simMode = iota // one attempt at a time: a serial history
	readCommitted
	snapshot // snapshot isolation: first committer wins
)

type simConfig struct {
	mode                             simMode
	clients, keys, maxWrites, maxOps int
	attempts                         int
	// Percentages: failed and unknown outcomes; faults (a read stale,
	// dirty, duplicated, reordered or holding garbage; a commit lost).
	failed, unknown, faults int
}

// simTxn is an attempt in flight.
type simTxn struct {
	a    Attempt
	next int           // ops done
	snap map[int64]int // snapshot isolation: committed length at start
}

// simulate runs a list-append workload against an in-memory database and
// hands its history to out. Keys are drawn from a window of cfg.keys; a key
// is retired after cfg.maxWrites appends (as txload's workload will do).
// It returns the database as it ends: what a final read reads.
func simulate(src source, cfg simConfig, out sink) map[int64][]int64 {
	db := map[int64][]int64{}
	failedVals := map[int64][]int64{}
	nextVal := map[int64]int64{}
	var window []int64
	nextKey := int64(0)
	for range max(cfg.keys, 1) {
		window = append(window, nextKey)
		nextKey++
	}
	now := time.Duration(0)
	tick := func() time.Duration { now += time.Microsecond; return now }
	running := make([]*simTxn, max(cfg.clients, 1))
	started := 0

	plan := func(client int) *simTxn {
		t := &simTxn{a: Attempt{Client: client, Intended: now, Invoke: now}}
		if cfg.mode == snapshot {
			t.snap = map[int64]int{}
			for _, k := range window {
				t.snap[k] = len(db[k])
			}
		}
		n := 1 + src.intn(max(cfg.maxOps, 1))
		for range n {
			k := window[src.intn(len(window))]
			if src.intn(2) == 0 {
				t.a.Ops = append(t.a.Ops, Op{Kind: Read, Key: k})
				continue
			}
			nextVal[k]++
			t.a.Ops = append(t.a.Ops, A(k, nextVal[k]))
			if nextVal[k] >= int64(max(cfg.maxWrites, 1)) {
				i := slices.Index(window, k)
				window[i] = nextKey
				nextKey++
				out.retire(k, now+time.Microsecond)
			}
		}
		return t
	}
	// read executes op i of t against the database.
	read := func(t *simTxn, i int) []int64 {
		k := t.a.Ops[i].Key
		base := db[k]
		if t.snap != nil {
			base = base[:min(t.snap[k], len(base))]
		}
		list := slices.Clone(base)
		for _, op := range t.a.Ops[:i] {
			if op.Kind == Append && op.Key == k {
				list = append(list, op.Value)
			}
		}
		if chance(src, cfg.faults) {
			switch src.intn(5) {
			case 0: // stale
				list = list[:src.intn(len(list)+1)]
			case 1: // dirty
				if f := failedVals[k]; len(f) > 0 {
					list = append(list, f[src.intn(len(f))])
				}
			case 2: // duplicated
				if len(list) > 0 {
					list = append(list, list[len(list)-1])
				}
			case 3: // reordered
				if len(list) >= 2 {
					j := src.intn(len(list) - 1)
					list[j], list[j+1] = list[j+1], list[j]
				}
			case 4: // garbage: a value no attempt appended
				list = append(list, 1<<40+int64(src.intn(1000)))
			}
		}
		if list == nil {
			list = []int64{}
		}
		return list
	}
	apply := func(t *simTxn) {
		for _, op := range t.a.Ops {
			if op.Kind == Append {
				db[op.Key] = append(db[op.Key], op.Value)
			}
		}
	}
	finish := func(t *simTxn) {
		t.a.Complete = tick()
		conflict := false
		if t.snap != nil {
			for _, op := range t.a.Ops {
				if op.Kind == Append && len(db[op.Key]) > t.snap[op.Key] {
					conflict = true
				}
			}
		}
		switch {
		case conflict || chance(src, cfg.failed):
			t.a.Outcome, t.a.SQLState = Failed, "40001"
			// The failure may have come before the last operations ran.
			cut := len(t.a.Ops) - src.intn(len(t.a.Ops))
			for i := cut; i < len(t.a.Ops); i++ {
				t.a.Ops[i].List = nil
			}
			for _, op := range t.a.Ops {
				if op.Kind == Append {
					failedVals[op.Key] = append(failedVals[op.Key], op.Value)
				}
			}
		case chance(src, cfg.unknown):
			t.a.Outcome = Unknown
			if src.intn(2) == 0 {
				apply(t)
			}
		default:
			t.a.Outcome = Committed
			if !chance(src, cfg.faults) {
				apply(t)
			}
		}
		out.add(t.a)
	}
	mark := func() {
		low := now + time.Microsecond
		for _, t := range running {
			if t != nil {
				low = min(low, t.a.Invoke)
			}
		}
		out.progress(low)
	}

	if cfg.mode == serial {
		for i := range cfg.attempts {
			tick()
			t := plan(i % len(running))
			for j, op := range t.a.Ops {
				if op.Kind == Read {
					t.a.Ops[j].List = read(t, j)
				}
			}
			tick()
			finish(t)
			mark()
		}
		return db
	}
	for started < cfg.attempts || slices.ContainsFunc(running, func(t *simTxn) bool { return t != nil }) {
		tick()
		c := src.intn(len(running))
		t := running[c]
		if t == nil {
			if started < cfg.attempts {
				running[c] = plan(c)
				started++
			}
			continue
		}
		if t.next < len(t.a.Ops) {
			if t.a.Ops[t.next].Kind == Read {
				t.a.Ops[t.next].List = read(t, t.next)
			}
			t.next++
			continue
		}
		running[c] = nil
		finish(t)
		mark()
	}
	return db
}

// collect keeps what a simulation produced, in order.
type collect struct {
	attempts []Attempt
	events   []simEvent
}

type simEvent struct {
	kind int // 0 add (attempts[i]), 1 retire, 2 progress
	i    int
	key  int64
	t    time.Duration
}

func (c *collect) add(a Attempt) {
	c.events = append(c.events, simEvent{kind: 0, i: len(c.attempts)})
	c.attempts = append(c.attempts, a)
}
func (c *collect) retire(k int64, at time.Duration) {
	c.events = append(c.events, simEvent{kind: 1, key: k, t: at})
}
func (c *collect) progress(t time.Duration) { c.events = append(c.events, simEvent{kind: 2, t: t}) }

// online feeds a checker as a workload would, as attempts complete.
type online struct {
	c   *Checker
	err error
}

func (o *online) add(a Attempt) {
	if o.err == nil {
		o.err = o.c.Add(a)
	}
}
func (o *online) retire(k int64, at time.Duration) {
	if o.err == nil {
		o.err = o.c.Retire(k, at)
	}
}
func (o *online) progress(t time.Duration) {
	if o.err == nil {
		o.err = o.c.Progress(t)
	}
}

// replay feeds recorded events to a checker online.
func (c *collect) replay(ch *Checker) error {
	for _, e := range c.events {
		var err error
		switch e.kind {
		case 0:
			err = ch.Add(c.attempts[e.i])
		case 1:
			err = ch.Retire(e.key, e.t)
		case 2:
			err = ch.Progress(e.t)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
