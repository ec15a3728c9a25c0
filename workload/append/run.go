package append

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/txload/txload/history"
	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// runState is what a run's clients share: the generator of transactions
// (the window of active keys, the next value of each), the one clock every
// event of the history is stamped with, and the line of events to the
// checker, which runs on a goroutine of its own.
//
// Every event is stamped under mu from one clock that never repeats a
// time, so the line holds them in the order of their times: each attempt's
// invocation before its completion, a key's retirement after the last
// invocation that drew it. The checker's progress mark is then the
// invocation time of the earliest attempt still running.
type runState struct {
	cfg      *config
	programs []*program // every client's, for the attempts a run abandons
	first    int64      // the run's first key: the final read reads from it up

	mu      sync.Mutex
	start   time.Time
	clock   time.Duration // the last time stamped
	window  []int64
	nextKey int64
	writes  map[int64]int // appends drawn, per active key
	events  []event
	free    []event
	closed  bool
	wake    chan struct{}
	done    chan struct{}

	// The checker's side, touched by its goroutine only until done.
	checker  *history.Checker
	spool    *os.File // the history as it is written, copied to --history at the end
	jsonl    *history.JSONLWriter
	edn      *history.EDNWriter
	inflight map[int]time.Duration // client: invocation of its attempt under way
	order    []inflight            // invocations in time order (some ended)
	last     time.Duration         // the time of the last event
	checkErr error                 // the checker or the spool failed
	busy     time.Duration         // time spent checking and writing
	backlog  int                   // the most events that waited at once

	// spoolName is the spool's path while it has one: "" once removed
	// from its directory (at its creation, where the system allows it).
	spoolName string

	finishOnce sync.Once
	result     *workload.CheckResult
	finishErr  error
}

type eventKind uint8

const (
	evInvoke eventKind = iota
	evComplete
	evRetire
)

type event struct {
	kind eventKind
	a    history.Attempt // invoke, complete
	key  int64           // retire
	at   time.Duration   // retire
}

type inflight struct {
	client int
	at     time.Duration
}

func newRunState(cfg *config, first int64, opts workload.RunOptions) (*runState, error) {
	if first > math.MaxInt32-int64(cfg.keys) {
		return nil, fmt.Errorf("the append tables hold keys up to %d: no INT keys are left; run `txload init append --drop`", first-1)
	}
	r := &runState{cfg: cfg, first: first, nextKey: first + int64(cfg.keys), writes: map[int64]int{},
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		checker: history.NewChecker(), inflight: map[int]time.Duration{}}
	if err := r.checker.ExpectFinal(); err != nil {
		return nil, err
	}
	for k := range int64(cfg.keys) {
		r.window = append(r.window, first+k)
	}
	if cfg.history != "" {
		removeStaleSpools(os.TempDir(), time.Now(), opts.Log)
		f, err := os.CreateTemp("", spoolPrefix+"*")
		if err != nil {
			return nil, fmt.Errorf("--history: spooling the history: %w", err)
		}
		// Out of the directory at once: the spool goes with the process,
		// however it ends (kill -9 included), as the interval spool does.
		r.spool = f
		if os.Remove(f.Name()) != nil {
			r.spoolName = f.Name()
		}
		// The file records the level its attempts ran at: check append
		// judges it there.
		// And the run's clients: check names an attempt by another.
		clients := opts.FirstClient + opts.Concurrency
		if cfg.edn {
			r.edn = history.NewEDNWriter(f)
			r.edn.SetLevel(cfg.level())
			r.edn.SetClients(clients)
		} else {
			r.jsonl = history.NewJSONLWriter(f)
			r.jsonl.SetLevel(cfg.level())
			r.jsonl.SetClients(clients)
		}
	}
	return r, nil
}

// begin starts the history's clock and the checker.
func (r *runState) begin(start time.Time) {
	r.mu.Lock()
	r.start = start
	r.mu.Unlock()
	go r.consume()
}

// stamp is the history's time for now: after every time stamped before.
// mu is held.
func (r *runState) stamp(now time.Time) time.Duration {
	d := max(now.Sub(r.start), r.clock+1)
	r.clock = d
	return d
}

func (r *runState) push(e event) {
	r.events = append(r.events, e)
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// draw gives p its attempt's operations, as Elle's generator draws them:
// --min-ops to --max-ops operations, each a read or an append (even odds)
// of a key drawn uniformly from the window; an append takes the key's next
// value, and the key's last one (--max-writes-per-key) takes it out of
// the window for a new key.
func (r *runState) draw(p *program) error {
	c := r.cfg
	n := c.minOps + p.rng.IntN(c.maxOps-c.minOps+1)
	ops := make([]history.Op, n)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("append: the run's history is closed")
	}
	now := time.Now()
	at := r.stamp(now)
	var retired []int64
	for i := range ops {
		slot := p.rng.IntN(len(r.window))
		k := r.window[slot]
		if p.rng.IntN(2) == 0 {
			ops[i] = history.Op{Kind: history.Read, Key: k}
			continue
		}
		r.writes[k]++
		ops[i] = history.A(k, int64(r.writes[k]))
		if r.writes[k] == c.maxWrites {
			if r.nextKey > math.MaxInt32 {
				return fmt.Errorf("append: the keys reached %d, the largest INT; run `txload init append --drop`", math.MaxInt32)
			}
			delete(r.writes, k)
			r.window[slot] = r.nextKey
			r.nextKey++
			retired = append(retired, k)
		}
	}
	intended := min(max(p.intended.Sub(r.start), 0), at)
	p.a = history.Attempt{Client: p.client, Intended: intended, Invoke: at, Ops: ops}
	p.open = true
	// The invocation gets its own operations: the client fills in its
	// reads' lists while the checker's goroutine writes the invocation.
	inv := p.a
	inv.Ops = slices.Clone(ops)
	r.push(event{kind: evInvoke, a: inv})
	for _, k := range retired {
		r.push(event{kind: evRetire, key: k, at: at + 1})
	}
	return nil
}

// complete ends p's attempt with outcome.
func (r *runState) complete(p *program, outcome history.Outcome, state string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p.open = false
	if r.closed {
		return
	}
	p.a.Outcome, p.a.SQLState = outcome, state
	p.a.Complete = r.stamp(now)
	r.push(event{kind: evComplete, a: p.a})
}

// consume feeds the events to the history file and the checker until the
// run is finished.
func (r *runState) consume() {
	defer close(r.done)
	for {
		<-r.wake
		r.mu.Lock()
		batch, closed := r.events, r.closed
		r.events, r.free = r.free, nil
		r.mu.Unlock()
		if len(batch) > 0 {
			start := time.Now()
			r.backlog = max(r.backlog, len(batch))
			for i := range batch {
				r.handle(&batch[i])
				batch[i] = event{}
			}
			r.progress()
			r.busy += time.Since(start)
		}
		r.mu.Lock()
		if r.free == nil {
			r.free = batch[:0]
		}
		r.mu.Unlock()
		if closed {
			return
		}
	}
}

func (r *runState) handle(e *event) {
	var err error
	r.last = max(r.last, e.a.Invoke, e.a.Complete, e.at-1)
	switch e.kind {
	case evInvoke:
		r.inflight[e.a.Client] = e.a.Invoke
		r.order = append(r.order, inflight{e.a.Client, e.a.Invoke})
		if r.edn != nil {
			err = r.edn.Invoke(e.a)
		}
	case evComplete:
		delete(r.inflight, e.a.Client)
		switch {
		case r.edn != nil:
			err = r.edn.Complete(e.a)
		case r.jsonl != nil:
			err = r.jsonl.Write(e.a)
		}
		if err != nil {
			err = fmt.Errorf("--history: writing the history: %w", err)
		} else if r.checkErr == nil {
			err = r.checker.Add(e.a)
		}
	case evRetire:
		if r.checkErr == nil {
			err = r.checker.Retire(e.key, e.at)
		}
	}
	if err != nil && r.checkErr == nil {
		r.checkErr = err
	}
}

// progress tells the checker that every attempt invoked before the
// earliest one still running has been added.
func (r *runState) progress() {
	for len(r.order) > 0 {
		f := r.order[0]
		if at, ok := r.inflight[f.client]; ok && at == f.at {
			break
		}
		r.order = r.order[1:]
	}
	if r.checkErr != nil {
		return
	}
	mark := r.last + 1 // nothing runs: the next invocation comes later
	if len(r.order) > 0 {
		mark = r.order[0].at
	}
	if err := r.checker.Progress(mark); err != nil {
		r.checkErr = err
	}
}

// finish ends the history once the clients are done: the attempts still
// running (abandoned at the drain deadline or an interrupt) end with an
// unknown outcome; the checker finishes, the file is written; then, with a
// target, the final read of every key of the run is held to the history.
func (r *runState) finish(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
	r.finishOnce.Do(func() { r.result, r.finishErr = r.close(ctx, t) })
	return r.result, r.finishErr
}

func (r *runState) close(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
	now := time.Now()
	r.mu.Lock()
	started := !r.start.IsZero()
	if started {
		for _, p := range r.programs {
			if p.open {
				p.a.Outcome, p.a.SQLState, p.a.Complete = history.Unknown, "", r.stamp(now)
				p.open = false
				r.push(event{kind: evComplete, a: p.a})
			}
		}
	}
	r.closed = true
	r.mu.Unlock()
	if started {
		// A token already waiting wakes the consumer as well.
		select {
		case r.wake <- struct{}{}:
		default:
		}
		<-r.done
	}
	if r.spool != nil {
		if r.spoolName != "" {
			defer os.Remove(r.spoolName)
		}
		defer r.spool.Close()
	}
	if r.checkErr != nil {
		return nil, fmt.Errorf("checking the history: %w", r.checkErr)
	}
	checkStart := time.Now()
	res, err := r.checker.Close()
	r.busy += time.Since(checkStart)
	if err != nil {
		return nil, fmt.Errorf("checking the history: %w", err)
	}
	if r.spool != nil {
		if err := r.writeHistory(ctx); err != nil {
			return nil, err
		}
	}
	elapsed := now.Sub(r.start)
	if !started {
		elapsed = 0
	}
	var final *finalResult
	if t != nil && started {
		if res, err := workload.CheckColumns(ctx, t, workload.ColumnsOf(schemaDDL)); res != nil || err != nil {
			return res, err
		}
		// Every key the run drew is at or above its first: nothing else
		// writes there, so every row from it up is held to the history.
		if final, err = finalRead(ctx, t, r.checker, r.first, math.MaxInt32, false); err != nil {
			return nil, err
		}
		res = final.res
	}
	return r.report(res, final, elapsed), nil
}

// writeHistory copies the spool to --history.
func (r *runState) writeHistory(ctx context.Context) error {
	var err error
	if r.edn != nil {
		err = r.edn.Flush()
	} else {
		err = r.jsonl.Flush()
	}
	if err == nil {
		_, err = r.spool.Seek(0, io.SeekStart)
	}
	if err == nil {
		err = outfile.Write(ctx, r.cfg.history, func(w io.Writer) error {
			bw := bufio.NewWriterSize(w, 1<<20)
			if _, err := io.Copy(bw, r.spool); err != nil {
				return err
			}
			return bw.Flush()
		})
	}
	if err != nil {
		return fmt.Errorf("--history %s: %w", r.cfg.history, err)
	}
	return nil
}
