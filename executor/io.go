package executor

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/txload/txload/internal/pgwire"
	"github.com/txload/txload/pg"
)

// errWouldBlock: the socket takes no more now; wait for it to be writable.
var errWouldBlock = errors.New("would block")

// flush writes what is queued. It returns errWouldBlock when a raw socket's
// buffer is full (the rest goes when it is writable again).
func (c *Conn) flush() error {
	for c.wpos < len(c.wbuf) {
		var n int
		var err error
		if c.nc != nil {
			n, err = c.nc.Write(c.wbuf[c.wpos:])
		} else {
			n, err = rawWrite(c.fd, c.wbuf[c.wpos:])
			if err == syscall.EAGAIN {
				return errWouldBlock
			}
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				err = &net.OpError{Op: "write", Net: "tcp", Addr: c.addr, Err: err}
			}
		}
		if err != nil {
			return err
		}
		c.wpos += n
		c.sent = c.sent || n > 0
	}
	c.wbuf, c.wpos = c.wbuf[:0], 0
	return nil
}

// fill reads what the socket has into the read buffer: for a raw socket what
// is there now (0 and nil when nothing is), for a net.Conn what one Read
// returns.
func (c *Conn) fill() (int, error) {
	if c.rpos == c.rend {
		c.rpos, c.rend = 0, 0
	}
	if c.rend == len(c.rbuf) {
		if c.rpos > 0 {
			c.rend = copy(c.rbuf, c.rbuf[c.rpos:c.rend])
			c.rpos = 0
		} else {
			c.rbuf = append(c.rbuf, make([]byte, len(c.rbuf))...)
		}
	}
	if c.nc != nil {
		n, err := c.nc.Read(c.rbuf[c.rend:])
		c.rend += n
		c.grow()
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return n, err
	}
	for {
		n, err := rawRead(c.fd, c.rbuf[c.rend:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, nil
		case err != nil:
			return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.addr, Err: err}
		case n == 0:
			return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.addr, Err: io.ErrUnexpectedEOF}
		}
		c.rend += n
		c.grow()
		return n, nil
	}
}

// grow doubles the read buffer, up to maxReadBuf, when a read filled it:
// replies larger than it are read in fewer system calls from then on.
func (c *Conn) grow() {
	if c.rend == len(c.rbuf) && len(c.rbuf) < maxReadBuf {
		c.rbuf = append(c.rbuf, make([]byte, len(c.rbuf))...)
	}
}

// close releases the socket, telling the server first when it can.
// abandon closes c at the end of a run: an exchange still in flight gets a
// cancel request, and its backend is noted on t (pg.Target.NoteOrphan): its
// statement may yet complete in the server.
func (c *Conn) abandon(t *pg.Target) {
	if c.pending() && c.broken == nil {
		t.NoteOrphan(c.pid)
		go cancel(c)
	}
	c.close()
}

func (c *Conn) close() {
	if c.nc != nil {
		_ = c.nc.Close()
		c.nc = nil
	}
	if c.fd >= 0 {
		if c.broken == nil && !c.pending() {
			_, _ = rawWrite(c.fd, pgwire.Terminate{}.Encode(nil))
		}
		rawClose(c.fd)
		c.fd = -1
	}
}
