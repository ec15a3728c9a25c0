package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Halt stops the postmaster and keeps the data directory, for Restart:
// immediate (SIGQUIT, as `pg_ctl stop -m immediate`: a crash, recovered at
// the next start) or fast (SIGINT: sessions aborted, a checkpoint). It is
// for tests of what clients do while the server is away.
func (s *Server) Halt(immediate bool) error {
	if s.proc == nil {
		return errors.New("halting postgres: it is not running")
	}
	sig := os.Interrupt
	if immediate {
		sig = syscall.SIGQUIT
	}
	if err := s.proc.Signal(sig); err != nil {
		return fmt.Errorf("halting postgres: %w", err)
	}
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		return fmt.Errorf("halting postgres: no exit within %s", stopTimeout)
	}
	s.proc = nil
	return nil
}

// Restart starts the postmaster again on the same port and data directory,
// after Halt, and returns once it accepts connections.
func (s *Server) Restart(ctx context.Context) error {
	if s.proc != nil {
		return errors.New("restarting postgres: it is running")
	}
	ctx, cancel := context.WithTimeout(ctx, defaultStartTimeout)
	defer cancel()
	return s.launch(ctx, s.rt, s.as, s.port)
}

// Kill ends the postmaster and its children with SIGKILL, at once and
// without a word in the server log (a machine losing power; Halt(true) is
// PostgreSQL's own immediate shutdown), and keeps the data directory, for
// Restart, which recovers from the crash. It returns once the postmaster
// and its children are gone (the children are found via /proc; where there
// is none they exit on their own once they notice the postmaster's death).
func (s *Server) Kill() error {
	if s.proc == nil {
		return errors.New("killing postgres: it is not running")
	}
	kids := killTree(s.proc.Pid)
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		return fmt.Errorf("killing postgres: no exit within %s of SIGKILL", stopTimeout)
	}
	s.proc = nil
	// A child left alive would hold the shared memory, and the next start
	// would refuse to run beside it.
	deadline := time.Now().Add(stopTimeout)
	for _, pid := range kids {
		for !ended(pid) {
			if time.Now().After(deadline) {
				return fmt.Errorf("killing postgres: its child %d still runs %s after SIGKILL", pid, stopTimeout)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// Running reports whether the postmaster runs (false after Halt or Kill,
// or once it has exited on its own).
func (s *Server) Running() bool {
	if s.proc == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// LogPath is the server log: the postmaster's stderr (every line starts
// with log_line_prefix, by default '%m [%p] ': the time in milliseconds).
func (s *Server) LogPath() string { return s.logPath }

// Port is the port the server listens on, 127.0.0.1 only.
func (s *Server) Port() int { return s.port }
