package runner

import (
	"errors"
	"fmt"
	"strings"
)

// UsageError is bad input, found before the database was touched: the CLI
// exits with code 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usage marks err as a usage error.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{Err: err}
}

// Usagef is Usage of a formatted message.
func Usagef(format string, args ...any) error { return Usage(fmt.Errorf(format, args...)) }

// ErrInterrupted: the run was interrupted (Ctrl-C); the reports, if it got
// as far as its load, cover what ran and say so themselves (it may have
// been interrupted while the server started or the tables loaded, with
// nothing to report). The CLI exits with code 130.
var ErrInterrupted = errors.New("interrupted")

// ViolationError is a check that found what the workload's transactions
// cannot have left (an anomaly their isolation level forbids, data no
// transaction wrote), or a result the server's own count contradicts. Each
// violation says what was found; only one of a class the level forbids
// names the level.
type ViolationError struct{ Violations []string }

func (e *ViolationError) Error() string {
	return "check found violations: " + strings.Join(e.Violations, "; ")
}

// AbortedError is a run in which clients ended on an error no retry cures;
// the report of what ran was printed, unless the run stopped at the first
// abort.
type AbortedError struct {
	Clients int
	Msg     string
	// Stopped: Engine.StopOnAbort stopped the run at the first abort, in
	// group Group, and no report was printed.
	Stopped bool
	Group   int
}

func (e *AbortedError) Error() string { return e.Msg }
