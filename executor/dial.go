package executor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/txload/txload/internal/pgwire"
	"github.com/txload/txload/pg"
)

// dial opens a connection to the next node of t for c: pgconn connects and
// authenticates, then hands over the socket, on which c's program sets the
// connection up (Setuper). A plain TCP or Unix socket is then taken raw and
// non-blocking (with raw true), for an I/O loop; anything else (TLS) stays
// a net.Conn driven with blocking reads.
func (c *client) dial(ctx context.Context, t *pg.Target, raw bool) (*Conn, error) {
	pc, err := t.ConnectRaw(ctx)
	if err != nil {
		return nil, err
	}
	hj, err := pc.Hijack()
	if err != nil {
		pc.Close(ctx)
		return nil, fmt.Errorf("taking over the connection: %w", err)
	}
	conn := newConn()
	conn.pid, conn.key, conn.tx, conn.addr = hj.PID, hj.SecretKey, hj.TxStatus, hj.Conn.RemoteAddr()
	conn.encoding = hj.ParameterStatuses["client_encoding"]
	conn.nc = hj.Conn
	if s, ok := c.prog.(Setuper); ok {
		if err := setUp(ctx, conn, s, hj.Config.ConnectTimeout); err != nil {
			conn.close()
			return nil, err
		}
	}
	if raw && hj.TLSConfig == nil {
		if fd, ok := rawSocket(hj.Conn); ok {
			conn.fd, conn.nc = fd, nil
		}
	}
	return conn, nil
}

// setUp runs what s queues on conn, a new connection, with blocking reads
// that ctx interrupts, bounded as the rest of a connection is: a server
// that has not answered within bound (the connect timeout) fails the
// attempt, which is then retried as any failed connection.
func setUp(ctx context.Context, conn *Conn, s Setuper, bound time.Duration) error {
	conn.begin()
	s.Setup(conn)
	if !conn.pending() {
		return nil
	}
	if bound > 0 {
		_ = conn.nc.SetDeadline(time.Now().Add(bound))
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.nc.SetDeadline(time.Now()) })
	err := exchange(conn)
	var ne net.Error
	switch {
	case !stop():
		err = ctx.Err()
	case errors.As(err, &ne) && ne.Timeout():
		err = &stalled{bound: bound, err: err}
	}
	_ = conn.nc.SetDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("setting up the connection: %w", err)
	}
	for i := 0; i < conn.Results(); i++ {
		if err := conn.Result(i).Err; err != nil {
			return fmt.Errorf("setting up the connection: %w", err)
		}
	}
	return nil
}

// stalled is a step of a connection the server did not answer within the
// connect timeout.
type stalled struct {
	bound time.Duration
	err   error
}

func (e *stalled) Error() string {
	return fmt.Sprintf("no answer in %s (the connect timeout)", e.bound)
}

func (e *stalled) Unwrap() error { return e.err }

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
