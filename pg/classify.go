package pg

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/metrics"
)

// commitError marks an error that happened while COMMIT was in flight.
type commitError struct{ err error }

func (e commitError) Error() string { return "commit: " + e.err.Error() }
func (e commitError) Unwrap() error { return e.err }

// DuringCommit marks err as raised by COMMIT, so that a lost connection is
// classified as an ambiguous commit: the transaction may have committed.
func DuringCommit(err error) error {
	if err == nil {
		return nil
	}
	return commitError{err}
}

// fatalError marks an error the workload knows no retry can cure.
type fatalError struct{ err error }

func (e fatalError) Error() string { return e.err.Error() }
func (e fatalError) Unwrap() error { return e.err }

// Fatal marks err as fatal: a script that names an undefined variable, say.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	return fatalError{err}
}

// partlyCommittedError marks the failure of an attempt that had committed
// a write before it failed; keeps says its connection is still good.
type partlyCommittedError struct {
	err   error
	keeps bool
}

func (e partlyCommittedError) Error() string {
	if class, _ := Classify(e.err); class.Retryable() {
		return e.err.Error() + " (after this attempt committed a write: not retried, which would apply it again)"
	}
	return e.err.Error() + " (after this attempt committed a write)"
}
func (e partlyCommittedError) Unwrap() error { return e.err }

// KeepsConnection says the connection the attempt ran on is still good:
// the client goes on on it, with its session's prepared statements and
// settings, instead of reconnecting as after a lost connection (retest
// 14).
func (e partlyCommittedError) KeepsConnection() bool { return e.keeps }

// PartlyCommitted marks err as ending an attempt that had committed a
// write before it (a script of several transactions, a pipeline segment
// after another that committed, a procedure that commits): it is
// classified as an ambiguous commit, never retried, and counted as of
// unknown outcome, not as a failure that left nothing behind. keeps says
// the connection is still good (the server answered the failure).
func PartlyCommitted(err error, keeps bool) error {
	if err == nil {
		return nil
	}
	return partlyCommittedError{err, keeps}
}

// brokenError marks an error after which the client cannot go on with the
// connection, whatever the server said: it lost track of the exchange.
type brokenError struct{ err error }

func (e brokenError) Error() string { return e.err.Error() }
func (e brokenError) Unwrap() error { return e.err }

// Broken marks err as ending the connection (an error the server sent
// outside any statement the client awaited): it is classified as a lost
// connection, or an ambiguous commit during COMMIT, so that the client
// reconnects instead of retrying on a connection it cannot read.
func Broken(err error) error {
	if err == nil {
		return nil
	}
	return brokenError{err}
}

// Classify returns the failure class of err and whether it is fatal: an error
// that retrying or reconnecting cannot cure (authentication, syntax, a missing
// table), which must stop the run.
func Classify(err error) (class metrics.Class, fatal bool) {
	var fe fatalError
	if errors.As(err, &fe) {
		return metrics.Other, true
	}
	if errors.As(err, new(partlyCommittedError)) {
		return metrics.AmbiguousCommit, false
	}
	var ce commitError
	duringCommit := errors.As(err, &ce)
	if be := (brokenError{}); errors.As(err, &be) {
		if duringCommit {
			return metrics.AmbiguousCommit, false
		}
		return metrics.ConnectionLost, false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		code := pe.Code
		switch {
		case code == "40001":
			return metrics.Serialization, false
		case code == "40P01":
			return metrics.Deadlock, false
		case code == "40003":
			return metrics.AmbiguousCommit, false
		case (strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03") && !sessionGoesOn(pe):
			if duringCommit {
				return metrics.AmbiguousCommit, false
			}
			return metrics.ConnectionLost, false
		case strings.HasPrefix(code, "23"):
			return metrics.Constraint, false
		case strings.HasPrefix(code, "28"), strings.HasPrefix(code, "3D"),
			strings.HasPrefix(code, "42"), strings.HasPrefix(code, "0A"):
			return metrics.Other, true
		case endsSession(pe):
			// Any other FATAL (idle_in_transaction_session_timeout, out of
			// memory) ends the session as a lost connection does: the
			// executor reports it when the server sent it before closing.
			if duringCommit {
				return metrics.AmbiguousCommit, false
			}
			return metrics.ConnectionLost, false
		}
		return metrics.Other, false
	}
	if IsConnectionError(err) {
		if duringCommit {
			return metrics.AmbiguousCommit, false
		}
		return metrics.ConnectionLost, false
	}
	return metrics.Other, false
}

// sessionGoesOn says the server reported an error of class 08 (a protocol
// violation: a Bind with the wrong number of parameters) as an ERROR, after
// which the session goes on: not a lost connection.
func sessionGoesOn(pe *pgconn.PgError) bool {
	return pe.Severity == "ERROR" || pe.SeverityUnlocalized == "ERROR"
}

// endsSession says the server ended the session with pe (FATAL, PANIC).
func endsSession(pe *pgconn.PgError) bool {
	for _, sev := range []string{pe.SeverityUnlocalized, pe.Severity} {
		if sev == "FATAL" || sev == "PANIC" {
			return true
		}
	}
	return false
}

// IsConnectionError reports whether err means the connection is gone or
// could not be made (as opposed to an error the server returned).
func IsConnectionError(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return (strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03") && !sessionGoesOn(pe)
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	if errors.As(err, &ne) || errors.As(err, &ce) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"conn closed", "connection reset", "broken pipe", "unexpected EOF", "conn busy"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
