package executor

import (
	"syscall"
	"testing"
	"time"
)

// A loop waits with epoll_pwait2, or with epoll_wait where the kernel has
// no epoll_pwait2 (before Linux 5.11; valgrind): both see a ready
// descriptor at once, and both wait out a timeout, never less.
func TestWaitBothWays(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		l, err := newEpollLoop(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.noPwait2 = fallback
		// A signal (Go's preemption, the garbage collector's) ends a
		// wait early with EINTR, which the loop takes as a wake-up
		// without events and waits again for what is left: so does this.
		wait := func(timeout time.Duration) (int, error) {
			end := time.Now().Add(timeout)
			for {
				n, err := l.wait(timeout)
				if err != syscall.EINTR {
					return n, err
				}
				if timeout >= 0 {
					timeout = max(time.Until(end), 0)
				}
			}
		}
		start := time.Now()
		if n, err := wait(3 * time.Millisecond); err != nil || n != 0 {
			t.Fatalf("fallback %v: nothing ready: %d events, %v", fallback, n, err)
		}
		if waited := time.Since(start); waited < 3*time.Millisecond {
			t.Fatalf("fallback %v: a 3 ms wait returned after %s", fallback, waited)
		}
		l.signal()
		if n, err := wait(-1); err != nil || n != 1 || l.events[0].Fd != wakeSlot {
			t.Fatalf("fallback %v: the eventfd ready: %d events, %v", fallback, n, err)
		}
		syscall.Close(l.wake)
		syscall.Close(l.epfd)
	}
}
