package tpcc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// Seeds of the run's random streams beside --seed: a terminal's deck and
// pauses are drawn apart from its inputs, so that one does not shift the
// other.
const (
	deckSeed  = 0x9e3779b97f4a7c15
	pauseSeed = 0xbf58476d1ce4e5b9
	runCSeed  = 0x94d049bb133111eb
)

// deck deals a terminal's transactions from a shuffled deck of 23 cards
// (clause 5.2.4.2): 10 New-Order, 10 Payment and one each of Order-Status,
// Delivery and Stock-Level, so that every 23 transactions hold the mix
// 43.5/43.5/4.3/4.3/4.3; a New-Order is dealt to roll back 1% of the time.
func deck(r *rand.Rand) func() int {
	var cards [23]int
	for i := range cards {
		switch {
		case i < 10:
			cards[i] = opNewOrder
		case i < 20:
			cards[i] = opPayment
		default:
			cards[i] = opOrderStatus + i - 20
		}
	}
	pos := len(cards)
	return func() int {
		if pos == len(cards) {
			r.Shuffle(len(cards), func(i, j int) { cards[i], cards[j] = cards[j], cards[i] })
			pos = 0
		}
		op := cards[pos]
		pos++
		if op == opNewOrder && r.IntN(100) == 0 {
			return opNewOrderRollback
		}
		return op
	}
}

// The spec's keying times and mean think times (clause 5.2.5.7), seconds,
// by operation.
var (
	keying = [numOps]float64{18, 3, 2, 2, 2, 18}
	think  = [numOps]float64{12, 12, 10, 5, 5, 12}
)

// pauses is a terminal's wait before each transaction (clause 5.2.5):
// the think time after the last (negative exponential of the type's mean,
// truncated at 10 times it), then the keying time of the next, both scaled
// by factor.
func pauses(r *rand.Rand, factor float64) func(prev, next int) time.Duration {
	return func(prev, next int) time.Duration {
		s := keying[next]
		if prev >= 0 {
			mean := think[prev]
			s += min(-math.Log(1-r.Float64())*mean, 10*mean)
		}
		return time.Duration(s * factor * float64(time.Second))
	}
}

// observed is what a run's terminals saw: the isolation levels the server
// ran, and each terminal's counts.
type observed struct {
	workload.Isolations
	mu     sync.Mutex
	progs  []*program
	window *metrics.Snapshot
}

// counts adds up the terminals' counts, once they are done.
func (o *observed) counts() counts {
	o.mu.Lock()
	defer o.mu.Unlock()
	var c counts
	for _, p := range o.progs {
		c.add(p.counts)
	}
	return c
}

// validateRun: --wait runs the spec's terminals, 10 per warehouse, in a
// closed loop of one process.
func (g *tpcc) validateRun(r workload.RunSettings) error {
	c := &g.cfg
	if c.wait == 0 {
		return nil
	}
	n := terminalsPerWH * c.warehouses
	switch {
	case r.Rate > 0:
		return fmt.Errorf("--wait runs terminals that wait their keying and think times, a closed loop: not with --rate")
	case r.Instances > 1:
		return fmt.Errorf("--wait with --instance: the terminals of a warehouse would be split between processes; run --wait in one")
	case r.ConcurrencySet && r.Concurrency != n:
		return fmt.Errorf("--wait runs 10 terminals per warehouse, %d for --warehouses %d: --concurrency %d is not that (leave it out)", n, c.warehouses, r.Concurrency)
	}
	return nil
}

// before are the server's counts before a run, for its cross-check.
type before struct {
	nextOrders, history int64
	load                CValues
}

// ops prepares a run: the schema must be complete, with the warehouses
// given (if given); the server's counts before it are read for the
// cross-check.
func (g *tpcc) ops(ctx context.Context, t *pg.Target, opts workload.RunOptions) (*workload.QueryLoad, error) {
	conn, err := connect(ctx, t)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := g.require(ctx, conn, "run tpcc"); err != nil {
		return nil, err
	}
	var b before
	if err := conn.QueryRow(ctx, `SELECT (SELECT sum(d_next_o_id) FROM district), (SELECT count(*) FROM history),
		c_last, c_id, c_item FROM `+metaTable).Scan(&b.nextOrders, &b.history, &b.load.Last, &b.load.CID, &b.load.Item); err != nil {
		return nil, fmt.Errorf("run tpcc: reading the district's order ids and %s: %w", metaTable, err)
	}
	c := g.cfg
	runC := runC(rand.New(rand.NewPCG(opts.Seed, runCSeed)), b.load)
	if opts.Log != nil {
		fmt.Fprintf(opts.Log, "tpcc: %s; NURand's C values of the run: %s (the load's: %s)\n", plural(c.warehouses, "warehouse"), runC, b.load)
	}
	obs := &observed{}
	st := newStatements(c.isolation, t.Pooled())
	markName := "tpcc_mark"
	if t.Pooled() {
		markName = ""
	}
	load := &workload.QueryLoad{
		Ops:      opNames[:],
		Protocol: workload.ProtocolOf(st.begin, st.commit),
		Chooser: func(id int) func() int {
			return deck(rand.New(rand.NewPCG(opts.Seed^deckSeed, uint64(opts.FirstClient+id))))
		},
		Drive: workload.Programs(t, func(id int) workload.Program {
			gid := opts.FirstClient + id
			p := &program{st: st, warehouses: c.warehouses, c: runC, obs: obs,
				rng:  rand.New(rand.NewPCG(opts.Seed, uint64(gid))),
				mark: workload.NewMark(opts, id, markName)}
			p.home, p.dist = g.terminal(gid)
			obs.mu.Lock()
			obs.progs = append(obs.progs, p)
			obs.mu.Unlock()
			return p
		}),
		Measured: func(w *metrics.Snapshot) { obs.window = w },
		Report: func(ctx context.Context, all *metrics.Snapshot) (*workload.CheckResult, error) {
			return g.runReport(ctx, t, all, obs, b, runC)
		},
	}
	if c.wait > 0 {
		load.Clients = terminalsPerWH * c.warehouses
		load.Pause = func(id int) func(prev, next int) time.Duration {
			return pauses(rand.New(rand.NewPCG(opts.Seed^pauseSeed, uint64(opts.FirstClient+id))), c.wait)
		}
	}
	return load, nil
}

// terminal is client gid's warehouse and district: with --wait, terminal
// gid is the (gid mod 10)+1-th of warehouse gid/10+1; without, the clients
// go round the warehouses, then their districts.
func (g *tpcc) terminal(gid int) (w, d int) {
	n := g.cfg.warehouses
	if g.cfg.wait > 0 {
		return gid/terminalsPerWH%n + 1, gid%terminalsPerWH + 1
	}
	return gid%n + 1, gid/n%districtsPerWH + 1
}
