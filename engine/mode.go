package engine

import (
	"time"

	"github.com/txload/txload/workload"
)

// A mode is how a run's clients take their next operation: each is a type
// of its own, built from Config by newMode and tested on its own
// (mode_test.go), rather than branches in the client.
type mode interface {
	// next decides what idle client c does at now: idle says it was
	// waiting for an arrival (not released by the end of its last
	// operation).
	next(c *client, now time.Time, idle bool) decision
	// bounded says whether the measured window has an end of its own.
	bounded() bool
}

// decision is what a mode decided for a client.
type decision struct {
	kind     decisionKind
	op       int
	intended time.Time // start: when it should have started; wait: until when
	measured bool
}

type decisionKind uint8

const (
	start   decisionKind = iota // start op, intended at intended
	wait                        // wait until intended, then ask again
	connect                     // connect anew first (Config.ConnectPerTxn)
	stop                        // no more operations
	pause                       // wait alone until intended, then ask again (QueryLoad.Pause)
)

// newMode is the mode cfg asks for: an open loop when it has a rate, else a
// closed loop.
func newMode(cfg Config) mode {
	if cfg.Rate > 0 {
		timed := cfg.Transactions == 0
		return openLoop{maxLag: cfg.MaxLag, latencyLimit: cfg.LatencyLimit, timed: timed, cut: timed && cfg.ClockBeforeConnect}
	}
	return closedLoop{perClient: cfg.Transactions, connect: cfg.ConnectPerTxn}
}

// closedLoop runs each client's operations back to back from the start of
// the run until the end of the window, or until it has ended perClient of
// them (committed or failed for good: pgbench's -t), when perClient is set.
// Its operations start when the client is free: intended = actual, no lag.
// With connect, a client connects anew before each operation, which then
// starts once connected (pgbench's -C).
type closedLoop struct {
	perClient int
	connect   bool
}

func (m closedLoop) next(c *client, now time.Time, _ bool) decision {
	r := c.r
	if !now.Before(r.end) || (m.perClient > 0 && c.done >= m.perClient) {
		return decision{kind: stop}
	}
	if m.connect && !c.fresh {
		return decision{kind: connect}
	}
	if c.pause != nil {
		return c.paused(now)
	}
	return decision{kind: start, op: c.choose(), intended: now, measured: !now.Before(r.measureStart)}
}

// paused decides for a client that pauses before each operation
// (QueryLoad.Pause): it chooses the operation, then pauses; once the pause
// is over, the operation starts, intended at the pause's end. One whose
// pause would end after the run's end is not started: the client pauses
// until the end, then stops, so that the measured window is the whole
// duration (the terminals were busy thinking until its end).
func (c *client) paused(now time.Time) decision {
	r := c.r
	if c.held {
		c.held = false
		return decision{kind: start, op: c.heldOp, intended: c.heldAt, measured: !c.heldAt.Before(r.measureStart)}
	}
	op := c.choose()
	d := c.pause(c.last, op)
	if d <= 0 {
		return decision{kind: start, op: op, intended: now, measured: !now.Before(r.measureStart)}
	}
	at := now.Add(d)
	if !at.Before(r.end) {
		return decision{kind: pause, intended: r.end}
	}
	c.held, c.heldOp, c.heldAt = true, op, at
	return decision{kind: pause, intended: at}
}

func (m closedLoop) bounded() bool { return m.perClient == 0 }

// openLoop starts operations at the arrivals of the client's group's share
// of the schedule, whether or not the previous ones were done: an operation
// that starts late is charged the wait (lag). An arrival more than maxLag
// behind saturates the run, which stops; one later than latencyLimit
// (when set) is skipped and counted (pgbench's --latency-limit).
//
// A timed run (a duration, not a number of transactions) has a window:
// once it has ended nothing new starts, however late, and what was
// scheduled but not started is never started (Result.Unstarted); what is
// running then drains. With cut (Config.ClockBeforeConnect) the window may
// end before the schedule: what would start at or after its end is not
// offered. A run of a number of transactions (pgbench's -t with -R) starts
// every one of them, however late, and its window runs until the last has
// ended, as a closed loop's does.
type openLoop struct {
	maxLag, latencyLimit time.Duration
	timed, cut           bool
}

func (m openLoop) next(c *client, now time.Time, idle bool) decision {
	r, a := c.r, &c.g.arrivals
	for {
		if m.timed && !now.Before(r.end) {
			return decision{kind: stop} // the window is over
		}
		at, ok := a.peek()
		if !ok && m.timed {
			// The schedule is done before the window: the client waits
			// for its end, which ends the run's window there.
			return decision{kind: wait, intended: r.end}
		}
		if !ok || (m.cut && !at.Before(r.end)) {
			return decision{kind: stop}
		}
		if at.After(now) {
			return decision{kind: wait, intended: at}
		}
		a.pop()
		late := now.Sub(at)
		if late > m.maxLag {
			r.saturate()
			return decision{kind: stop}
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
		if m.latencyLimit > 0 && late > m.latencyLimit {
			c.skip(op, at, now, measured)
			continue
		}
		return decision{kind: start, op: op, intended: at, measured: measured}
	}
}

func (m openLoop) bounded() bool { return m.timed }

// step carries out d for c at now: the step the driver takes next. Under
// Config.ConnectPerTxn an open-loop operation is decided first and its client
// connects anew before starting it, the connection's time part of its
// latency.
func (c *client) step(d decision, now time.Time) workload.Step {
	switch d.kind {
	case stop:
		return c.stop(now)
	case wait:
		return workload.Step{Kind: workload.Wait, At: d.intended}
	case pause:
		return workload.Step{Kind: workload.Pause, At: d.intended}
	case connect:
		return c.reconnect(now)
	}
	if c.r.cfg.ConnectPerTxn && !c.fresh {
		c.pending, c.pendingAt, c.pendingOp, c.pendingMsr = true, d.intended, d.op, d.measured
		return c.reconnect(now)
	}
	return c.begin(d.op, d.intended, now, d.measured)
}
