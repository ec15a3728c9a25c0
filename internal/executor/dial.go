package executor

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/txload/txload/internal/pg"
	"github.com/txload/txload/internal/pgwire"
)

// dial opens a connection to the next node of t: pgconn connects and
// authenticates, then hands over the socket. A plain TCP or Unix socket is
// taken raw and non-blocking (with raw true), for an I/O loop; anything
// else (TLS) stays a net.Conn driven with blocking reads.
func dial(ctx context.Context, t *pg.Target, raw bool) (*Conn, error) {
	pc, err := t.ConnectRaw(ctx)
	if err != nil {
		return nil, err
	}
	hj, err := pc.Hijack()
	if err != nil {
		pc.Close(ctx)
		return nil, fmt.Errorf("taking over the connection: %w", err)
	}
	c := newConn()
	c.pid, c.key, c.tx, c.addr = hj.PID, hj.SecretKey, hj.TxStatus, hj.Conn.RemoteAddr()
	c.encoding = hj.ParameterStatuses["client_encoding"]
	if raw && hj.TLSConfig == nil {
		if fd, ok := rawSocket(hj.Conn); ok {
			c.fd = fd
			return c, nil
		}
	}
	c.nc = hj.Conn
	return c, nil
}

// cancel asks the server to cancel what c's backend runs (a CancelRequest on
// a connection of its own), bounded by a second.
func cancel(c *Conn) {
	if c.addr == nil || len(c.key) == 0 {
		return
	}
	d := net.Dialer{Timeout: time.Second}
	nc, err := d.Dial(c.addr.Network(), c.addr.String())
	if err != nil {
		return
	}
	defer nc.Close()
	msg := pgwire.CancelRequest{PID: c.pid, Key: c.key}.Encode(nil)
	_ = nc.SetDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write(msg)
	// The server closes the connection when it has read the request.
	_, _ = nc.Read(msg[:1])
}
