package pgtest

import (
	"io"
	"net"
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
