package executor

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/txload/txload/pg"
)

// blockingLoop runs a group's clients as a goroutine each, with blocking
// reads: for TLS connections, and on systems without epoll. Its sessions
// are called under a lock, as a Session requires.
type blockingLoop struct {
	t       *pg.Target
	clients []*client
	spin    time.Duration // before an arrival (Clients.Spin)
	mu      sync.Mutex
	fates   map[uint32]fate // of the exchanges cut at the end, by backend (reap)
	reaped  chan struct{}   // closed once fates is final
}

func newBlockingLoop(t *pg.Target, cs []*client, spin time.Duration) *blockingLoop {
	return &blockingLoop{t: t, clients: cs, spin: spin, reaped: make(chan struct{})}
}

func (l *blockingLoop) run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, c := range l.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.drive(ctx, c)
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(l.reaped)
		l.reap(ctx, done)
	}()
	wg.Wait()
	close(done)
	<-l.reaped
	return nil
}

// reap, SettleTimeout after ctx ends, terminates the backends of the
// exchanges still unanswered (reap), notes their fates for the clients,
// and cuts their reads, which until then wait (drive) for SettleTimeout
// and the reap's time.
func (l *blockingLoop) reap(ctx context.Context, done <-chan struct{}) {
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	select {
	case <-done:
		return
	case <-time.After(SettleTimeout):
	}
	l.mu.Lock()
	var left []stuck
	var conns []*Conn
	for _, c := range l.clients {
		if c.wait == waitIO && c.conn != nil && c.conn.nc != nil {
			left = append(left, stuck{pid: c.conn.pid, addr: c.conn.addr})
			conns = append(conns, c.conn)
		}
	}
	l.mu.Unlock()
	fates := reap(l.t, left)
	l.mu.Lock()
	l.fates = fates
	l.mu.Unlock()
	for _, conn := range conns {
		// One whose backend the reap found idle had answered since: its
		// answer is read a little longer.
		cut := time.Now()
		if fates[conn.pid] == fateAnswered {
			cut = cut.Add(answeredTimeout)
		}
		_ = conn.nc.SetDeadline(cut)
	}
}

func (l *blockingLoop) drive(ctx context.Context, c *client) {
	// Cancellation cancels the statement in flight and reads its answer
	// for up to SettleTimeout (as the epoll loop's settle); a read
	// blocked past it fails as a lost connection.
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		c.stopping = true
		conn, io := c.conn, c.wait == waitIO
		l.mu.Unlock()
		if conn != nil {
			if conn.nc != nil {
				// The loop's reap cuts what is unanswered at SettleTimeout
				// once it has terminated its backend; this is the bound
				// should it not.
				_ = conn.nc.SetDeadline(time.Now().Add(SettleTimeout + reapTimeout + time.Second))
			}
			if io && conn.pending() {
				cancel(conn)
			}
		}
	})
	defer stop()
	l.mu.Lock()
	c.apply(c.sess.Next(time.Now()), time.Now())
	l.mu.Unlock()
	for {
		l.mu.Lock()
		wait, at, conn := c.wait, c.at, c.conn
		l.mu.Unlock()
		if ctx.Err() != nil && wait != waitIO {
			return
		}
		switch wait {
		case waitStopped:
			return // the connection is closed once every loop is done
		case waitIO:
			err := exchange(conn)
			l.mu.Lock()
			if err != nil && c.stopping {
				// Cut at the end: its fate, if the server can say, is
				// the loop's reap's, which may still be under way.
				l.mu.Unlock()
				<-l.reaped
				l.mu.Lock()
			}
			if err != nil {
				if c.stopping {
					conn.settle(l.fates[conn.pid], l.t)
					err = fmt.Errorf("%w (%v)", errUnanswered, err)
				}
				c.failed(err, time.Now())
			} else {
				c.exchanged(time.Now())
			}
			l.mu.Unlock()
		case waitTimer, waitArrival, waitPause:
			spin := time.Duration(0)
			if wait == waitArrival {
				spin = l.spin
			}
			if !sleep(ctx, at, spin) {
				break
			}
			l.mu.Lock()
			c.fired(time.Now())
			l.mu.Unlock()
		case waitDial:
			if conn != nil {
				conn.close()
			}
			if !sleep(ctx, at, 0) {
				break
			}
			nc, err := c.dial(ctx, l.t, false)
			l.mu.Lock()
			c.connected(nc, err, time.Now())
			l.mu.Unlock()
		}
	}
}

// close closes the clients' connections, once every loop is done.
func (l *blockingLoop) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.clients {
		if c.conn != nil {
			c.conn.abandon(l.t)
		}
	}
}

// exchange sends what is queued and reads until the exchange is complete,
// on a connection driven with blocking reads.
func exchange(c *Conn) error {
	// What came while idle: a FATAL there ends the connection before
	// anything of the exchange is sent.
	if c.idle(); c.broken != nil {
		return c.broken
	}
	if err := c.flush(); err != nil {
		return err
	}
	for {
		_, rerr := c.fill()
		done, err := c.process()
		switch {
		case err != nil:
			return err
		case done:
			return nil
		case rerr != nil:
			return rerr
		}
	}
}

// sleep waits until at, yielding in a loop for the last spin of it; false
// when ctx ended first.
func sleep(ctx context.Context, at time.Time, spin time.Duration) bool {
	if d := time.Until(at); d > spin {
		t := time.NewTimer(d - spin)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	for time.Now().Before(at) {
		if ctx.Err() != nil {
			return false
		}
		runtime.Gosched()
	}
	return ctx.Err() == nil
}
