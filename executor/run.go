package executor

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/txload/txload/pg"
)

// Clients is what a run hands the executor: its sessions, and what it
// wants to know of their start.
type Clients struct {
	// Groups holds the sessions, one group per I/O loop: a group's
	// sessions are called from one goroutine at a time.
	Groups [][]Session
	// Ready is called with the start time once every client is connected,
	// before any operation.
	Ready func(start time.Time)
	// Spin, if positive, makes a client that waits for an open-loop
	// arrival on Go's timers (the blocking loop) yield in a loop for the
	// last Spin before it instead of sleeping through it: Go's timers wake
	// up to a millisecond late. The epoll loops wait with a nanosecond
	// timeout on a thread whose timer slack is 1 ns, and need none.
	Spin time.Duration
}

// Run drives cs on I/O loops, one per group: it connects every client (in
// parallel), calls cs.Ready with the start time, then runs each client's
// program as its session decides until every session says Stop or ctx
// ends. programs makes client id's program.
//
// On Linux a group's clients on plain TCP or Unix sockets run on one epoll
// loop, a goroutine with a P of its own; TLS connections, and every connection on
// other systems, run as a goroutine each, their group's sessions called
// under a lock.
func Run(ctx context.Context, t *pg.Target, cs Clients, programs func(id int) Program) error {
	return run(ctx, t, cs, programs, rawLoops())
}

// run is Run on epoll loops when raw (and the connections allow it), else
// on blocking ones.
func run(ctx context.Context, t *pg.Target, cs Clients, programs func(id int) Program, raw bool) error {
	groups := cs.Groups
	var all []*client
	for _, g := range groups {
		for _, s := range g {
			all = append(all, newClient(s, programs(s.ID())))
		}
	}
	// Connect every client, a few at a time.
	sem := make(chan struct{}, 16)
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, c := range all {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c.conn, errs[i] = c.dial(ctx, t, raw)
		}()
	}
	wg.Wait()
	// TLS cannot be driven raw: then every client runs with blocking reads.
	if raw {
		for i, c := range all {
			if errs[i] == nil && c.conn.fd < 0 {
				raw = false
			}
		}
		if !raw {
			for i, c := range all {
				if errs[i] == nil && c.conn.fd >= 0 {
					c.conn.close()
					c.conn, errs[i] = c.dial(ctx, t, false)
				}
			}
		}
	}
	for i, err := range errs {
		if err != nil {
			for _, c := range all {
				if c.conn != nil {
					c.conn.close()
				}
			}
			return fmt.Errorf("starting client %d: %w", all[i].id, err)
		}
		all[i].conn.rec = all[i].sess
		all[i].prog.Connected(all[i].conn)
	}
	loops := make([]runner, 0, len(groups))
	k := 0
	for _, g := range groups {
		members := all[k : k+len(g)]
		k += len(g)
		var l runner
		var err error
		if raw {
			l, err = newEpollLoop(t, members)
		} else {
			l = newBlockingLoop(t, members, cs.Spin)
		}
		if err != nil {
			for _, c := range all {
				c.conn.close()
			}
			return err
		}
		loops = append(loops, l)
	}
	if raw {
		defer holdProcs(len(loops))()
	}
	cs.Ready(time.Now())
	errc := make(chan error, len(loops))
	for _, l := range loops {
		go func() { errc <- l.run(ctx) }()
	}
	var first error
	for range loops {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	for _, l := range loops {
		l.close()
	}
	return first
}

// SettleTimeout bounds how long a run that ended (its context done) waits
// for the answers of the exchanges it cancelled (settle).
const SettleTimeout = 5 * time.Second

// errUnanswered cuts an exchange the server did not answer within
// SettleTimeout of its cancel request.
var errUnanswered = fmt.Errorf("the server did not answer a cancel request at the run's end within %s: %w", SettleTimeout, net.ErrClosed)

// runner is one loop: run drives its clients until they stop, close then
// closes their connections (once every loop is done).
type runner interface {
	run(ctx context.Context) error
	close()
}

// redial connects c anew in the background and hands the result to done.
func (c *client) redial(ctx context.Context, t *pg.Target, raw bool, done func(*Conn, error)) {
	go func() {
		conn, err := c.dial(ctx, t, raw)
		done(conn, err)
	}()
}

// procs counts the threads that running epoll loops hold, over every run
// in the process: GOMAXPROCS is the process's, so runs at once in one
// process (tests, or a command that runs two) must count together, or one
// run's end puts GOMAXPROCS back under what another's loops need. It is
// the one piece of process-wide state here because GOMAXPROCS is one.
var procs struct {
	sync.Mutex
	held, base int
}

// holdProcs raises GOMAXPROCS so that n more loops each have a P and two
// remain for everything else (the engine's ticker, the runtime), and
// returns the release, which puts GOMAXPROCS back once no loop runs.
func holdProcs(n int) (release func()) {
	procs.Lock()
	defer procs.Unlock()
	if procs.held == 0 {
		procs.base = runtime.GOMAXPROCS(0)
	}
	procs.held += n
	if want := procs.held + 2; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
	return func() {
		procs.Lock()
		defer procs.Unlock()
		procs.held -= n
		if procs.held == 0 && runtime.GOMAXPROCS(0) != procs.base {
			runtime.GOMAXPROCS(procs.base)
		}
	}
}
