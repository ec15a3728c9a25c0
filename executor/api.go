// Package executor steps every client of a run: it owns the contract
// between the engine's side of a client (a Session, which decides what the
// client does next) and the workload's (a Program, which queues protocol
// messages on its Conn and is called back when their results are in), and
// every way of driving them. On Linux a group's clients on plain sockets
// run on one epoll loop, a goroutine with a P of its own; TLS connections,
// and every connection elsewhere, run on a goroutine each with blocking
// reads. The messages themselves are package pgwire's; this package holds
// the connections, their exchanges and the loops.
package executor

import (
	"time"
)

// StepKind is what a Session tells its client to do next.
type StepKind uint8

// The steps.
const (
	// Stop: the client is done; its connection may be closed.
	Stop StepKind = iota
	// Start attempt Step.Attempt (from 1) of operation Step.Op now.
	Start
	// Wait: ask Next again at Step.At (an open-loop arrival, a backoff).
	Wait
	// Reconnect: replace the connection, not before Step.At, then report
	// the outcome with Connected.
	Reconnect
	// Pause: ask Next again at Step.At, this client alone (a terminal's
	// think time), not in the line of idle clients that Wait joins for
	// the schedule's next arrival.
	Pause
)

// Step is a Session's decision.
type Step struct {
	Kind        StepKind
	Op, Attempt int       // Start
	At          time.Time // Wait, Reconnect
	// Intended is when the operation should have started (open loop: its
	// arrival; closed loop: now). Informational for the executor.
	Intended time.Time
}

// Session is the engine's side of one client: it decides what the client
// does next and records what it did. An executor calls a session only from
// the goroutine that drives its client, never concurrently.
type Session interface {
	// ID is the client's number, from 0.
	ID() int
	// Next is asked when the client is idle: once it is connected, and
	// again at the time a Wait step gave.
	Next(now time.Time) Step
	// Done ends the attempt under way: err is nil when it succeeded; stmt is
	// the index of the statement that failed (-1: none, or not known). Its
	// step may be the retry (Start with the same Op), the next operation, a
	// Wait, a Reconnect or Stop.
	Done(now time.Time, err error, stmt int) Step
	// Connected reports a connection attempt the session asked for with
	// Reconnect: err is nil when it succeeded.
	Connected(now time.Time, err error) Step
	// StatementAt records the latency of statement stmt of operation op,
	// which ended at now, for per-statement reports.
	StatementAt(op, stmt int, d time.Duration, now time.Time)
}

// ActionKind is what a Program waits for.
type ActionKind uint8

// The actions.
const (
	// Await: send what was queued and call Resume once every result of it
	// has arrived.
	Await ActionKind = iota
	// Sleep until Action.At, then call Resume (pgbench's \sleep).
	Sleep
	// Finish the attempt with Action.Err (nil: success) at statement
	// Action.Stmt.
	Finish
)

// Action is what a Program returns.
type Action struct {
	Kind ActionKind
	At   time.Time
	Err  error
	Stmt int
}

// Program is one client's transaction logic. The executor calls it from the
// client's loop only. It must not block: it queues requests on its Conn and
// returns; nothing it does per transaction should allocate. A Program may
// also be a Setuper, an Ender or a Statementer (below).
type Program interface {
	// Start begins attempt (from 1) of operation op, after the previous one
	// was finished (and rolled back by the executor if it left a
	// transaction open).
	Start(c *Conn, op, attempt int) Action
	// Resume continues after an Await (read the results with c.Result) or
	// a Sleep.
	Resume(c *Conn) Action
	// Connected is told that c is a new connection: statements prepared on
	// the previous one are gone.
	Connected(c *Conn)
}

// The optional interfaces a Program may implement: the executor finds
// them by type assertion.

// Setuper is a Program that sets up each new connection before it is used:
// Setup queues statements on c (Conn.Prepare, Conn.Simple), which the
// executor runs before the program is told of the connection (Connected);
// an error of one fails the connection attempt. It is called on the
// goroutine that connects, while the client waits for its connection: it
// may touch only c and what does not change.
type Setuper interface {
	Setup(c *Conn)
}

// Ender is a Program told how each attempt ended, before its session is:
// err is nil when the program finished it successfully, its own error, or
// the lost connection's (classified as an ambiguous commit when a COMMIT
// was in flight, see pg.Classify). A connection lost while the client is
// idle calls it too, with no attempt under way.
type Ender interface {
	Ended(now time.Time, err error)
}

// Statementer is a Program that tells which of its statements the i-th
// statement queued in the current exchange is, for per-statement failure
// counts when the connection is lost.
type Statementer interface {
	Statement(i int) int
}
