package pgtest

import (
	"io"
	"net"
	"testing"
)

// Mute starts a TCP listener on loopback that accepts every connection and
// reads it without ever answering (a server stuck before its startup
// answer), and returns its address; it closes when the test ends.
func Mute(t testing.TB) string {
	t.Helper()
	return Serve(t, func(nc net.Conn) { _, _ = io.Copy(io.Discard, nc) })
}

// Serve starts a TCP listener on loopback that hands each connection it
// accepts to handle, on a goroutine of its own, and returns its address;
// the listener and the connections close when the test ends.
func Serve(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { nc.Close() })
			go handle(nc)
		}
	}()
	return ln.Addr().String()
}
