package history

import (
	"bufio"
	"cmp"
	"io"
	"slices"
	"strconv"
	"time"
)

// WriteEDN writes attempts as a Jepsen history in EDN, which Elle's
// list-append checker (elle-cli --model list-append) reads: for each
// attempt an invocation and a completion, one map per line, in the order
// of their times, numbered by :index from 0:
//
//	{:index 0, :time 1250000, :type :invoke, :process 3, :f :txn, :value [[:r 5 nil] [:append 5 3]], :intended 1200000}
//	{:index 1, :time 2250000, :type :ok, :process 3, :f :txn, :value [[:r 5 [1 2]] [:append 5 3]]}
//
// :time is the invoke or completion time in nanoseconds; the client is
// the :process; a committed attempt completes with :ok, a failed one with
// :fail, one of unknown outcome with :info; reads are nil in the
// invocation and hold what they returned in the completion (nil if they
// did not run). Two keys of txload's own, which Elle ignores: :intended on
// the invocation (the intended start, in ns) and :sqlstate on the
// completion of an attempt that ended on an error. An EDNWriter with a
// level (SetLevel) records it in the first map, :isolation "serializable"
// (Reader.Level).
//
// Events at the same time are ordered completions first (then an attempt
// that ended at that time is not taken to overlap one that began then),
// except that an attempt's invocation always precedes its completion.
func WriteEDN(w io.Writer, attempts []Attempt) error {
	type event struct {
		at       time.Duration
		complete bool
		i        int // attempt
	}
	events := make([]event, 0, 2*len(attempts))
	for i, a := range attempts {
		events = append(events, event{a.Invoke, false, i}, event{a.Complete, true, i})
	}
	slices.SortStableFunc(events, func(x, y event) int {
		if c := cmp.Compare(x.at, y.at); c != 0 {
			return c
		}
		if x.complete != y.complete {
			if x.complete {
				return -1
			}
			return 1
		}
		return cmp.Compare(x.i, y.i)
	})
	// An attempt of no duration completes at the time it began: its
	// completion goes right after its invocation.
	out := make([]event, 0, len(events))
	for _, e := range events {
		a := attempts[e.i]
		if e.complete && a.Invoke == a.Complete {
			continue
		}
		out = append(out, e)
		if !e.complete && a.Invoke == a.Complete {
			out = append(out, event{a.Complete, true, e.i})
		}
	}
	ew := NewEDNWriter(w)
	for _, e := range out {
		if err := ew.write(e.complete, attempts[e.i], e.at); err != nil {
			return err
		}
	}
	return ew.Flush()
}

// EDNWriter writes a history as EDN while it is made, as WriteEDN writes
// a whole one: the caller writes each attempt's invocation when it begins
// and its completion when it ends, in the order of their times (a workload
// that stamps every event from one clock under one lock).
type EDNWriter struct {
	w       *bufio.Writer
	buf     []byte
	index   int
	level   string // to record in the next map written: "" none
	clients int    // to record in the next map written: 0 none
}

// NewEDNWriter writes to w; call Flush at the end.
func NewEDNWriter(w io.Writer) *EDNWriter {
	return &EDNWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// SetLevel records l, the level the attempts run at, in the first map.
func (e *EDNWriter) SetLevel(l Level) { e.level = l.String() }

// SetClients records n, the run's number of clients (its attempts'
// client numbers are below it), in the first map: :clients 2.
func (e *EDNWriter) SetClients(n int) { e.clients = n }

// Invoke writes a's invocation, at a.Invoke: its reads nil.
func (e *EDNWriter) Invoke(a Attempt) error { return e.write(false, a, a.Invoke) }

// Complete writes a's completion, at a.Complete.
func (e *EDNWriter) Complete(a Attempt) error { return e.write(true, a, a.Complete) }

func (e *EDNWriter) write(complete bool, a Attempt, at time.Duration) error {
	e.buf = appendEDN(e.buf[:0], e.index, complete, a, at)
	if e.level != "" {
		e.buf = slices.Insert(e.buf, len(e.buf)-2, []byte(", :isolation "+strconv.Quote(e.level))...)
		e.level = ""
	}
	if e.clients > 0 {
		e.buf = slices.Insert(e.buf, len(e.buf)-2, []byte(", :clients "+strconv.Itoa(e.clients))...)
		e.clients = 0
	}
	e.index++
	_, err := e.w.Write(e.buf)
	return err
}

// Flush writes what is buffered.
func (e *EDNWriter) Flush() error { return e.w.Flush() }

var ednTypes = [...]string{Committed: ":ok", Failed: ":fail", Unknown: ":info"}

func appendEDN(dst []byte, index int, complete bool, a Attempt, at time.Duration) []byte {
	dst = append(dst, "{:index "...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, ", :time "...)
	dst = strconv.AppendInt(dst, int64(at), 10)
	dst = append(dst, ", :type "...)
	if complete {
		dst = append(dst, ednTypes[a.Outcome]...)
	} else {
		dst = append(dst, ":invoke"...)
	}
	dst = append(dst, ", :process "...)
	dst = strconv.AppendInt(dst, int64(a.Client), 10)
	dst = append(dst, ", :f :txn, :value ["...)
	for i, op := range a.Ops {
		if i > 0 {
			dst = append(dst, ' ')
		}
		if op.Kind == Append {
			dst = append(dst, "[:append "...)
			dst = strconv.AppendInt(dst, op.Key, 10)
			dst = append(dst, ' ')
			dst = strconv.AppendInt(dst, op.Value, 10)
			dst = append(dst, ']')
			continue
		}
		dst = append(dst, "[:r "...)
		dst = strconv.AppendInt(dst, op.Key, 10)
		dst = append(dst, ' ')
		if complete {
			dst = appendList(dst, op.List, ' ', "nil")
		} else {
			dst = append(dst, "nil"...)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, ']')
	if !complete {
		dst = append(dst, ", :intended "...)
		dst = strconv.AppendInt(dst, int64(a.Intended), 10)
	} else if a.SQLState != "" {
		dst = append(dst, ", :sqlstate "...)
		dst = strconv.AppendQuote(dst, a.SQLState)
	}
	return append(dst, "}\n"...)
}
