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
