package history

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Format is how a history is written.
type Format int

// The formats.
const (
	// Sniff: JSON lines or EDN, from the file's first characters.
	Sniff Format = iota
	JSONL
	EDN
)

func (f Format) String() string {
	return [...]string{"sniff", "JSON lines", "EDN"}[f]
}

// FormatOf returns the format a file's name says: .jsonl and .json are JSON
// lines, .edn is EDN, anything else Sniff.
func FormatOf(path string) Format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".json", ".ndjson":
		return JSONL
	case ".edn":
		return EDN
	}
	return Sniff
}

// LineError is a history that cannot be read, at a line.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Reader reads the attempts of a history, in JSON lines or EDN.
type Reader struct {
	format Format
	br     *bufio.Reader
	line   int // line of the attempt last read
	next   int // JSONL: the line to read next
	edn    *ednSource
	level  recordedLevel
}

// recordedLevel is the isolation level a history records (JSON lines'
// "isolation", EDN's :isolation), and the line that recorded it.
type recordedLevel struct {
	level Level
	line  int // 0: none recorded
	// clients is the run's number of clients ("clients", :clients), and
	// the line that recorded it (0: none).
	clients, clientsLine int
}

// maxClients is the most clients a history records: client numbers are
// below it.
const maxClients = 1 << 31

// noteClients takes the number of clients recorded at line: one history
// is one run's.
func (r *recordedLevel) noteClients(n int64, line int) error {
	if n < 1 || n > maxClients {
		return fmt.Errorf("clients %d: a run has 1 to %d clients", n, maxClients)
	}
	if r.clientsLine != 0 && int(n) != r.clients {
		return fmt.Errorf("clients %d, where line %d recorded %d: a history is one run's", n, r.clientsLine, r.clients)
	}
	if r.clientsLine == 0 {
		r.clients, r.clientsLine = int(n), line
	}
	return nil
}

// note takes the level named at line: one history runs at one level.
func (r *recordedLevel) note(name string, line int) error {
	l, err := ParseLevel(name)
	if err != nil {
		return fmt.Errorf("isolation %q: %w", name, err)
	}
	if r.line != 0 && l != r.level {
		return fmt.Errorf("isolation %q, where line %d recorded %s: a history runs at one level", name, r.line, r.level)
	}
	if r.line == 0 {
		r.level, r.line = l, line
	}
	return nil
}

// NewReader reads a history from r in format f (Sniff: whichever its first
// characters say: {" starts JSON, {: [ # or ; EDN).
func NewReader(r io.Reader, f Format) (*Reader, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	if f == Sniff {
		var err error
		if f, err = sniff(br); err != nil {
			return nil, err
		}
	}
	rd := &Reader{format: f, br: br, next: 1}
	if f == EDN {
		rd.edn = newEDNSource(br, &rd.level)
	}
	return rd, nil
}

// Level is the isolation level the history records having run at, as far
// as it has been read (false: none; histories written before txload
// recorded it, and other tools', record none).
func (r *Reader) Level() (Level, bool) { return r.level.level, r.level.line != 0 }

// Clients is the number of clients the history records its run had, as
// far as it has been read (false: none; histories written before txload
// recorded it, and other tools', record none).
func (r *Reader) Clients() (int, bool) { return r.level.clients, r.level.clientsLine != 0 }

// Format is the format being read.
func (r *Reader) Format() Format { return r.format }

// Line is the line of the attempt Read returned last (for EDN, the line of
// its completion).
func (r *Reader) Line() int { return r.line }

// Read returns the next attempt, io.EOF after the last, or a *LineError.
func (r *Reader) Read() (Attempt, error) {
	if r.format == EDN {
		a, line, err := r.edn.next()
		if err == io.EOF {
			return Attempt{}, io.EOF
		}
		r.line = line
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = errors.New("the file ends inside a form")
			}
			return Attempt{}, &LineError{Line: line, Err: err}
		}
		return a, nil
	}
	for {
		b, err := r.br.ReadBytes('\n')
		if len(b) == 0 && err == io.EOF {
			return Attempt{}, io.EOF
		}
		r.line = r.next
		r.next++
		if err != nil && err != io.EOF {
			return Attempt{}, &LineError{Line: r.line, Err: err}
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		a, meta, perr := parseJSONLevel(b)
		if perr == nil && meta.level != "" {
			perr = r.level.note(meta.level, r.line)
		}
		if perr == nil && meta.hasClients {
			perr = r.level.noteClients(meta.clients, r.line)
		}
		if perr != nil {
			return Attempt{}, &LineError{Line: r.line, Err: perr}
		}
		return a, nil
	}
}

// sniff looks at the first characters past spaces (and EDN's comments).
func sniff(br *bufio.Reader) (Format, error) {
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if len(b) < n {
			if err == io.EOF || err == bufio.ErrBufferFull {
				return JSONL, nil // empty: no attempts, in either
			}
			return 0, err
		}
		c := b[n-1]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			continue
		case c == ';' || c == '[' || c == '#':
			return EDN, nil
		case c == '{':
			rest, _ := br.Peek(n + 64)
			after := bytes.TrimLeft(rest[n:], " \t\r\n,")
			if len(after) > 0 && after[0] == '"' {
				return JSONL, nil
			}
			return EDN, nil
		default:
			return 0, fmt.Errorf("neither JSON lines nor EDN: it starts with %q", string(b[n-1:]))
		}
	}
}

// ReadFile reads a whole history file, in the format its name says or its
// contents show.
func ReadFile(path string) ([]Attempt, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, FormatOf(path))
}

// ReadAll reads every attempt of a history in format f.
func ReadAll(r io.Reader, f Format) ([]Attempt, error) {
	rd, err := NewReader(r, f)
	if err != nil {
		return nil, err
	}
	var out []Attempt
	for {
		a, err := rd.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
}
