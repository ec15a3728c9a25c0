package metrics

import (
	"strconv"
	"strings"
)

// Count is n with noun, in the plural unless n is 1: "1 operation",
// "2 operations", "1 retry", "0 retries".
func Count[N ~int | ~int64](n N, noun string) string {
	s := strconv.FormatInt(int64(n), 10) + " "
	if n == 1 {
		return s + noun
	}
	return s + Plural(noun)
}

// Plural is noun's plural (the English rules the report's nouns need):
// "time" → "times", "retry" → "retries", "class" → "classes".
func Plural(noun string) string {
	n := len(noun)
	switch {
	case n > 1 && noun[n-1] == 'y' && !strings.ContainsRune("aeiou", rune(noun[n-2])):
		return noun[:n-1] + "ies"
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	}
	return noun + "s"
}

// Were is the past of "to be" that agrees with a count of n: "1 was",
// "2 were".
func Were[N ~int | ~int64](n N) string {
	if n == 1 {
		return "was"
	}
	return "were"
}
