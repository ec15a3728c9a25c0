//go:build unix

package outfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// openFD opens a path that names one of the process's own file descriptors
// (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N) as a duplicate of
// that descriptor: the write goes where the descriptor goes, at its offset,
// as the shell set it up (`--json /dev/stdout > out.txt` appends to what
// the report wrote there, a process substitution's pipe gets the bytes),
// instead of opening the file anew at offset 0 or replacing it. ok is
// false when path names no descriptor.
func openFD(path string) (f *os.File, ok bool, err error) {
	fd, ok := fdOf(path)
	if !ok {
		return nil, false, nil
	}
	flags, err := fcntl(fd, syscall.F_GETFL)
	if err != nil {
		return nil, true, err
	}
	if flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		return nil, true, errors.New("is open for reading only")
	}
	nfd, err := syscall.Dup(fd)
	if err != nil {
		return nil, true, err
	}
	syscall.CloseOnExec(nfd)
	return os.NewFile(uintptr(nfd), path), true, nil
}

func fdOf(path string) (int, bool) {
	switch p := filepath.Clean(path); p {
	case "/dev/stdout":
		return 1, true
	case "/dev/stderr":
		return 2, true
	default:
		for _, dir := range []string{"/dev/fd/", "/proc/self/fd/"} {
			if rest, ok := strings.CutPrefix(p, dir); ok {
				n, err := strconv.Atoi(rest)
				return n, err == nil && n >= 0
			}
		}
	}
	return 0, false
}

func fcntl(fd, cmd int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// openFIFO opens a FIFO for writing if a process reads it, at once: a
// blocking open would wait for a reader, and no stop signal ends a wait
// in open(2).
func openFIFO(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENXIO) {
		err = errNoReader
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	// A non-blocking descriptor: its writes wait in Go's poller, which
	// parks the goroutine, not the thread.
	return os.NewFile(uintptr(fd), path), nil
}
