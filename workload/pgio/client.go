package pgio

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/workload"
)

// SelectSQL reads a range of rows of table: its statement for pgio's
// SELECT, prepared.
func SelectSQL(table string) string {
	return "SELECT count(*), sum(scratch) FROM " + table + " WHERE mykey BETWEEN $1 AND $2"
}

// UpdateSQL changes a range of rows of table.
func UpdateSQL(table string) string {
	return "UPDATE " + table + " SET scratch = scratch + 1 WHERE mykey BETWEEN $1 AND $2"
}

// pgio's own operations in client mode, which the engine never sees: a
// boundary's work, and a session's end.
const (
	opBoundary = -1 - iota
	opClose
)

// flushSQL makes the backend flush its statistics (ForceFlush).
const flushSQL = "SELECT pg_stat_force_next_flush()"

// basePoll is how often a session that waits for the counters to be
// sampled at the end of the warm-up looks again.
const basePoll = 200 * time.Microsecond

// client is one client-mode session on the executor: pgio's statements
// from txload on its own connection, prepared; each its own transaction,
// or (--commit run) every statement of a phase in one.
//
// Its session (clientSession) is the engine's, which decides when a
// statement starts, is retried, reconnects or stops, with what pgio does
// around those decisions: its boundaries (before the engine is asked for
// the next statement, or told of the last one's end), --statements, the
// end of a session whose transaction failed, and its last commit and
// flush, run as operations of its own (opBoundary, opClose). As a Program
// it runs them and pgio's statements. The executor calls both from the
// client's loop only.
type client struct {
	engine        workload.Session
	r             *Run
	s             int
	col           *Collector // the run's, once it started
	sel, upd      *executor.Stmt
	begin, commit *executor.Stmt
	rng           *rand.Rand
	limit, count  int64 // --statements, and the measured ones started

	// The operation under way: its kind and intended start (a statement's,
	// as the engine started it), its key range's start, and the rows it
	// touched.
	op       int
	kind     Kind
	intended time.Time
	key      int64
	rows     int64
	begun    bool // the statement's BEGIN is in flight (--commit run)
	started  bool // the session's first statement started

	// next is the first boundary of the run the session has not reached;
	// from and base are those of the boundary op under way (base: the
	// start of the measured period); waitEnd bounds its wait for the
	// counters' sample.
	next, from int
	base       bool
	waiting    bool
	waitEnd    time.Time
	// held is the engine's call a boundary op put off: the end of the
	// statement before it (heldDone, with its error), or asking for the
	// next one.
	held    heldCall
	heldErr error

	inTx       bool // a --commit run transaction is open
	committing bool // the exchange in flight begins with its COMMIT
	dead       bool // the session ended on an error (fail)
	closed     bool // its close op ran
}

type heldCall uint8

const (
	heldNone heldCall = iota
	heldNext
	heldDone
)

// clientSession is a client's session: the engine's, with pgio's work.
type clientSession struct{ *client }

var (
	_ workload.Session = clientSession{}
	_ executor.Setuper = (*client)(nil)
)

// newClient makes session s of a client-mode run, on the engine's session.
func (r *Run) newClient(s int, sess workload.Session) *client {
	table := r.TableOf(s)
	return &client{engine: sess, r: r, s: s, limit: r.cfg.Statements, rng: rand.New(rand.NewPCG(r.opts.Seed, uint64(s))),
		sel:   &executor.Stmt{SQL: SelectSQL(table), Name: "pgio_select"},
		upd:   &executor.Stmt{SQL: UpdateSQL(table), Name: "pgio_update"},
		begin: &executor.Stmt{SQL: "BEGIN", Begins: true}, commit: &executor.Stmt{SQL: "COMMIT", Commits: true}}
}

// collector is the run's collector: the run started before any session
// is called.
func (p *client) collector() *Collector {
	if p.col == nil {
		p.col = p.r.Collector()
	}
	return p.col
}

// simple queues s with the simple protocol.
func simple(c *executor.Conn, s *executor.Stmt) { c.Simple([]byte(s.SQL), s, executor.CaptureNone) }

// ID is the engine's session's.
func (s clientSession) ID() int { return s.engine.ID() }

// StatementAt is the engine's session's.
func (s clientSession) StatementAt(op, stmt int, d time.Duration, now time.Time) {
	s.engine.StatementAt(op, stmt, d, now)
}

// Next: the session reaches a boundary it passed before the engine is
// asked for its next statement.
func (s clientSession) Next(now time.Time) workload.Step {
	p := s.client
	if p.boundaryDue(now) {
		p.held = heldNext
		return own(opBoundary)
	}
	return p.admit(p.engine.Next(now))
}

// Done ends the operation under way: one of the session's own, or a
// statement, whose end the engine is told after the boundary it passed.
func (s clientSession) Done(now time.Time, err error, _ int) workload.Step {
	p := s.client
	switch p.op {
	case opBoundary:
		if err != nil {
			// Lost before the boundary was reached: it is, flushed or not.
			p.ownFailed(now, err)
			p.r.reached(p.from, p.next)
		}
		return p.afterBoundary(now)
	case opClose:
		if err != nil {
			p.ownFailed(now, err)
		}
		p.end()
		return workload.Step{Kind: workload.Stop}
	}
	if err != nil && p.inTx {
		// --commit run: the error ended the session's transaction (the
		// executor rolled it back), and the session with it, as a pgio
		// session.
		p.engine.Done(now, err, -1)
		p.fail(now, err)
		return p.close()
	}
	if p.boundaryDue(now) {
		p.held, p.heldErr = heldDone, err
		return own(opBoundary)
	}
	return p.done(now, err)
}

// Connected passes a connection attempt's outcome on to the engine.
func (s clientSession) Connected(now time.Time, err error) workload.Step {
	return s.admit(s.engine.Connected(now, err))
}

// done records the statement under way, which ended at now, and tells the
// engine: both count it at the same time.
func (p *client) done(now time.Time, err error) workload.Step {
	if err == nil {
		p.collector().Record(p.s, p.kind, p.intended, now.Sub(p.intended), p.rows)
	}
	return p.admit(p.engine.Done(now, err, -1))
}

// afterBoundary makes the engine call the boundary op put off.
func (p *client) afterBoundary(now time.Time) workload.Step {
	held := p.held
	p.held = heldNone
	if held == heldDone {
		return p.done(now, p.heldErr)
	}
	if p.dead {
		return p.close()
	}
	return p.admit(p.engine.Next(now))
}

// admit passes the engine's step on, unless the session is over: it ended
// on an error, the engine stopped it, or it started --statements measured
// statements. It then closes.
func (p *client) admit(step workload.Step) workload.Step {
	if p.dead || step.Kind == workload.Stop {
		return p.close()
	}
	if step.Kind == workload.Start {
		if step.Attempt == 1 && !step.Intended.Before(p.collector().Measured()) {
			if p.limit > 0 && p.count == p.limit {
				return p.close()
			}
			p.count++
		}
		p.kind, p.intended = Kind(step.Op), step.Intended
	}
	return step
}

// close is the step that ends the session: its close op, once.
func (p *client) close() workload.Step {
	if p.closed {
		return workload.Step{Kind: workload.Stop}
	}
	return own(opClose)
}

func own(op int) workload.Step { return workload.Step{Kind: workload.Start, Op: op, Attempt: 1} }

// boundaryDue says whether the session passed a boundary it has not
// reached.
func (p *client) boundaryDue(now time.Time) bool {
	return p.next < len(p.r.bounds) && !now.Before(p.r.bounds[p.next])
}

// Setup prepares the session's statements on a new connection, and flushes
// what its backend read to set itself up (the catalogs), so that it is not
// counted in the period it is used in.
func (p *client) Setup(c *executor.Conn) {
	c.Prepare(p.sel)
	c.Prepare(p.upd)
	if p.r.sampler.Flush {
		c.Simple([]byte(flushSQL), nil, executor.CaptureNone)
	}
}

// Connected: a new connection holds no transaction of the session's.
func (p *client) Connected(*executor.Conn) { p.inTx = false }

// Start begins operation op: one of the session's own, or a statement of
// that kind. A retry repeats the key range of the first attempt. Under
// --commit run the first statement of a phase opens its transaction.
func (p *client) Start(c *executor.Conn, op, attempt int) executor.Action {
	p.op = op
	switch op {
	case opBoundary:
		return p.startBoundary(c)
	case opClose:
		return p.startClose(c)
	}
	p.begun = false
	col := p.collector()
	if !p.started {
		p.started = true
		col.Started(p.s, p.intended)
	}
	col.Through(p.s, p.intended)
	if attempt == 1 {
		first, _ := p.r.cfg.Span(p.kind)
		p.key = Key(p.rng, first)
	}
	if p.r.cfg.Commit == CommitRun && !p.inTx {
		p.begun = true
		simple(c, p.begin)
		return executor.Action{Kind: executor.Await}
	}
	return p.send(c)
}

// send queues the statement.
func (p *client) send(c *executor.Conn) executor.Action {
	_, width := p.r.cfg.Span(p.kind)
	stmt, capture := p.upd, executor.CaptureNone
	if p.kind == Select {
		stmt, capture = p.sel, executor.CaptureFirst
	}
	c.Bind(stmt, capture).Int(p.key).Int(p.key + width - 1).Send()
	return executor.Action{Kind: executor.Await}
}

// Resume reads what the operation under way awaited.
func (p *client) Resume(c *executor.Conn) executor.Action {
	switch p.op {
	case opBoundary:
		return p.resumeBoundary(c)
	case opClose:
		p.committed(c)
		return executor.Action{Kind: executor.Finish, Stmt: -1}
	}
	res := c.Result(0)
	if res.Err != nil {
		p.begun = false
		return executor.Action{Kind: executor.Finish, Err: res.Err, Stmt: -1}
	}
	if p.begun {
		p.begun, p.inTx = false, true
		return p.send(c)
	}
	if p.kind == Select {
		v, _ := res.Value(0, 0)
		p.rows = atoi(v)
	} else {
		tag := res.Tag()
		p.rows = atoi(tag[bytes.LastIndexByte(tag, ' ')+1:])
		p.r.wrote(p.s, p.phase(p.intended))
	}
	return executor.Action{Kind: executor.Finish, Stmt: -1}
}

// startBoundary reaches the boundaries the session passed. At the end of
// the warm-up it ends its transaction (--commit run), flushes its
// statistics and waits (a millisecond or so) until the counters are
// sampled, so that they start the measured period exactly: the statements
// before are the warm-up's, those after the measured period's. At an
// interval's end it flushes them when the database's counters are the
// run's only per-interval block counts (Run.flushEach), and goes on.
func (p *client) startBoundary(c *executor.Conn) executor.Action {
	r := p.r
	p.from, p.base = p.next, false
	for p.boundaryDue(c.Now) {
		p.base = p.base || (r.opts.Warmup > 0 && r.bounds[p.next].Equal(p.collector().Measured()))
		p.next++
	}
	if p.base && p.inTx {
		p.inTx, p.committing = false, true
		simple(c, p.commit)
	}
	if r.sampler.Flush && (p.base || r.flushEach()) {
		c.Simple([]byte(flushSQL), nil, executor.CaptureNone)
	}
	if c.Results() > 0 {
		return executor.Action{Kind: executor.Await}
	}
	return p.reached(c.Now)
}

// resumeBoundary goes on once the boundary's exchange is in, or the wait
// for the counters' sample polls.
func (p *client) resumeBoundary(c *executor.Conn) executor.Action {
	if p.waiting {
		return p.awaitBase(c.Now)
	}
	p.committed(c)
	return p.reached(c.Now)
}

// reached tells the run the session reached its boundaries, and at the
// start of the measured period waits for their sample.
func (p *client) reached(now time.Time) executor.Action {
	p.r.reached(p.from, p.next)
	if !p.base {
		return executor.Action{Kind: executor.Finish, Stmt: -1}
	}
	p.waiting, p.waitEnd = true, now.Add(2*time.Second)
	return p.awaitBase(now)
}

// awaitBase ends the boundary op once the counters were sampled at the
// start of the measured period, or two seconds passed; it looks again
// every basePoll until then.
func (p *client) awaitBase(now time.Time) executor.Action {
	select {
	case <-p.r.baseTaken:
	default:
		if now.Before(p.waitEnd) {
			return executor.Action{Kind: executor.Sleep, At: now.Add(basePoll)}
		}
	}
	p.waiting = false
	return executor.Action{Kind: executor.Finish, Stmt: -1}
}

// startClose ends the session's transaction (--commit run) and flushes its
// statistics, so that the run's last sample of the database's counters
// holds all of its work.
func (p *client) startClose(c *executor.Conn) executor.Action {
	if p.inTx {
		p.inTx, p.committing = false, true
		simple(c, p.commit)
	}
	if p.r.sampler.Flush {
		c.Simple([]byte(flushSQL), nil, executor.CaptureNone)
	}
	if c.Results() > 0 {
		return executor.Action{Kind: executor.Await}
	}
	return executor.Action{Kind: executor.Finish, Stmt: -1}
}

// committed reads the COMMIT an own op began with: its failure is the
// session's.
func (p *client) committed(c *executor.Conn) {
	if p.committing {
		p.committing = false
		if err := c.Result(0).Err; err != nil {
			p.fail(c.Now, fmt.Errorf("committing its transaction: %w", err))
		}
	}
}

// ownFailed: the connection was lost during an own op; a COMMIT in flight
// fails the session.
func (p *client) ownFailed(now time.Time, err error) {
	if p.committing {
		p.committing = false
		p.fail(now, fmt.Errorf("committing its transaction: %w", err))
	}
}

// end: the session is over; the sampler waits for no boundary of it any
// more.
func (p *client) end() {
	if p.closed {
		return
	}
	p.closed = true
	r := p.r
	p.collector().Done(p.s)
	r.reached(p.next, len(r.bounds))
	p.next = len(r.bounds)
}

func (p *client) phase(t time.Time) int {
	if t.Before(p.collector().Measured()) {
		return 0
	}
	return 1
}

// fail ends the session on err at at: its transaction is rolled back (by
// the executor, or with the connection) and the run says so.
func (p *client) fail(at time.Time, err error) {
	p.inTx, p.dead = false, true
	p.r.sessionFailed(p.s, p.phase(at), at, err)
}

// atoi reads a count the server sent; 0 when it is not one.
func atoi(b []byte) int64 {
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		n = 10*n + int64(c-'0')
	}
	return n
}

// StartClient starts a client-mode run whose sessions are connected: its
// clock, and the first sample of the counters, taken before any statement.
func (r *Run) StartClient(ctx context.Context, start time.Time) error {
	r.begin(ctx, start.Add(r.opts.Warmup))
	s, err := r.sampler.Sample(ctx)
	if err != nil {
		return err
	}
	s.At = start
	if r.opts.Warmup == 0 {
		r.setBase(s)
	}
	r.Collector().Sample(s)
	r.sampleLoop(ctx, 0, start.Add(1))
	return nil
}
