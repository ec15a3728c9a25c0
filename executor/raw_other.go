//go:build !unix

package executor

import (
	"net"
	"syscall"
)

// Raw sockets are Unix-only: elsewhere every connection is a net.Conn.

func rawSocket(net.Conn) (int, bool)    { return -1, false }
func rawRead(int, []byte) (int, error)  { return 0, syscall.EINVAL }
func rawWrite(int, []byte) (int, error) { return 0, syscall.EINVAL }

func rawClose(int) {}
