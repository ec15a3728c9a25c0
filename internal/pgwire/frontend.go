package pgwire

import (
	"encoding/binary"
	"strconv"
)

// Frontend messages: the subset a client running statements needs.

// start appends a message header whose length finish fills in; it
// returns the position of the length.
func start(dst []byte, typ byte) ([]byte, int) {
	dst = append(dst, typ, 0, 0, 0, 0)
	return dst, len(dst) - 4
}

// finish fills in the length of the message whose length is at at.
func finish(dst []byte, at int) []byte {
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at))
	return dst
}

// Query is a simple query: one or more statements in one string, each
// with its own result, run as an implicit transaction unless they manage
// their own.
type Query struct{ Text []byte }

// Encode appends the message to dst.
func (m Query) Encode(dst []byte) []byte {
	dst, at := start(dst, 'Q')
	dst = append(dst, m.Text...)
	dst = append(dst, 0)
	return finish(dst, at)
}

// Parse prepares Query as statement Name ("" for the unnamed statement),
// the types of its parameters left for the server to infer, as libpq sends
// them.
type Parse struct{ Name, Query string }

// Encode appends the message to dst.
func (m Parse) Encode(dst []byte) []byte {
	dst, at := start(dst, 'P')
	dst = append(dst, m.Name...)
	dst = append(dst, 0)
	dst = append(dst, m.Query...)
	dst = append(dst, 0, 0, 0) // no parameter types
	return finish(dst, at)
}

// Bind binds a prepared statement to the unnamed portal with parameters in
// text and results in text, written in place: Start, then each parameter
// in order, then Finish, each appending to what the one before returned.
type Bind struct {
	at, count, n int
}

// Start begins the Bind of statement ("" for the unnamed one).
func (b *Bind) Start(dst []byte, statement string) []byte {
	dst, b.at = start(dst, 'B')
	dst = append(dst, 0) // the unnamed portal
	dst = append(dst, statement...)
	dst = append(dst, 0)
	dst = append(dst, 0, 0) // no format codes: every parameter in text
	b.count, b.n = len(dst), 0
	return append(dst, 0, 0) // the number of parameters, filled in by Finish
}

// Text appends a parameter's text.
func (b *Bind) Text(dst, v []byte) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0) // its length, filled in by close
	return b.close(append(dst, v...), at)
}

// String appends a parameter's text.
func (b *Bind) String(dst []byte, v string) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	return b.close(append(dst, v...), at)
}

// Int appends an integer parameter, in decimal.
func (b *Bind) Int(dst []byte, v int64) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	return b.close(strconv.AppendInt(dst, v, 10), at)
}

// Null appends a NULL parameter.
func (b *Bind) Null(dst []byte) []byte {
	b.n++
	return append(dst, 0xff, 0xff, 0xff, 0xff)
}

// close fills in the length of the parameter that starts at at.
func (b *Bind) close(dst []byte, at int) []byte {
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	b.n++
	return dst
}

// Finish ends the Bind: results in text.
func (b *Bind) Finish(dst []byte) []byte {
	binary.BigEndian.PutUint16(dst[b.count:], uint16(b.n))
	dst = append(dst, 0, 0) // no result format codes: all in text
	return finish(dst, b.at)
}

// Describe asks for the description of a portal (Kind 'P') or a prepared
// statement ('S') by Name.
type Describe struct {
	Kind byte
	Name string
}

// Encode appends the message to dst.
func (m Describe) Encode(dst []byte) []byte {
	if m.Name == "" {
		return append(dst, 'D', 0, 0, 0, 6, m.Kind, 0)
	}
	dst, at := start(dst, 'D')
	dst = append(dst, m.Kind)
	dst = append(dst, m.Name...)
	dst = append(dst, 0)
	return finish(dst, at)
}

// Execute runs Portal ("" for the unnamed one), returning at most MaxRows
// rows (0: all of them).
type Execute struct {
	Portal  string
	MaxRows uint32
}

// Encode appends the message to dst.
func (m Execute) Encode(dst []byte) []byte {
	if m.Portal == "" && m.MaxRows == 0 {
		return append(dst, 'E', 0, 0, 0, 9, 0, 0, 0, 0, 0)
	}
	dst, at := start(dst, 'E')
	dst = append(dst, m.Portal...)
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, m.MaxRows)
	return finish(dst, at)
}

// Sync ends an extended-protocol segment: the server answers
// ReadyForQuery once it has run (or skipped, after an error) what came
// before.
type Sync struct{}

// Encode appends the message to dst.
func (Sync) Encode(dst []byte) []byte { return append(dst, 'S', 0, 0, 0, 4) }

// Terminate ends the session.
type Terminate struct{}

// Encode appends the message to dst.
func (Terminate) Encode(dst []byte) []byte { return append(dst, 'X', 0, 0, 0, 4) }

// CancelRequest asks the server, on a connection of its own, to cancel
// what backend PID runs; Key is the secret the backend gave
// (BackendKeyData).
type CancelRequest struct {
	PID uint32
	Key []byte
}

// cancelCode is the protocol's CancelRequest code (1234 5678).
const cancelCode = 80877102

// Encode appends the message to dst.
func (m CancelRequest) Encode(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(12+len(m.Key)))
	dst = binary.BigEndian.AppendUint32(dst, cancelCode)
	dst = binary.BigEndian.AppendUint32(dst, m.PID)
	return append(dst, m.Key...)
}
