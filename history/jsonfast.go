package history

import (
	"slices"
	"strings"
	"time"
)

// fastJSONL decodes a line in the shape AppendJSONL writes (fields in any
// order, spaces anywhere, unknown fields skipped) without reflection. It
// reports false for anything else, which parseJSONL then decodes (or
// explains) with encoding/json.
func fastJSONL(line []byte) (Attempt, bool) { return fastJSONLevel(line, nil) }

// fastJSONLevel is fastJSONL that also sets meta, if not nil, to what the
// line records of the history: "isolation", "clients" (left alone when it
// has none).
func fastJSONLevel(line []byte, meta *lineMeta) (Attempt, bool) {
	s := scanner{b: line}
	var a Attempt
	var have struct{ client, intended, invoke, complete, outcome, ops bool }
	var seen [len(jsonKeys)]bool // a key given twice: slowJSONL says so
	if !s.byte('{') {
		return a, false
	}
	if s.peek() == '}' {
		return a, false
	}
	for {
		key, ok := s.str()
		if !ok || !s.byte(':') {
			return a, false
		}
		if i := slices.Index(jsonKeys[:], key); i >= 0 {
			if seen[i] {
				return a, false
			}
			seen[i] = true
		} else if slices.ContainsFunc(jsonKeys[:], func(k string) bool { return strings.EqualFold(key, k) }) {
			return a, false // encoding/json matches keys in any case
		}
		switch key {
		case "client":
			n, ok := s.int()
			if !ok || n < 0 || n > 1<<31 {
				return a, false
			}
			a.Client, have.client = int(n), true
		case "intended_ns", "invoke_ns", "complete_ns":
			n, ok := s.int()
			if !ok {
				return a, false
			}
			switch key {
			case "intended_ns":
				a.Intended, have.intended = time.Duration(n), true
			case "invoke_ns":
				a.Invoke, have.invoke = time.Duration(n), true
			default:
				a.Complete, have.complete = time.Duration(n), true
			}
		case "outcome":
			o, ok := s.str()
			if !ok {
				return a, false
			}
			if a.Outcome, ok = parseOutcome(o); !ok {
				return a, false
			}
			have.outcome = true
		case "sqlstate":
			v, ok := s.str()
			if !ok {
				return a, false
			}
			a.SQLState = v
		case "isolation":
			v, ok := s.str()
			if !ok || v == "" {
				return a, false
			}
			if meta != nil {
				meta.level = v
			}
		case "clients":
			n, ok := s.int()
			if !ok || n < 1 || n > 1<<31 {
				return a, false
			}
			if meta != nil {
				meta.clients, meta.hasClients = n, true
			}
		case "ops":
			if a.Ops, ok = s.ops(); !ok {
				return a, false
			}
			have.ops = true
		default:
			if !s.skip() {
				return a, false
			}
		}
		if s.byte(',') {
			continue
		}
		if !s.byte('}') || !s.end() {
			return a, false
		}
		break
	}
	if !have.client || !have.invoke || !have.complete || !have.outcome || !have.ops {
		return a, false
	}
	if !have.intended {
		a.Intended = a.Invoke
	}
	return a, a.Validate() == nil
}

// jsonKeys are the keys of a JSON line that say something.
var jsonKeys = [...]string{"client", "intended_ns", "invoke_ns", "complete_ns", "outcome", "sqlstate", "isolation", "clients", "ops"}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) byte(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// str reads a string without escapes.
func (s *scanner) str() (string, bool) {
	if !s.byte('"') {
		return "", false
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			v := string(s.b[start:s.i])
			s.i++
			return v, true
		case c == '\\' || c < 0x20:
			return "", false
		}
		s.i++
	}
	return "", false
}

// int reads an integer that fits in 64 bits.
func (s *scanner) int() (int64, bool) {
	s.space()
	neg := false
	if s.i < len(s.b) && s.b[s.i] == '-' {
		neg = true
		s.i++
	}
	start := s.i
	var n uint64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || (digits > 1 && s.b[start] == '0') || n > 1<<63 || (!neg && n == 1<<63) {
		return 0, false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, false
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

func (s *scanner) literal(word string) bool {
	s.space()
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// ops reads [["r",k,[...]|null],["append",k,v],...].
func (s *scanner) ops() ([]Op, bool) {
	if !s.byte('[') {
		return nil, false
	}
	ops := make([]Op, 0, 4)
	if s.byte(']') {
		return ops, true
	}
	for {
		if !s.byte('[') {
			return nil, false
		}
		f, ok := s.str()
		if !ok || !s.byte(',') {
			return nil, false
		}
		var op Op
		if op.Key, ok = s.int(); !ok || !s.byte(',') {
			return nil, false
		}
		switch f {
		case "append":
			op.Kind = Append
			if op.Value, ok = s.int(); !ok {
				return nil, false
			}
		case "r":
			op.Kind = Read
			if !s.literal("null") {
				if !s.byte('[') {
					return nil, false
				}
				op.List = []int64{}
				if !s.byte(']') {
					for {
						v, ok := s.int()
						if !ok {
							return nil, false
						}
						op.List = append(op.List, v)
						if s.byte(',') {
							continue
						}
						if !s.byte(']') {
							return nil, false
						}
						break
					}
				}
			}
		default:
			return nil, false
		}
		if !s.byte(']') {
			return nil, false
		}
		ops = append(ops, op)
		if s.byte(',') {
			continue
		}
		if !s.byte(']') {
			return nil, false
		}
		return ops, true
	}
}

// skip passes one JSON value of any kind (roughly: the slow path checks
// what the fast one accepts only when it fails).
func (s *scanner) skip() bool {
	switch c := s.peek(); {
	case c == '"':
		s.i++
		for s.i < len(s.b) {
			switch c := s.b[s.i]; {
			case c == '\\':
				if s.i+1 >= len(s.b) {
					return false
				}
				switch e := s.b[s.i+1]; e {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					s.i += 2
				case 'u':
					if s.i+6 > len(s.b) {
						return false
					}
					for _, h := range s.b[s.i+2 : s.i+6] {
						if !strings.ContainsRune("0123456789abcdefABCDEF", rune(h)) {
							return false
						}
					}
					s.i += 6
				default:
					return false
				}
				continue
			case c == '"':
				s.i++
				return true
			case c < 0x20:
				return false
			}
			s.i++
		}
		return false
	case c == '[' || c == '{':
		s.i++
		end := byte(']')
		if c == '{' {
			end = '}'
		}
		if s.byte(end) {
			return true
		}
		for {
			if c == '{' {
				if _, ok := s.str(); !ok || !s.byte(':') {
					return false
				}
			}
			if !s.skip() {
				return false
			}
			if s.byte(',') {
				continue
			}
			return s.byte(end)
		}
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	default:
		return s.literal("true") || s.literal("false") || s.literal("null")
	}
}

// number passes a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	start := s.i
	n := digits()
	if n == 0 || (n > 1 && s.b[start] == '0') {
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
