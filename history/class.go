package history

import (
	"fmt"
	"strings"
)

// Class is a kind of anomaly the checker finds.
type Class int

// The classes, in the order they are reported. The cycle classes are
// Adya's (as Elle searches for them, one search per class in each strongly
// connected component of the dependency graph); the others show in single
// transactions or reads.
const (
	// G0: a cycle of ww edges alone (write cycle, dirty write).
	G0 Class = iota
	// G1a: a committed read holds a value only a failed attempt appended
	// (aborted read).
	G1a
	// GarbageRead: a committed read holds a value that no attempt in the
	// history appended to that key, committed, failed or unknown (Elle's
	// garbage: a read of a write nobody made, or of one missing from the
	// history). Every level forbids it: no isolation level lets a read
	// return data no transaction wrote.
	GarbageRead
	// FutureRead: a committed read holds a value appended by an attempt
	// invoked after the read's attempt completed: in real time the read
	// returned what nobody had begun to write. Every level forbids it,
	// as it does a garbage read (the history's clocks are one client's
	// monotonic clock: a run's attempts are timed against one start).
	FutureRead
	// G1b: a committed read ends with a value its writer appended before
	// another of its own appends to that key (intermediate read).
	G1b
	// G1c: a cycle of ww and wr edges, at least one wr (circular
	// information flow).
	G1c
	// GSingle: a cycle with exactly one rw edge, the others ww or wr (read
	// skew).
	GSingle
	// GNonadjacent: a cycle with two or more rw edges, no two of them
	// adjacent: snapshot isolation forbids it, as it does G-single.
	GNonadjacent
	// G2Item: a cycle with two or more rw edges (anti-dependency cycle;
	// write skew when two rw edges are adjacent). Every G-nonadjacent
	// cycle is one too.
	G2Item
	// Internal: a committed attempt's read contradicts its own earlier
	// operations on that key in a way no level allows: it does not end
	// with the attempt's own appends since its previous read of the key,
	// or what precedes them does not extend that read (a list only
	// grows). A read that sees more than the attempt's previous one (a
	// non-repeatable read, which read committed allows) is not internal:
	// the graph shows it as a G-single cycle.
	Internal
	// IncompatibleOrder: a committed read that is not a prefix of the
	// key's version order (its longest read), or a version order that
	// holds a committed attempt's appends to the key the other way round
	// from the order it made them: no single order of appends explains
	// both.
	IncompatibleOrder
	// DuplicateElements: a committed read holds a value twice.
	DuplicateElements
	// LostAppend: a committed append that no read of its key ever holds,
	// though committed attempts that started after its commit read that
	// key.
	LostAppend
	numClasses
)

var classNames = [numClasses]string{
	G0: "G0", G1a: "G1a", GarbageRead: "garbage-read", FutureRead: "future-read", G1b: "G1b", G1c: "G1c", GSingle: "G-single", GNonadjacent: "G-nonadjacent",
	G2Item: "G2-item", Internal: "internal", IncompatibleOrder: "incompatible-order",
	DuplicateElements: "duplicate-elements", LostAppend: "lost-append",
}

var classMeanings = [numClasses]string{
	G0:                "write cycle: a cycle of ww edges",
	G1a:               "aborted read: a read of a value only a failed attempt appended",
	GarbageRead:       "a read of a value no attempt in the history appended",
	FutureRead:        "a read of a value appended by an attempt invoked after the read completed",
	G1b:               "intermediate read: a read ending with a value its writer appended to again",
	G1c:               "circular information flow: a cycle of ww and wr edges",
	GSingle:           "read skew: a cycle with exactly one rw edge",
	GNonadjacent:      "a cycle with two or more rw edges, none adjacent",
	G2Item:            "anti-dependency cycle: a cycle with two or more rw edges",
	Internal:          "a read that misses the attempt's own appends or goes back on its own read",
	IncompatibleOrder: "a read that is not a prefix of its key's longest read, or holds an attempt's appends out of their order",
	DuplicateElements: "a read that holds a value twice",
	LostAppend:        "a committed append no later read holds",
}

// String returns Elle's name of the class: G0, G-single, G2-item, ...
func (c Class) String() string {
	if c >= 0 && c < numClasses {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// Meaning says in a few words what the class is.
func (c Class) Meaning() string {
	if c >= 0 && c < numClasses {
		return classMeanings[c]
	}
	return ""
}

// Cycle says whether the class is a cycle in the dependency graph.
func (c Class) Cycle() bool {
	switch c {
	case G0, G1c, GSingle, GNonadjacent, G2Item:
		return true
	}
	return false
}

// Classes lists every class, in the order they are reported.
func Classes() []Class {
	out := make([]Class, numClasses)
	for i := range out {
		out[i] = Class(i)
	}
	return out
}

// Level is an isolation level a history is checked against.
type Level int

// The levels, weakest first. Each forbids what the one before it does, and
// more (Adya's PL-1, PL-2, Elle's snapshot isolation, PL-3).
const (
	ReadUncommitted Level = iota
	ReadCommitted
	// RepeatableRead is PostgreSQL's (and CockroachDB's and YugabyteDB's)
	// repeatable read: snapshot isolation, which allows write skew
	// (G2-item). ANSI and Adya's repeatable read (PL-2.99) would forbid
	// G2-item; no level here is that one.
	RepeatableRead
	Serializable
)

var levelNames = [...]string{"read uncommitted", "read committed", "repeatable read", "serializable"}

// String returns the SQL name of the level.
func (l Level) String() string {
	if l >= 0 && int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("level(%d)", int(l))
}

// ParseLevel accepts the SQL names in any case, with spaces, dashes or
// underscores, the short forms ru, rc, rr and ser, and snapshot isolation
// (si) for repeatable read.
func ParseLevel(s string) (Level, error) {
	n := strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return r == ' ' || r == '-' || r == '_'
	}), " ")
	switch n {
	case "read uncommitted", "ru":
		return ReadUncommitted, nil
	case "read committed", "rc":
		return ReadCommitted, nil
	case "repeatable read", "rr", "snapshot isolation", "snapshot", "si":
		return RepeatableRead, nil
	case "serializable", "ser":
		return Serializable, nil
	}
	return 0, fmt.Errorf("%q is not an isolation level (allowed: read uncommitted, read committed, repeatable read, serializable, or ru, rc, rr, ser; snapshot isolation is repeatable read)", s)
}

// Forbids says whether a history at level l may not show class c.
//
// Following Elle's consistency models (elle.consistency-model), with
// Adya's definitions:
//   - every level (read uncommitted is Adya's PL-1) forbids G0, duplicate
//     elements and a garbage read (a value no attempt appended: no level
//     lets a read return data nobody wrote); here every level also forbids an internal
//     inconsistency, which Adya's model presumes away (a transaction sees
//     its own writes; Elle's broader internal check, which also counts a
//     non-repeatable read, it lists only under the stronger models), and
//     a lost append, which is lost data: PostgreSQL shows a transaction
//     every commit acknowledged before it started, at every level;
//   - read committed (PL-2) forbids G1a, G1b, G1c and incompatible orders
//     (which imply an aborted read); it allows G-single, G-nonadjacent and
//     G2-item;
//   - repeatable read is snapshot isolation: it forbids G-single and
//     G-nonadjacent too, and allows G2-item whose rw edges are adjacent
//     (write skew);
//   - serializable (PL-3) forbids every class.
func (l Level) Forbids(c Class) bool {
	switch c {
	case G0, GarbageRead, FutureRead, DuplicateElements, Internal, LostAppend:
		return true
	case G1a, G1b, G1c, IncompatibleOrder:
		return l >= ReadCommitted
	case GSingle, GNonadjacent:
		return l >= RepeatableRead
	case G2Item:
		return l >= Serializable
	}
	return true
}
