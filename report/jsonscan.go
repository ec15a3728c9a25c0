package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// scanner reads JSON from r a chunk at a time: each value is looked at in
// place and dropped once passed, so that a document of any size is read in
// the memory of its largest value but one (its intervals, each read in
// turn). It finds where values start and end; their syntax is checked by
// whoever decodes them. Every byte read from r is also written to tee, if
// set (a hash of the file).
type scanner struct {
	r   io.Reader
	tee io.Writer
	buf []byte
	pos int   // buf[pos:] is not consumed yet
	off int64 // the input's offset of buf[0]
	eof bool
	err error // of r, other than io.EOF
}

const scanChunk = 256 << 10

func newScanner(r io.Reader, tee io.Writer) *scanner {
	return &scanner{r: r, tee: tee, buf: make([]byte, 0, scanChunk)}
}

// offset is the input's offset of the next byte.
func (s *scanner) offset() int64 { return s.off + int64(s.pos) }

// fill reads more input, keeping buf[pos:]; false once the input ended.
func (s *scanner) fill() bool {
	if s.eof || s.err != nil {
		return false
	}
	if s.pos > 0 {
		n := copy(s.buf, s.buf[s.pos:])
		s.buf = s.buf[:n]
		s.off += int64(s.pos)
		s.pos = 0
	}
	if cap(s.buf)-len(s.buf) < scanChunk/2 {
		grown := make([]byte, len(s.buf), 2*cap(s.buf)+scanChunk)
		copy(grown, s.buf)
		s.buf = grown
	}
	n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
	if n > 0 && s.tee != nil {
		_, _ = s.tee.Write(s.buf[len(s.buf) : len(s.buf)+n])
	}
	s.buf = s.buf[:len(s.buf)+n]
	switch {
	case err == io.EOF:
		s.eof = true
	case err != nil:
		s.err = err
	}
	return n > 0 || (!s.eof && s.err == nil)
}

// fail is the error for input that ended, or broke, where more was due.
func (s *scanner) fail(what string) error {
	if s.err != nil {
		return s.err
	}
	return fmt.Errorf("unexpected end of JSON input (%s)", what)
}

// syntaxf is an error at the scanner's position.
func (s *scanner) syntaxf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", s.offset(), fmt.Sprintf(format, args...))
}

// peek skips white space and returns the next byte, not consumed.
func (s *scanner) peek() (byte, error) {
	for {
		for ; s.pos < len(s.buf); s.pos++ {
			switch c := s.buf[s.pos]; c {
			case ' ', '\t', '\n', '\r':
			default:
				return c, nil
			}
		}
		if !s.fill() {
			return 0, s.fail("a value was due")
		}
	}
}

// consume skips white space and consumes c, which must come next.
func (s *scanner) consume(c byte) error {
	got, err := s.peek()
	if err != nil {
		return err
	}
	if got != c {
		return s.syntaxf("invalid character %q, want %q", got, c)
	}
	s.pos++
	return nil
}

// value returns the next value's bytes, consumed; they stay valid until
// the scanner's next call.
func (s *scanner) value() ([]byte, error) {
	c, err := s.peek()
	if err != nil {
		return nil, err
	}
	var n int // the value's length, once found
	switch c {
	case '"':
		n, err = s.scan(func(b []byte) (int, bool) {
			end, ok := stringEnd(b[1:])
			return end + 2, ok
		})
	case '{', '[':
		n, err = s.scan(containerEnd)
	case ',', ':', '}', ']':
		return nil, s.syntaxf("invalid character %q looking for a value", c)
	default:
		n, err = s.scan(func(b []byte) (int, bool) {
			if i := bytes.IndexAny(b, ",}] \t\n\r"); i >= 0 {
				return i, true
			}
			return len(b), false
		})
	}
	if err != nil {
		return nil, err
	}
	v := s.buf[s.pos : s.pos+n]
	s.pos += n
	return v, nil
}

// scan finds the end of the value at pos with end, reading more input
// until end finds it in buf[pos:]; a literal may end with the input.
func (s *scanner) scan(end func([]byte) (int, bool)) (int, error) {
	for {
		n, ok := end(s.buf[s.pos:])
		if ok {
			return n, nil
		}
		if !s.fill() {
			if s.err == nil && n > 0 && n == len(s.buf)-s.pos && s.buf[s.pos] != '"' && s.buf[s.pos] != '{' && s.buf[s.pos] != '[' {
				return n, nil
			}
			return 0, s.fail("inside a value")
		}
	}
}

// containerEnd finds the end of the object or array b starts with: the
// length up to its closing bracket, or false when b ends first.
func containerEnd(b []byte) (int, bool) {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			end, ok := stringEnd(b[i+1:])
			if !ok {
				return 0, false
			}
			i += end + 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}

// stringEnd finds the closing quote of a string whose opening quote came
// just before b: its index, or false when b ends first.
func stringEnd(b []byte) (int, bool) {
	from := 0
	for {
		i := bytes.IndexByte(b[from:], '"')
		if i < 0 {
			return 0, false
		}
		i += from
		// Escaped if an odd number of backslashes come before it.
		k := i
		for k > 0 && b[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i, true
		}
		from = i + 1
	}
}

// key reads an object's key and the colon after it.
func (s *scanner) key() (string, error) {
	if c, err := s.peek(); err != nil {
		return "", err
	} else if c != '"' {
		return "", s.syntaxf("invalid character %q looking for the beginning of an object key string", c)
	}
	raw, err := s.value()
	if err != nil {
		return "", err
	}
	var k string
	if bytes.IndexByte(raw, '\\') < 0 {
		k = string(raw[1 : len(raw)-1])
	} else if err := json.Unmarshal(raw, &k); err != nil {
		return "", err
	}
	return k, s.consume(':')
}

// next says whether a container (opened with its bracket, closed by end)
// holds another member: it consumes the comma before one, or the closing
// bracket after the last. first is true before the first member.
func (s *scanner) next(first *bool, end byte) (bool, error) {
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	if c == end {
		s.pos++
		return false, nil
	}
	if !*first {
		if c != ',' {
			return false, s.syntaxf("invalid character %q after a value, want ',' or %q", c, end)
		}
		s.pos++
	}
	*first = false
	return true, nil
}

// drain reads the rest of the input (for tee); what it holds past the
// document is not looked at, as encoding/json's Decoder does not.
func (s *scanner) drain() error {
	for s.fill() {
		s.pos = len(s.buf)
	}
	if s.err != nil {
		return s.err
	}
	return nil
}
