package script

import "strings"

// This file splits a script into SQL commands the way pgbench does, with
// the SQL lexer it shares with psql (src/fe_utils/psqlscan.l): a command
// ends at a ';' outside quotes, comments, parentheses and CREATE FUNCTION
// ... BEGIN ATOMIC ... END bodies, at a backslash that starts a
// meta-command, or at the end of the script. The rules below reproduce
// psqlscan.l's where they change where a command ends or what its text is;
// pgbench's script loader parses with standard_conforming_strings on.

// scanResult says why sqlLexer.scan stopped.
type scanResult int

const (
	scanSemicolon scanResult = iota // a ';' ended the command (it is in the buffer)
	scanBackslash                   // a backslash (consumed) starts a meta-command
	scanEOF                         // end of the script
)

// sqlBuf is the text of one SQL command as psqlscan.l hands it to pgbench,
// with the script offset of each of its bytes.
type sqlBuf struct {
	text     []byte
	offs     []int
	compound bool // a "\;" was seen
}

func (b *sqlBuf) reset() {
	b.text, b.offs, b.compound = b.text[:0], b.offs[:0], false
}

// emit appends src[from:to] (the echo of a token).
func (b *sqlBuf) emit(src string, from, to int) {
	b.text = append(b.text, src[from:to]...)
	for i := from; i < to; i++ {
		b.offs = append(b.offs, i)
	}
}

// emitAs appends s, generated text standing for the token at script offset off.
func (b *sqlBuf) emitAs(s string, off int) {
	b.text = append(b.text, s...)
	for range len(s) {
		b.offs = append(b.offs, off)
	}
}

// sqlLexer is psqlscan.l's state. It persists across commands (as
// pgbench's PsqlScanState does): parenthesis depth and the BEGIN ... END
// tracking survive a backslash command.
type sqlLexer struct {
	src        string
	pos        int
	parenDepth int
	beginDepth int
	identCount int
	idents     [4]byte
	words      *[]string // each identifier, when not nil (Words)
}

// psqlscan.l's character classes.

// isSQLSpace is {space}: [ \t\n\r\f].
func isSQLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// isIdentStart is {ident_start} (also {dolq_start}): [A-Za-z\200-\377_].
func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

// isVarChar is {variable_char} (also {dolq_cont}): [A-Za-z\200-\377_0-9].
func isVarChar(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9'
}

// isIdentCont is {ident_cont}: [A-Za-z\200-\377_0-9\$].
func isIdentCont(c byte) bool {
	return isVarChar(c) || c == '$'
}

// scan appends the text of the current SQL command to b until a ';' ends
// it, a backslash starts a meta-command, or the script ends.
func (l *sqlLexer) scan(b *sqlBuf) scanResult {
	src := l.src
	n := len(src)
	for l.pos < n {
		start := l.pos
		c := src[start]
		var next byte
		if start+1 < n {
			next = src[start+1]
		}
		end := start + 1 // the token is src[start:end]
		switch {
		case isSQLSpace(c):
			// {whitespace}: dropped at the start of a command.
			for end < n && isSQLSpace(src[end]) {
				end++
			}
			l.emitWhitespace(b, start, end)
		case c == '-' && next == '-':
			// {comment}, to the end of the line: whitespace too.
			end = commentEnd(src, start)
			l.emitWhitespace(b, start, end)
		case c == '/' && next == '*':
			end = cCommentEnd(src, start)
			b.emit(src, start, end)
		case c == '\'':
			end = quotedEnd(src, start+1, false)
			b.emit(src, start, end)
		case c == '"':
			end = dquotedEnd(src, start+1)
			b.emit(src, start, end)
			if l.words != nil {
				*l.words = append(*l.words, src[start:end])
			}
		case c == '$':
			if delim := dollarDelim(src, start); delim != "" {
				body := start + len(delim)
				end = n // unterminated: the rest of the script
				if i := strings.Index(src[body:], delim); i >= 0 {
					end = body + i + len(delim)
				}
			}
			// else a parameter ($1) or {dolqfailed}: just the '$'.
			b.emit(src, start, end)
		case c == '\\':
			if next == ';' || next == ':' {
				// "\;" and "\:" put a plain ';' or ':' in the command.
				end = start + 2
				b.emit(src, start+1, end)
				if next == ';' {
					l.identCount = 0
					b.compound = true
				}
				break
			}
			l.pos = end
			return scanBackslash
		case c == ';':
			b.emit(src, start, end)
			if l.parenDepth == 0 && l.beginDepth == 0 {
				l.identCount = 0
				l.pos = end
				return scanSemicolon
			}
		case c == '(':
			l.parenDepth++
			b.emit(src, start, end)
		case c == ')':
			if l.parenDepth > 0 {
				l.parenDepth--
			}
			b.emit(src, start, end)
		case c == ':':
			switch {
			case next == ':':
				// {typecast}
				end = start + 2
				b.emit(src, start, end)
			case isVarChar(next):
				// :{variable_char}+, psql's variable reference: pgbench has
				// no psql variables, so it is echoed (pgbench finds its own
				// :name references in the whole text later).
				end = start + 2
				for end < n && isVarChar(src[end]) {
					end++
				}
				b.emit(src, start, end)
			case next == '{' && testVarEnd(src, start) > 0:
				// :{?name} tests whether psql variable name is set; with no
				// variables, psqlscan.l replaces it with FALSE.
				end = testVarEnd(src, start)
				b.emitAs("FALSE", start)
			default:
				b.emit(src, start, end)
			}
		case isIdentStart(c):
			for end < n && isIdentCont(src[end]) {
				end++
			}
			if end == start+1 && (c == 'e' || c == 'E') && end < n && src[end] == '\'' {
				// {xestart}: a string with backslash escapes.
				end = quotedEnd(src, end+1, true)
				b.emit(src, start, end)
				break
			}
			l.identifier(src[start:end])
			b.emit(src, start, end)
		default:
			b.emit(src, start, end)
		}
		l.pos = end
	}
	return scanEOF
}

// emitWhitespace echoes white space and "--" comments, except at the start
// of a command.
func (l *sqlLexer) emitWhitespace(b *sqlBuf, start, end int) {
	if len(b.text) > 0 {
		b.emit(l.src, start, end)
	}
}

// identifier tracks CREATE [OR REPLACE] FUNCTION|PROCEDURE ... BEGIN ...
// END as psqlscan.l does, so that the ';' of a BEGIN ATOMIC body does not
// end the command.
func (l *sqlLexer) identifier(word string) {
	if l.words != nil {
		*l.words = append(*l.words, word)
	}
	if l.identCount == 0 {
		l.idents = [4]byte{}
	}
	w := asciiLower(word)
	switch w {
	case "create", "function", "procedure", "or", "replace":
		if l.identCount < len(l.idents) {
			l.idents[l.identCount] = w[0]
		}
	}
	l.identCount++
	id := l.idents
	if id[0] == 'c' &&
		(id[1] == 'f' || id[1] == 'p' || id[1] == 'o' && id[2] == 'r' && (id[3] == 'f' || id[3] == 'p')) &&
		l.parenDepth == 0 {
		switch w {
		case "begin":
			l.beginDepth++
		case "case":
			// CASE also ends with END; only tracked inside a BEGIN.
			if l.beginDepth >= 1 {
				l.beginDepth++
			}
		case "end":
			if l.beginDepth > 0 {
				l.beginDepth--
			}
		}
	}
}

// Statements splits text, one SQL command (a \; compound's parts joined
// by ';'), into its statements where the lexer ends them: at a ';' outside
// quotes, comments, parentheses and BEGIN ATOMIC bodies. Each keeps its
// leading comments and its ';'.
func Statements(text string) []string {
	var parts []string
	l, b := sqlLexer{src: text}, sqlBuf{}
	for from := 0; from < len(text); {
		r := l.scan(&b)
		b.reset()
		if r == scanBackslash {
			continue // not a meta-command here: part of the statement
		}
		parts = append(parts, text[from:l.pos])
		from = l.pos
		if r == scanEOF {
			break
		}
	}
	return parts
}

// Words is the words of text, in order, as the lexer reads them:
// keywords and identifiers outside quotes, comments and dollar-quoted
// bodies, and quoted identifiers with their quotes ("a""b").
func Words(text string) []string {
	var words []string
	l, b := sqlLexer{src: text, words: &words}, sqlBuf{}
	for {
		r := l.scan(&b)
		b.reset()
		if r == scanEOF {
			return words
		}
	}
}

// Ident is the name a word of Words stands for, as the server reads it:
// a quoted identifier without its quotes (a doubled quote in it one
// quote), any other folded to lower case, ASCII letters only (the server
// leaves the others as they are in a multibyte encoding).
func Ident(word string) string {
	if len(word) >= 2 && word[0] == '"' && word[len(word)-1] == '"' {
		return strings.ReplaceAll(word[1:len(word)-1], `""`, `"`)
	}
	return asciiLower(word)
}

// AfterComments is s after its leading blanks and comments (-- to the
// line's end, /* */ nested as the server nests them): where a statement's
// first word is.
func AfterComments(s string) string {
	for {
		s = strings.TrimLeft(s, " \t\r\n\f\v")
		switch {
		case strings.HasPrefix(s, "--"):
			s = s[commentEnd(s, 0):]
		case strings.HasPrefix(s, "/*"):
			s = s[cCommentEnd(s, 0):]
		default:
			return s
		}
	}
}

// commentEnd returns the end of the "--" comment at i: the next \n or \r
// (not included), or the end of the script.
func commentEnd(src string, i int) int {
	if j := strings.IndexAny(src[i:], "\n\r"); j >= 0 {
		return i + j
	}
	return len(src)
}

// cCommentEnd returns the end of the /* comment */ at i, which may nest.
func cCommentEnd(src string, i int) int {
	depth := 0
	for j := i + 2; j < len(src); {
		switch {
		case src[j] == '/' && j+1 < len(src) && src[j+1] == '*':
			depth++
			j += 2
		case src[j] == '*' && j+1 < len(src) && src[j+1] == '/':
			if depth == 0 {
				return j + 2
			}
			depth--
			j += 2
		default:
			j++
		}
	}
	return len(src)
}

// quotedEnd returns the end of a '...' string whose text starts at i (after
// the opening quote): after the closing quote, or the end of the script.
// A doubled quote is a quote in the string; with escapes (E'...'), so is
// a backslash and a quote. A string continues after a closing quote
// followed by white space holding a newline and another quote (SQL's
// 'a'\n'b').
func quotedEnd(src string, i int, escapes bool) int {
	n := len(src)
	for i < n {
		switch c := src[i]; {
		case c == '\\' && escapes:
			i += 2
		case c == '\'' && i+1 < n && src[i+1] == '\'':
			i += 2
		case c == '\'':
			if j, ok := quoteContinue(src, i+1); ok {
				i = j
				continue
			}
			return i + 1
		default:
			i++
		}
	}
	return n
}

// quoteContinue matches psqlscan.l's {quotecontinue} at i, just after a
// closing quote: {whitespace_with_newline}{quote}. It returns the offset
// after the quote that continues the string.
func quoteContinue(src string, i int) (int, bool) {
	n := len(src)
	// {horiz_whitespace}*: [ \t\f] and comments.
	for i < n {
		if c := src[i]; c == ' ' || c == '\t' || c == '\f' {
			i++
		} else if c == '-' && i+1 < n && src[i+1] == '-' {
			i = commentEnd(src, i)
		} else {
			break
		}
	}
	// {newline}
	if i >= n || src[i] != '\n' && src[i] != '\r' {
		return 0, false
	}
	i++
	// {special_whitespace}*: {space}+ or a comment and its newline.
	for i < n {
		if isSQLSpace(src[i]) {
			i++
		} else if src[i] == '-' && i+1 < n && src[i+1] == '-' {
			j := commentEnd(src, i)
			if j >= n {
				break
			}
			i = j + 1
		} else {
			break
		}
	}
	if i < n && src[i] == '\'' {
		return i + 1, true
	}
	return 0, false
}

// dquotedEnd returns the end of a "..." identifier whose text starts at i.
func dquotedEnd(src string, i int) int {
	n := len(src)
	for i < n {
		if src[i] == '"' {
			if i+1 < n && src[i+1] == '"' {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	return n
}

// dollarDelim returns the dollar-quote delimiter ($$ or $tag$) at i, or "".
func dollarDelim(src string, i int) string {
	j := i + 1
	if j < len(src) && isIdentStart(src[j]) {
		j++
		for j < len(src) && isVarChar(src[j]) {
			j++
		}
	}
	if j < len(src) && src[j] == '$' {
		return src[i : j+1]
	}
	return ""
}

// testVarEnd returns the end of :{?name} at i, or 0.
func testVarEnd(src string, i int) int {
	j := i + 3
	if !strings.HasPrefix(src[i:], ":{?") || j >= len(src) || !isVarChar(src[j]) {
		return 0
	}
	for j < len(src) && isVarChar(src[j]) {
		j++
	}
	if j < len(src) && src[j] == '}' {
		return j + 1
	}
	return 0
}

// asciiLower lowers ASCII letters only, as pg_strcasecmp compares.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
