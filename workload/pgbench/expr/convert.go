package expr

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Resolve converts a string value to the value pgbench gives a variable set
// from text (--define, \gset, \aset) when an expression uses it
// (makeVariableValue): "null" (any case) is NULL; a non-empty prefix of
// "true" or "yes", or "on", is true; a prefix of "false" or "no", "off" or
// "of" is false; "[spaces][sign]digits" is an integer (an error if out of
// range); anything strtod reads whole is a double; the rest is an error
// naming the variable. Values of other kinds are returned unchanged.
func Resolve(name string, v Value) (Value, error) {
	switch v.Kind {
	case Null, Bool, Int, Double:
		return v, nil
	case Str:
	default:
		return Value{}, fmt.Errorf("variable %q has no value", name)
	}
	s := v.S
	if s == "" {
		return Value{}, malformed(name, s)
	}
	switch {
	case asciiEqualFold(s, "null"):
		return Value{}, nil
	case isPrefixFold(s, "true") || isPrefixFold(s, "yes") || asciiEqualFold(s, "on"):
		return Value{Kind: Bool, B: true}, nil
	case isPrefixFold(s, "false") || isPrefixFold(s, "no") || asciiEqualFold(s, "off") || asciiEqualFold(s, "of"):
		return Value{Kind: Bool, B: false}, nil
	case isAnInt(s):
		i, err := strtoint64(s)
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: Int, I: i}, nil
	}
	f, ok := strtod(s)
	if !ok {
		return Value{}, malformed(name, s)
	}
	return Value{Kind: Double, F: f}, nil
}

func malformed(name, s string) error {
	return fmt.Errorf("malformed variable %q value: %q", name, s)
}

func asciiEqualFold(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if lowerByte(s[i]) != lowerByte(t[i]) {
			return false
		}
	}
	return true
}

func lowerByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// isPrefixFold reports whether s is a non-empty prefix of word, ignoring
// ASCII case (pg_strncasecmp(s, word, strlen(s)) == 0).
func isPrefixFold(s, word string) bool {
	return len(s) > 0 && len(s) <= len(word) && asciiEqualFold(s, word[:len(s)])
}

// cIsSpace is C's isspace in the C locale.
func cIsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// isAnInt is pgbench's is_an_int: optional spaces, optional sign, digits.
// Like pgbench's, it accepts a bare sign or blanks, which then fail to
// convert.
func isAnInt(s string) bool {
	i := 0
	for i < len(s) && cIsSpace(s[i]) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i < len(s) && !isDigit(s[i]) {
		return false
	}
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i == len(s)
}

// strtoint64 is pgbench's strtoint64 for text that passed isAnInt.
func strtoint64(s string) (int64, error) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	if t == "" || t == "+" || t == "-" {
		return 0, fmt.Errorf("invalid input syntax for type bigint: %q", s)
	}
	i, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q is out of range for type bigint", s)
	}
	return i, nil
}

// minNormal is DBL_MIN: glibc's strtod reports a range error for results
// below it.
const minNormal = 2.2250738585072014e-308

// strtod reads the whole of s as C's strtod would (leading spaces, sign,
// decimal or hexadecimal notation, inf, infinity, nan), failing on trailing
// text and on results out of the range of normal doubles, like pgbench's
// strtodouble.
func strtod(s string) (float64, bool) {
	i := 0
	for i < len(s) && cIsSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	rest := s[i:]
	var f float64
	switch {
	case len(rest) >= 3 && asciiEqualFold(rest[:3], "inf"):
		n := 3
		if len(rest) >= 8 && asciiEqualFold(rest[:8], "infinity") {
			n = 8
		}
		if n != len(rest) {
			return 0, false
		}
		f = math.Inf(1)
	case len(rest) >= 3 && asciiEqualFold(rest[:3], "nan"):
		n := 3
		if n < len(rest) && rest[n] == '(' {
			j := n + 1
			for j < len(rest) && (isDigit(rest[j]) || rest[j] >= 'a' && rest[j] <= 'z' || rest[j] >= 'A' && rest[j] <= 'Z' || rest[j] == '_') {
				j++
			}
			if j < len(rest) && rest[j] == ')' {
				n = j + 1
			}
		}
		if n != len(rest) {
			return 0, false
		}
		f = math.NaN()
	case len(rest) >= 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X') && hexStart(rest[2:]):
		var ok bool
		f, ok = parseHexDouble(rest[2:])
		if !ok {
			return 0, false
		}
	default:
		var ok bool
		f, ok = parseDecimalDouble(rest)
		if !ok {
			return 0, false
		}
	}
	if neg {
		f = -f
	}
	return f, true
}

func isHexDigit(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// hexStart reports whether s begins a hexadecimal mantissa (after "0x").
func hexStart(s string) bool {
	return len(s) > 0 && isHexDigit(s[0]) || len(s) > 1 && s[0] == '.' && isHexDigit(s[1])
}

// parseHexDouble reads h[.h][p[sign]d] whole.
func parseHexDouble(s string) (float64, bool) {
	i := 0
	nonzero := false
	for i < len(s) && isHexDigit(s[i]) {
		nonzero = nonzero || s[i] != '0'
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isHexDigit(s[i]) {
			nonzero = nonzero || s[i] != '0'
			i++
		}
	}
	mant := s[:i]
	exp := "p0"
	if i < len(s) && (s[i] == 'p' || s[i] == 'P') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			exp = s[i:j]
			i = j
		}
	}
	if i != len(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat("0x"+mant+exp, 64)
	return checkRange(f, err, nonzero)
}

// parseDecimalDouble reads d[.d][e[sign]d] or .d[e[sign]d] whole.
func parseDecimalDouble(s string) (float64, bool) {
	i := 0
	digits := 0
	nonzero := false
	for i < len(s) && isDigit(s[i]) {
		nonzero = nonzero || s[i] != '0'
		digits++
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			nonzero = nonzero || s[i] != '0'
			digits++
			i++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			i = j
		}
	}
	if i != len(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return checkRange(f, err, nonzero)
}

// checkRange applies glibc's ERANGE: overflow to infinity, and results
// that underflow to zero or to a denormal.
func checkRange(f float64, err error, nonzero bool) (float64, bool) {
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	if nonzero && math.Abs(f) < minNormal {
		return 0, false
	}
	return f, true
}

// appendDouble prints like pgbench's "%.*g" with DBL_DIG (15) through
// PostgreSQL's snprintf, which spells the special values NaN, Infinity,
// -Infinity.
func appendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	return strconv.AppendFloat(b, f, 'g', 15, 64)
}

func (v Value) text() string {
	switch v.Kind {
	case Null:
		return "NULL"
	case Bool:
		if v.B {
			return "true"
		}
		return "false"
	case Int:
		return strconv.FormatInt(v.I, 10)
	case Double:
		var buf [32]byte
		return string(appendDouble(buf[:0], v.F))
	case Str:
		return v.S
	}
	return ""
}

// parseValue keeps the text exact: a number only when it prints back the
// same, a string otherwise (which converts as pgbench does when used).
func parseValue(s string) Value {
	if isAnInt(s) {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil && strconv.FormatInt(i, 10) == s {
			return Value{Kind: Int, I: i}
		}
	} else if f, ok := strtod(s); ok {
		v := Value{Kind: Double, F: f}
		if v.text() == s {
			return v
		}
	}
	return Value{Kind: Str, S: s}
}
