package report

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// decodeInterval decodes one interval as encoding/json would into an
// IntervalDoc. Intervals are most of a long run's document (86,400 for a
// day at one a second): the shape txload writes (keys in any order, spaces
// anywhere, unknown keys skipped) is read without reflection, several times
// faster; anything else (an escape in a string, a null, a key in other
// case, a number that is no integer) goes to encoding/json, which decodes
// it or says what is wrong.
func decodeInterval(b []byte, iv *IntervalDoc) error {
	*iv = IntervalDoc{}
	p := ivParser{b: b}
	if p.interval(iv) && p.end() {
		return nil
	}
	*iv = IntervalDoc{}
	return json.Unmarshal(b, iv)
}

// ivParser reads an interval in txload's shape; false means "not that
// shape", never an answer on the input's validity.
type ivParser struct {
	b []byte
	i int
}

func (p *ivParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *ivParser) byte(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *ivParser) end() bool {
	p.ws()
	return p.i == len(p.b)
}

// str reads a string without escapes, as it stands in the input.
func (p *ivParser) str() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	j := bytes.IndexByte(p.b[p.i:], '"')
	if j < 0 {
		return nil, false
	}
	s := p.b[p.i : p.i+j]
	if bytes.IndexByte(s, '\\') >= 0 {
		return nil, false
	}
	for _, c := range s {
		if c < 0x20 || c >= 0x80 { // control characters, and UTF-8 to check
			return nil, false
		}
	}
	p.i += j + 1
	return s, true
}

// int reads an integer: digits, with a sign if negative, no leading zero.
func (p *ivParser) int() (int64, bool) {
	p.ws()
	j := p.i
	if j < len(p.b) && p.b[j] == '-' {
		j++
	}
	digits := j
	for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
		j++
	}
	if j == digits || (p.b[digits] == '0' && j-digits > 1) {
		return 0, false
	}
	if j < len(p.b) {
		switch p.b[j] {
		case '.', 'e', 'E', '+':
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(p.b[p.i:j]), 10, 64)
	if err != nil {
		return 0, false
	}
	p.i = j
	return n, true
}

// lit reads the literal word.
func (p *ivParser) lit(word string) bool {
	p.ws()
	if !bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		return false
	}
	p.i += len(word)
	return true
}

// skip passes a value of another key: any JSON value, checked by
// encoding/json for its syntax.
func (p *ivParser) skip() bool {
	p.ws()
	if p.i == len(p.b) {
		return false
	}
	var n int
	switch p.b[p.i] {
	case '"':
		end, ok := stringEnd(p.b[p.i+1:])
		if !ok {
			return false
		}
		n = end + 2
	case '{', '[':
		var ok bool
		if n, ok = containerEnd(p.b[p.i:]); !ok {
			return false
		}
	default:
		n = bytes.IndexAny(p.b[p.i:], ",}] \t\n\r")
		if n <= 0 {
			return false
		}
	}
	if !json.Valid(p.b[p.i : p.i+n]) {
		return false
	}
	p.i += n
	return true
}

// object reads an object, calling field with each key (the parser then at
// its value).
func (p *ivParser) object(field func(key string) bool) bool {
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return true
	}
	for {
		k, ok := p.str()
		if !ok || !p.byte(':') || !field(string(k)) {
			return false
		}
		if p.byte(',') {
			continue
		}
		return p.byte('}')
	}
}

// known says whether key is one of keys, or would be taken for one by
// encoding/json, which matches keys regardless of case: the first is
// read here, the second left to encoding/json.
func known(key string, keys ...string) (exact, folded bool) {
	for _, k := range keys {
		if key == k {
			return true, false
		}
		if strings.EqualFold(key, k) {
			folded = true
		}
	}
	return false, folded
}

var intervalKeys = []string{"start", "end", "warmup", "reconnects", "operations"}

func (p *ivParser) interval(iv *IntervalDoc) bool {
	return p.object(func(key string) bool {
		if exact, folded := known(key, intervalKeys...); !exact {
			return !folded && p.skip()
		}
		switch key {
		case "start", "end":
			p.ws()
			j := p.i
			if _, ok := p.str(); !ok {
				return false
			}
			to := &iv.Start
			if key == "end" {
				to = &iv.End
			}
			return to.UnmarshalJSON(p.b[j:p.i]) == nil
		case "warmup":
			switch {
			case p.lit("true"):
				iv.Warmup = true
			case p.lit("false"):
				iv.Warmup = false
			default:
				return false
			}
			return true
		case "reconnects":
			n, ok := p.int()
			iv.Reconnects = n
			return ok
		}
		// operations
		if !p.byte('[') {
			return false
		}
		iv.Ops = iv.Ops[:0]
		if p.byte(']') {
			iv.Ops = []IntervalOpDoc{}
			return true
		}
		for {
			var od IntervalOpDoc
			if !p.op(&od) {
				return false
			}
			iv.Ops = append(iv.Ops, od)
			if p.byte(',') {
				continue
			}
			return p.byte(']')
		}
	})
}

var opKeys = []string{"name", "ok", "failed", "errors", "retried", "retries", "warmup", "warmup_ok", "skipped", "late", "abandoned",
	"response", "service", "lag"}

func (p *ivParser) op(od *IntervalOpDoc) bool {
	return p.object(func(key string) bool {
		if exact, folded := known(key, opKeys...); !exact {
			return !folded && p.skip()
		}
		var n *int64
		switch key {
		case "name", "response", "service", "lag":
			s, ok := p.str()
			if !ok {
				return false
			}
			switch key {
			case "name":
				od.Name = string(s)
			case "response":
				od.Response = string(s)
			case "service":
				od.Service = string(s)
			default:
				od.Lag = string(s)
			}
			return true
		case "failed", "errors":
			m := od.Failed // a key given twice adds to the map, as in encoding/json
			if key == "errors" {
				m = od.Errors
			}
			if m == nil {
				m = map[string]int64{}
			}
			if !p.object(func(class string) bool {
				v, ok := p.int()
				m[class] = v
				return ok
			}) {
				return false
			}
			if key == "failed" {
				od.Failed = m
			} else {
				od.Errors = m
			}
			return true
		case "ok":
			n = &od.OK
		case "retried":
			n = &od.Retried
		case "retries":
			n = &od.Retries
		case "warmup":
			n = &od.Warmup
		case "warmup_ok":
			n = &od.WarmupOK
		case "skipped":
			n = &od.Skipped
		case "late":
			n = &od.Late
		default:
			n = &od.Abandoned
		}
		v, ok := p.int()
		*n = v
		return ok
	})
}
