// Package printable quotes text that txload did not write (a server's
// message, a name the database chose, a document's lines) for a terminal:
// what would drive it is written as an escape.
package printable

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Text is s with what would drive a terminal written as an escape
// (\x1b, \x7f, \u009b, \u202e): the C0 controls but tab and newline, DEL,
// the C1 controls, the bidirectional controls and the line and paragraph
// separators, and bytes that are not UTF-8, as check append quotes a row's
// value. A server's message is whatever a RAISE chose: printed raw,
// ESC[8m would hide every later line, the VIOLATIONs included, and
// ESC[1A redraw a line already printed.
func Text(s string) string { return Quote(s, unprintable) }

// OneLine is Text with tab and newline quoted too (\x09, \x0a): a
// name the database chose (a column's, a schema's), printed inside a line
// of txload's own, where a newline would start a line of the name's (a
// "check: ok" under a VIOLATION's first half).
func OneLine(s string) string {
	return Quote(s, func(r rune) bool { return r == '\t' || r == '\n' || unprintable(r) })
}

// Quote is s with each rune quote says so, and each byte that is not
// UTF-8, written as an escape (\x1b, \u009b, \U0001f600, \xff).
func Quote(s string, quote func(rune) bool) string {
	clean := utf8.ValidString(s)
	for _, r := range s {
		if quote(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && quote(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case quote(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case quote(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unprintable: a control character a terminal acts on (tab and newline
// excepted), and the characters that reorder or break what is shown
// without being seen: the bidirectional controls (U+202E, right-to-left
// override, shows "ko :kcehc" as "check: ok", and reorders the words of a
// line around it) and the line and paragraph separators U+2028, U+2029,
// which some terminals and browsers take for a line's end (a retest put
// them, raw, in an edited document's fields).
func unprintable(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\t' && r != '\n'
	case r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// Block is Text of a text of several lines that txload prints as one
// block under its first line (a violation with its example): a line after
// the first that does not begin with a space or a tab is indented by two,
// so that no line of it can pass for one of txload's own ("check: ok").
func Block(s string) string {
	s = Text(s)
	if !strings.Contains(s, "\n") {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines[1:] {
		if l != "" && l[0] != ' ' && l[0] != '\t' {
			lines[i+1] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}

// Writer writes Text of what is written to it: a document's text printed
// by merge (its workload, server, labels, notes, tables), whatever edited
// it. A rune cut between two writes is held until its end comes (Flush
// writes what is left).
type Writer struct {
	w    io.Writer
	tail []byte
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

func (p *Writer) Write(b []byte) (int, error) {
	buf := append(p.tail, b...)
	cut := len(buf)
	for j := len(buf) - 1; j >= 0 && j >= len(buf)-utf8.UTFMax+1; j-- {
		if utf8.RuneStart(buf[j]) {
			if !utf8.FullRune(buf[j:]) {
				cut = j
			}
			break
		}
	}
	p.tail = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(p.w, Text(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Flush writes what is held of a rune that did not end.
func (p *Writer) Flush() error {
	if len(p.tail) == 0 {
		return nil
	}
	_, err := io.WriteString(p.w, Text(string(p.tail)))
	p.tail = nil
	return err
}
