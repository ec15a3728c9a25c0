package executor

import (
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// The client's side of one prepared statement's exchange, with no socket:
// its messages encoded, the server's answer (one row) framed and handled.
// Nothing is allocated.
func BenchmarkExchange(b *testing.B) {
	var reply []byte
	for _, m := range []pgproto3.BackendMessage{&pgproto3.BindComplete{},
		&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("abalance"), DataTypeOID: 23, DataTypeSize: 4}}},
		&pgproto3.DataRow{Values: [][]byte{[]byte("-4242")}}, &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")},
		&pgproto3.ReadyForQuery{TxStatus: 'I'}} {
		reply, _ = m.Encode(reply)
	}
	s := &Stmt{SQL: "SELECT abalance FROM pgbench_accounts WHERE aid = $1", Name: "s"}
	c := newConn()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.begin()
		c.Bind(s, CaptureFirst).Int(int64(i)).Send()
		c.wbuf = c.wbuf[:0]
		c.rpos, c.rend = 0, copy(c.rbuf, reply)
		if done, err := c.process(); !done || err != nil {
			b.Fatal(done, err)
		}
		if v, _ := c.Result(0).Value(0, 0); len(v) != 5 {
			b.Fatalf("%q", v)
		}
	}
}
