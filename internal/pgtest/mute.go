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
			go func() { _, _ = io.Copy(io.Discard, nc) }()
		}
	}()
	return ln.Addr().String()
}
