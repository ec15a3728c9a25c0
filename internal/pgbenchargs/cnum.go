package pgbenchargs

import (
	"math"
	"strconv"
	"strings"
)

// The C library's number parsing, as pgbench relies on it: the options
// accept exactly what these accept.

// isCSpace is C's isspace in the C locale.
func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func skipSpace(s string) string {
	for len(s) > 0 && isCSpace(s[0]) {
		s = s[1:]
	}
	return s
}

// strtol parses the longest prefix of s that strtol(s, &end, 10) reads:
// white space, a sign, decimal digits. It saturates at the int64 range
// (ERANGE) and returns the rest of s; ok is false when no digit was read
// (end == s).
func strtol(s string) (v int64, rest string, overflow, ok bool) {
	t := skipSpace(s)
	neg := false
	if len(t) > 0 && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	n := 0
	for n < len(t) && t[n] >= '0' && t[n] <= '9' {
		n++
	}
	if n == 0 {
		return 0, s, false, false
	}
	digits := t[:n]
	if neg {
		digits = "-" + digits
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		overflow = true
		v = math.MaxInt64
		if neg {
			v = math.MinInt64
		}
	}
	return v, t[n:], overflow, true
}

// atoi is glibc's atoi: (int) strtol(s, NULL, 10), the long truncated to
// 32 bits.
func atoi(s string) int32 {
	v, _, _, _ := strtol(s)
	return int32(v)
}

// optionParseInt is PostgreSQL's option_parse_int (fe_utils/option_utils.c):
// strtol in base 10, trailing white space allowed; anything else after the
// digits is "invalid value"; out of int or of [min, max] is "must be in
// range". An empty value reads as 0.
func optionParseInt(arg, name string, min, max int) (int, string) {
	v, rest, overflow, _ := strtol(arg)
	if skipSpace(rest) != "" {
		return 0, "invalid value \"" + arg + "\" for option " + name
	}
	if overflow || v < math.MinInt32 || v > math.MaxInt32 || v < int64(min) || v > int64(max) {
		return 0, name + " must be in range " + strconv.Itoa(min) + ".." + strconv.Itoa(max)
	}
	return int(v), ""
}

// atof is C's atof: the value of the longest prefix strtod reads (white
// space, a sign, then a decimal or hexadecimal number with an optional
// exponent, "inf", "infinity" or "nan"), 0 when there is none. Overflow
// gives an infinity, as strtod's HUGE_VAL.
func atof(s string) float64 {
	t := skipSpace(s)
	sign := ""
	if len(t) > 0 && (t[0] == '+' || t[0] == '-') {
		sign = t[:1]
		t = t[1:]
	}
	lower := strings.ToLower(t)
	switch {
	case strings.HasPrefix(lower, "infinity"), strings.HasPrefix(lower, "inf"):
		if sign == "-" {
			return math.Inf(-1)
		}
		return math.Inf(1)
	case strings.HasPrefix(lower, "nan"):
		return math.NaN()
	}
	hex := strings.HasPrefix(lower, "0x")
	body := t
	if hex {
		body = t[2:]
	}
	isDigit := func(c byte) bool {
		if hex {
			return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
		}
		return c >= '0' && c <= '9'
	}
	n, digits := 0, 0
	for n < len(body) && isDigit(body[n]) {
		n++
		digits++
	}
	if n < len(body) && body[n] == '.' {
		n++
		for n < len(body) && isDigit(body[n]) {
			n++
			digits++
		}
	}
	if digits == 0 {
		return 0 // nothing, or the "0" of a bare "0x"
	}
	mant := body[:n]
	exp := ""
	expChar := byte('e')
	if hex {
		expChar = 'p'
	}
	if n < len(body) && (body[n]|0x20) == expChar {
		m := n + 1
		if m < len(body) && (body[m] == '+' || body[m] == '-') {
			m++
		}
		k := m
		for k < len(body) && body[k] >= '0' && body[k] <= '9' {
			k++
		}
		if k > m {
			exp = body[n:k]
		}
	}
	var lit string
	if hex {
		if exp == "" {
			exp = "p0"
		}
		lit = sign + "0x" + mant + exp
	} else {
		lit = sign + mant + exp
	}
	v, err := strconv.ParseFloat(lit, 64)
	if err != nil && !math.IsInf(v, 0) {
		return 0
	}
	return v
}

// scanUint64 is sscanf(s, "%" SCNu64 "%c", &v, &c) == 1: white space, an
// optional sign (a negative value wraps, as strtoull's does), decimal
// digits, and nothing after them.
func scanUint64(s string) (uint64, bool) {
	t := skipSpace(s)
	neg := false
	if len(t) > 0 && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	if t == "" || strings.TrimLeft(t, "0123456789") != "" {
		return 0, false
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return math.MaxUint64, true // strtoull's ULLONG_MAX on overflow
	}
	if neg {
		v = -v
	}
	return v, true
}
