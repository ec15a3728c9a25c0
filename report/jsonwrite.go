package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// WriteJSON writes doc, indented. Intervals and points held out of memory
// (RunDoc.Spooled, SeriesDoc.Spooled) are written from there one at a
// time, where Intervals and Points would be: the document is the same, byte
// for byte, as if they had been in memory.
func WriteJSON(w io.Writer, doc *Document) error { return WriteJSONOf(w, doc, doc) }

// WriteJSONOf writes v, doc or a struct that embeds it (lag's document),
// indented, as WriteJSON writes doc.
func WriteJSONOf(w io.Writer, v any, doc *Document) error {
	if err := writeJSON(w, v, doc); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}

// A splice is a spooled array of the document: the value of field in the
// object at index of the top-level array key.
type splice struct {
	key   string
	index int
	field string
	// write writes the array's elements, each as a JSON value.
	write func(each func(raw []byte) error) error
	// at and end are where the field's value stands in the document
	// written without the array (at == end: the field is absent and goes
	// in at at, before the object's closing brace).
	at, end int
	present bool
}

// Indentation of the arrays spliced in: their field is in an object that is
// an element of a top-level array.
const (
	spliceField   = "\n      "
	spliceElement = "\n        "
)

func writeJSON(w io.Writer, v any, doc *Document) error {
	var splices []*splice
	for i := range doc.Runs {
		if src := doc.Runs[i].Spooled; src != nil {
			splices = append(splices, &splice{key: "runs", index: i, field: "intervals", write: rawValues(src)})
		}
	}
	for i := range doc.Series {
		if src := doc.Series[i].Spooled; src != nil {
			splices = append(splices, &splice{key: "series", index: i, field: "points", write: rawValues(src)})
		}
	}
	var skeleton bytes.Buffer
	enc := json.NewEncoder(&skeleton)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	if len(splices) == 0 {
		_, err := w.Write(skeleton.Bytes())
		return err
	}
	b := skeleton.Bytes()
	if err := locate(b, splices); err != nil {
		return err
	}
	slices.SortFunc(splices, func(a, b *splice) int { return a.at - b.at })
	bw := bufio.NewWriterSize(w, 256<<10)
	from := 0
	var indented bytes.Buffer
	for _, sp := range splices {
		if sp.at == 0 {
			return fmt.Errorf("%s[%d] is not in the document", sp.key, sp.index)
		}
		bw.Write(b[from:sp.at])
		// The array begins with its first element: with none, the field
		// stays as it was (absent, as omitempty leaves an empty one out).
		n := 0
		err := sp.write(func(raw []byte) error {
			switch {
			case n > 0:
				bw.WriteByte(',')
			case sp.present:
				bw.WriteByte('[')
			default:
				fmt.Fprintf(bw, ",%s%q: [", spliceField, sp.field)
			}
			n++
			bw.WriteString(spliceElement)
			indented.Reset()
			if err := json.Indent(&indented, raw, spliceElement[1:], "  "); err != nil {
				return err
			}
			_, err := bw.Write(indented.Bytes())
			return err
		})
		if err != nil {
			return err
		}
		switch {
		case n > 0:
			bw.WriteString(spliceField + "]")
			from = sp.end
		default:
			from = sp.at
		}
	}
	bw.Write(b[from:])
	return bw.Flush()
}

// rawValues writes src's values as JSON: a spool's lines as they were
// written, any other source's values encoded.
func rawValues[T any](src Source[T]) func(func([]byte) error) error {
	if sp, ok := src.(interface {
		eachRaw(func([]byte) error) error
	}); ok {
		return sp.eachRaw
	}
	return func(f func([]byte) error) error {
		return each(src, func(_ int, v *T) error {
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			return f(b)
		})
	}
}

// locate finds where each splice goes in the skeleton b, in order of
// place.
func locate(b []byte, splices []*splice) error {
	s := newScanner(bytes.NewReader(b), nil)
	if err := s.consume('{'); err != nil {
		return err
	}
	for first := true; ; {
		more, err := s.next(&first, '}')
		if err != nil || !more {
			return err
		}
		key, err := s.key()
		if err != nil {
			return err
		}
		var in []*splice
		for _, sp := range splices {
			if sp.key == key {
				in = append(in, sp)
			}
		}
		if c, err := s.peek(); err != nil {
			return err
		} else if len(in) == 0 || c != '[' {
			if _, err := s.value(); err != nil {
				return err
			}
			continue
		}
		s.pos++
		for i, afirst := 0, true; ; i++ {
			more, err := s.next(&afirst, ']')
			if err != nil {
				return err
			}
			if !more {
				break
			}
			var at *splice
			for _, sp := range in {
				if sp.index == i {
					at = sp
				}
			}
			if at == nil {
				if _, err := s.value(); err != nil {
					return err
				}
				continue
			}
			if err := locateField(s, at); err != nil {
				return err
			}
		}
	}
}

// locateField finds sp's field in the object that comes next.
func locateField(s *scanner, sp *splice) error {
	if err := s.consume('{'); err != nil {
		return err
	}
	for first := true; ; {
		if c, err := s.peek(); err != nil {
			return err
		} else if c == '}' {
			if first {
				return fmt.Errorf("%s[%d] is an empty object", sp.key, sp.index)
			}
			s.pos++
			return nil
		}
		if _, err := s.next(&first, '}'); err != nil {
			return err
		}
		key, err := s.key()
		if err != nil {
			return err
		}
		if _, err := s.peek(); err != nil {
			return err
		}
		at := int(s.offset())
		if _, err := s.value(); err != nil {
			return err
		}
		if key == sp.field {
			sp.at, sp.end, sp.present = at, int(s.offset()), true
		} else if !sp.present {
			sp.at, sp.end = int(s.offset()), int(s.offset())
		}
	}
}
