package runner

import (
	"errors"
	"os"
	"syscall"
)

// Interrupt is the cause a stop signal cancels a command's context with
// (context.Cause): what the reports name as having interrupted the run.
type Interrupt struct {
	Signal os.Signal
}

func (i *Interrupt) Error() string { return "interrupted by " + i.What() }

// What names the signal as a user knows it.
func (i *Interrupt) What() string {
	switch i.Signal {
	case os.Interrupt:
		return "Ctrl-C (SIGINT)"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP (its terminal closed)"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGPIPE:
		return "a closed output (SIGPIPE)"
	}
	return i.Signal.String()
}

// InterruptedBy names what cancelled a run whose context ended with cause:
// a signal, or "an interrupt" when no signal is known (a caller's own
// cancellation).
func InterruptedBy(cause error) string {
	var in *Interrupt
	if errors.As(cause, &in) {
		return in.What()
	}
	return "an interrupt"
}
