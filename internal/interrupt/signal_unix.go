//go:build unix

package interrupt

import "golang.org/x/sys/unix"

// outputClosed says whether standard output or error is a pipe whose
// reader has gone: poll reports an error on its write end.
func outputClosed() bool {
	fds := []unix.PollFd{{Fd: 1}, {Fd: 2}}
	n, err := unix.Poll(fds, 0)
	if err != nil || n == 0 {
		return false
	}
	for _, f := range fds {
		if f.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}
