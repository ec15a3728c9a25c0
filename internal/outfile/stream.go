package outfile

import (
	"errors"
	"io"
	"os"
	"sync"
)

// Watched is a writer that keeps the first error a write to it returned,
// so that a writer whose callers drop write errors (fmt.Fprintf, a
// profiler) is still known to have lost bytes. Its writes may come from
// several goroutines.
type Watched struct {
	w   io.Writer
	mu  sync.Mutex
	err error
}

// Watch wraps w.
func Watch(w io.Writer) *Watched { return &Watched{w: w} }

func (w *Watched) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.mu.Lock()
		if w.err == nil {
			w.err = err
		}
		w.mu.Unlock()
	}
	return n, err
}

// Err is the first write error, nil if none.
func (w *Watched) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stream is a file written as a run goes (the .hlog, the CPU profile):
// Close says whether every byte reached it.
type Stream struct {
	*Watched
	f    *os.File
	path string
	// regular: the file was created at path, which must still lead to it
	// when it is closed.
	regular bool
}

// CreateStream opens path as Create does.
func CreateStream(path string) (*Stream, error) {
	f, err := Create(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Stream{Watched: Watch(f), f: f, path: path, regular: st.Mode().IsRegular()}, nil
}

// Close closes the file; its error is the first failed write, the close's
// own, or, for a regular file, that the path no longer leads to the file
// written (its directory or the file removed during the run: the bytes
// went to no file anyone can read).
func (s *Stream) Close() error {
	st, statErr := s.f.Stat()
	closeErr := s.f.Close()
	if err := s.Err(); err != nil {
		return err
	}
	if closeErr != nil {
		return closeErr
	}
	if !s.regular || statErr != nil {
		return statErr
	}
	now, err := os.Stat(s.path)
	if err != nil || !os.SameFile(st, now) {
		return errors.New("the file was removed or replaced while it was written")
	}
	return nil
}

// errNoReader: a FIFO that no process has open for reading (opening it
// would wait for one, deaf to the run's stop signals).
var errNoReader = errors.New("a FIFO that no process reads: start its reader first")
