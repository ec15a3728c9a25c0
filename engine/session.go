package engine

import (
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

	// The operation under way.
	op, attempt     int
	intended, start time.Time
	attemptStart    time.Time // when the attempt under way began
	measured        bool
	busy            bool // an operation started and has not ended
	retryAfterReset bool // the operation is retried once reconnected

	backoff     time.Duration
	attempts    int       // failed connection attempts since the last success
	reconnectAt time.Time // when the last connection attempt was scheduled

	done int   // transactions ended (committed or failed for good), for Config.Transactions
	txns int64 // transactions reported to Config.OnTxn, skipped ones included

	// Config.Connect: fresh says the connection was made for the next
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
	r := c.r
	if r.stopped() {
		return workload.Step{Kind: workload.Stop}
	}
	if r.cfg.Rate == 0 {
		if !now.Before(r.end) || (r.cfg.Transactions > 0 && c.done >= r.cfg.Transactions) {
			return workload.Step{Kind: workload.Stop}
		}
		if r.cfg.Connect && !c.fresh {
			return c.reconnect(now)
		}
		return c.begin(c.choose(), now, now, !now.Before(r.measureStart))
	}
	if c.pending {
		c.pending = false
		return c.begin(c.pendingOp, c.pendingAt, now, c.pendingMsr)
	}
	a := &c.g.arrivals
	for {
		at, ok := a.peek()
		if !ok {
			return workload.Step{Kind: workload.Stop}
		}
		if at.After(now) {
			return workload.Step{Kind: workload.Wait, At: at}
		}
		a.pop()
		late := now.Sub(at)
		if late > r.cfg.MaxLag {
			r.saturate()
			return workload.Step{Kind: workload.Stop}
		}
		measured := !at.Before(r.measureStart)
		if measured {
			r.startedMeasured.Add(1)
			// Only an idle client waiting for the arrival measures the
			// generator: one released late because it was busy measures
			// the system, and is in Lag.
			if idle {
				_ = c.g.emitLag.RecordValue(max(late.Microseconds(), 0))
			}
		}
		op := c.choose()
		if r.cfg.LatencyLimit > 0 && late > r.cfg.LatencyLimit {
			c.g.rec.Skip(op, measured)
			if r.cfg.OnTxn != nil {
				c.txn(Txn{Op: op, Intended: at, Start: now, End: now, Outcome: TxnSkipped, Measured: measured})
			}
			continue
		}
		if r.cfg.Connect && !c.fresh {
			c.pending, c.pendingAt, c.pendingOp, c.pendingMsr = true, at, op, measured
			return c.reconnect(now)
		}
		return c.begin(op, at, now, measured)
	}
}

// reconnect asks for the new connection of the next transaction
// (Config.Connect).
func (c *client) reconnect(now time.Time) workload.Step {
	c.connFrom = now
	return c.askConnection(now)
}

func (c *client) begin(op int, intended, now time.Time, measured bool) workload.Step {
	c.fresh = false
	c.op, c.attempt, c.intended, c.start, c.measured, c.busy = op, 1, intended, now, measured, true
	c.attemptStart = now
	return workload.Step{Kind: workload.Start, Op: op, Attempt: 1, Intended: intended}
}

func (c *client) retry(now time.Time) workload.Step {
	c.attempt++
	c.busy, c.attemptStart = true, now
	return workload.Step{Kind: workload.Start, Op: c.op, Attempt: c.attempt, Intended: c.intended}
}

// Done ends the attempt under way and decides what follows.
func (c *client) Done(now time.Time, err error, stmt int) workload.Step {
	r, rec := c.r, c.g.rec
	if err == nil {
		c.succeeded(now)
		return c.next(now, false)
	}
	if aa := (*workload.AbortAfter)(nil); errors.As(err, &aa) {
		// Done, but the client cannot go on: counted, then ended.
		c.succeeded(now)
		r.abort(c, err, stmt)
		return workload.Step{Kind: workload.Stop}
	}
	if r.ctx.Err() != nil {
		// Interrupted, or the drain deadline: neither a success nor a
		// failure (the deadline counts it as abandoned).
		return workload.Step{Kind: workload.Stop}
	}
	c.busy = false
	class, fatal := r.cfg.Classify(err)
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
		return workload.Step{Kind: workload.Stop}
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
		return workload.Step{Kind: workload.Stop}
	}
	return c.next(now, false)
}

// succeeded counts the operation under way as done.
func (c *client) succeeded(now time.Time) {
	r, rec := c.r, c.g.rec
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
		if r.cfg.Connect {
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
		return workload.Step{Kind: workload.Stop}
	}
	_, fatal := r.cfg.Classify(err)
	giveUp := fatal || r.stopped() || !now.Before(r.end)
	if !fatal {
		c.attempts++
		c.g.rec.ReconnectFailed()
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
		return workload.Step{Kind: workload.Stop}
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
		c.g.rec.Failure(c.op, c.measured, metrics.ConnectionLost, c.attempt)
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

// Statement records a statement's latency, for a measured operation.
func (c *client) Statement(op, stmt int, d time.Duration) {
	if c.measured {
		c.g.rec.Statement(op, stmt, d)
	}
}
