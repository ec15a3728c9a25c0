package pgwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
)

// The types of the backend messages a client running statements meets.
const (
	BackendKeyData       = 'K'
	BindComplete         = '2'
	CloseComplete        = '3'
	CommandComplete      = 'C'
	CopyData             = 'd'
	CopyDone             = 'c'
	CopyInResponse       = 'G'
	CopyOutResponse      = 'H'
	CopyBothResponse     = 'W'
	DataRow              = 'D'
	EmptyQueryResponse   = 'I'
	ErrorResponse        = 'E'
	NoData               = 'n'
	NoticeResponse       = 'N'
	NotificationResponse = 'A'
	ParameterDescription = 't'
	ParameterStatus      = 'S'
	ParseComplete        = '1'
	PortalSuspended      = 's'
	ReadyForQuery        = 'Z'
	RowDescription       = 'T'
)

// MaxMessage bounds a backend message: beyond it the stream is taken as
// corrupt (the server's own limit for a row is 1 GB).
const MaxMessage = 1 << 30

// ErrShort is the error of a message whose body ends before what it
// announces.
var ErrShort = errors.New("protocol: short message")

// Next frames the first backend message of buf: its type, its body, and
// the bytes it takes; n is 0 when buf does not hold all of it yet. A
// length the protocol does not allow is an error: the stream is lost.
func Next(buf []byte) (typ byte, body []byte, n int, err error) {
	if len(buf) < 5 {
		return 0, nil, 0, nil
	}
	l := int(binary.BigEndian.Uint32(buf[1:5]))
	if l < 4 || l > MaxMessage {
		return 0, nil, 0, fmt.Errorf("protocol: message %q of length %d", buf[0], l)
	}
	if len(buf) < 1+l {
		return 0, nil, 0, nil
	}
	return buf[0], buf[5 : 1+l : 1+l], 1 + l, nil
}

// DecodeReadyForQuery reads a ReadyForQuery: the transaction status, 'I'
// (idle), 'T' (in a transaction block) or 'E' (in a failed one).
func DecodeReadyForQuery(body []byte) (byte, error) {
	if len(body) < 1 {
		return 0, ErrShort
	}
	return body[0], nil
}

// DecodeCommandComplete reads a CommandComplete: its tag ("UPDATE 1"),
// without the terminating NUL.
func DecodeCommandComplete(body []byte) []byte {
	if n := len(body); n > 0 && body[n-1] == 0 {
		return body[: n-1 : n-1]
	}
	return body
}

// DecodeDataRow reads a DataRow: its columns' values are appended to dst
// and returned, each a slice of body; a NULL (length -1) is a nil slice,
// an empty value a non-nil empty one. Another negative length is an
// error.
func DecodeDataRow(body []byte, dst [][]byte) ([][]byte, error) {
	n, body, err := count(body)
	for i := 0; i < n; i++ {
		if len(body) < 4 {
			return dst, ErrShort
		}
		l := int(int32(binary.BigEndian.Uint32(body)))
		body = body[4:]
		if l == -1 {
			dst = append(dst, nil)
			continue
		}
		if l < 0 || l > len(body) {
			return dst, ErrShort
		}
		dst = append(dst, body[:l:l])
		body = body[l:]
	}
	return dst, err
}

// rowField is what follows a column's name in a RowDescription: table OID,
// column number, type OID, type size, type modifier, format code.
const rowField = 4 + 2 + 4 + 2 + 4 + 2

// DecodeRowDescription reads a RowDescription: its columns' names are
// appended to dst and returned, each a slice of body.
func DecodeRowDescription(body []byte, dst [][]byte) ([][]byte, error) {
	n, body, err := count(body)
	for i := 0; i < n; i++ {
		end := 0
		for end < len(body) && body[end] != 0 {
			end++
		}
		if end+1+rowField > len(body) {
			return dst, ErrShort
		}
		dst = append(dst, body[:end:end])
		body = body[end+1+rowField:]
	}
	return dst, err
}

// count reads the number of columns that begins a DataRow or a
// RowDescription, and returns it with the rest of body.
func count(body []byte) (int, []byte, error) {
	if len(body) < 2 {
		return 0, body, ErrShort
	}
	return int(binary.BigEndian.Uint16(body)), body[2:], nil
}

// DecodeError reads an ErrorResponse or a NoticeResponse into pgconn's
// error type, which the rest of txload classifies. A field cut short is
// taken as it is: the message says what it can.
func DecodeError(body []byte) *pgconn.PgError {
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
			pe.Position = atoi32(v)
		case 'p':
			pe.InternalPosition = atoi32(v)
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
			pe.Line = atoi32(v)
		case 'R':
			pe.Routine = v
		}
	}
	return pe
}

// atoi32 reads a number field; 0 when it is not one.
func atoi32(s string) int32 {
	n, _ := strconv.ParseInt(s, 10, 32)
	return int32(n)
}
