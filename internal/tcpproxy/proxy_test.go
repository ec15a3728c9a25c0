package tcpproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// quiet is how long a test waits to be sure nothing arrives.
const quiet = 300 * time.Millisecond

// upstream is a real TCP server that hands each accepted connection to the
// test.
type upstream struct {
	ln    net.Listener
	conns chan net.Conn
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{ln: ln, conns: make(chan net.Conn, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-u.conns:
				c.Close()
			default:
				return
			}
		}
	})
	return u
}

// next is the next connection the upstream accepted, or nil after wait.
func (u *upstream) next(wait time.Duration) net.Conn {
	select {
	case c := <-u.conns:
		return c
	case <-time.After(wait):
		return nil
	}
}

// pair is a client connection through the proxy and the upstream's side of
// it.
func pair(t *testing.T, p *Proxy, u *upstream) (client, server net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := u.next(5 * time.Second)
	if s == nil {
		t.Fatal("the upstream saw no connection")
	}
	t.Cleanup(func() { s.Close() })
	return c, s
}

// recv reads exactly n bytes from c within wait.
func recv(c net.Conn, n int, wait time.Duration) ([]byte, error) {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	b := make([]byte, n)
	_, err := io.ReadFull(c, b)
	return b, err
}

// silent checks that nothing arrives on c for quiet (no byte, no EOF).
func silent(t *testing.T, c net.Conn, what string) {
	t.Helper()
	b, err := recv(c, 1, quiet)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: got %q, %v while paused, want nothing", what, b, err)
	}
}

func expect(t *testing.T, c net.Conn, want string, what string) {
	t.Helper()
	b, err := recv(c, len(want), 5*time.Second)
	if err != nil || string(b) != want {
		t.Fatalf("%s: got %q, %v; want %q", what, b, err, want)
	}
}

// closed checks that c's peer has closed (EOF or a reset) within a few seconds.
func closed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	b, err := recv(c, 1, 5*time.Second)
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: got %q, %v; want the connection closed", what, b, err)
	}
}

func TestProxy(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, p *Proxy, u *upstream)
	}{
		{"forwards both ways", func(t *testing.T, p *Proxy, u *upstream) {
			c, s := pair(t, p, u)
			big := bytes.Repeat([]byte("0123456789"), 100_000) // 1 MB: many chunks
			go func() { _, _ = c.Write(big) }()
			got, err := recv(s, len(big), 10*time.Second)
			if err != nil || !bytes.Equal(got, big) {
				t.Fatalf("upstream got %d bytes (%v), want the 1 MB sent", len(got), err)
			}
			if _, err := s.Write([]byte("pong")); err != nil {
				t.Fatal(err)
			}
			expect(t, c, "pong", "client")
			if p.Conns() != 1 {
				t.Errorf("Conns() = %d, want 1", p.Conns())
			}
		}},
		{"pause holds bytes both ways until resume", func(t *testing.T, p *Proxy, u *upstream) {
			c, s := pair(t, p, u)
			p.Pause()
			if !p.Paused() {
				t.Fatal("Paused() = false after Pause")
			}
			if _, err := c.Write([]byte("up")); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Write([]byte("down")); err != nil {
				t.Fatal(err)
			}
			silent(t, s, "upstream")
			silent(t, c, "client")
			p.Pause() // again: still paused, nothing changes
			p.Resume()
			if p.Paused() {
				t.Fatal("Paused() = true after Resume")
			}
			expect(t, s, "up", "upstream after resume")
			expect(t, c, "down", "client after resume")
		}},
		{"pause holds a close until resume", func(t *testing.T, p *Proxy, u *upstream) {
			c, s := pair(t, p, u)
			p.Pause()
			if err := c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			silent(t, s, "upstream")
			p.Resume()
			if _, err := recv(s, 1, 5*time.Second); !errors.Is(err, io.EOF) {
				t.Fatalf("upstream after resume: %v, want EOF", err)
			}
			// Half-closed: the other direction still flows.
			if _, err := s.Write([]byte("late")); err != nil {
				t.Fatal(err)
			}
			expect(t, c, "late", "client after its half-close")
		}},
		{"a connection made during a pause reaches the target after it", func(t *testing.T, p *Proxy, u *upstream) {
			p.Pause()
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			if s := u.next(quiet); s != nil {
				s.Close()
				t.Fatal("the upstream was reached during the pause")
			}
			p.Resume()
			s := u.next(5 * time.Second)
			if s == nil {
				t.Fatal("the upstream saw no connection after resume")
			}
			defer s.Close()
			expect(t, s, "hello", "upstream")
		}},
		{"cut closes every connection, both sides, and accepts new ones", func(t *testing.T, p *Proxy, u *upstream) {
			c1, s1 := pair(t, p, u)
			c2, s2 := pair(t, p, u)
			if n := p.Cut(); n != 2 {
				t.Errorf("Cut() = %d, want 2", n)
			}
			for _, c := range []net.Conn{c1, s1, c2, s2} {
				closed(t, c, c.LocalAddr().String())
			}
			c3, s3 := pair(t, p, u)
			if _, err := c3.Write([]byte("again")); err != nil {
				t.Fatal(err)
			}
			expect(t, s3, "again", "upstream after the cut")
		}},
		{"cut during a pause drops what waited", func(t *testing.T, p *Proxy, u *upstream) {
			c, s := pair(t, p, u)
			p.Pause()
			if _, err := c.Write([]byte("never")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // the proxy reads it and waits
			p.Cut()
			p.Resume()
			if b, err := recv(s, 5, 5*time.Second); err == nil {
				t.Fatalf("upstream got %q after a cut", b)
			}
			closed(t, c, "client")
		}},
		{"the target's close reaches the client", func(t *testing.T, p *Proxy, u *upstream) {
			c, s := pair(t, p, u)
			if _, err := s.Write([]byte("bye")); err != nil {
				t.Fatal(err)
			}
			s.Close()
			expect(t, c, "bye", "client")
			closed(t, c, "client")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t)
			p, err := Listen(u.ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			tc.run(t, p, u)
		})
	}
}

// A target that refuses: the client's connection is closed.
func TestTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	closed(t, c, "client of a proxy to a closed port")
}

// Close stops the listener and ends every connection.
func TestClose(t *testing.T) {
	u := newUpstream(t)
	p, err := Listen(u.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, s := pair(t, p, u)
	p.Pause() // Close ends paused connections too
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	closed(t, c, "client")
	closed(t, s, "upstream")
	if c, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c.Close()
		t.Error("the proxy still accepts connections after Close")
	}
	if p.Conns() != 0 {
		t.Errorf("Conns() = %d after Close", p.Conns())
	}
	if err := p.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

func TestListenBadTarget(t *testing.T) {
	for _, target := range []string{"", "localhost", "127.0.0.1:1:2"} {
		if p, err := Listen(target); err == nil {
			p.Close()
			t.Errorf("Listen(%q): no error", target)
		}
	}
}
