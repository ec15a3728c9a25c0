//go:build unix

package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// BlockingDial connects like net.Dialer, then hands back a connection whose
// socket is in blocking mode, read and written with plain syscalls. A worker
// waiting for the server then sleeps in read(2) and the kernel wakes its
// thread directly, as pgbench's threads are woken, instead of going through
// Go's netpoller (a read that fails with EAGAIN, epoll, a futex handoff).
// Deadlines cannot interrupt a blocking syscall: a deadline in the past
// shuts the socket down instead, which is what cancellation needs.
func BlockingDial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	var f *os.File
	switch sc := c.(type) {
	case *net.TCPConn:
		_ = sc.SetNoDelay(true)
		f, err = sc.File()
	case *net.UnixConn:
		f, err = sc.File()
	default:
		return c, nil
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("dialing %s: %w", addr, err)
	}
	bc := &blockingConn{f: f, fd: int(f.Fd()), laddr: c.LocalAddr(), raddr: c.RemoteAddr()}
	c.Close() // the duplicate keeps the socket open
	if err := syscall.SetNonblock(bc.fd, false); err != nil {
		f.Close()
		return nil, fmt.Errorf("dialing %s: %w", addr, err)
	}
	return bc, nil
}

type blockingConn struct {
	f            *os.File // owns fd
	fd           int
	laddr, raddr net.Addr
}

func (c *blockingConn) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(c.fd, p)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.raddr, Err: err}
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *blockingConn) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		n, err := syscall.Write(c.fd, p[written:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return written, &net.OpError{Op: "write", Net: "tcp", Addr: c.raddr, Err: err}
		}
		written += n
	}
	return written, nil
}

func (c *blockingConn) Close() error         { return c.f.Close() }
func (c *blockingConn) LocalAddr() net.Addr  { return c.laddr }
func (c *blockingConn) RemoteAddr() net.Addr { return c.raddr }

// SetDeadline shuts the socket down when t has passed (cancellation); a
// future or zero deadline is not enforced.
func (c *blockingConn) SetDeadline(t time.Time) error {
	if !t.IsZero() && !t.After(time.Now()) {
		return syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	}
	return nil
}
func (c *blockingConn) SetReadDeadline(t time.Time) error  { return c.SetDeadline(t) }
func (c *blockingConn) SetWriteDeadline(t time.Time) error { return c.SetDeadline(t) }
