package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The JSON lines format holds one attempt per line, its fields in this
// order:
//
//	{"client":3,"intended_ns":1200000,"invoke_ns":1250000,"complete_ns":2250000,"outcome":"committed","ops":[["r",5,[1,2]],["append",5,3]]}
//	{"client":4,"intended_ns":1300000,"invoke_ns":1300000,"complete_ns":1900000,"outcome":"failed","sqlstate":"40001","ops":[["append",7,2],["r",8,null]]}
//
//   - client: the client that ran the attempt (an integer, 0 and up; a
//     client runs one attempt at a time);
//   - intended_ns, invoke_ns, complete_ns: when the attempt was meant to
//     start, started, and ended, in nanoseconds from the start of the
//     history (intended_ns may be left out: then it is invoke_ns);
//   - outcome: committed, failed or unknown (the commit was sent, its
//     acknowledgement never came);
//   - sqlstate: the error's SQLSTATE, for failed attempts and unknown ones
//     that got one; left out otherwise;
//   - ops: the operations in order, as Elle writes them: ["r", key, list]
//     for a read, with the list it returned ([] for an empty key, null for
//     a read that did not run), and ["append", key, value]. Keys and values
//     are integers.
//
// Lines are in the order the attempts completed. The first line txload
// writes also records the isolation level the attempts ran at,
// "isolation":"serializable" (a level's name, as ParseLevel reads it);
// the reader takes it from whichever line holds it (Reader.Level). Other
// fields are ignored; blank lines are skipped.

// AppendJSONL appends a's line, with its newline, to dst.
func AppendJSONL(dst []byte, a Attempt) []byte {
	dst = append(dst, `{"client":`...)
	dst = strconv.AppendInt(dst, int64(a.Client), 10)
	dst = append(dst, `,"intended_ns":`...)
	dst = strconv.AppendInt(dst, int64(a.Intended), 10)
	dst = append(dst, `,"invoke_ns":`...)
	dst = strconv.AppendInt(dst, int64(a.Invoke), 10)
	dst = append(dst, `,"complete_ns":`...)
	dst = strconv.AppendInt(dst, int64(a.Complete), 10)
	dst = append(dst, `,"outcome":"`...)
	dst = append(dst, a.Outcome.String()...)
	dst = append(dst, '"')
	if a.SQLState != "" {
		dst = append(dst, `,"sqlstate":`...)
		dst = strconv.AppendQuote(dst, a.SQLState)
	}
	dst = append(dst, `,"ops":[`...)
	for i, op := range a.Ops {
		if i > 0 {
			dst = append(dst, ',')
		}
		if op.Kind == Append {
			dst = append(dst, `["append",`...)
			dst = strconv.AppendInt(dst, op.Key, 10)
			dst = append(dst, ',')
			dst = strconv.AppendInt(dst, op.Value, 10)
			dst = append(dst, ']')
			continue
		}
		dst = append(dst, `["r",`...)
		dst = strconv.AppendInt(dst, op.Key, 10)
		dst = append(dst, ',')
		dst = appendList(dst, op.List, ',', "null")
		dst = append(dst, ']')
	}
	return append(dst, "]}\n"...)
}

// appendList appends [1,2,3] (with sep between values), or null for nil.
func appendList(dst []byte, l []int64, sep byte, null string) []byte {
	if l == nil {
		return append(dst, null...)
	}
	dst = append(dst, '[')
	for i, v := range l {
		if i > 0 {
			dst = append(dst, sep)
		}
		dst = strconv.AppendInt(dst, v, 10)
	}
	return append(dst, ']')
}

// JSONLWriter writes attempts as JSON lines, one Write per attempt.
type JSONLWriter struct {
	w       *bufio.Writer
	buf     []byte
	level   string // to record on the next line written: "" none
	clients int    // to record on the next line written: 0 none
}

// NewJSONLWriter writes to w; call Flush at the end.
func NewJSONLWriter(w io.Writer) *JSONLWriter {
	return &JSONLWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// SetLevel records l, the level the attempts run at, on the first line.
func (j *JSONLWriter) SetLevel(l Level) { j.level = l.String() }

// SetClients records n, the run's number of clients (its attempts'
// client numbers are below it), on the first line: "clients":2.
func (j *JSONLWriter) SetClients(n int) { j.clients = n }

// Write writes a's line.
func (j *JSONLWriter) Write(a Attempt) error {
	j.buf = AppendJSONL(j.buf[:0], a)
	if j.level != "" {
		j.buf = slices.Insert(j.buf, 1, []byte(`"isolation":`+strconv.Quote(j.level)+",")...)
		j.level = ""
	}
	if j.clients > 0 {
		j.buf = slices.Insert(j.buf, 1, []byte(`"clients":`+strconv.Itoa(j.clients)+",")...)
		j.clients = 0
	}
	_, err := j.w.Write(j.buf)
	return err
}

// Flush writes what is buffered.
func (j *JSONLWriter) Flush() error { return j.w.Flush() }

// WriteJSONL writes attempts as JSON lines.
func WriteJSONL(w io.Writer, attempts []Attempt) error {
	j := NewJSONLWriter(w)
	for _, a := range attempts {
		if err := j.Write(a); err != nil {
			return err
		}
	}
	return j.Flush()
}

type jsonAttempt struct {
	Client   *int64            `json:"client"`
	Intended *int64            `json:"intended_ns"`
	Invoke   *int64            `json:"invoke_ns"`
	Complete *int64            `json:"complete_ns"`
	Outcome  *string           `json:"outcome"`
	SQLState string            `json:"sqlstate"`
	Ops      []json.RawMessage `json:"ops"`
}

// parseJSONL decodes one line.
func parseJSONL(line []byte) (Attempt, error) {
	a, _, err := parseJSONLevel(line)
	return a, err
}

// lineMeta is what a line records of the whole history: its level and
// its number of clients, if it records them ("": none; 0: none).
type lineMeta struct {
	level   string
	clients int64
	// hasClients: "clients" is on the line, whatever its value
	hasClients bool
}

// parseJSONLevel decodes one line, and what it records of the history.
func parseJSONLevel(line []byte) (a Attempt, meta lineMeta, err error) {
	if a, ok := fastJSONLevel(line, &meta); ok {
		return a, meta, nil
	}
	if a, err = slowJSONL(line); err != nil {
		return a, meta, err
	}
	var v struct {
		Isolation *string          `json:"isolation"`
		Clients   *json.RawMessage `json:"clients"`
	}
	if json.Unmarshal(line, &v) == nil {
		if v.Isolation != nil {
			meta.level = *v.Isolation
		}
		if v.Clients != nil {
			meta.hasClients = true
			if json.Unmarshal(*v.Clients, &meta.clients) != nil {
				meta.clients = -1 // not a number: refused as none
			}
		}
	}
	return a, meta, nil
}

// slowJSONL decodes a line with encoding/json, and says what is wrong.
func slowJSONL(line []byte) (Attempt, error) {
	var j jsonAttempt
	if err := json.Unmarshal(line, &j); err != nil {
		return Attempt{}, jsonError(err)
	}
	if first, again := repeatedKey(line); again != "" {
		// encoding/json takes the last, in any case; jq and Python's json
		// take the last as written: which one the line means is not clear.
		return Attempt{}, fmt.Errorf("key %q is given twice (then as %q; keys match in any case): which one counts is not clear", first, again)
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"client", j.Client != nil}, {"invoke_ns", j.Invoke != nil}, {"complete_ns", j.Complete != nil}, {"outcome", j.Outcome != nil}, {"ops", j.Ops != nil}} {
		if !f.set {
			return Attempt{}, fmt.Errorf("no %q field", f.name)
		}
	}
	a := Attempt{Client: int(*j.Client), Invoke: time.Duration(*j.Invoke), Complete: time.Duration(*j.Complete), SQLState: j.SQLState}
	if int64(a.Client) != *j.Client {
		return Attempt{}, fmt.Errorf("client %d is too large", *j.Client)
	}
	a.Intended = a.Invoke
	if j.Intended != nil {
		a.Intended = time.Duration(*j.Intended)
	}
	o, ok := parseOutcome(*j.Outcome)
	if !ok {
		return Attempt{}, fmt.Errorf("outcome %q is not committed, failed or unknown", *j.Outcome)
	}
	a.Outcome = o
	a.Ops = make([]Op, len(j.Ops))
	for i, raw := range j.Ops {
		op, err := parseJSONOp(raw)
		if err != nil {
			return Attempt{}, fmt.Errorf("operation %d: %w", i+1, err)
		}
		a.Ops[i] = op
	}
	return a, a.Validate()
}

func parseJSONOp(raw json.RawMessage) (Op, error) {
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil || len(parts) != 3 {
		return Op{}, fmt.Errorf(`%s is not ["r", key, list] or ["append", key, value]`, raw)
	}
	var f string
	if err := json.Unmarshal(parts[0], &f); err != nil {
		return Op{}, fmt.Errorf(`%s is not ["r", key, list] or ["append", key, value]`, raw)
	}
	var op Op
	if err := json.Unmarshal(parts[1], &op.Key); err != nil {
		return Op{}, fmt.Errorf("key %s is not an integer", parts[1])
	}
	switch f {
	case "append":
		op.Kind = Append
		if err := json.Unmarshal(parts[2], &op.Value); err != nil {
			return Op{}, fmt.Errorf("value %s is not an integer", parts[2])
		}
	case "r":
		op.Kind = Read
		if !bytes.Equal(bytes.TrimSpace(parts[2]), []byte("null")) {
			op.List = []int64{}
			if err := json.Unmarshal(parts[2], &op.List); err != nil {
				return Op{}, fmt.Errorf("list %s is not a list of integers", parts[2])
			}
		}
	default:
		return Op{}, fmt.Errorf("%q is neither \"r\" nor \"append\"", f)
	}
	return op, nil
}

// jsonError says what is wrong with a line without Go's type names.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("field %q: %s is not %s", te.Field, te.Value, jsonType(te.Type.Kind().String()))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("not JSON: %v (at byte %d)", se, se.Offset)
	}
	return fmt.Errorf("not a JSON object: %v", err)
}

func jsonType(kind string) string {
	switch kind {
	case "int64", "int":
		return "an integer"
	case "string":
		return "a string"
	case "slice":
		return "a list"
	}
	return kind
}

// repeatedKey finds a key of line's object given twice, in any case (as
// encoding/json matches them): the first and the later one ("" if none).
// line is a JSON object already decoded without error.
func repeatedKey(line []byte) (first, again string) {
	d := json.NewDecoder(bytes.NewReader(line))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return "", ""
	}
	var keys []string
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return "", ""
		}
		k, _ := t.(string)
		for _, prev := range keys {
			if strings.EqualFold(prev, k) {
				return prev, k
			}
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return "", ""
		}
	}
	return "", ""
}
