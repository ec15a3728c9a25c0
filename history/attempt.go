package history

import (
	"fmt"
	"time"
)

// Outcome is how an attempt ended.
type Outcome uint8

// The outcomes.
const (
	// Committed: the commit was acknowledged.
	Committed Outcome = iota + 1
	// Failed: the attempt ended on an error before or at its commit and
	// is known to have had no effect (a serialization failure, say).
	Failed
	// Unknown: the commit was sent but its acknowledgement never came
	// (the connection broke): it may or may not have taken effect.
	Unknown
)

var outcomeNames = [...]string{Committed: "committed", Failed: "failed", Unknown: "unknown"}

// String returns committed, failed or unknown.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && outcomeNames[o] != "" {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

func parseOutcome(s string) (Outcome, bool) {
	for o, n := range outcomeNames {
		if n != "" && n == s {
			return Outcome(o), true
		}
	}
	return 0, false
}

// OpKind says what an operation does.
type OpKind uint8

// The operations of a list-append transaction.
const (
	// Read returns the list a key holds (empty if it holds none).
	Read OpKind = iota + 1
	// Append adds one value at the end of a key's list.
	Append
)

// Op is one operation of an attempt.
type Op struct {
	Kind OpKind
	Key  int64
	// Value is what an Append appends.
	Value int64
	// List is what a Read returned: empty (not nil) for a key that held
	// nothing, nil when the read never returned (the attempt failed
	// before it, say).
	List []int64
}

// R is a read of key that returned list (nil: did not return).
func R(key int64, list ...int64) Op {
	if list == nil {
		list = []int64{}
	}
	return Op{Kind: Read, Key: key, List: list}
}

// A is an append of value to key.
func A(key, value int64) Op { return Op{Kind: Append, Key: key, Value: value} }

// String renders the operation as Elle writes it: [r 5 [1 2]], [append 5 3].
func (o Op) String() string {
	if o.Kind == Append {
		return fmt.Sprintf("[append %d %d]", o.Key, o.Value)
	}
	return fmt.Sprintf("[r %d %s]", o.Key, listString(o.List))
}

// listString renders a list as [1 2 3], or nil.
func listString(l []int64) string {
	if l == nil {
		return "nil"
	}
	b := []byte{'['}
	for i, v := range l {
		if i > 0 {
			b = append(b, ' ')
		}
		b = fmt.Appendf(b, "%d", v)
	}
	return string(append(b, ']'))
}

// Attempt is one try of a transaction: a retried transaction is several
// attempts. Times are offsets from the start of the history.
type Attempt struct {
	// Client is the client (Elle's process) that ran it: a client runs one
	// attempt at a time.
	Client int
	// Intended is when the schedule meant the attempt to start (open
	// loop); Invoke is when it did (its first statement was sent);
	// Complete is when its outcome was known.
	Intended, Invoke, Complete time.Duration
	Ops                        []Op
	Outcome                    Outcome
	// SQLState is the error's SQLSTATE for a failed attempt, and for an
	// unknown one when the server sent one; "" otherwise.
	SQLState string
}

// Validate says what is wrong with a, if anything.
func (a *Attempt) Validate() error {
	switch {
	case a.Client < 0:
		return fmt.Errorf("client %d is negative", a.Client)
	case a.Outcome < Committed || a.Outcome > Unknown:
		return fmt.Errorf("outcome must be committed, failed or unknown")
	case a.Intended < 0 || a.Invoke < 0 || a.Complete < 0:
		return fmt.Errorf("times must not be negative")
	case a.Intended > a.Invoke:
		return fmt.Errorf("intended start %d ns is after the invoke time %d ns", a.Intended, a.Invoke)
	case a.Invoke > a.Complete:
		return fmt.Errorf("invoke time %d ns is after the completion time %d ns", a.Invoke, a.Complete)
	case len(a.Ops) == 0:
		return fmt.Errorf("an attempt has at least one operation")
	case a.Outcome == Committed && a.SQLState != "":
		return fmt.Errorf("a committed attempt has no SQLSTATE (got %q)", a.SQLState)
	}
	if a.SQLState != "" && !validSQLState(a.SQLState) {
		return fmt.Errorf("SQLSTATE %q is not five digits or capital letters", a.SQLState)
	}
	for i, op := range a.Ops {
		switch op.Kind {
		case Read:
			if op.List == nil && a.Outcome == Committed {
				return fmt.Errorf("operation %d: a committed attempt's read must hold its result (a list, [] when empty), not null", i+1)
			}
		case Append:
			if op.List != nil {
				return fmt.Errorf("operation %d: an append has no list", i+1)
			}
		default:
			return fmt.Errorf("operation %d: kind %d is neither read nor append", i+1, op.Kind)
		}
	}
	return nil
}

func validSQLState(s string) bool {
	if len(s) != 5 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}
