package metrics

// Class is the kind of a failed attempt, decided from its SQLSTATE.
type Class uint8

// The failure classes, in report order.
const (
	Serialization   Class = iota // 40001: serialization failure, CockroachDB restart
	Deadlock                     // 40P01
	ConnectionLost               // the connection broke before COMMIT was sent
	AmbiguousCommit              // the connection broke during COMMIT, or 40003
	Constraint                   // class 23: integrity constraint violation
	Other                        // anything else that is not fatal
	NumClasses
)

var classNames = [NumClasses]string{
	Serialization:   "serialization",
	Deadlock:        "deadlock",
	ConnectionLost:  "connection",
	AmbiguousCommit: "ambiguous",
	Constraint:      "constraint",
	Other:           "other",
}

// String returns the class name used in reports and JSON.
func (c Class) String() string {
	if c < NumClasses {
		return classNames[c]
	}
	return "unknown"
}

// Retryable reports whether a transaction that failed with this class may be
// run again: the server rolled it back, or it never reached COMMIT.
func (c Class) Retryable() bool {
	return c == Serialization || c == Deadlock || c == ConnectionLost
}

// Classes lists every class in report order.
func Classes() []Class {
	cs := make([]Class, NumClasses)
	for i := range cs {
		cs[i] = Class(i)
	}
	return cs
}
