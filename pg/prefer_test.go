package pg

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// countingProxy forwards TCP connections to addr and counts them.
func countingProxy(t *testing.T, addr string) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := net.Dial("tcp", addr)
				if err != nil {
					c.Close()
					return
				}
				go func() { io.Copy(s, c); s.Close() }()
				io.Copy(c, s)
				c.Close()
			}()
		}
	}()
	return l.Addr().String(), &n
}

// Under sslmode=prefer, a server without TLS refuses it once: the next
// connections go straight to plain text, one TCP connection each, as
// libpq's would (pgx alone opens two: one refused TLS, one plain).
func TestPreferPlainAfterRefusal(t *testing.T) {
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	addr, accepted := countingProxy(t, u.Host)
	u.Host = addr
	q := u.Query()
	q.Set("sslmode", "prefer")
	u.RawQuery = q.Encode()
	tg, err := NewTarget([]string{u.String()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 5 {
		pc, err := tg.ConnectRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pc.Close(ctx)
		conn, err := tg.ConnectNode(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
		if i == 0 && accepted.Load() > 3 {
			t.Fatalf("the first two connections took %d TCP connections", accepted.Load())
		}
	}
	// The first: a refused TLS attempt and the plain one; then one each.
	if n := accepted.Load(); n != 11 {
		t.Fatalf("10 connections took %d TCP connections, want 11", n)
	}
}
