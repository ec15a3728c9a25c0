package executor

import (
	"io"
	"testing"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
)

// A connection lost after a statement completed but before the exchange's
// ReadyForQuery (a backend terminated between the two): the transaction
// committed if that statement was a COMMIT, or ran outside a block. Such a
// loss is an ambiguous commit, never retried; only a loss inside an open
// block with no COMMIT sent may be retried. The server's messages are fed
// to the connection as they arrive.
func TestLostAfterCompletion(t *testing.T) {
	for _, tc := range []struct {
		name string
		tx   byte // the block's state when the exchange began
		stmt *Stmt
		done bool // the statement's CommandComplete arrived
		want metrics.Class
	}{
		{"commit completed, no ReadyForQuery", 'T', &Stmt{SQL: "COMMIT", Commits: true}, true, metrics.AmbiguousCommit},
		{"commit in flight", 'T', &Stmt{SQL: "COMMIT", Commits: true}, false, metrics.AmbiguousCommit},
		{"autocommit statement completed", 'I', &Stmt{SQL: "INSERT INTO t VALUES (1)"}, true, metrics.AmbiguousCommit},
		{"autocommit statement in flight", 'I', &Stmt{SQL: "INSERT INTO t VALUES (1)"}, false, metrics.AmbiguousCommit},
		{"inside a block, completed", 'T', &Stmt{SQL: "UPDATE t SET v = 1"}, true, metrics.ConnectionLost},
		{"inside a block, in flight", 'T', &Stmt{SQL: "UPDATE t SET v = 1"}, false, metrics.ConnectionLost},
		{"begin completed", 'I', &Stmt{SQL: "BEGIN", Begins: true}, true, metrics.ConnectionLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConn()
			c.tx = tc.tx
			c.Bind(tc.stmt, CaptureNone).Send()
			c.sent = true // and flushed: the server has it
			for _, m := range []struct {
				typ  byte
				body string
			}{{'1', ""}, {'2', ""}, {'n', ""}, {'C', "X\x00"}} {
				if m.typ == 'C' && !tc.done {
					break
				}
				if done, err := c.handle(m.typ, []byte(m.body)); err != nil || done {
					t.Fatalf("message %q: done %v, %v", m.typ, done, err)
				}
			}
			if class, _ := pg.Classify(c.lost(io.ErrUnexpectedEOF)); class != tc.want {
				t.Errorf("classified %s, want %s", class, tc.want)
			}
		})
	}
}
