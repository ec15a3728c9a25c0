package history

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The EDN reader reads what WriteEDN writes and Jepsen histories of
// list-append transactions: one map per operation (or a vector of them),
// commas as spaces, ; comments, #_ discards, tags ignored. Operations of
// other processes than clients (Jepsen's :nemesis) are skipped.

// discarded is what #_ leaves of the form after it: nothing.
type discarded struct{}

type keyword string
type symbol string
type ednMap []any // key, value, key, value...

func (m ednMap) get(k keyword) (any, bool) {
	for i := 0; i+1 < len(m); i += 2 {
		if m[i] == k {
			return m[i+1], true
		}
	}
	return nil, false
}

// repeatedKeyword is a keyword that is a key of the map items (key,
// value, ...) twice ("" if none).
func repeatedKeyword(items []any) keyword {
	for i := 0; i < len(items); i += 2 {
		k, ok := items[i].(keyword)
		if !ok {
			continue
		}
		for j := 0; j < i; j += 2 {
			if items[j] == k {
				return k
			}
		}
	}
	return ""
}

// ednParser reads EDN forms, counting lines.
type ednParser struct {
	r    *bufio.Reader
	tok  []byte
	line int
	// inVector: the history is one vector of operations, being read.
	inVector bool
}

func (p *ednParser) read() (byte, error) {
	c, err := p.r.ReadByte()
	if err == nil && c == '\n' {
		p.line++
	}
	return c, err
}

func (p *ednParser) unread(c byte) {
	_ = p.r.UnreadByte()
	if c == '\n' {
		p.line--
	}
}

// skip passes spaces, commas and comments, and returns the next byte.
func (p *ednParser) skip() (byte, error) {
	for {
		c, err := p.read()
		if err != nil {
			return 0, err
		}
		switch {
		case c == ';':
			for c != '\n' {
				if c, err = p.read(); err != nil {
					return 0, err
				}
			}
		case c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
		default:
			return c, nil
		}
	}
}

// top reads the next operation of the history; io.EOF at its end.
func (p *ednParser) top() (any, error) {
	for {
		c, err := p.skip()
		if err != nil {
			if err == io.EOF && p.inVector {
				return nil, fmt.Errorf("the vector of operations is not closed")
			}
			return nil, err
		}
		if c == '[' && !p.inVector {
			p.inVector = true
			continue
		}
		if c == ']' && p.inVector {
			p.inVector = false
			if c, err := p.skip(); err != io.EOF {
				if err != nil {
					return nil, err
				}
				return nil, fmt.Errorf("%q after the vector of operations", c)
			}
			return nil, io.EOF
		}
		p.unread(c)
		v, err := p.form()
		if _, ok := v.(discarded); ok && err == nil {
			continue
		}
		return v, err
	}
}

func (p *ednParser) form() (any, error) {
	c, err := p.skip()
	if err == io.EOF {
		return nil, io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, err
	}
	switch c {
	case '{':
		items, err := p.seq('}')
		if err != nil {
			return nil, err
		}
		if len(items)%2 != 0 {
			return nil, fmt.Errorf("a map with an odd number of forms")
		}
		if k := repeatedKeyword(items); k != "" {
			// EDN forbids it; readers disagree on which one counts.
			return nil, fmt.Errorf("a map gives the key :%s twice", k)
		}
		return ednMap(items), nil
	case '[':
		return p.seq(']')
	case '(':
		return p.seq(')')
	case '}', ']', ')':
		return nil, fmt.Errorf("unexpected %q", c)
	case '"':
		return p.str()
	case '\\':
		return p.char()
	case '#':
		n, err := p.read()
		if err != nil {
			return nil, io.ErrUnexpectedEOF
		}
		switch {
		case n == '{':
			return p.seq('}')
		case n == '_':
			if _, err := p.form(); err != nil {
				return nil, err
			}
			return discarded{}, nil
		default: // a tagged element: the tag is ignored
			p.unread(n)
			if _, err := p.token(); err != nil {
				return nil, err
			}
			return p.form()
		}
	}
	p.unread(c)
	tok, err := p.token()
	if err != nil {
		return nil, err
	}
	return atom(tok)
}

func (p *ednParser) seq(end byte) ([]any, error) {
	var items []any
	for {
		c, err := p.skip()
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, err
		}
		if c == end {
			if items == nil {
				items = []any{}
			}
			return items, nil
		}
		p.unread(c)
		v, err := p.form()
		if err != nil {
			return nil, err
		}
		if _, ok := v.(discarded); !ok {
			items = append(items, v)
		}
	}
}

// ednDelim marks the bytes that end a token.
var ednDelim = func() (t [256]bool) {
	for _, c := range []byte(" \t\n\r\f,;{}[]()\"") {
		t[c] = true
	}
	return t
}()

// token reads a token into the parser's buffer, valid until the next call.
func (p *ednParser) token() ([]byte, error) {
	p.tok = p.tok[:0]
	for {
		c, err := p.read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if ednDelim[c] {
			p.unread(c)
			break
		}
		p.tok = append(p.tok, c)
	}
	if len(p.tok) == 0 {
		return nil, fmt.Errorf("an empty token")
	}
	return p.tok, nil
}

func (p *ednParser) str() (string, error) {
	var b strings.Builder
	for {
		c, err := p.read()
		if err != nil {
			return "", fmt.Errorf("a string that does not end")
		}
		switch c {
		case '"':
			return b.String(), nil
		case '\\':
			e, err := p.read()
			if err != nil {
				return "", fmt.Errorf("a string that does not end")
			}
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
}

func (p *ednParser) char() (any, error) {
	tok, err := p.token()
	if err != nil {
		return nil, fmt.Errorf("a character literal with no character")
	}
	return string(tok), nil
}

// internKeyword returns the keywords of a history without a new string
// each.
func internKeyword(b []byte) keyword {
	switch string(b) {
	case "type":
		return "type"
	case "invoke":
		return "invoke"
	case "ok":
		return "ok"
	case "fail":
		return "fail"
	case "info":
		return "info"
	case "process":
		return "process"
	case "f":
		return "f"
	case "txn":
		return "txn"
	case "value":
		return "value"
	case "time":
		return "time"
	case "index":
		return "index"
	case "r":
		return "r"
	case "append":
		return "append"
	}
	return keyword(b)
}

func atom(tok []byte) (any, error) {
	switch string(tok) {
	case "nil":
		return nil, nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	if tok[0] == ':' {
		if len(tok) == 1 {
			return nil, fmt.Errorf("a keyword with no name")
		}
		return internKeyword(tok[1:]), nil
	}
	c := tok[0]
	if c >= '0' && c <= '9' && len(tok) <= 18 {
		n := int64(0)
		for _, d := range tok {
			if d < '0' || d > '9' {
				n = -1
				break
			}
			n = n*10 + int64(d-'0')
		}
		if n >= 0 && (len(tok) == 1 || c != '0') {
			return n, nil
		}
	}
	if unicode.IsDigit(rune(c)) || ((c == '-' || c == '+') && len(tok) > 1 && unicode.IsDigit(rune(tok[1]))) {
		t := strings.TrimSuffix(string(tok), "N")
		if i, err := strconv.ParseInt(t, 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(strings.TrimSuffix(string(tok), "M"), 64)
		if err != nil {
			return nil, fmt.Errorf("%s is not a number EDN knows (or does not fit in 64 bits)", tok)
		}
		return f, nil
	}
	return symbol(tok), nil
}

// ednSource pairs invocations with completions into attempts.
type ednSource struct {
	p       *ednParser
	pending map[any]ednInvoke // process -> its open invocation
	done    bool
	tail    []ednTail // open invocations at the end, as attempts
	level   *recordedLevel
}

type ednInvoke struct {
	line     int
	at       time.Duration
	intended *time.Duration
	ops      []Op
}

type ednTail struct {
	a    Attempt
	line int
}

func newEDNSource(r *bufio.Reader, level *recordedLevel) *ednSource {
	return &ednSource{p: &ednParser{r: r, line: 1}, pending: map[any]ednInvoke{}, level: level}
}

// next returns the next attempt and the line of its completion.
func (s *ednSource) next() (Attempt, int, error) {
	for {
		if s.done {
			if len(s.tail) == 0 {
				return Attempt{}, 0, io.EOF
			}
			t := s.tail[0]
			s.tail = s.tail[1:]
			return t.a, t.line, t.a.Validate()
		}
		v, err := s.p.top()
		if err == io.EOF {
			s.finish()
			continue
		}
		line := s.p.line
		if err != nil {
			return Attempt{}, line, err
		}
		a, ok, err := s.op(v, line)
		if err != nil {
			return Attempt{}, line, err
		}
		if ok {
			return a, line, nil
		}
	}
}

// finish turns invocations that never completed into attempts of unknown
// outcome, as Jepsen takes them.
func (s *ednSource) finish() {
	s.done = true
	procs := make([]any, 0, len(s.pending))
	for proc := range s.pending {
		procs = append(procs, proc)
	}
	slices.SortFunc(procs, func(a, b any) int { return cmp.Compare(s.pending[a].line, s.pending[b].line) })
	for _, proc := range procs {
		inv := s.pending[proc]
		delete(s.pending, proc)
		client, _ := proc.(int64)
		a := Attempt{Client: int(client), Invoke: inv.at, Intended: inv.at, Complete: inv.at, Outcome: Unknown, Ops: inv.ops}
		if inv.intended != nil {
			a.Intended = *inv.intended
		}
		s.tail = append(s.tail, ednTail{a, inv.line})
	}
}

// op takes one operation map; it returns an attempt when it completes one.
func (s *ednSource) op(v any, line int) (Attempt, bool, error) {
	m, ok := v.(ednMap)
	if !ok {
		return Attempt{}, false, fmt.Errorf("an operation is a map, got %s", ednString(v))
	}
	if iso, ok := m.get("isolation"); ok {
		name, isStr := iso.(string)
		if !isStr {
			return Attempt{}, false, fmt.Errorf(":isolation %s is not a string", ednString(iso))
		}
		if err := s.level.note(name, line); err != nil {
			return Attempt{}, false, err
		}
	}
	if c, ok := m.get("clients"); ok {
		n, isInt := c.(int64)
		if !isInt {
			return Attempt{}, false, fmt.Errorf(":clients %s is not a number", ednString(c))
		}
		if err := s.level.noteClients(n, line); err != nil {
			return Attempt{}, false, err
		}
	}
	typ, _ := m.get("type")
	kw, ok := typ.(keyword)
	if !ok {
		return Attempt{}, false, fmt.Errorf("the operation has no :type")
	}
	procV, hasProc := m.get("process")
	var proc any = procV
	if hasProc {
		if _, isInt := procV.(int64); !isInt {
			return Attempt{}, false, nil // the nemesis, or another non-client
		}
		if procV.(int64) < 0 || procV.(int64) > 1<<31 {
			return Attempt{}, false, fmt.Errorf(":process %d is out of range", procV)
		}
	} else {
		proc = keyword("") // histories with no processes pair in order
	}
	if f, ok := m.get("f"); ok && f != keyword("txn") {
		return Attempt{}, false, fmt.Errorf(":f %s is not a list-append transaction (:txn)", ednString(f))
	}
	var at time.Duration
	if t, ok := m.get("time"); ok {
		n, isInt := t.(int64)
		if !isInt || n < 0 {
			return Attempt{}, false, fmt.Errorf(":time %s is not a count of nanoseconds", ednString(t))
		}
		at = time.Duration(n)
	}
	var ops []Op
	if val, ok := m.get("value"); ok && val != nil {
		var err error
		if ops, err = ednOps(val); err != nil {
			return Attempt{}, false, err
		}
	}
	if kw == "invoke" {
		if len(ops) == 0 {
			return Attempt{}, false, fmt.Errorf("the invocation has no :value (a vector of operations)")
		}
		if prev, open := s.pending[proc]; open {
			return Attempt{}, false, fmt.Errorf("process %s invoked again before its invocation of line %d completed", ednString(procV), prev.line)
		}
		inv := ednInvoke{line: line, at: at, ops: ops}
		if it, ok := m.get("intended"); ok {
			n, isInt := it.(int64)
			if !isInt || n < 0 {
				return Attempt{}, false, fmt.Errorf(":intended %s is not a count of nanoseconds", ednString(it))
			}
			d := time.Duration(n)
			inv.intended = &d
		}
		s.pending[proc] = inv
		return Attempt{}, false, nil
	}
	a := Attempt{Invoke: at, Intended: at, Complete: at}
	switch kw {
	case "ok":
		a.Outcome = Committed
	case "fail":
		a.Outcome = Failed
	case "info":
		a.Outcome = Unknown
	default:
		return Attempt{}, false, fmt.Errorf(":type :%s is not :invoke, :ok, :fail or :info", kw)
	}
	if n, isInt := procV.(int64); isInt {
		a.Client = int(n)
	}
	if inv, open := s.pending[proc]; open {
		delete(s.pending, proc)
		a.Invoke, a.Intended = inv.at, inv.at
		if inv.intended != nil {
			a.Intended = *inv.intended
		}
		if ops == nil {
			ops = inv.ops
		}
	}
	if ops == nil {
		return Attempt{}, false, fmt.Errorf("the completion has no :value")
	}
	a.Ops = ops
	if st, ok := m.get("sqlstate"); ok {
		str, isStr := st.(string)
		if !isStr {
			return Attempt{}, false, fmt.Errorf(":sqlstate %s is not a string", ednString(st))
		}
		a.SQLState = str
	}
	return a, true, a.Validate()
}

func ednOps(v any) ([]Op, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf(":value %s is not a vector of [:r key list] and [:append key value]", ednString(v))
	}
	ops := make([]Op, 0, len(list))
	for _, item := range list {
		mop, ok := item.([]any)
		if !ok || len(mop) != 3 {
			return nil, fmt.Errorf("%s is not [:r key list] or [:append key value]", ednString(item))
		}
		key, ok := mop[1].(int64)
		if !ok {
			return nil, fmt.Errorf("key %s in %s is not an integer (txload's histories have integer keys)", ednString(mop[1]), ednString(item))
		}
		switch mop[0] {
		case keyword("append"):
			val, ok := mop[2].(int64)
			if !ok {
				return nil, fmt.Errorf("value %s in %s is not an integer", ednString(mop[2]), ednString(item))
			}
			ops = append(ops, Op{Kind: Append, Key: key, Value: val})
		case keyword("r"):
			op := Op{Kind: Read, Key: key}
			if mop[2] != nil {
				vals, ok := mop[2].([]any)
				if !ok {
					return nil, fmt.Errorf("%s in %s is not a list of integers", ednString(mop[2]), ednString(item))
				}
				op.List = make([]int64, len(vals))
				for i, x := range vals {
					n, ok := x.(int64)
					if !ok {
						return nil, fmt.Errorf("%s in %s is not an integer", ednString(x), ednString(item))
					}
					op.List[i] = n
				}
			}
			ops = append(ops, op)
		default:
			return nil, fmt.Errorf("%s is not [:r key list] or [:append key value]", ednString(item))
		}
	}
	return ops, nil
}

// ednString renders a value for an error message.
func ednString(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case keyword:
		return ":" + string(x)
	case symbol:
		return string(x)
	case string:
		return strconv.Quote(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case ednMap:
		s := make([]string, len(x))
		for i, e := range x {
			s[i] = ednString(e)
		}
		return "{" + strings.Join(s, " ") + "}"
	case []any:
		s := make([]string, len(x))
		for i, e := range x {
			s[i] = ednString(e)
		}
		return "[" + strings.Join(s, " ") + "]"
	}
	return fmt.Sprint(v)
}
