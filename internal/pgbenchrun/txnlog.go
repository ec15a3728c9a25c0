package pgbenchrun

import (
	"time"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/report/pgbenchlog"
)

// TxnLog is pgbench's transaction log (-l, runner.TxnLog): one file per
// group of clients (pgbench's thread, txload's I/O loop), in pgbench's
// formats.
type TxnLog struct {
	Config pgbenchlog.Config
	logs   []*pgbenchlog.Writer
}

// Open creates the logs, one per group, as pgbench opens them before its
// clients connect.
func (l *TxnLog) Open(groups int) error {
	l.logs = make([]*pgbenchlog.Writer, 0, groups)
	for i := 0; i < groups; i++ {
		w, err := pgbenchlog.Create(l.Config, i, time.Now())
		if err != nil {
			l.Close(time.Now())
			return err
		}
		l.logs = append(l.logs, w)
	}
	return nil
}

// Start sets the logs' start: their first aggregate begins then.
func (l *TxnLog) Start(start time.Time) {
	for _, w := range l.logs {
		w.SetStart(start)
	}
}

// Txn writes t to its group's log, on the group's goroutine. A write error
// sticks to the log and is returned when it closes. A transaction that
// failed on an error other than a serialization failure or a deadlock is
// not logged: pgbench would have aborted its client instead.
func (l *TxnLog) Txn(t engine.Txn) {
	var o pgbenchlog.Outcome
	switch t.Outcome {
	case engine.TxnOK:
		o = pgbenchlog.OK
	case engine.TxnSkipped:
		o = pgbenchlog.Skipped
	case engine.TxnSerialization:
		o = pgbenchlog.Serialization
	case engine.TxnDeadlock:
		o = pgbenchlog.Deadlock
	default:
		return
	}
	_ = l.logs[t.Group].Log(pgbenchlog.Txn{Client: t.Client, Number: t.Number, Script: t.Op, Outcome: o,
		Latency: t.Latency, Lag: t.Lag, Tries: t.Tries, End: t.End})
}

// Close closes every log, with the first error writing one.
func (l *TxnLog) Close(end time.Time) error {
	var first error
	for _, w := range l.logs {
		if err := w.Close(end); err != nil && first == nil {
			first = err
		}
	}
	l.logs = nil
	return first
}
