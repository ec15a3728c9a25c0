package expr

import (
	"fmt"
	"strconv"
)

// tokKind is the kind of a lexical token, following pgbench's exprscan.l.
type tokKind uint8

const (
	tEOF tokKind = iota
	tInt
	tMaxIntPlusOne // 9223372036854775808, only valid after a unary minus
	tDouble
	tBool
	tNull
	tVar
	tIdent // FUNCTION in exprscan.l: any identifier that is not a keyword
	tAnd
	tOr
	tNot
	tIs
	tIsNull
	tNotNull
	tCase
	tWhen
	tThen
	tElse
	tEnd
	tPlus
	tMinus
	tStar
	tSlash
	tPercent
	tEq
	tNE
	tLT
	tLE
	tGT
	tGE
	tLShift
	tRShift
	tBitOr
	tBitAnd
	tHash
	tTilde
	tLParen
	tRParen
	tComma
)

type token struct {
	kind tokKind
	pos  int    // byte offset in the source
	text string // the token as written
	i    int64  // tInt
	f    float64
	b    bool // tBool
}

// SyntaxError is an error found while parsing an expression. Msg is
// pgbench's message ("syntax error", "unexpected function name", ...),
// Detail the offending text when pgbench names it (for "syntax error",
// txload's own account of it, which pgbench does not give), Pos the byte
// offset of the offending token in the source and End the offset just
// past it: how far pgbench's scanner had read, len(source) at the end of
// the expression.
type SyntaxError struct {
	Msg    string
	Detail string
	Pos    int
	End    int
}

func (e *SyntaxError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("%s (%s) at column %d", e.Msg, e.Detail, e.Pos+1)
	}
	return fmt.Sprintf("%s at column %d", e.Msg, e.Pos+1)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' || c == '\n'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isAlpha follows exprscan.l: ASCII letters, underscore and any byte with
// the high bit set.
func isAlpha(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }

// asciiLower lowers ASCII letters only, as pg_strcasecmp compares.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

var keywords = map[string]tokKind{
	"and":     tAnd,
	"or":      tOr,
	"not":     tNot,
	"is":      tIs,
	"isnull":  tIsNull,
	"notnull": tNotNull,
	"case":    tCase,
	"when":    tWhen,
	"then":    tThen,
	"else":    tElse,
	"end":     tEnd,
	"null":    tNull,
	"true":    tBool,
	"false":   tBool,
}

// lex splits src into tokens; the last one is always tEOF.
func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for {
		// whitespace, and line continuations (backslash, optional CR, LF)
		for i < len(src) {
			c := src[i]
			if isSpace(c) {
				i++
				continue
			}
			if c == '\\' {
				j := i + 1
				if j < len(src) && src[j] == '\r' {
					j++
				}
				if j < len(src) && src[j] == '\n' {
					i = j + 1
					continue
				}
			}
			break
		}
		if i >= len(src) {
			toks = append(toks, token{kind: tEOF, pos: len(src)})
			return toks, nil
		}
		start := i
		c := src[i]
		switch {
		case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
			tok, n, err := lexNumber(src, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, tok)
			i = n
			continue
		case isAlpha(c):
			j := i + 1
			for j < len(src) && isAlnum(src[j]) {
				j++
			}
			word := src[i:j]
			tok := token{kind: tIdent, pos: start, text: word}
			if len(word) <= 7 {
				lw := asciiLower(word)
				if k, ok := keywords[lw]; ok {
					tok.kind = k
					tok.b = lw == "true"
				}
			}
			toks = append(toks, tok)
			i = j
			continue
		case c == ':':
			j := i + 1
			for j < len(src) && isAlnum(src[j]) {
				j++
			}
			if j == i+1 {
				return nil, &SyntaxError{Msg: "unexpected character", Detail: ":", Pos: start, End: start + 1}
			}
			toks = append(toks, token{kind: tVar, pos: start, text: src[i+1 : j]})
			i = j
			continue
		}
		// operators and punctuation
		var k tokKind
		n := 1
		two := ""
		if i+1 < len(src) {
			two = src[i : i+2]
		}
		switch two {
		case "<>", "!=":
			k, n = tNE, 2
		case "<=":
			k, n = tLE, 2
		case ">=":
			k, n = tGE, 2
		case "<<":
			k, n = tLShift, 2
		case ">>":
			k, n = tRShift, 2
		default:
			switch c {
			case '+':
				k = tPlus
			case '-':
				k = tMinus
			case '*':
				k = tStar
			case '/':
				k = tSlash
			case '%':
				k = tPercent
			case '=':
				k = tEq
			case '<':
				k = tLT
			case '>':
				k = tGT
			case '|':
				k = tBitOr
			case '&':
				k = tBitAnd
			case '#':
				k = tHash
			case '~':
				k = tTilde
			case '(':
				k = tLParen
			case ')':
				k = tRParen
			case ',':
				k = tComma
			default:
				return nil, &SyntaxError{Msg: "unexpected character", Detail: string(c), Pos: start, End: start + 1}
			}
		}
		toks = append(toks, token{kind: k, pos: start, text: src[i : i+n]})
		i += n
	}
}

// lexNumber reads {digit}+ as an integer, or
// {digit}+(\.{digit}*)?([eE][-+]?{digit}+)? and \.{digit}+([eE][-+]?{digit}+)?
// as a double, taking the longest match as flex does.
func lexNumber(src string, i int) (token, int, error) {
	start := i
	isDouble := false
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	if i < len(src) && src[i] == '.' {
		isDouble = true
		i++
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		j := i + 1
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j < len(src) && isDigit(src[j]) {
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			isDouble = true
			i = j
		}
	}
	text := src[start:i]
	if !isDouble {
		if text == "9223372036854775808" {
			return token{kind: tMaxIntPlusOne, pos: start, text: text}, i, nil
		}
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return token{}, 0, &SyntaxError{Msg: "bigint constant overflow", Detail: text, Pos: start, End: i}
		}
		return token{kind: tInt, pos: start, text: text, i: v}, i, nil
	}
	f, ok := parseDecimalDouble(text)
	if !ok {
		return token{}, 0, &SyntaxError{Msg: "double constant overflow", Detail: text, Pos: start, End: i}
	}
	return token{kind: tDouble, pos: start, text: text, f: f}, i, nil
}
