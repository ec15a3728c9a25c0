package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/workload"
)

// client is the engine's side of one client: the schedule, the timing from
// the intended start, retries, reconnection and recording. It implements
// workload.Session; whatever drives the client calls it from one goroutine.
type client struct {
	r      *run
	g      *group
	id     int
	choose func() int
	// pause, if set, is how long the client pauses before an operation
	// (QueryLoad.Pause); last is the operation that ended (-1: none yet);
	// held says a pause is under way before operation heldOp, intended
	// at heldAt.
	pause  func(prev, next int) time.Duration
	last   int
	held   bool
	heldOp int
	heldAt time.Time

	// The operation under way.
	op, attempt     int
	intended, start time.Time
	attemptStart    time.Time // when the attempt under way began
	measured        bool
	busy            bool // an operation started and has not ended
	stopped         bool // the client said Stop
	retryAfterReset bool // the operation is retried once reconnected

	backoff     time.Duration
	attempts    int       // failed connection attempts since the last success
	reconnectAt time.Time // when the last connection attempt was scheduled

	done int   // transactions ended (committed or failed for good), for Config.Transactions
	txns int64 // transactions reported to Config.OnTxn, skipped ones included

	// Config.ConnectPerTxn: fresh says the connection was made for the next
	// transaction; connFrom is when the client asked for it; pending is
	// the arrival (its operation, whether measured) it is for, in open loop.
	fresh      bool
	connFrom   time.Time
	pending    bool
	pendingAt  time.Time
	pendingOp  int
	pendingMsr bool
}

var _ workload.Session = (*client)(nil)

// ID is the client's number.
func (c *client) ID() int { return c.id }

// Next starts the next operation when it is due: at once in closed loop,
// at the next arrival of the group's schedule in open loop.
func (c *client) Next(now time.Time) workload.Step { return c.next(now, true) }

func (c *client) next(now time.Time, idle bool) workload.Step {
	if c.r.stopped() {
		return c.stop(now)
	}
	if c.pending {
		c.pending = false
		return c.begin(c.pendingOp, c.pendingAt, now, c.pendingMsr)
	}
	return c.step(c.r.mode.next(c, now, idle), now)
}

// skip counts an operation that would have started too late (open loop,
// Config.LatencyLimit) and never ran.
func (c *client) skip(op int, intended, now time.Time, measured bool) {
	c.recorder(now).Skip(op, measured)
	if c.r.cfg.OnTxn != nil {
		c.txn(Txn{Op: op, Intended: intended, Start: now, End: now, Outcome: TxnSkipped, Measured: measured})
	}
}

// reconnect asks for the new connection of the next transaction
// (Config.ConnectPerTxn).
func (c *client) reconnect(now time.Time) workload.Step {
	c.connFrom = now
	return c.askConnection(now)
}

func (c *client) begin(op int, intended, now time.Time, measured bool) workload.Step {
	c.fresh = false
	c.op, c.attempt, c.intended, c.start, c.measured, c.busy = op, 1, intended, now, measured, true
	c.last = op
	c.attemptStart = now
	return workload.Step{Kind: workload.Start, Op: op, Attempt: 1, Intended: intended}
}

func (c *client) retry(now time.Time) workload.Step {
	c.attempt++
	c.busy, c.attemptStart = true, now
	return workload.Step{Kind: workload.Start, Op: c.op, Attempt: c.attempt, Intended: c.intended}
}

// stop ends the client at now: it runs no more operations.
func (c *client) stop(now time.Time) workload.Step {
	if !c.stopped {
		c.stopped = true
		c.r.clientStopped(now)
	}
	return workload.Step{Kind: workload.Stop}
}

// recorder is where what ended at now is recorded: the window's, or from
// its end on (the end of the duration, an interrupt) the late one, whose
// figures are the drain's. The decision is by the time the operation ended,
// whatever the order in which the records reach the registry.
func (c *client) recorder(now time.Time) *metrics.Recorder {
	if c.r.late(now) {
		return c.g.late
	}
	return c.g.rec
}

// Done ends the attempt under way and decides what follows.
func (c *client) Done(now time.Time, err error, stmt int) workload.Step {
	r, rec := c.r, c.recorder(now)
	if err == nil {
		c.succeeded(now)
		return c.next(now, false)
	}
	if aa := (*workload.AbortAfter)(nil); errors.As(err, &aa) {
		// Done, but the client cannot go on: counted, then ended.
		c.succeeded(now)
		r.abort(c, err, stmt)
		return c.stop(now)
	}
	class, fatal := r.cfg.Classify(err)
	if r.ctx.Err() != nil {
		// Interrupted, or the drain deadline. An attempt the executor
		// cut before its COMMIT was sent, or that the server answered
		// (the executor cancels what is in flight and reads the answer),
		// did not commit: it failed, with no retry. One whose COMMIT was
		// in flight, or that the context itself ended, stays in flight:
		// abandoned, its outcome unknown.
		if class != metrics.AmbiguousCommit && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			c.busy = false
			c.done++
			rec.Error(c.op, c.measured, class)
			rec.Failure(c.op, c.measured, class, c.attempt)
			r.noteError(class, err)
			if r.cfg.OnTxn != nil {
				c.ended(now, failed(class), class)
			}
		}
		return c.stop(now)
	}
	c.busy = false
	retry := !fatal && class.Retryable() && c.attempt < r.cfg.MaxTries
	if c.measured && stmt >= 0 {
		rec.StatementError(c.op, stmt, retry)
	}
	rec.Error(c.op, c.measured, class)
	r.noteError(class, err)
	if r.cfg.OnError != nil {
		r.cfg.OnError(ErrorEvent{Client: c.id, Op: r.ops[c.op], OpIndex: c.op, Stmt: stmt, At: now, Intended: c.intended,
			Attempt: c.attempt, Class: class, Retry: retry, Err: err})
	}
	if !retry {
		c.done++
		rec.Failure(c.op, c.measured, class, c.attempt)
		if r.cfg.OnTxn != nil {
			c.ended(now, failed(class), class)
		}
	}
	if fatal {
		r.setFatal(fmt.Errorf("running %s: %w", r.ops[c.op], err))
		return c.stop(now)
	}
	if inner, ok := keepsConnection(err); ok && class == metrics.AmbiguousCommit {
		// Of unknown outcome on a connection still good (an attempt that
		// committed part of itself, then failed): not retried, and the
		// client goes on on it. It reconnected, its session's prepared
		// statements and settings lost (retest 14). The error itself, if
		// no retry would have cured it (a constraint, a script's error),
		// still ends the client as it does elsewhere. (Where the run's
		// Classify makes it another class, as txload pgbench's does to
		// abort the client as pgbench would, that class decides.)
		if ic, _ := r.cfg.Classify(inner); !ic.Retryable() && !r.cfg.ContinueOnError {
			r.abort(c, err, stmt)
			return c.stop(now)
		}
		return c.next(now, false)
	}
	if class == metrics.ConnectionLost || class == metrics.AmbiguousCommit {
		c.retryAfterReset = retry
		c.busy = retry
		return c.askConnection(now)
	}
	if retry {
		return c.retry(now)
	}
	if !class.Retryable() && !r.cfg.ContinueOnError {
		r.abort(c, err, stmt)
		return c.stop(now)
	}
	return c.next(now, false)
}

// keepsConnection says err ended an attempt on a connection that is still
// good, though its class is one of a lost connection's (pg.PartlyCommitted),
// and gives the error it marks.
func keepsConnection(err error) (inner error, ok bool) {
	var k interface {
		KeepsConnection() bool
		Unwrap() error
	}
	if errors.As(err, &k) && k.KeepsConnection() {
		return k.Unwrap(), true
	}
	return nil, false
}

// succeeded counts the operation under way as done.
func (c *client) succeeded(now time.Time) {
	r, rec := c.r, c.recorder(now)
	c.busy = false
	c.done++
	rec.Success(c.op, c.measured, now.Sub(c.intended), now.Sub(c.start), c.start.Sub(c.intended), c.attempt)
	if r.cfg.LatencyLimit > 0 && now.Sub(c.intended) > r.cfg.LatencyLimit {
		rec.Late(c.op, c.measured)
	}
	r.reachableAt(c.attemptStart, now)
	if r.cfg.OnTxn != nil {
		c.ended(now, TxnOK, 0)
	}
}

// askConnection asks for a connection attempt at.
func (c *client) askConnection(at time.Time) workload.Step {
	c.reconnectAt = at
	return workload.Step{Kind: workload.Reconnect, At: at}
}

// Connected decides what follows a connection attempt.
func (c *client) Connected(now time.Time, err error) workload.Step {
	r := c.r
	if err == nil {
		c.backoff, c.attempts = 0, 0
		r.reachableAt(c.reconnectAt, now)
		if r.cfg.ConnectPerTxn {
			c.fresh = true
			if !c.connFrom.IsZero() {
				c.g.conns++
				c.g.connTime += now.Sub(c.connFrom)
				c.connFrom = time.Time{}
			}
		}
		if c.retryAfterReset {
			c.retryAfterReset = false
			return c.retry(now)
		}
		return c.next(now, false)
	}
	if r.ctx.Err() != nil {
		return c.stop(now)
	}
	_, fatal := r.cfg.Classify(err)
	giveUp := fatal || r.stopped() || !now.Before(r.end)
	if !fatal {
		c.attempts++
		c.recorder(now).ReconnectFailed()
		r.unreachableAt(c.reconnectAt, now, err)
		if r.cfg.OnError != nil {
			r.cfg.OnError(ErrorEvent{Client: c.id, Op: "reconnect", OpIndex: -1, Stmt: -1, Attempt: c.attempts, Class: metrics.ConnectionLost, Retry: !giveUp, Err: err})
		}
	}
	if giveUp {
		c.giveUp(now)
		if fatal {
			r.setFatal(fmt.Errorf("reconnecting: %w", err))
		}
		return c.stop(now)
	}
	c.backoff = min(max(2*c.backoff, 10*time.Millisecond), time.Second)
	return c.askConnection(now.Add(c.backoff))
}

// giveUp ends a client waiting to reconnect because the run is over: the
// operation that was to be retried failed with a lost connection. At the
// drain deadline it stays in flight, to be counted as abandoned.
func (c *client) giveUp(now time.Time) {
	if c.retryAfterReset && c.r.ctx.Err() == nil {
		c.retryAfterReset, c.busy = false, false
		c.done++
		c.recorder(now).Failure(c.op, c.measured, metrics.ConnectionLost, c.attempt)
		if c.r.cfg.OnTxn != nil {
			c.ended(now, TxnFailed, metrics.ConnectionLost)
		}
	}
}

// failed is the outcome of a transaction that failed on an error of class.
func failed(class metrics.Class) TxnOutcome {
	switch class {
	case metrics.Serialization:
		return TxnSerialization
	case metrics.Deadlock:
		return TxnDeadlock
	}
	return TxnFailed
}

// ended reports the operation under way, which ended at now, to OnTxn.
func (c *client) ended(now time.Time, o TxnOutcome, class metrics.Class) {
	c.txn(Txn{Op: c.op, Intended: c.intended, Start: c.start, End: now, Outcome: o, Class: class,
		Tries: c.attempt, Measured: c.measured})
}

// txn completes t with what the client knows and reports it to OnTxn.
func (c *client) txn(t Txn) {
	c.txns++
	t.Client, t.Group, t.Number = c.id, c.g.index, c.txns
	t.Latency, t.Lag = t.End.Sub(t.Intended), t.Start.Sub(t.Intended)
	c.r.cfg.OnTxn(t)
}

// StatementAt records a statement's latency, for a measured operation, that
// ended at now: with the operation's own figures, in the window or the
// drain.
func (c *client) StatementAt(op, stmt int, d time.Duration, now time.Time) {
	if c.measured {
		c.recorder(now).Statement(op, stmt, d)
	}
}
