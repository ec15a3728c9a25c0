//go:build unix

package executor

import (
	"net"
	"syscall"
	"unsafe"
)

// rawSocket takes the socket of a TCP or Unix connection for its own: a
// duplicate in non-blocking mode, outside Go's netpoller; the net.Conn is
// closed.
func rawSocket(nc net.Conn) (int, bool) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, false
	}
	fd := -1
	if err := rc.Control(func(f uintptr) { fd, err = syscall.Dup(int(f)) }); err != nil || fd < 0 {
		return -1, false
	}
	syscall.CloseOnExec(fd)
	nc.Close()
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return -1, false
	}
	return fd, true
}

// rawRead and rawWrite are read(2) and write(2) on a non-blocking socket:
// they never block, so they skip the scheduler's bookkeeping for system
// calls that may.
func rawRead(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawWrite(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawClose(fd int) { _ = syscall.Close(fd) }
