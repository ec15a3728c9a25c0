package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/txload/txload/metrics"
)

// Source is a series of values (a run's intervals, a figure's points) held
// in memory or out of it (a spool the run writes as it goes, a document's
// file), read from the first by each Open, one value at a time.
type Source[T any] interface {
	// Len is the number of values.
	Len() int
	// Open starts reading the values from the first.
	Open() (Cursor[T], error)
}

// Cursor reads a Source's values in order.
type Cursor[T any] interface {
	// Next returns the next value, or io.EOF after the last. The value is
	// the cursor's: the next call may overwrite it.
	Next() (*T, error)
	Close() error
}

// Slice is a Source of values in memory.
type Slice[T any] []T

// Len is the number of values.
func (s Slice[T]) Len() int { return len(s) }

// Open starts reading the values.
func (s Slice[T]) Open() (Cursor[T], error) { return &sliceCursor[T]{s: s}, nil }

type sliceCursor[T any] struct {
	s Slice[T]
	n int
}

func (c *sliceCursor[T]) Next() (*T, error) {
	if c.n == len(c.s) {
		return nil, io.EOF
	}
	c.n++
	return &c.s[c.n-1], nil
}

func (c *sliceCursor[T]) Close() error { return nil }

// each calls f with each value of src and its index, in order; it stops at
// f's first error.
func each[T any](src Source[T], f func(n int, v *T) error) error {
	c, err := src.Open()
	if err != nil {
		return err
	}
	defer c.Close()
	for n := 0; ; n++ {
		v, err := c.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := f(n, v); err != nil {
			return err
		}
	}
}

// Spool keeps a series of values out of memory as it grows: each is
// appended, as a line of JSON, to a file in a directory for temporary
// files ($TMPDIR), removed from the directory as soon as it is made (it
// goes with the process, however the process ends) or, where the system
// does not allow that, at Close. Reading it (Open) decodes the lines again
// one at a time, so a run of any length holds nothing in memory per value.
// Append and Open are not safe for concurrent use.
type Spool[T any] struct {
	f      *os.File
	w      *bufio.Writer
	name   string // to remove at Close ("": removed at creation)
	what   string
	n      int
	size   int64
	err    error
	decode func([]byte, *T) error
}

// newSpool makes a spool of what in dir ("": the system's directory for
// temporary files), its values decoded by decode.
func newSpool[T any](dir, what string, decode func([]byte, *T) error) (*Spool[T], error) {
	f, name, err := CreateSpoolFile(dir, what, "jsonl")
	if err != nil {
		return nil, err
	}
	return &Spool[T]{f: f, w: bufio.NewWriterSize(f, 64<<10), name: name, what: what, decode: decode}, nil
}

// CreateSpoolFile makes a file for the run's what in dir ("": $TMPDIR),
// txload-what-*.ext, and removes it from the directory at once: it goes
// with the process, however the process ends. Where the system does not
// allow that, name is its path, for the caller to remove when it closes
// it.
func CreateSpoolFile(dir, what, ext string) (f *os.File, name string, err error) {
	if dir == "" {
		dir = os.TempDir()
	}
	f, err = os.CreateTemp(dir, "txload-"+what+"-*."+ext)
	if err != nil {
		return nil, "", fmt.Errorf("creating a file for the run's %s in %s (set TMPDIR to a writable directory): %w", what, dir, errors.Unwrap(err))
	}
	if os.Remove(f.Name()) != nil {
		name = f.Name()
	}
	return f, name, nil
}

// NewIntervalSpool makes a spool of intervals in dir ("": $TMPDIR).
func NewIntervalSpool(dir string) (*Spool[IntervalDoc], error) {
	return newSpool(dir, "intervals", decodeInterval)
}

// NewPointSpool makes a spool of a figure's points in dir ("": $TMPDIR).
func NewPointSpool(dir string) (*Spool[SeriesPoint], error) {
	return newSpool(dir, "points", func(b []byte, p *SeriesPoint) error {
		*p = SeriesPoint{}
		return json.Unmarshal(b, p)
	})
}

// Append adds v at the end. The first error sticks: Append does nothing
// after it, and Err, Open and Close return it.
func (s *Spool[T]) Append(v *T) error {
	if s.err != nil {
		return s.err
	}
	b, err := json.Marshal(v)
	if err == nil {
		b = append(b, '\n')
		_, err = s.w.Write(b)
	}
	if err != nil {
		s.err = fmt.Errorf("spooling the run's %s in %s (set TMPDIR to a directory with room): %w", s.what, filepath.Dir(s.f.Name()), err)
		return s.err
	}
	s.n++
	s.size += int64(len(b))
	return nil
}

// Len is the number of values appended.
func (s *Spool[T]) Len() int { return s.n }

// Err is the first error appending, if any.
func (s *Spool[T]) Err() error { return s.err }

// Open starts reading the values appended so far.
func (s *Spool[T]) Open() (Cursor[T], error) {
	if err := s.flush(); err != nil {
		return nil, err
	}
	return &lineCursor[T]{sc: newScanner(io.NewSectionReader(s.f, 0, s.size), nil), decode: s.decode}, nil
}

func (s *Spool[T]) flush() error {
	if s.err != nil {
		return s.err
	}
	if s.f == nil {
		return fmt.Errorf("the spool of the run's %s is closed", s.what)
	}
	if err := s.w.Flush(); err != nil {
		s.err = fmt.Errorf("spooling the run's %s: %w", s.what, err)
	}
	return s.err
}

// eachRaw calls f with each value as it was appended: its JSON, valid
// until f returns.
func (s *Spool[T]) eachRaw(f func([]byte) error) error {
	if err := s.flush(); err != nil {
		return err
	}
	sc := newScanner(io.NewSectionReader(s.f, 0, s.size), nil)
	for {
		if _, err := sc.peek(); err != nil {
			if sc.err == nil && sc.eof {
				return nil
			}
			return err
		}
		raw, err := sc.value()
		if err != nil {
			return err
		}
		if err := f(raw); err != nil {
			return err
		}
	}
}

// Close removes the spool's file. Closing it again does nothing.
func (s *Spool[T]) Close() error {
	if s.f == nil {
		return nil
	}
	err := CloseSpoolFile(s.f, s.name)
	s.f = nil
	return err
}

// CloseSpoolFile closes a file CreateSpoolFile made, and removes it if
// it is still in its directory (name).
func CloseSpoolFile(f *os.File, name string) error {
	err := f.Close()
	if name != "" {
		if rerr := os.Remove(name); err == nil {
			err = rerr
		}
	}
	return err
}

// lineCursor reads a spool's lines.
type lineCursor[T any] struct {
	sc     *scanner
	decode func([]byte, *T) error
	v      T
}

func (c *lineCursor[T]) Next() (*T, error) {
	if _, err := c.sc.peek(); err != nil {
		if c.sc.err == nil && c.sc.eof {
			return nil, io.EOF
		}
		return nil, err
	}
	raw, err := c.sc.value()
	if err != nil {
		return nil, err
	}
	if err := c.decode(raw, &c.v); err != nil {
		return nil, err
	}
	return &c.v, nil
}

func (c *lineCursor[T]) Close() error { return nil }

// Intervals collects a run's intervals for its document, in a spool: call
// Add on each engine tick (from the ticking goroutine; it encodes at once,
// so it does not hold on to the reused snapshot), and put the spool in
// RunDoc.Spooled. Close removes it once the document is written.
type Intervals struct {
	*Spool[IntervalDoc]
	enc metrics.Encoder
}

// NewIntervals makes a collector whose spool is in dir ("": $TMPDIR).
func NewIntervals(dir string) (*Intervals, error) {
	s, err := NewIntervalSpool(dir)
	if err != nil {
		return nil, err
	}
	return &Intervals{Spool: s}, nil
}

// Add records one interval that ended at end.
func (c *Intervals) Add(iv *metrics.Snapshot, end time.Time, warmup bool) {
	if c.err != nil {
		return
	}
	d, err := newIntervalDoc(iv, end, warmup, c.enc.Encode)
	if err != nil {
		c.err = err
		return
	}
	_ = c.Append(&d)
}

// Close removes what the document holds out of memory that is its own
// (merge's spools of merged intervals): a run's spool is its outcome's,
// a document's file its reader's.
func (d *Document) Close() error {
	var first error
	for i := range d.Runs {
		if m, ok := d.Runs[i].Spooled.(*mergedIntervals); ok {
			if err := m.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}
