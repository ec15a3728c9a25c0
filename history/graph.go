package history

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// sweep searches the closed transactions no open one can reach (with all,
// every transaction) for cycles, and drops them. Such a set is closed
// under predecessors: a cycle through one of them lies wholly inside it,
// and no edge added later can lead into it, so nothing is lost.
func (c *Checker) sweep(all bool) {
	c.stats.Sweeps++
	c.epoch++
	var stack []*txn
	if !all {
		for _, t := range c.txns {
			if t.open > 0 {
				t.mark = c.epoch
				stack = append(stack, t)
			}
		}
		for len(stack) > 0 {
			t := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, e := range t.out {
				if u := c.txns[e.to]; u != nil && u.mark != c.epoch {
					u.mark = c.epoch
					stack = append(stack, u)
				}
			}
		}
	}
	var done []*txn
	for _, t := range c.txns {
		if t.open == 0 && t.mark != c.epoch {
			done = append(done, t)
		}
	}
	slices.SortFunc(done, func(a, b *txn) int { return cmp.Compare(a.id, b.id) })
	c.searchCycles(done)
	for _, t := range done {
		c.drop(t)
	}
	c.closedLive -= len(done)
	c.sweepAt = max(c.minSweep, 2*c.closedLive)
}

// sedge is an edge inside a set of transactions numbered from 0.
type sedge struct {
	to   int32
	kind edgeKind
	w    *edge
}

// subgraph is a set of transactions numbered from 0 (in id order) with the
// edges between them, each node's sorted by target and kind.
type subgraph struct {
	nodes []*txn
	start []int32 // node i's edges are edges[start[i]:start[i+1]]
	edges []sedge
}

func (g *subgraph) out(v int32) []sedge { return g.edges[g.start[v]:g.start[v+1]] }

// induced builds the subgraph of nodes (sorted by id); local[t.id] is the
// position of a member, and members only are in local.
func induced(nodes []*txn, local map[int32]int32) *subgraph {
	g := &subgraph{nodes: nodes, start: make([]int32, len(nodes)+1)}
	for i, t := range nodes {
		g.start[i] = int32(len(g.edges))
		first := len(g.edges)
		for j := range t.out {
			e := &t.out[j]
			if to, ok := local[e.to]; ok {
				g.edges = append(g.edges, sedge{to: to, kind: e.kind, w: e})
			}
		}
		slices.SortFunc(g.edges[first:], func(a, b sedge) int {
			if a.to != b.to {
				return cmp.Compare(a.to, b.to)
			}
			return cmp.Compare(a.kind, b.kind)
		})
	}
	g.start[len(nodes)] = int32(len(g.edges))
	return g
}

// tarjan numbers the strongly connected components of g over the edges of
// the kinds in mask, iteratively. Components are numbered in the order
// Tarjan's algorithm completes them: if a path leads from component X to
// another Y, Y's number is less than X's.
func tarjan(g *subgraph, mask edgeKind) (comp []int32, sizes []int32) {
	n := len(g.nodes)
	index := make([]int32, n)
	low := make([]int32, n)
	comp = make([]int32, n)
	for i := range index {
		index[i] = -1
	}
	onStack := make([]bool, n)
	var stack []int32
	type frame struct{ v, i int32 }
	var calls []frame
	next := int32(0)
	for s := int32(0); s < int32(n); s++ {
		if index[s] >= 0 {
			continue
		}
		index[s], low[s] = next, next
		next++
		stack = append(stack, s)
		onStack[s] = true
		calls = append(calls, frame{v: s})
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			v := f.v
			es := g.out(v)
			if int(f.i) < len(es) {
				e := es[f.i]
				f.i++
				if e.kind&mask == 0 {
					continue
				}
				w := e.to
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					calls = append(calls, frame{v: w})
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				u := calls[len(calls)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] == index[v] {
				id := int32(len(sizes))
				size := int32(0)
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = id
					size++
					if w == v {
						break
					}
				}
				sizes = append(sizes, size)
			}
		}
	}
	return comp, sizes
}

// searchCycles finds the strongly connected components among nodes and
// searches each for a cycle of every class.
func (c *Checker) searchCycles(nodes []*txn) {
	if len(nodes) < 2 {
		return
	}
	local := make(map[int32]int32, len(nodes))
	for i, t := range nodes {
		local[t.id] = int32(i)
	}
	g := induced(nodes, local)
	comp, sizes := tarjan(g, ww|wr|rw)
	members := make([][]*txn, len(sizes))
	for v, id := range comp {
		if sizes[id] > 1 {
			members[id] = append(members[id], nodes[v])
		}
	}
	members = slices.DeleteFunc(members, func(m []*txn) bool { return len(m) < 2 })
	// In the order of each component's first transaction.
	slices.SortFunc(members, func(a, b []*txn) int { return cmp.Compare(a[0].id, b[0].id) })
	for _, m := range members {
		c.stats.SCCs++
		c.stats.LargestSC = max(c.stats.LargestSC, len(m))
		local := make(map[int32]int32, len(m))
		for i, t := range m {
			local[t.id] = int32(i)
		}
		c.searchSCC(induced(m, local))
	}
}

// A spec says what cycle of a class looks like to the search, which starts
// from an edge of kind first, then follows edges through phases (what it
// has seen so far: rw edges, whether the last was one).
type spec struct {
	class  Class
	first  edgeKind
	phases int
	start  int // phase after the first edge
	step   func(phase int, k edgeKind) (int, bool)
	accept func(phase int) bool
	min    int // the length of the shortest cycle of the class
}

func plain(class Class, first, allow edgeKind) spec {
	return spec{class: class, first: first, phases: 1, min: 2,
		step:   func(p int, k edgeKind) (int, bool) { return 0, k&allow != 0 },
		accept: func(int) bool { return true }}
}

var specs = []spec{
	plain(G0, ww, ww),
	plain(G1c, wr, ww|wr),
	plain(GSingle, rw, ww|wr),
	// phase = 2*(two or more rw) + (the last edge was rw)
	{class: GNonadjacent, first: rw, phases: 4, start: 1, min: 4,
		step: func(p int, k edgeKind) (int, bool) {
			if k == rw {
				if p&1 == 1 {
					return 0, false
				}
				return 3, true
			}
			return p &^ 1, true
		},
		accept: func(p int) bool { return p == 2 }},
	{class: G2Item, first: rw, phases: 2, start: 0, min: 2,
		step: func(p int, k edgeKind) (int, bool) {
			if k == rw {
				return 1, true
			}
			return p, true
		},
		accept: func(p int) bool { return p == 1 }},
}

// step of a cycle: from node from along edge e.
type step struct {
	from int32
	e    sedge
}

// searchSCC searches one strongly connected component for the shortest
// cycle of each class and reports those it finds.
func (c *Checker) searchSCC(g *subgraph) {
	compWW, _ := tarjan(g, ww)
	compWWR, _ := tarjan(g, ww|wr)
	s := newSearcher(g)
	foundAny := false
	for _, sp := range specs {
		var best []step
		spent := 0
		stopped := false
		for v := int32(0); v < int32(len(g.nodes)) && !stopped; v++ {
			for _, e := range g.out(v) {
				if e.kind != sp.first {
					continue
				}
				// Edges that cannot start a cycle of the class: for G0 and
				// G1c, every edge left is on one (decided exactly).
				switch sp.class {
				case G0:
					if compWW[v] != compWW[e.to] {
						continue
					}
				case G1c:
					if compWWR[v] != compWWR[e.to] {
						continue
					}
				case GSingle:
					if compWWR[e.to] < compWWR[v] {
						continue // no ww/wr path leads back from the writer to the reader
					}
				}
				limit := len(best) - 1 // only a shorter cycle is worth finding
				if best == nil {
					limit = sp.phases*len(g.nodes) + 1
				}
				cyc, cost := s.search(sp, v, e, limit)
				spent += cost
				if cyc != nil && (best == nil || len(cyc) < len(best)) {
					best = cyc
				}
				if best != nil && len(best) == sp.min {
					stopped = true
					break
				}
				if spent > c.budget {
					stopped = true
					if best == nil {
						c.incomplete[sp.class]++
					}
					break
				}
			}
		}
		if best != nil {
			foundAny = true
			c.reportCycle(sp.class, g, best)
		}
	}
	if !foundAny {
		// Every search stopped at its budget: any cycle, classified.
		if cyc := s.anyCycle(); cyc != nil {
			kinds := cycleKinds(cyc)
			for _, cl := range []Class{G0, G1c, GSingle, GNonadjacent, G2Item} {
				if matches(cl, kinds) {
					c.reportCycle(cl, g, cyc)
				}
			}
		}
	}
}

// searcher holds the scratch of breadth-first searches over one subgraph.
type searcher struct {
	g      *subgraph
	seen   []int32 // stamp per state
	parent []int32 // state -> previous state
	via    []int32 // state -> index of the edge taken into it
	stamp  int32
	queue  []int32
}

func newSearcher(g *subgraph) *searcher {
	n := len(g.nodes) * 4
	return &searcher{g: g, seen: make([]int32, n), parent: make([]int32, n), via: make([]int32, n)}
}

// search looks for the shortest cycle of spec's class that starts with
// edge e from a (a's edge to e.to), no longer than limit edges. It returns
// the cycle, as steps from a, and the number of edges it visited.
func (s *searcher) search(sp spec, a int32, e sedge, limit int) ([]step, int) {
	g := s.g
	P := int32(sp.phases)
	s.stamp++
	b := e.to
	startState := b*P + int32(sp.start)
	s.seen[startState] = s.stamp
	s.parent[startState] = -1
	s.queue = append(s.queue[:0], startState)
	cost := 0
	for depth := 1; len(s.queue) > 0 && depth < limit; depth++ {
		level := s.queue
		s.queue = nil
		for _, st := range level {
			v, p := st/P, int(st%P)
			lo := g.start[v]
			for i, f := range g.out(v) {
				cost++
				np, ok := sp.step(p, f.kind)
				if !ok {
					continue
				}
				if f.to == a {
					if !sp.accept(np) {
						continue
					}
					cyc := s.walk(a, e, st, P, lo+int32(i))
					if simple(cyc) {
						return cyc, cost
					}
					if piece := bestPiece(sp.class, cyc); piece != nil {
						return piece, cost
					}
					continue
				}
				ns := f.to*P + int32(np)
				if s.seen[ns] == s.stamp {
					continue
				}
				s.seen[ns] = s.stamp
				s.parent[ns] = st
				s.via[ns] = lo + int32(i)
				s.queue = append(s.queue, ns)
			}
		}
	}
	return nil, cost
}

// walk rebuilds the cycle a -e-> ... -> last state -edge lastEdge-> a.
func (s *searcher) walk(a int32, e sedge, last int32, P int32, lastEdge int32) []step {
	var rev []step
	rev = append(rev, step{from: last / P, e: s.g.edges[lastEdge]})
	for st := last; s.parent[st] >= 0; st = s.parent[st] {
		rev = append(rev, step{from: s.parent[st] / P, e: s.g.edges[s.via[st]]})
	}
	cyc := []step{{from: a, e: e}}
	for i := len(rev) - 1; i >= 0; i-- {
		cyc = append(cyc, rev[i])
	}
	return cyc
}

// anyCycle finds a cycle through node 0 over every edge.
func (s *searcher) anyCycle() []step {
	for _, e := range s.g.out(0) {
		if cyc, _ := s.search(spec{phases: 1, step: func(int, edgeKind) (int, bool) { return 0, true }, accept: func(int) bool { return true }}, 0, e, len(s.g.nodes)+1); cyc != nil {
			return cyc
		}
	}
	return nil
}

func simple(cyc []step) bool {
	seen := make(map[int32]bool, len(cyc))
	for _, st := range cyc {
		if seen[st.from] {
			return false
		}
		seen[st.from] = true
	}
	return true
}

// bestPiece splits a closed walk into simple cycles and returns the
// shortest of class cl, if any.
func bestPiece(cl Class, walk []step) []step {
	var best []step
	var stack []step
	at := map[int32]int{} // node -> its position in stack
	for _, st := range walk {
		if i, ok := at[st.from]; ok {
			piece := slices.Clone(stack[i:])
			for _, p := range piece {
				delete(at, p.from)
			}
			stack = stack[:i]
			if matches(cl, cycleKinds(piece)) && (best == nil || len(piece) < len(best)) {
				best = piece
			}
		}
		at[st.from] = len(stack)
		stack = append(stack, st)
	}
	if len(stack) > 0 && matches(cl, cycleKinds(stack)) && (best == nil || len(stack) < len(best)) {
		best = stack
	}
	return best
}

func cycleKinds(cyc []step) []edgeKind {
	k := make([]edgeKind, len(cyc))
	for i, st := range cyc {
		k[i] = st.e.kind
	}
	return k
}

// matches says whether a cycle with these edges is of class cl.
func matches(cl Class, kinds []edgeKind) bool {
	n, rws, wrs := len(kinds), 0, 0
	adjacent := false
	for i, k := range kinds {
		switch k {
		case rw:
			rws++
			if kinds[(i+1)%n] == rw {
				adjacent = true
			}
		case wr:
			wrs++
		}
	}
	switch cl {
	case G0:
		return rws == 0 && wrs == 0
	case G1c:
		return rws == 0 && wrs > 0
	case GSingle:
		return rws == 1
	case GNonadjacent:
		return rws >= 2 && !adjacent
	case G2Item:
		return rws >= 2
	}
	return false
}

// reportCycle reports a cycle of class cl, explained.
func (c *Checker) reportCycle(cl Class, g *subgraph, cyc []step) {
	// Start from the transaction with the least number.
	first := 0
	for i, st := range cyc {
		if g.nodes[st.from].id < g.nodes[cyc[first].from].id {
			first = i
		}
	}
	cyc = append(slices.Clone(cyc[first:]), cyc[:first]...)
	rank := []int64{int64(len(cyc))}
	for _, st := range cyc {
		rank = append(rank, int64(g.nodes[st.from].id))
	}
	c.report(cl, rank, func() *Example {
		e := newExample()
		for _, st := range cyc {
			e.name(g.nodes[st.from])
		}
		var order []string
		for _, st := range cyc {
			a, b := g.nodes[st.from], g.nodes[st.e.to]
			na, nb := e.name(a), e.name(b)
			w := st.e.w
			var why string
			switch w.kind {
			case ww:
				why = fmt.Sprintf("%s appended %d after %s appended %d to key %d", nb, w.y, na, w.x, w.key)
			case wr:
				why = fmt.Sprintf("%s observed %s's append of %d to key %d", nb, na, w.x, w.key)
			case rw:
				if w.init {
					why = fmt.Sprintf("%s read key %d empty, and %s's append of %d was its first value", na, w.key, nb, w.y)
				} else {
					why = fmt.Sprintf("%s read key %d ending with %d, without %s's append of %d, which came next", na, w.key, w.x, nb, w.y)
				}
			}
			e.line("%s < %s: %s (%s)", na, nb, why, w.kind)
			order = append(order, na)
		}
		e.line("a cycle: %s < %s", strings.Join(order, " < "), order[0])
		return e.ex
	})
}
