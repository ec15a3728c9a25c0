package outfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Watched is a writer that keeps the first error a write to it returned,
// so that a writer whose callers drop write errors (fmt.Fprintf, a
// profiler) is still known to have lost bytes. Its writes may come from
// several goroutines.
type Watched struct {
	w   io.Writer
	mu  sync.Mutex
	err error
	// stop, when set (StopOn), ends a write to what may never take its
	// bytes that began before stop ended.
	stop context.Context
	// diagnostic (Diagnostics): once stop has ended, a write waits at most
	// lateDiagnostic and is dropped if its reader does not take it.
	diagnostic bool
	// stalled: a write was cut by the stop (or, after it, by lateWait):
	// none is made after it.
	stalled bool
}

// lateWait is how long a write after the stop waits on its reader (the
// report of an interrupted run), lateDiagnostic a line of stderr.
const (
	lateWait       = 5 * time.Second
	lateDiagnostic = time.Second
)

// Diagnostics is StopOn for stderr, whose lines are diagnostics: once ctx
// has ended, a write waits at most a second on its reader, and after one
// that its reader did not take, the lines are dropped. A stderr piped to
// a pager that is not scrolled (2>&1 | less) held a stopped run 30 s on
// its last lines (a retry of the eighth retest).
func (w *Watched) Diagnostics(ctx context.Context) *Watched {
	w.StopOn(ctx)
	w.diagnostic = w.stop != nil
	return w
}

// Watch wraps w.
func Watch(w io.Writer) *Watched { return &Watched{w: w} }

// StopOn makes a write that begins before ctx ends return when ctx ends,
// where w is what may never take the bytes: not a regular file (a pipe
// whose reader stalls, a FIFO, a process substitution, a terminal held by
// Ctrl-S). The stop signal that ends a command then ends it there too,
// instead of waiting on the reader (the eighth retest's retry: a page of
// 75 kB to a >(sleep 25) held a SIGTERM 18 s). A write that begins once
// ctx has ended (the report of an interrupted run) is written as w writes
// it, if its reader takes it within lateWait; a write cut by the stop or
// by lateWait leaves the output stalled: no write is made after it (a
// run's summary to a `2>&1 | less` not scrolled held a SIGTERM 56 s). It
// returns w.
func (w *Watched) StopOn(ctx context.Context) *Watched {
	if ctx == nil || ctx.Done() == nil {
		return w
	}
	if f, ok := w.w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
			w.stop = ctx
		}
	}
	return w
}

func (w *Watched) Write(p []byte) (int, error) {
	var n int
	var err error
	switch {
	case w.stop == nil:
		n, err = w.w.Write(p)
	case w.isStalled():
		// Its reader took nothing when the stop came: what follows is not
		// written either (a second signal would be needed to end it).
		if w.diagnostic {
			return len(p), nil
		}
		n, err = 0, errStalled
	case w.stop.Err() == nil:
		// Under way when the stop comes: it has as long as a write after
		// the stop has (its reader may be taking it as the signal comes).
		if n, err = w.writeUntil(p, w.stop.Done(), w.late()); errors.Is(err, errCut) {
			w.setStalled()
		}
	default:
		// After the stop: a write its reader does not take within
		// lateWait (lateDiagnostic for stderr) leaves the output stalled.
		if n, err = w.writeUntil(p, nil, w.late()); errors.Is(err, errCut) {
			w.setStalled()
		}
		if err != nil && w.diagnostic {
			return len(p), nil // dropped: its reader takes nothing
		}
	}
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

// errStalled: a write after the stop to an output whose reader took
// nothing when the stop came.
var errStalled = errors.New("not written: its reader took nothing when the stop came")

func (w *Watched) isStalled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stalled
}

func (w *Watched) setStalled() {
	w.mu.Lock()
	w.stalled = true
	w.mu.Unlock()
}

// writeUntil writes p from a goroutine of its own (with a copy of p,
// which the caller may reuse once this returns) and returns when it is
// written, or late after stop is closed (after the call, for a nil stop):
// then the goroutine stays in its write, which the process's exit ends.
func (w *Watched) writeUntil(p []byte, stop <-chan struct{}, late time.Duration) (int, error) {
	type written struct {
		n   int
		err error
	}
	done := make(chan written, 1)
	buf := bytes.Clone(p)
	go func() {
		n, err := w.w.Write(buf)
		done <- written{n, err}
	}()
	if stop != nil { // nil once the stop came: the wait below is all
		select {
		case r := <-done:
			return r.n, r.err
		case <-stop:
		}
	}
	t := time.NewTimer(late)
	defer t.Stop()
	select {
	case r := <-done:
		return r.n, r.err
	case <-t.C:
		return 0, fmt.Errorf("%w, %s after the stop (%v)", errCut, late, context.Cause(w.stop))
	}
}

// errCut: a write its reader did not take by lateWait after the stop.
var errCut = errors.New("interrupted while its reader took nothing")

// late is how long a write waits on its reader once the stop came.
func (w *Watched) late() time.Duration {
	if w.diagnostic {
		return lateDiagnostic
	}
	return lateWait
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

// CreateStream opens path as Create does; a write to what is not a
// regular file that its reader does not take returns when ctx ends.
func CreateStream(ctx context.Context, path string) (*Stream, error) {
	f, err := Create(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Stream{Watched: Watch(f).StopOn(ctx), f: f, path: path, regular: st.Mode().IsRegular()}, nil
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
