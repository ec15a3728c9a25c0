package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// ReadJSON reads a document written by WriteJSON, whole, into memory (its
// intervals stay in its bytes, read from there when visited).
func ReadJSON(r io.Reader) (*Document, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading a txload JSON document: %w", err)
	}
	return ReadJSONAt(bytes.NewReader(b), int64(len(b)), nil)
}

// ReadJSONAt reads a document written by WriteJSON from r (size bytes),
// one value at a time: a day's document (86,400 intervals, a few hundred
// MB) is read in a few MB of memory. Each run's intervals are checked as
// they go by and left in r: the run's Spooled reads them from there again
// when they are visited, so r must stay open while the document is used.
// Every byte read is also written to tee, if set (a hash of the file).
//
// Everything but the intervals' histograms is checked here (Validate);
// those are checked where they are decoded, by merge and the HTML report:
// decoding each of a day's three hundred thousand twice would double what
// reading the document costs.
func ReadJSONAt(r io.ReaderAt, size int64, tee io.Writer) (*Document, error) {
	doc, err := readDocument(r, size, tee)
	if err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			return nil, ie.Err
		}
		return nil, fmt.Errorf("reading a txload JSON document: %w", err)
	}
	if doc.Command == "" || doc.Workload == "" {
		return nil, errors.New("reading a txload JSON document: no command or workload: not written by txload --json")
	}
	if err := doc.Validate(); err != nil {
		return nil, err
	}
	if err := doc.failoverVerdicts(); err != nil {
		return nil, err
	}
	return doc, nil
}

// failoverVerdicts derives each failover table's verdict from the figures
// of failover's section, not from the table's stored line alone: lost
// commits, rolled-back ones present, a split brain fail the run whatever
// the document says. A table whose stored verdict is empty gets the
// derived one; no table, a table of its own.
func (d *Document) failoverVerdicts() error {
	if len(d.Failover) == 0 {
		return nil
	}
	var modes []struct {
		Replication string `json:"replication"`
		Lost        int64  `json:"lost"`
		Phantom     int64  `json:"phantom"`
		SplitBrain  string `json:"split_brain"`
	}
	if err := json.Unmarshal(d.Failover, &modes); err != nil {
		return &InputError{Err: fmt.Errorf("reading a txload JSON document: its failover section: %w", err)}
	}
	for _, m := range modes {
		var ps []string
		if m.Lost > 0 {
			ps = append(ps, fmt.Sprintf("%d acknowledged commits lost", m.Lost))
		}
		if m.Phantom > 0 {
			ps = append(ps, fmt.Sprintf("%d rolled-back transactions present", m.Phantom))
		}
		if m.SplitBrain != "" {
			ps = append(ps, "SPLIT BRAIN: "+m.SplitBrain)
		}
		if len(ps) == 0 {
			continue
		}
		failed := "FAILED (" + m.Replication + "): " + strings.Join(ps, "; ")
		i := slices.IndexFunc(d.Tables, func(t TableDoc) bool { return strings.HasPrefix(t.Title, "Failover ("+m.Replication+")") })
		switch {
		case i < 0:
			d.Tables = append(d.Tables, TableDoc{Title: "Failover (" + m.Replication + ")", Rows: [][]string{{"", ""}}, Failed: failed})
		case d.Tables[i].Failed == "":
			d.Tables[i].Failed = failed
		}
	}
	return nil
}

// InputError is a document that says what cannot be: a count below zero,
// a histogram that does not decode, intervals out of order. The user's
// input is wrong.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

func readDocument(r io.ReaderAt, size int64, tee io.Writer) (*Document, error) {
	s := newScanner(io.NewSectionReader(r, 0, size), tee)
	if err := s.consume('{'); err != nil {
		return nil, err
	}
	fields := map[string]json.RawMessage{}
	var runs []RunDoc
	haveRuns := false
	for first := true; ; {
		more, err := s.next(&first, '}')
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		key, err := s.key()
		if err != nil {
			return nil, err
		}
		if c, err := s.peek(); err != nil {
			return nil, err
		} else if key == "runs" && c == '[' {
			if runs, err = readRuns(s, r); err != nil {
				return nil, err
			}
			haveRuns = true
			delete(fields, key)
			continue
		}
		raw, err := s.value()
		if err != nil {
			return nil, err
		}
		fields[key] = bytes.Clone(raw)
	}
	if err := s.drain(); err != nil {
		return nil, err
	}
	var doc Document
	if err := unmarshalFields(fields, &doc); err != nil {
		return nil, err
	}
	if haveRuns {
		doc.Runs = runs
	}
	return &doc, nil
}

// unmarshalFields decodes an object's fields into v, as encoding/json
// decodes the object.
func unmarshalFields(fields map[string]json.RawMessage, v any) error {
	b, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func readRuns(s *scanner, r io.ReaderAt) ([]RunDoc, error) {
	s.pos++ // '['
	var runs []RunDoc
	for first := true; ; {
		more, err := s.next(&first, ']')
		if err != nil {
			return nil, err
		}
		if !more {
			return runs, nil
		}
		rd, err := readRun(s, r, fmt.Sprintf("runs[%d]", len(runs)))
		if err != nil {
			return nil, err
		}
		runs = append(runs, rd)
	}
}

// readRun reads one run: its intervals are checked as they go by and left
// in r.
func readRun(s *scanner, r io.ReaderAt, at string) (RunDoc, error) {
	var rd RunDoc
	if c, err := s.peek(); err != nil {
		return rd, err
	} else if c != '{' {
		raw, err := s.value()
		if err != nil {
			return rd, err
		}
		return rd, json.Unmarshal(raw, &rd)
	}
	s.pos++
	fields := map[string]json.RawMessage{}
	var src *docSource
	var late *lateNames
	for first := true; ; {
		more, err := s.next(&first, '}')
		if err != nil {
			return rd, err
		}
		if !more {
			break
		}
		key, err := s.key()
		if err != nil {
			return rd, err
		}
		if c, err := s.peek(); err != nil {
			return rd, err
		} else if key == "intervals" && c == '[' {
			var names []string
			if ops, ok := fields["operations"]; ok {
				// txload writes the operations first: the intervals'
				// are checked against them here, else where they are
				// visited.
				var od []struct{ Name string }
				if json.Unmarshal(ops, &od) == nil {
					for _, o := range od {
						names = append(names, o.Name)
					}
				}
			}
			if names == nil {
				late = &lateNames{diff: -1}
			}
			if src, err = scanIntervals(s, r, at, names, late); err != nil {
				return rd, err
			}
			delete(fields, key)
			continue
		}
		raw, err := s.value()
		if err != nil {
			return rd, err
		}
		fields[key] = bytes.Clone(raw)
	}
	if err := unmarshalFields(fields, &rd); err != nil {
		return rd, fmt.Errorf("%s: %w", at, err)
	}
	if src != nil && src.n > 0 {
		rd.Spooled = src
		if late != nil {
			if err := late.check(at, rd.Names()); err != nil {
				return rd, err
			}
		}
	}
	return rd, nil
}

// lateNames checks the intervals' operations against the run's when they
// come before them: every interval is compared with the first as it
// passes, and the first, and the first that differs from it, with the
// run's at its end.
type lateNames struct {
	first []string
	diff  int // the first interval whose operations are not the first's; -1: none
	names []string
}

func (l *lateNames) see(n int, iv *IntervalDoc) {
	if l.diff >= 0 {
		return
	}
	names := opNames(iv)
	switch {
	case n == 0:
		l.first = names
	case !slices.Equal(names, l.first):
		l.diff, l.names = n, names
	}
}

func (l *lateNames) check(at string, run []string) error {
	if err := checkNames(l.first, run); err != nil {
		return inputErrorf("%s.intervals[0]%v", at, err)
	}
	if l.diff >= 0 {
		return inputErrorf("%s.intervals[%d]%v", at, l.diff, checkNames(l.names, run))
	}
	return nil
}

// scanIntervals passes a run's intervals, checking each (against the
// run's operations, names, when known; else late takes them), and returns
// where they are.
func scanIntervals(s *scanner, r io.ReaderAt, at string, names []string, late *lateNames) (*docSource, error) {
	s.pos++ // '['
	src := &docSource{r: r, start: s.offset(), at: at}
	var iv IntervalDoc
	var prev time.Time
	for first := true; ; {
		more, err := s.next(&first, ']')
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		raw, err := s.value()
		if err != nil {
			return nil, err
		}
		where := fmt.Sprintf("%s.intervals[%d]", at, src.n)
		if err := decodeInterval(raw, &iv); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if err := validateIntervalCounts(where, &iv); err != nil {
			return nil, &InputError{Err: err}
		}
		if names != nil {
			if err := checkNames(opNames(&iv), names); err != nil {
				return nil, inputErrorf("%s%v", where, err)
			}
		} else {
			late.see(src.n, &iv)
		}
		if src.n > 0 && iv.Start.Before(prev) {
			return nil, inputErrorf("%s: starts at %s, before the interval before it (%s): a run's intervals are in order of time",
				where, iv.Start.Format(time.RFC3339Nano), prev.Format(time.RFC3339Nano))
		}
		prev = iv.Start
		src.n++
	}
	src.end = s.offset()
	return src, nil
}

// opNames are an interval's operations.
func opNames(iv *IntervalDoc) []string {
	names := make([]string, len(iv.Ops))
	for i, o := range iv.Ops {
		names[i] = o.Name
	}
	return names
}

// checkNames checks an interval's operations, got, are the run's; its
// error begins with a space or a colon, to follow what names the interval.
func checkNames(got, run []string) error {
	if len(got) != len(run) {
		return fmt.Errorf(" has %d operations, the run %d", len(got), len(run))
	}
	for i, name := range got {
		if name != run[i] {
			return fmt.Errorf(": operation %q where the run has %q", name, run[i])
		}
	}
	return nil
}

// docSource is a run's intervals in a document's file: the array's
// elements from start (after its opening bracket) to end (after its
// closing one).
type docSource struct {
	r          io.ReaderAt
	start, end int64
	n          int
	at         string // the run, for errors: "runs[0]"
}

func (d *docSource) Len() int { return d.n }

func (d *docSource) Open() (Cursor[IntervalDoc], error) {
	return &docCursor{src: d, s: newScanner(io.NewSectionReader(d.r, d.start, d.end-d.start), nil), first: true}, nil
}

type docCursor struct {
	src   *docSource
	s     *scanner
	first bool
	n     int
	iv    IntervalDoc
}

func (c *docCursor) Next() (*IntervalDoc, error) {
	more, err := c.s.next(&c.first, ']')
	if err != nil {
		return nil, c.fail(err)
	}
	if !more {
		return nil, io.EOF
	}
	raw, err := c.s.value()
	if err != nil {
		return nil, c.fail(err)
	}
	if err := decodeInterval(raw, &c.iv); err != nil {
		return nil, c.fail(err)
	}
	c.n++
	return &c.iv, nil
}

// fail is an error reading again what was read once: the file changed.
func (c *docCursor) fail(err error) error {
	return fmt.Errorf("reading %s.intervals[%d] again: %w (did the file change while it was read?)", c.src.at, c.n, err)
}

func (c *docCursor) Close() error { return nil }
