package pg

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ERROR: plain (SQLSTATE P0001)", "ERROR: plain (SQLSTATE P0001)"},
		{"tab\tand\nnewline kept", "tab\tand\nnewline kept"},
		{"x\x1b[8m", `x\x1b[8m`},
		{"\x1b]0;TITLE\x07", `\x1b]0;TITLE\x07`},
		{"cr\rdel\x7f", `cr\x0ddel\x7f`},
		{"c1 \u009b csi, \u0085 nel", `c1 \u009b csi, \u0085 nel`},
		{"bad \xff byte", `bad \xff byte`},
		{"utf-8 kept: é ✓ \ufffd", "utf-8 kept: é ✓ \ufffd"},
	} {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A notice is printed as libpq prints it, quoted: a RAISE NOTICE with
// escape codes or a right-to-left override printed them raw in txload
// pgbench (retest 10).
func TestLibpqNoticeQuoted(t *testing.T) {
	pe := &pgconn.PgError{Severity: "NOTICE", Message: "x\x1b[8m\u202eko :kcehc", Detail: "d\x1b[2K"}
	if got, want := LibpqNotice(pe, "", "UTF8"), "NOTICE:  x\\x1b[8m\\u202eko :kcehc\nDETAIL:  d\\x1b[2K\n"; got != want {
		t.Errorf("LibpqNotice = %q, want %q", got, want)
	}
}
