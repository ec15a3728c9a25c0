package executor

import (
	"errors"
	"time"

	"github.com/txload/txload/internal/pgwire"
	"github.com/txload/txload/pg"
)

// waitKind is what a client waits for next, for its loop to arrange.
type waitKind uint8

const (
	waitIO      waitKind = iota // its exchange: flush, then read until done
	waitTimer                   // until at: a Sleep ends (Resume)
	waitArrival                 // until at: ask the session again (Wait)
	waitPause                   // until at: ask the session again (Pause)
	waitDial                    // until at: then connect anew
	waitStopped                 // nothing more
)

// client is one session with its program and connection: the state machine
// both kinds of loop drive. Its methods set wait and at.
type client struct {
	id   int
	sess Session
	prog Program
	conn *Conn
	// The program's optional interfaces, found once: a type assertion to
	// an interface per attempt costs a lookup in the runtime's table.
	ender  Ender
	stmter Statementer

	wait waitKind
	at   time.Time

	op, attempt int
	finErr      error // an attempt that failed, while its ROLLBACK runs
	finStmt     int
	queued      bool // waiting in its loop's line of idle clients
	// stopping: the run ended while the client awaited an exchange; its
	// answer is read (settle), but nothing new is sent.
	stopping bool
	writable bool // registered for writability (epoll)
	slot     int  // index in its loop
}

// newClient is session s's client, running prog.
func newClient(s Session, prog Program) *client {
	c := &client{id: s.ID(), sess: s, prog: prog}
	c.ender, _ = prog.(Ender)
	c.stmter, _ = prog.(Statementer)
	return c
}

// ErrRunEnded ends an attempt whose next exchange the run's end kept
// from being sent: it did not commit.
var ErrRunEnded = errors.New("the run ended before the transaction's next statements were sent")

var errAwaitNothing = errors.New("executor: the program awaited an exchange but queued nothing")

// apply carries out a session's step.
func (c *client) apply(step Step, now time.Time) {
	for {
		switch step.Kind {
		case Stop:
			c.wait = waitStopped
			return
		case Wait:
			c.wait, c.at = waitArrival, step.At
			return
		case Pause:
			c.wait, c.at = waitPause, step.At
			return
		case Reconnect:
			c.wait, c.at = waitDial, step.At
			return
		}
		c.op, c.attempt = step.Op, step.Attempt
		c.conn.begin()
		c.conn.wrote = false
		c.conn.Now, c.conn.Intended = now, step.Intended
		a := c.prog.Start(c.conn, step.Op, step.Attempt)
		next, more := c.act(a, now)
		if !more {
			return
		}
		step = next
	}
}

// act carries out a program's action; a step when the attempt ended at
// once and the session's next step is to be applied.
func (c *client) act(a Action, now time.Time) (Step, bool) {
	switch a.Kind {
	case Await:
		if !c.conn.pending() {
			return c.finish(errAwaitNothing, -1, now)
		}
		if c.stopping {
			// The run ended: what the program queued is never sent, so
			// the attempt did not commit (its block is rolled back).
			c.conn.begin()
			c.conn.wbuf, c.conn.wpos = c.conn.wbuf[:0], 0
			return c.finish(ErrRunEnded, -1, now)
		}
		c.wait = waitIO
		return Step{}, false
	case Sleep:
		c.wait, c.at = waitTimer, a.At
		return Step{}, false
	}
	return c.finish(a.Err, a.Stmt, now)
}

// finish ends an attempt. A failed one that left a transaction open is
// rolled back first, so that the next attempt starts clean.
func (c *client) finish(err error, stmt int, now time.Time) (Step, bool) {
	err = c.partly(err, c.conn.broken == nil)
	c.ended(now, err)
	if err != nil && c.conn.broken == nil && !c.conn.Idle() {
		c.finErr, c.finStmt = err, stmt
		c.conn.begin()
		c.conn.internal = true
		c.conn.queue(nil, CaptureNone, true)
		c.conn.wbuf = pgwire.Query{Text: []byte("ROLLBACK")}.Encode(c.conn.wbuf)
		c.conn.seg++
		c.conn.syncs++
		c.wait = waitIO
		return Step{}, false
	}
	return c.sess.Done(now, err, stmt), true
}

// exchanged: the exchange the client awaited is complete.
func (c *client) exchanged(now time.Time) {
	if c.conn.internal {
		c.conn.internal = false
		c.apply(c.sess.Done(now, c.finErr, c.finStmt), now)
		c.finErr = nil
		return
	}
	c.conn.Now = now
	if next, more := c.act(c.prog.Resume(c.conn), now); more {
		c.apply(next, now)
	}
}

// failed: the connection broke during the exchange (or while idle).
func (c *client) failed(err error, now time.Time) {
	conn := c.conn
	conn.broken = err
	if conn.internal {
		// The ROLLBACK did not get through: the attempt failed as it did.
		conn.internal = false
		c.apply(c.sess.Done(now, c.finErr, c.finStmt), now)
		return
	}
	err = c.partly(conn.lost(err), false)
	c.ended(now, err)
	stmt := conn.cur
	if stmt >= conn.Results() {
		stmt = -1
	}
	c.apply(c.sess.Done(now, err, c.stmtIndex(stmt)), now)
}

// partly marks the failure of an attempt that had committed a write
// before it (Conn.Wrote): a script of several transactions, a pipeline
// whose other segment committed, a CALL of a procedure that commits. It
// is not retried, which would apply that write again (retests 11 and 12:
// counted failed and retried, the committed part applied twice), and its
// outcome is partial, not a failure (pg.PartlyCommitted); keeps says the
// connection is still good.
func (c *client) partly(err error, keeps bool) error {
	if err != nil && c.conn.wrote {
		return pg.PartlyCommitted(err, keeps)
	}
	return err
}

// stmtIndex maps an exchange's statement to the program's numbering when
// the program says how (Statementer); else -1.
func (c *client) stmtIndex(i int) int {
	if c.stmter != nil && i >= 0 {
		return c.stmter.Statement(i)
	}
	return -1
}

// fired: the time the client waited for has come.
func (c *client) fired(now time.Time) {
	switch c.wait {
	case waitTimer:
		c.conn.Now = now
		if next, more := c.act(c.prog.Resume(c.conn), now); more {
			c.apply(next, now)
		}
	case waitArrival, waitPause:
		c.apply(c.sess.Next(now), now)
	}
}

// connected: a connection attempt ended; conn is the new connection.
func (c *client) connected(conn *Conn, err error, now time.Time) {
	if err != nil {
		c.apply(c.sess.Connected(now, err), now)
		return
	}
	c.conn = conn
	conn.rec = c.sess
	c.prog.Connected(conn)
	c.apply(c.sess.Connected(now, nil), now)
}

// ended tells a program that is an Ender how its attempt ended.
func (c *client) ended(now time.Time, err error) {
	if c.ender != nil {
		c.ender.Ended(now, err)
	}
}
