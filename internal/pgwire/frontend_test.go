package pgwire

import (
	"bytes"
	"math"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// expect encodes m with pgx's pgproto3, the reference each message of
// ours is held against.
func expect(t testing.TB, m pgproto3.FrontendMessage) []byte {
	t.Helper()
	b, err := m.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each frontend message is encoded byte for byte as pgproto3 encodes it,
// after whatever the buffer held.
func TestFrontendMessages(t *testing.T) {
	bind := func(stmt string, params ...[]byte) []byte {
		var b Bind
		dst := b.Start([]byte("prefix"), stmt)
		for _, p := range params {
			if p == nil {
				dst = b.Null(dst)
			} else {
				dst = b.Text(dst, p)
			}
		}
		return b.Finish(dst)
	}
	for _, tc := range []struct {
		name string
		got  []byte
		want pgproto3.FrontendMessage
	}{
		{"query", Query{Text: []byte("SELECT 1; SELECT 2")}.Encode([]byte("prefix")), &pgproto3.Query{String: "SELECT 1; SELECT 2"}},
		{"empty query", Query{}.Encode([]byte("prefix")), &pgproto3.Query{}},
		{"parse named", Parse{Name: "s1", Query: "SELECT $1"}.Encode([]byte("prefix")), &pgproto3.Parse{Name: "s1", Query: "SELECT $1"}},
		{"parse unnamed", Parse{Query: "SELECT 1"}.Encode([]byte("prefix")), &pgproto3.Parse{Query: "SELECT 1"}},
		{"bind no parameters", bind("s1"), &pgproto3.Bind{PreparedStatement: "s1"}},
		{"bind parameters", bind("", []byte("42"), nil, []byte{}, []byte("é\x00x")),
			&pgproto3.Bind{Parameters: [][]byte{[]byte("42"), nil, {}, []byte("é\x00x")}}},
		{"describe portal", Describe{Kind: 'P'}.Encode([]byte("prefix")), &pgproto3.Describe{ObjectType: 'P'}},
		{"describe statement", Describe{Kind: 'S', Name: "s1"}.Encode([]byte("prefix")), &pgproto3.Describe{ObjectType: 'S', Name: "s1"}},
		{"execute", Execute{}.Encode([]byte("prefix")), &pgproto3.Execute{}},
		{"execute some rows", Execute{Portal: "p", MaxRows: 7}.Encode([]byte("prefix")), &pgproto3.Execute{Portal: "p", MaxRows: 7}},
		{"sync", Sync{}.Encode([]byte("prefix")), &pgproto3.Sync{}},
		{"terminate", Terminate{}.Encode([]byte("prefix")), &pgproto3.Terminate{}},
		{"cancel", CancelRequest{PID: 1234, Key: []byte{1, 2, 3, 4}}.Encode([]byte("prefix")), &pgproto3.CancelRequest{ProcessID: 1234, SecretKey: []byte{1, 2, 3, 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := append([]byte("prefix"), expect(t, tc.want)...)
			if !bytes.Equal(tc.got, want) {
				t.Fatalf("encoded\n%q\nwant\n%q", tc.got, want)
			}
		})
	}
}

// Bind's typed parameters are their text: Int in decimal, String as is.
func TestBindTypedParameters(t *testing.T) {
	var b Bind
	dst := b.Start(nil, "s")
	dst = b.Int(dst, math.MinInt64)
	dst = b.Int(dst, 0)
	dst = b.String(dst, "txload")
	dst = b.Finish(dst)
	want := expect(t, &pgproto3.Bind{PreparedStatement: "s", Parameters: [][]byte{[]byte("-9223372036854775808"), []byte("0"), []byte("txload")}})
	if !bytes.Equal(dst, want) {
		t.Fatalf("encoded\n%q\nwant\n%q", dst, want)
	}
}

// Encoding into a buffer with room allocates nothing.
func TestEncodeAllocatesNothing(t *testing.T) {
	buf := make([]byte, 0, 1024)
	text := []byte("SELECT abalance FROM pgbench_accounts WHERE aid = 1")
	if n := testing.AllocsPerRun(100, func() {
		dst := Parse{Name: "s", Query: "SELECT $1"}.Encode(buf[:0])
		var b Bind
		dst = b.Start(dst, "s")
		dst = b.Int(dst, 12345)
		dst = b.Text(dst, text)
		dst = b.Finish(dst)
		dst = Describe{Kind: 'P'}.Encode(dst)
		dst = Execute{}.Encode(dst)
		dst = Sync{}.Encode(dst)
		_ = Query{Text: text}.Encode(dst)
	}); n != 0 {
		t.Fatalf("%.0f allocations", n)
	}
}

// Any parameters, as pgproto3 reads them back.
func FuzzBind(f *testing.F) {
	f.Add("s1", []byte("1"), []byte(""), true)
	f.Add("", []byte{0xff, 0, 1}, []byte("x"), false)
	f.Fuzz(func(t *testing.T, stmt string, a, b []byte, null bool) {
		if bytes.IndexByte([]byte(stmt), 0) >= 0 {
			return // a name is a C string
		}
		var w Bind
		dst := w.Start(nil, stmt)
		dst = w.Text(dst, a)
		if null {
			dst = w.Null(dst)
		}
		dst = w.Text(dst, b)
		dst = w.Finish(dst)
		typ, body, n, err := Next(dst)
		if err != nil || typ != 'B' || n != len(dst) {
			t.Fatalf("framing %q: %q %d %v", dst, typ, n, err)
		}
		var got pgproto3.Bind
		if err := got.Decode(body); err != nil {
			t.Fatal(err)
		}
		want := [][]byte{a}
		if null {
			want = append(want, nil)
		}
		want = append(want, b)
		if got.PreparedStatement != stmt || len(got.Parameters) != len(want) {
			t.Fatalf("decoded %+v", got)
		}
		for i := range want {
			if (want[i] == nil) != (got.Parameters[i] == nil) || !bytes.Equal(want[i], got.Parameters[i]) {
				t.Fatalf("parameter %d: %q, want %q", i, got.Parameters[i], want[i])
			}
		}
	})
}
