package executor

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/txload/txload/pg"
)

func rawLoops() bool { return true }

// epollLoop drives a group's clients on one thread: their sockets in one
// epoll set, their timers in one heap. One wake-up serves every socket that
// is ready; nothing is allocated per exchange.
type epollLoop struct {
	t       *pg.Target
	clients []*client
	epfd    int
	wake    int // eventfd: reconnections done, cancellation
	events  []syscall.EpollEvent
	timers  timerHeap
	line    []*client // idle clients waiting for an arrival, head first
	live    int
	// noPwait2: the kernel has no epoll_pwait2 (see wait).
	noPwait2 bool

	mu      sync.Mutex
	dialed  []dialed
	stopped bool
}

type dialed struct {
	c    *client
	conn *Conn
	err  error
}

const wakeSlot = -1

func newEpollLoop(t *pg.Target, cs []*client) (*epollLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating an epoll set: %w", err)
	}
	wake, _, e := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if e != 0 {
		syscall.Close(epfd)
		return nil, fmt.Errorf("creating an eventfd: %w", e)
	}
	l := &epollLoop{t: t, clients: cs, epfd: epfd, wake: int(wake), events: make([]syscall.EpollEvent, len(cs)+1), live: len(cs)}
	if err := l.add(int(wake), wakeSlot); err != nil {
		return nil, err
	}
	for i, c := range cs {
		c.slot = i
		if err := l.add(c.conn.fd, i); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (l *epollLoop) add(fd, slot int) error {
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(slot)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("watching a socket: %w", err)
	}
	return nil
}

func (l *epollLoop) watch(c *client, writable bool) {
	if c.writable == writable {
		return
	}
	c.writable = writable
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(c.slot)}
	if writable {
		ev.Events |= syscall.EPOLLOUT
	}
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.conn.fd, &ev)
}

func (l *epollLoop) signal() {
	one := [8]byte{1}
	_, _ = rawWrite(l.wake, one[:])
}

func (l *epollLoop) run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.stopped = true
		l.mu.Unlock()
		l.signal()
	})
	defer stop()

	now := time.Now()
	yielded := now
	for _, c := range l.clients {
		c.apply(c.sess.Next(now), now)
		l.after(c, now)
	}
	for l.live > 0 {
		timeout := time.Duration(-1)
		if at, ok := l.timers.next(); ok {
			timeout = max(time.Until(at), 0)
			if timeout > 0 {
				preciseTimers()
			}
		}
		n, err := l.wait(timeout)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("waiting for sockets: %w", err)
		}
		now = time.Now()
		for _, ev := range l.events[:max(n, 0)] {
			if ev.Fd == wakeSlot {
				if l.woken(now) {
					l.settle(now)
					return nil
				}
				continue
			}
			l.ready(l.clients[ev.Fd], ev.Events, now)
		}
		l.fire(now)
		if now.Sub(yielded) >= yieldEvery {
			yielded = now
			runtime.Gosched()
		}
	}
	return nil
}

// yieldEvery is how often the loop passes through Go's scheduler of its
// own accord. The loop's goroutine is not locked to a thread: Go's monitor
// (sysmon) preempts a goroutine that runs 10 ms without passing through
// the scheduler (a signal; for a locked goroutine, two thread hand-offs
// besides), and each preemption set the monitor waking every 20 µs again.
// Client-bound at a quota of 0.15 of a core, select-only, that was 6,000
// monitor wake-ups, 2,300 futex calls and 400 signals in a 9 s run of
// 25,000 transactions, 14,700 context switches in all; yielding instead
// left 1,000 wake-ups and 6,000 context switches. A yield wakes a thread
// for the idle Ps (which finds nothing and sleeps again: two futex calls),
// so it is as rare as can be: the monitor preempts 10 ms after it first
// saw the loop's last pass, which is never before that pass, so a yield
// every 9 ms comes first (5 ms made 30% more futex calls).
const yieldEvery = 9 * time.Millisecond

// preciseTimers sets the calling thread's timer slack to 1 ns, so that an
// epoll wait with a deadline (the next timer) ends on time: the default
// slack is 50 µs. It is set before each such wait, as the loop's goroutine
// may have moved to another thread since the last.
func preciseTimers() {
	_, _, _ = syscall.RawSyscall6(syscall.SYS_PRCTL, syscall.PR_SET_TIMERSLACK, 1, 0, 0, 0, 0)
}

// ready handles a client's socket events.
func (l *epollLoop) ready(c *client, events uint32, now time.Time) {
	conn := c.conn
	if c.wait != waitIO || conn == nil || conn.fd < 0 {
		if events&(syscall.EPOLLIN|syscall.EPOLLERR|syscall.EPOLLHUP) != 0 && conn != nil && conn.fd >= 0 && conn.broken == nil {
			// Data or a hang-up while idle: a notice, or the server ending
			// the session: the next exchange learns of the loss.
			if conn.readIdle(); conn.broken != nil {
				l.unwatch(c)
			}
		}
		return
	}
	if events&syscall.EPOLLOUT != 0 {
		if err := conn.flush(); err == nil {
			l.watch(c, false)
		} else if err != errWouldBlock {
			l.fail(c, err, now)
			return
		}
	}
	if events&(syscall.EPOLLIN|syscall.EPOLLERR|syscall.EPOLLHUP) == 0 {
		return
	}
	_, rerr := conn.fill()
	done, err := conn.process()
	switch {
	case err != nil:
		l.fail(c, err, now)
	case done:
		c.exchanged(now)
		l.after(c, now)
	case rerr != nil:
		l.fail(c, rerr, now)
	}
}

func (l *epollLoop) fail(c *client, err error, now time.Time) {
	l.unwatch(c)
	c.failed(err, now)
	l.after(c, now)
}

func (l *epollLoop) unwatch(c *client) {
	if c.conn != nil && c.conn.fd >= 0 {
		_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, c.conn.fd, nil)
		c.writable = false
	}
}

// after arranges what the client now waits for.
func (l *epollLoop) after(c *client, now time.Time) {
	switch c.wait {
	case waitIO:
		conn := c.conn
		if !conn.sent {
			conn.idle() // what came after the last exchange
		}
		if conn.broken != nil {
			l.fail(c, conn.broken, now)
			return
		}
		switch err := conn.flush(); {
		case err == errWouldBlock:
			l.watch(c, true)
		case err != nil:
			l.fail(c, err, now)
		}
	case waitTimer, waitPause:
		l.timers.push(timer{at: c.at, c: c})
	case waitArrival:
		// Idle clients wait in line: only the head asks when the next
		// arrival is due.
		c.queued = true
		l.line = append(l.line, c)
		if len(l.line) == 1 {
			l.timers.push(timer{at: c.at, c: c, head: true})
		}
	case waitDial:
		l.unwatch(c)
		if c.conn != nil {
			c.conn.close()
		}
		if !c.at.After(now) {
			l.dial(c)
		} else {
			l.timers.push(timer{at: c.at, c: c})
		}
	case waitStopped:
		// The connection stays open until every loop is done (Run closes
		// it): closing it now would make the server end its backend while
		// other clients' last operations still wait for it, which with
		// hundreds of clients lengthens the drain by a second or more.
		l.unwatch(c)
		l.live--
	}
}

func (l *epollLoop) dial(c *client) {
	c.redial(context.Background(), l.t, true, func(conn *Conn, err error) {
		l.mu.Lock()
		l.dialed = append(l.dialed, dialed{c: c, conn: conn, err: err})
		l.mu.Unlock()
		l.signal()
	})
}

// woken handles the eventfd: finished connection attempts, cancellation.
// It reports whether the loop must stop.
func (l *epollLoop) woken(now time.Time) bool {
	var buf [8]byte
	_, _ = rawRead(l.wake, buf[:])
	l.mu.Lock()
	ds, stopped := l.dialed, l.stopped
	l.dialed = nil
	l.mu.Unlock()
	if stopped {
		for _, d := range ds {
			if d.conn != nil {
				d.conn.close()
			}
		}
		return true
	}
	for _, d := range ds {
		c := d.c
		if d.err == nil {
			if d.conn.fd < 0 { // TLS after all: not for this loop
				d.conn.close()
				d.err = errors.New("the server now asks for TLS, which an I/O loop cannot drive")
			} else {
				if err := l.add(d.conn.fd, c.slot); err != nil {
					d.conn.close()
					d.err = err
				}
			}
		}
		if d.err != nil {
			c.connected(nil, d.err, now)
		} else {
			c.connected(d.conn, nil, now)
		}
		l.after(c, now)
	}
	return false
}

// fire runs the timers that are due.
func (l *epollLoop) fire(now time.Time) {
	for {
		at, ok := l.timers.next()
		if !ok || at.After(now) {
			return
		}
		t := l.timers.pop()
		c := t.c
		switch {
		case t.head:
			l.serveLine(now)
		case c.wait == waitDial:
			l.dial(c)
		default:
			c.fired(now)
			l.after(c, now)
		}
	}
}

// serveLine asks the idle clients, head first, until one must wait again.
func (l *epollLoop) serveLine(now time.Time) {
	for len(l.line) > 0 {
		c := l.line[0]
		step := c.sess.Next(now)
		if step.Kind == Wait {
			c.at = step.At
			l.timers.push(timer{at: step.At, c: c, head: true})
			return
		}
		copy(l.line, l.line[1:])
		l.line = l.line[:len(l.line)-1]
		c.queued = false
		c.apply(step, now)
		l.after(c, now)
	}
}

// settle reads the answers of the exchanges in flight when the run ended,
// each cancelled (a CancelRequest), for up to SettleTimeout: a statement
// that answered, with its result or an error, has a known outcome, which
// the session records. An exchange still unanswered then is cut as a lost
// connection is, its outcome unknown only if a COMMIT (or a statement
// outside a block) was sent (Conn.lost), unless the reap decides it; one
// whose backend the reap found idle had answered since, and its answer is
// read for up to answeredTimeout more.
func (l *epollLoop) settle(now time.Time) {
	var busy []*client
	for _, c := range l.clients {
		c.stopping = true
		if c.wait == waitIO && c.conn != nil && c.conn.fd >= 0 && c.conn.broken == nil && c.conn.pending() {
			busy = append(busy, c)
			go cancel(c.conn)
		}
	}
	l.await(busy, now.Add(SettleTimeout))
	var left []stuck
	for _, c := range busy {
		if c.wait == waitIO {
			left = append(left, stuck{pid: c.conn.pid, addr: c.conn.addr})
		}
	}
	fates := reap(l.t, left)
	var answered []*client
	for _, c := range busy {
		if c.wait == waitIO && fates[c.conn.pid] == fateAnswered {
			answered = append(answered, c)
		}
	}
	l.await(answered, time.Now().Add(answeredTimeout))
	now = time.Now()
	for _, c := range busy {
		if c.wait == waitIO {
			c.conn.settle(fates[c.conn.pid], l.t)
			l.fail(c, errUnanswered, now)
		}
	}
}

// await reads the answers of cs, clients that stopped awaiting an
// exchange, until each has its answer or until.
func (l *epollLoop) await(cs []*client, until time.Time) {
	for waiting(cs) {
		n, err := l.wait(max(time.Until(until), 0))
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return
		}
		now := time.Now()
		for _, ev := range l.events[:max(n, 0)] {
			if ev.Fd == wakeSlot {
				l.woken(now) // connections dialed since: closed
				continue
			}
			if c := l.clients[ev.Fd]; c.stopping && c.wait == waitIO {
				l.ready(c, ev.Events, now)
			}
		}
		if !now.Before(until) {
			return
		}
	}
}

// waiting says whether one of cs still awaits its exchange.
func waiting(cs []*client) bool {
	for _, c := range cs {
		if c.wait == waitIO {
			return true
		}
	}
	return false
}

// close ends the loop: sockets of busy clients get a cancel request first,
// so that a statement blocked in the server does not outlive the run.
func (l *epollLoop) close() {
	for _, c := range l.clients {
		if c.conn != nil && c.conn.fd >= 0 {
			c.conn.abandon(l.t)
		}
	}
	syscall.Close(l.wake)
	syscall.Close(l.epfd)
}

// wait waits for the loop's sockets up to timeout (negative: forever):
// with epoll_pwait2, or on a kernel without it (before Linux 5.11, and
// valgrind) with epoll_wait, whose timeout is in milliseconds, rounded up.
func (l *epollLoop) wait(timeout time.Duration) (int, error) {
	if !l.noPwait2 {
		n, err := epollWait(l.epfd, l.events, timeout)
		if err != syscall.ENOSYS {
			return n, err
		}
		l.noPwait2 = true
	}
	ms := -1
	if timeout >= 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	return syscall.EpollWait(l.epfd, l.events, ms)
}

// epollWait waits up to timeout (negative: forever) with nanosecond
// precision (epoll_pwait2); it returns the number of events. It is a raw
// system call: the loop keeps its P while it waits (run holds one for each
// loop, and two more for everything else). Through syscall.Syscall6 a
// wait longer than one tick of Go's monitor (sysmon) could lose the P and
// set the monitor waking every 20 µs again: client-bound at a quota of
// 0.15 of a core, select-only, 9 s, the raw wait made 720 monitor
// wake-ups instead of 2,700 and 3,800 context switches instead of 7,300.
// A signal (the monitor's preemption, the garbage collector's) ends the
// wait with EINTR, which the loop takes as a wake-up without events.
func epollWait(epfd int, events []syscall.EpollEvent, timeout time.Duration) (int, error) {
	var ts *syscall.Timespec
	var t syscall.Timespec
	if timeout >= 0 {
		t = syscall.NsecToTimespec(int64(timeout))
		ts = &t
	}
	n, _, e := syscall.RawSyscall6(sysEpollPwait2, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(unsafe.Pointer(ts)), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// sysEpollPwait2 is epoll_pwait2's number, the same on every Linux
// architecture (Linux 5.11).
const sysEpollPwait2 = 441
