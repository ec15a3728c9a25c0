package driver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
)

// Frontend messages, appended to a buffer: the subset a client running
// statements needs (protocol 3.0). Nothing here allocates when b has room.

func appendHeader(b []byte, typ byte) ([]byte, int) {
	b = append(b, typ, 0, 0, 0, 0)
	return b, len(b) - 4
}

func finishMessage(b []byte, at int) []byte {
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at))
	return b
}

func appendQuery(b, text []byte) []byte {
	b, at := appendHeader(b, 'Q')
	b = append(b, text...)
	b = append(b, 0)
	return finishMessage(b, at)
}

func appendQueryString(b []byte, text string) []byte {
	b, at := appendHeader(b, 'Q')
	b = append(b, text...)
	b = append(b, 0)
	return finishMessage(b, at)
}

// appendParse prepares sql as statement name, its parameters' types left
// for the server to infer (as libpq sends them).
func appendParse(b []byte, name, sql string) []byte {
	b, at := appendHeader(b, 'P')
	b = append(b, name...)
	b = append(b, 0)
	b = append(b, sql...)
	b = append(b, 0, 0, 0)
	return finishMessage(b, at)
}

// appendBindStart starts a Bind of statement name to the unnamed portal,
// with text parameters; the parameters follow, then appendBindEnd.
func appendBindStart(b []byte, name string) ([]byte, int, int) {
	b, at := appendHeader(b, 'B')
	b = append(b, 0) // unnamed portal
	b = append(b, name...)
	b = append(b, 0)
	b = append(b, 0, 0) // no format codes: all text
	count := len(b)
	b = append(b, 0, 0)
	return b, at, count
}

func appendBindEnd(b []byte, at, count, n int) []byte {
	binary.BigEndian.PutUint16(b[count:], uint16(n))
	b = append(b, 0, 0) // results in text
	return finishMessage(b, at)
}

func appendDescribePortal(b []byte) []byte {
	return append(b, 'D', 0, 0, 0, 6, 'P', 0)
}

func appendExecute(b []byte) []byte {
	return append(b, 'E', 0, 0, 0, 9, 0, 0, 0, 0, 0)
}

func appendSync(b []byte) []byte { return append(b, 'S', 0, 0, 0, 4) }

func appendTerminate(b []byte) []byte { return append(b, 'X', 0, 0, 0, 4) }

// maxMessage bounds a backend message: beyond it the stream is taken as
// corrupt (the server's own limit for a row is 1 GB).
const maxMessage = 1 << 30

// nextMessage frames the first backend message of buf: its type, its body,
// and the bytes it takes; n is 0 when buf does not hold all of it yet.
func nextMessage(buf []byte) (typ byte, body []byte, n int, err error) {
	if len(buf) < 5 {
		return 0, nil, 0, nil
	}
	l := int(binary.BigEndian.Uint32(buf[1:5]))
	if l < 4 || l > maxMessage {
		return 0, nil, 0, fmt.Errorf("protocol: message %q of length %d", buf[0], l)
	}
	if len(buf) < 1+l {
		return 0, nil, 0, nil
	}
	return buf[0], buf[5 : 1+l], 1 + l, nil
}

var errShortMessage = errors.New("protocol: short message")

// parseError reads an ErrorResponse into pgconn's error type, which the
// rest of txload classifies.
func parseError(body []byte) *pgconn.PgError {
	pe := &pgconn.PgError{}
	for len(body) > 0 && body[0] != 0 {
		code := body[0]
		body = body[1:]
		end := 0
		for end < len(body) && body[end] != 0 {
			end++
		}
		v := string(body[:end])
		if end < len(body) {
			end++
		}
		body = body[end:]
		switch code {
		case 'S':
			pe.Severity = v
		case 'V':
			pe.SeverityUnlocalized = v
		case 'C':
			pe.Code = v
		case 'M':
			pe.Message = v
		case 'D':
			pe.Detail = v
		case 'H':
			pe.Hint = v
		case 'P':
			n, _ := strconv.Atoi(v)
			pe.Position = int32(n)
		case 'p':
			n, _ := strconv.Atoi(v)
			pe.InternalPosition = int32(n)
		case 'q':
			pe.InternalQuery = v
		case 'W':
			pe.Where = v
		case 's':
			pe.SchemaName = v
		case 't':
			pe.TableName = v
		case 'c':
			pe.ColumnName = v
		case 'd':
			pe.DataTypeName = v
		case 'n':
			pe.ConstraintName = v
		case 'F':
			pe.File = v
		case 'L':
			n, _ := strconv.Atoi(v)
			pe.Line = int32(n)
		case 'R':
			pe.Routine = v
		}
	}
	return pe
}

// dataRow walks a DataRow's columns: for each, its value (nil for NULL).
func dataRow(body []byte, each func(i int, v []byte)) error {
	if len(body) < 2 {
		return errShortMessage
	}
	n := int(binary.BigEndian.Uint16(body))
	body = body[2:]
	for i := 0; i < n; i++ {
		if len(body) < 4 {
			return errShortMessage
		}
		l := int(int32(binary.BigEndian.Uint32(body)))
		body = body[4:]
		if l < 0 {
			each(i, nil)
			continue
		}
		if l > len(body) {
			return errShortMessage
		}
		each(i, body[:l:l])
		body = body[l:]
	}
	return nil
}

// rowDescription walks a RowDescription's column names.
func rowDescription(body []byte, each func(i int, name []byte)) error {
	if len(body) < 2 {
		return errShortMessage
	}
	n := int(binary.BigEndian.Uint16(body))
	body = body[2:]
	for i := 0; i < n; i++ {
		end := 0
		for end < len(body) && body[end] != 0 {
			end++
		}
		if end+1+18 > len(body) {
			return errShortMessage
		}
		each(i, body[:end])
		body = body[end+1+18:]
	}
	return nil
}
