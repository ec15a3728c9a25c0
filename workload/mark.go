package workload

import (
	"bytes"
	"fmt"
	"time"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
)

// Mark is one client's marker inside its transactions, for executor programs
// (lag --mark-transactions): opened by Begin or Queue just before the
// command that commits, resolved by Resolve when that command's result is
// in, or by Ended when the attempt fails. A nil *Mark marks nothing.
type Mark struct {
	m    TxMarker
	name string
	stmt *executor.Stmt
	open bool
}

// NewMark returns client's marker writer from opts, or nil when the run
// writes none. Its statement is prepared as name, or unnamed when name is
// "" (a pooler, the simple protocol).
func NewMark(opts RunOptions, client int, name string) *Mark {
	if opts.Marks == nil {
		return nil
	}
	m := opts.Marks(client)
	if m == nil {
		return nil
	}
	return &Mark{m: m, name: name}
}

// Open says whether an attempt's marker awaits its outcome.
func (k *Mark) Open() bool { return k != nil && k.open }

// Begin opens the attempt's marker: the statement to send it with and its
// arguments.
func (k *Mark) Begin() (*executor.Stmt, []any) {
	sql, args := k.m.Begin()
	if k.stmt == nil || k.stmt.SQL != sql {
		k.stmt = &executor.Stmt{SQL: sql, Name: k.name}
	}
	k.open = true
	return k.stmt, args
}

// Queue opens the attempt's marker and queues it on c with the extended
// protocol, in c's pipeline if one is open. Nothing when k is nil.
func (k *Mark) Queue(c *executor.Conn) {
	if k == nil {
		return
	}
	st, args := k.Begin()
	params := c.Bind(st, executor.CaptureNone)
	for _, a := range args {
		switch v := a.(type) {
		case int32:
			params.Int(int64(v))
		case int64:
			params.Int(v)
		case int:
			params.Int(int64(v))
		default:
			params.String(fmt.Sprint(v))
		}
	}
	params.Send()
}

var rollbackTag = []byte("ROLLBACK")

// Resolve closes the open marker with the committing command's result r,
// which had no error: a COMMIT of a transaction that had failed answers
// ROLLBACK, and its marker is gone with it.
func (k *Mark) Resolve(r *executor.Result, at time.Time) {
	if !k.Open() {
		return
	}
	if bytes.Equal(r.Tag(), rollbackTag) {
		k.m.RolledBack(false, at)
	} else {
		k.m.Committed(at)
	}
	k.open = false
}

// Ended closes a marker left open by an attempt that failed with err:
// rolled back, or ambiguous when the connection was lost while COMMIT was
// in flight.
func (k *Mark) Ended(now time.Time, err error) {
	if !k.Open() {
		return
	}
	class, _ := pg.Classify(err)
	k.m.RolledBack(err == nil || class == metrics.AmbiguousCommit, now)
	k.open = false
}
