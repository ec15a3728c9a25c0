package pgwire

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// backend encodes m as the server would send it, with pgproto3.
func backend(t testing.TB, m pgproto3.BackendMessage) []byte {
	t.Helper()
	b, err := m.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// body frames b, one whole message, and returns its body.
func body(t testing.TB, b []byte) []byte {
	t.Helper()
	_, body, n, err := Next(b)
	if err != nil || n != len(b) {
		t.Fatalf("framing %q: %d of %d bytes, %v", b, n, len(b), err)
	}
	return body
}

// Next frames messages whole, waits for the rest of one cut short, and
// refuses a length the protocol does not allow.
func TestNext(t *testing.T) {
	stream := append(backend(t, &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")}), backend(t, &pgproto3.ReadyForQuery{TxStatus: 'I'})...)
	for _, tc := range []struct {
		name    string
		buf     []byte
		typ     byte
		body    string
		n       int
		invalid bool
	}{
		{"empty", nil, 0, "", 0, false},
		{"header cut", stream[:4], 0, "", 0, false},
		{"body cut", stream[:10], 0, "", 0, false},
		{"first of two", stream, 'C', "SELECT 1\x00", 14, false},
		{"second", stream[14:], 'Z', "I", 6, false},
		{"no body", []byte{'1', 0, 0, 0, 4, 'x'}, '1', "", 5, false},
		{"length below 4", []byte{'Z', 0, 0, 0, 3, 'I'}, 0, "", 0, true},
		{"length beyond 1 GB", []byte{'D', 0x40, 0, 0, 1}, 0, "", 0, true},
		{"negative length", []byte{'D', 0xff, 0xff, 0xff, 0xff}, 0, "", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, body, n, err := Next(tc.buf)
			if (err != nil) != tc.invalid || typ != tc.typ || string(body) != tc.body || n != tc.n {
				t.Fatalf("got %q %q %d %v", typ, body, n, err)
			}
		})
	}
}

func TestDecodeReadyForQuery(t *testing.T) {
	for _, s := range []byte{'I', 'T', 'E'} {
		got, err := DecodeReadyForQuery(body(t, backend(t, &pgproto3.ReadyForQuery{TxStatus: s})))
		if err != nil || got != s {
			t.Fatalf("%q: got %q, %v", s, got, err)
		}
	}
	if _, err := DecodeReadyForQuery(nil); err != ErrShort {
		t.Fatalf("empty ReadyForQuery: %v", err)
	}
}

func TestDecodeCommandComplete(t *testing.T) {
	for _, tag := range []string{"UPDATE 1", "SELECT 0", "BEGIN", ""} {
		if got := DecodeCommandComplete(body(t, backend(t, &pgproto3.CommandComplete{CommandTag: []byte(tag)}))); string(got) != tag {
			t.Fatalf("tag %q, want %q", got, tag)
		}
	}
}

// A DataRow's values: NULL is nil, an empty value is not; they are
// appended after what dst held; a row cut short is an error.
func TestDecodeDataRow(t *testing.T) {
	row := backend(t, &pgproto3.DataRow{Values: [][]byte{[]byte("42"), nil, {}, []byte("a\x00b")}})
	got, err := DecodeDataRow(body(t, row), [][]byte{[]byte("kept")})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]byte{[]byte("kept"), []byte("42"), nil, {}, []byte("a\x00b")}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if (got[i] == nil) != (want[i] == nil) || !bytes.Equal(got[i], want[i]) {
			t.Fatalf("value %d: %q, want %q", i, got[i], want[i])
		}
	}
	b := body(t, row)
	for _, bad := range [][]byte{nil, {0}, b[:len(b)-1], {0, 1, 0, 0, 0, 9, 'x'}, {0, 1, 0xff, 0xff, 0xff, 0xfe}} {
		if _, err := DecodeDataRow(bad, nil); err == nil {
			t.Errorf("row %q: no error", bad)
		}
	}
}

func TestDecodeRowDescription(t *testing.T) {
	rd := backend(t, &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{
		{Name: []byte("aid"), DataTypeOID: 23, DataTypeSize: 4}, {Name: []byte(""), DataTypeOID: 25, DataTypeSize: -1}, {Name: []byte("sum")}}})
	got, err := DecodeRowDescription(body(t, rd), nil)
	if err != nil || len(got) != 3 || string(got[0]) != "aid" || string(got[1]) != "" || string(got[2]) != "sum" {
		t.Fatalf("names %q, %v", got, err)
	}
	b := body(t, rd)
	if _, err := DecodeRowDescription(b[:len(b)-1], nil); err != ErrShort {
		t.Fatalf("a description cut short: %v", err)
	}
}

// Every field of an error or a notice lands where pgconn keeps it.
func TestDecodeError(t *testing.T) {
	full := &pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "40001", Message: "could not serialize access",
		Detail: "d", Hint: "h", Position: 12, InternalPosition: 3, InternalQuery: "iq", Where: "w", SchemaName: "s", TableName: "t",
		ColumnName: "c", DataTypeName: "dt", ConstraintName: "cn", File: "f.c", Line: 99, Routine: "r"}
	for _, tc := range []struct {
		name string
		msg  pgproto3.BackendMessage
		want pgconn.PgError
	}{
		{"every field", full, pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "40001", Message: "could not serialize access",
			Detail: "d", Hint: "h", Position: 12, InternalPosition: 3, InternalQuery: "iq", Where: "w", SchemaName: "s", TableName: "t",
			ColumnName: "c", DataTypeName: "dt", ConstraintName: "cn", File: "f.c", Line: 99, Routine: "r"}},
		{"fatal", &pgproto3.ErrorResponse{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"},
			pgconn.PgError{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}},
		{"notice", &pgproto3.NoticeResponse{Severity: "NOTICE", Code: "00000", Message: "hello"}, pgconn.PgError{Severity: "NOTICE", Code: "00000", Message: "hello"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DecodeError(body(t, backend(t, tc.msg))); !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", *got, tc.want)
			}
		})
	}
	// A field cut short says what it has.
	if got := DecodeError([]byte("SERROR\x00Mcut")); got.Severity != "ERROR" || got.Message != "cut" {
		t.Fatalf("cut short: %+v", got)
	}
}

// Decoding allocates nothing once dst has grown.
func TestDecodeAllocatesNothing(t *testing.T) {
	row := body(t, backend(t, &pgproto3.DataRow{Values: [][]byte{[]byte("1"), nil, []byte("three")}}))
	rd := body(t, backend(t, &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("a")}, {Name: []byte("b")}}}))
	dst := make([][]byte, 0, 8)
	if n := testing.AllocsPerRun(100, func() {
		_, _, _, _ = Next(row)
		_, _ = DecodeDataRow(row, dst[:0])
		_, _ = DecodeRowDescription(rd, dst[:0])
		_ = DecodeCommandComplete(row)
		_, _ = DecodeReadyForQuery(row)
	}); n != 0 {
		t.Fatalf("%.0f allocations", n)
	}
}

// Framing any bytes: never a panic, never more than the buffer, and a
// message framed is exactly its announced length.
func FuzzNext(f *testing.F) {
	f.Add([]byte{'Z', 0, 0, 0, 5, 'I'})
	f.Add([]byte{'D', 0, 0, 0, 4})
	f.Add([]byte{'D', 0xff, 0, 0, 0})
	f.Fuzz(func(t *testing.T, buf []byte) {
		typ, body, n, err := Next(buf)
		if err != nil || n == 0 {
			return
		}
		if n > len(buf) || typ != buf[0] || n != 5+len(body) || int(binary.BigEndian.Uint32(buf[1:])) != 4+len(body) {
			t.Fatalf("framed %q: type %q, %d bytes, body %d", buf, typ, n, len(body))
		}
	})
}

// Any DataRow body: where pgproto3 reads it, the same values; where it
// refuses it, an error.
func FuzzDecodeDataRow(f *testing.F) {
	f.Add([]byte{0, 2, 0, 0, 0, 1, 'x', 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 1, 0, 0, 0, 0})
	f.Add([]byte{0, 1, 0xff, 0xff, 0xff, 0xfe})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeDataRow(b, nil)
		var want pgproto3.DataRow
		if werr := want.Decode(b); werr != nil {
			if err == nil {
				t.Fatalf("%q: pgproto3 refuses it (%v), we read %q", b, werr, got)
			}
			return
		}
		if err != nil || len(got) != len(want.Values) {
			t.Fatalf("%q: %q %v, pgproto3 %q", b, got, err, want.Values)
		}
		for i := range got {
			if (got[i] == nil) != (want.Values[i] == nil) || !bytes.Equal(got[i], want.Values[i]) {
				t.Fatalf("%q: value %d %q, pgproto3 %q", b, i, got[i], want.Values[i])
			}
		}
	})
}

// Any RowDescription body: where pgproto3 reads it, the same names.
func FuzzDecodeRowDescription(f *testing.F) {
	f.Add([]byte("\x00\x01aid\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x17\x00\x04\xff\xff\xff\xff\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeRowDescription(b, nil)
		var want pgproto3.RowDescription
		if werr := want.Decode(b); werr != nil {
			return // pgproto3 is stricter about what follows the fields
		}
		if err != nil || len(got) != len(want.Fields) {
			t.Fatalf("%q: %q %v, pgproto3 %d fields", b, got, err, len(want.Fields))
		}
		for i := range got {
			if !bytes.Equal(got[i], want.Fields[i].Name) {
				t.Fatalf("%q: name %d %q, pgproto3 %q", b, i, got[i], want.Fields[i].Name)
			}
		}
	})
}

// Any error body: never a panic; where pgproto3 reads it, the same fields.
func FuzzDecodeError(f *testing.F) {
	f.Add([]byte("SERROR\x00C40001\x00Mcould not serialize\x00P12\x00\x00"))
	f.Add([]byte("SFATAL\x00Mcut"))
	f.Add([]byte("P99999999999\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := DecodeError(b)
		var want pgproto3.ErrorResponse
		if want.Decode(b) != nil {
			return
		}
		w := pgconn.ErrorResponseToPgError(&want)
		if !reflect.DeepEqual(*got, *w) {
			t.Fatalf("%q: %+v, pgproto3 %+v", b, *got, *w)
		}
	})
}
