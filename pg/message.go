package pg

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/printable"
)

// LibpqMessage words a server error as libpq's PQerrorMessage does with
// its default verbosity: "ERROR:  message" (the two spaces are libpq's),
// the line of query the error points at with a caret under it (or " at
// character N" when the query is not known: a prepared statement's), then
// DETAIL, HINT, QUERY and CONTEXT lines. Each line ends in a newline.
// encoding is the connection's client_encoding, in which the server
// counts the error's position ("" reads as UTF8). An error that is not the
// server's is its text and a newline.
func LibpqMessage(err error, query, encoding string) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return Printable(err.Error()) + "\n"
	}
	if qe := (*QueryError)(nil); query == "" && errors.As(err, &qe) {
		query, encoding = qe.Query, qe.Encoding
	}
	return Printable(libpqMessage(pe, query, encoding, true))
}

// QueryError is a server's error with the text of the statement it came
// from, for LibpqMessage to show its position in when the caller has not
// the text at hand (the executor knows it when a FATAL cuts a statement;
// the code that reports it does not). Query "" is not known (a prepared
// statement's execution); Encoding is the connection's client_encoding.
type QueryError struct {
	Err             error
	Query, Encoding string
}

func (e *QueryError) Error() string { return e.Err.Error() }
func (e *QueryError) Unwrap() error { return e.Err }

// LibpqNotice is a notice or warning as libpq's default notice processor
// prints it: as LibpqMessage words an error, without its CONTEXT, and
// quoted as it is (Printable): a RAISE NOTICE printed raw could hide the
// lines after it (retest 10).
func LibpqNotice(pe *pgconn.PgError, query, encoding string) string {
	return Printable(libpqMessage(pe, query, encoding, false))
}

// libpqMessage is libpq's pqBuildErrorMessage3 with PQERRORS_DEFAULT and
// PQSHOW_CONTEXT_ERRORS.
func libpqMessage(pe *pgconn.PgError, query, encoding string, isError bool) string {
	var b strings.Builder
	if pe.Severity != "" {
		b.WriteString(pe.Severity + ":  ")
	}
	b.WriteString(pe.Message)
	var at string
	pos := 0
	switch {
	case pe.Position > 0 && query != "":
		at, pos = query, int(pe.Position)
	case pe.Position > 0:
		fmt.Fprintf(&b, " at character %d", pe.Position)
	case pe.InternalPosition > 0 && pe.InternalQuery != "":
		at, pos = pe.InternalQuery, int(pe.InternalPosition)
	case pe.InternalPosition > 0:
		fmt.Fprintf(&b, " at character %d", pe.InternalPosition)
	}
	b.WriteByte('\n')
	if at != "" {
		b.WriteString(errorPosition(at, pos, encoding))
	}
	for _, f := range []struct{ label, v string }{{"DETAIL", pe.Detail}, {"HINT", pe.Hint}, {"QUERY", pe.InternalQuery}} {
		if f.v != "" {
			fmt.Fprintf(&b, "%s:  %s\n", f.label, f.v)
		}
	}
	if isError && pe.Where != "" {
		fmt.Fprintf(&b, "CONTEXT:  %s\n", pe.Where)
	}
	return b.String()
}

// The width of the LINE excerpt, as libpq's reportErrorPosition.
const (
	displaySize = 60 // screen width limit, in screen columns
	minRightCut = 10 // try to keep this far away from the end of the line
)

// errorPosition is libpq's reportErrorPosition: the line of query holding
// character loc (from 1), cut to about 60 columns around it, as "LINE n:
// ..." and a caret line under the character.
func errorPosition(query string, loc int, encoding string) string {
	loc--
	if loc < 0 {
		return ""
	}
	mb := encoding == "" || strings.EqualFold(encoding, "UTF8")
	w := []byte(query)
	// qidx and scridx: each character's byte offset and screen column.
	var qidx, scridx []int
	qoff, scroff, locLine, ibeg, iend := 0, 0, 1, 0, -1
	cno := 0
	for ; qoff < len(w); cno++ {
		ch := w[qoff]
		qidx, scridx = append(qidx, qoff), append(scridx, scroff)
		if ch == '\t' {
			w[qoff] = ' '
		} else if ch == '\r' || ch == '\n' {
			if cno < loc {
				if ch == '\r' || cno == 0 || w[qidx[cno-1]] != '\r' {
					locLine++
				}
				ibeg = cno + 1
			} else {
				iend = cno
				break
			}
		}
		if mb {
			n := utf8Len(w[qoff])
			scroff += utf8Width(w[qoff:min(qoff+n, len(w))])
			qoff += n
		} else {
			scroff++
			qoff++
		}
	}
	if iend < 0 {
		iend = cno
		qidx, scridx = append(qidx, min(qoff, len(w))), append(scridx, scroff)
	}
	if loc > cno {
		return ""
	}
	begTrunc, endTrunc := false, false
	if scridx[iend]-scridx[ibeg] > displaySize {
		if scridx[ibeg]+displaySize >= scridx[loc]+minRightCut {
			for scridx[iend]-scridx[ibeg] > displaySize {
				iend--
			}
			endTrunc = true
		} else {
			for scridx[loc]+minRightCut < scridx[iend] {
				iend--
				endTrunc = true
			}
			for scridx[iend]-scridx[ibeg] > displaySize {
				ibeg++
				begTrunc = true
			}
		}
	}
	var b strings.Builder
	prefix := fmt.Sprintf("LINE %d: ", locLine)
	if begTrunc {
		prefix += "..."
	}
	b.WriteString(prefix)
	b.Write(w[qidx[ibeg]:qidx[iend]])
	if endTrunc {
		b.WriteString("...")
	}
	b.WriteByte('\n')
	b.WriteString(strings.Repeat(" ", len(prefix)+scridx[loc]-scridx[ibeg]))
	b.WriteString("^\n")
	return b.String()
}

// utf8Len is PostgreSQL's pg_utf_mblen: a character's length from its first
// byte.
func utf8Len(c byte) int {
	switch {
	case c&0x80 == 0:
		return 1
	case c&0xe0 == 0xc0:
		return 2
	case c&0xf0 == 0xe0:
		return 3
	case c&0xf8 == 0xf0:
		return 4
	}
	return 1
}

// utf8Width is pg_encoding_dsplen's screen width of one UTF-8 character,
// at least 1 (as libpq counts control and combining characters): 2 for
// East Asian wide characters.
func utf8Width(b []byte) int {
	r, _ := utf8.DecodeRune(b)
	for _, rg := range [][2]rune{{0x1100, 0x115f}, {0x2e80, 0x303e}, {0x3040, 0xa4cf}, {0xac00, 0xd7a3},
		{0xf900, 0xfaff}, {0xfe30, 0xfe6f}, {0xff00, 0xff5f}, {0xffe0, 0xffe6}, {0x20000, 0x2fffd}, {0x30000, 0x3fffd}} {
		if r >= rg[0] && r <= rg[1] {
			return 2
		}
	}
	return 1
}

// Printable is s with what would drive a terminal written as an escape
// (printable.Text): a server's message is whatever a RAISE chose.
func Printable(s string) string { return printable.Text(s) }

// OneLine is Printable with tab and newline quoted too (printable.OneLine):
// a name the database chose, printed inside a line of txload's own.
func OneLine(s string) string { return printable.OneLine(s) }
