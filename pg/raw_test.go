package pg

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// slowStartup is a client socket whose first write (the startup message)
// returns only once the server has answered it, and 50 ms later: pgx
// starts its background reader when a write takes longer than 15 ms, and
// that reader then reads the server's answer and waits in a read of its
// own for more. What it reads next is no longer on the socket.
type slowStartup struct {
	net.Conn
	once    sync.Once
	replied <-chan struct{}
}

func (c *slowStartup) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.once.Do(func() {
		<-c.replied
		time.Sleep(50 * time.Millisecond)
	})
	return n, err
}

// TestConnectRawLeavesNothingInPgx: a connection ConnectRaw returns is
// ready to be hijacked: no read of pgx's is under way on its socket, so the
// answer to the first statement sent on the hijacked socket is there to be
// read. Before the fix, a connection whose startup write was slow (a
// machine at load 25: 1 client of 20 in 1 run of 9) lost that answer to
// pgx's background reader, and the client waited for it for ever
// ("setting up the connection" until the run was killed).
func TestConnectRawLeavesNothingInPgx(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	replied := make(chan struct{})
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		be := pgproto3.NewBackend(nc, nc)
		if _, err := be.ReceiveStartupMessage(); err != nil {
			return
		}
		for _, m := range []pgproto3.BackendMessage{&pgproto3.AuthenticationOk{},
			&pgproto3.ParameterStatus{Name: "client_encoding", Value: "UTF8"},
			&pgproto3.BackendKeyData{ProcessID: 7, SecretKey: []byte{1, 2, 3, 4}},
			&pgproto3.ReadyForQuery{TxStatus: 'I'}} {
			be.Send(m)
		}
		if be.Flush() != nil {
			return
		}
		close(replied)
		for {
			m, err := be.Receive()
			if err != nil {
				return
			}
			q, ok := m.(*pgproto3.Query)
			if !ok {
				return
			}
			if q.String == "-- ping" {
				be.Send(&pgproto3.EmptyQueryResponse{})
			} else {
				be.Send(&pgproto3.CommandComplete{CommandTag: []byte("SET")})
			}
			be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
			if be.Flush() != nil {
				return
			}
		}
	}()
	tg, err := NewTarget([]string{fmt.Sprintf("postgres://u@%s/db?sslmode=disable", ln.Addr())})
	if err != nil {
		t.Fatal(err)
	}
	tg.configs[0].DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &slowStartup{Conn: nc, replied: replied}, nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	pc, err := tg.ConnectRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hj, err := pc.Hijack()
	if err != nil {
		t.Fatal(err)
	}
	defer hj.Conn.Close()
	q, err := (&pgproto3.Query{String: "SET x = 1"}).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hj.Conn.Write(q); err != nil {
		t.Fatal(err)
	}
	_ = hj.Conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 64)
	n, err := hj.Conn.Read(buf)
	if err != nil {
		t.Fatalf("reading the answer to the first statement on the hijacked connection: %v (pgx's background reader took it)", err)
	}
	if n == 0 || buf[0] != 'C' {
		t.Fatalf("first answer on the hijacked connection: %q, want CommandComplete", buf[:n])
	}
}
