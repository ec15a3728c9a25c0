package pgtest

import (
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// RefusingPooler forwards the connections of a loopback listener to addr,
// a server, except those whose startup message has a parameter named in
// refused, which it refuses as PgBouncer refuses the parameters it does
// not know ("unsupported startup parameter", SQLSTATE 08P01). It returns
// its address; it closes when the test ends.
func RefusingPooler(t testing.TB, addr string, refused ...string) string {
	t.Helper()
	return Serve(t, func(nc net.Conn) { forwardUnlessRefused(t, nc, addr, refused) })
}

// StartingUp serves as a server that is starting up in front of the
// server at addr: its first n connections are refused with SQLSTATE 57P03
// ("the database system is starting up", what a restarted server says
// until its recovery ends); the others are forwarded. It returns its
// address.
func StartingUp(t testing.TB, addr string, n int) string {
	t.Helper()
	var seen atomic.Int64
	return Serve(t, func(nc net.Conn) {
		if seen.Add(1) > int64(n) {
			forwardUnlessRefused(t, nc, addr, nil)
			return
		}
		defer nc.Close()
		be := pgproto3.NewBackend(nc, nc)
		if _, err := be.ReceiveStartupMessage(); err != nil {
			return
		}
		be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "57P03", Message: "the database system is starting up"})
		_ = be.Flush()
	})
}

func forwardUnlessRefused(t testing.TB, nc net.Conn, addr string, refused []string) {
	defer nc.Close()
	be := pgproto3.NewBackend(nc, nc)
	m, err := be.ReceiveStartupMessage()
	sm, ok := m.(*pgproto3.StartupMessage)
	if err != nil || !ok {
		return
	}
	for _, name := range refused {
		if _, ok := sm.Parameters[name]; ok {
			be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "08P01", Message: "unsupported startup parameter: " + name})
			_ = be.Flush()
			return
		}
	}
	sc, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	t.Cleanup(func() { sc.Close() })
	defer sc.Close()
	b, err := sm.Encode(nil)
	if err != nil {
		return
	}
	if _, err := sc.Write(b); err != nil {
		return
	}
	go func() {
		_, _ = io.Copy(nc, sc)
		nc.Close()
	}()
	_, _ = io.Copy(sc, nc)
}
