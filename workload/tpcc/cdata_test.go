package tpcc

import (
	"math"
	"strings"
	"testing"
)

// cdataHeld holds a BC customer's C_DATA to what Payment makes of it from
// its payments, and refuses what Payment never writes.
func TestCDataHeld(t *testing.T) {
	a := strings.Repeat("aB3", 100) // the load's a-string: 300 characters
	long := strings.Repeat("x", 480)
	p1, p2 := payLine{2, 1, 1234}, payLine{3, 2, 500000}
	l1, l2 := "7 2 1 2 1 12.34 | ", "7 2 1 3 2 5000.00 | "
	// Payment's: the line in front, 500 characters kept.
	pay := func(line, data string) string { return (line + data)[:min(len(line+data), maxCData)] }
	full := pay(l2, pay(l1, long)) // long cut: every line there
	cut := pay(l1, strings.Repeat(l2, 30))
	for _, tc := range []struct {
		name string
		data string
		pays []payLine
		want bool
	}{
		{"the load's", a, nil, true},
		{"one payment", l1 + a, []payLine{p1}, true},
		{"two, the load's cut", full, []payLine{p1, p2}, true},
		{"the same payment twice", l1 + l1 + a, []payLine{p1, p1}, true},
		{"lines fill it, cut in a line", cut, append([]payLine{p1}, slicesRepeat(p2, 30)...), true},
		{"lines fill it, cut in the last", pay(strings.Repeat(l1, 27), l1), slicesRepeat(p1, 28), true},
		{"lines fill it exactly", strings.Repeat(l1, 10) + strings.Repeat(l2, 16), append(slicesRepeat(p1, 10), slicesRepeat(p2, 16)...), true},
		{"lines fill it, cut in the next's ids", strings.Repeat(l2, 24) + l1 + "7 ", append(slicesRepeat(p2, 24), p1), true},
		{"a payment without its line", l1 + a, []payLine{p1, p2}, false},
		{"a line without its payment", l1 + l2 + a, []payLine{p1}, false},
		{"a line's amount changed", "7 2 1 2 1 12.35 | " + a, []payLine{p1}, false},
		{"a line of another customer", "8 2 1 2 1 12.34 | " + a, []payLine{p1}, false},
		{"a line twice, one payment", l1 + l1 + a, []payLine{p1}, false},
		{"an amount of one decimal", "7 2 1 2 1 12.3 | " + a, []payLine{{2, 1, 1230}}, false},
		{"a leading zero", "7 2 1 02 1 12.34 | " + a, []payLine{p1}, false},
		{"a sign", "7 2 1 +2 1 12.34 | " + a, []payLine{p1}, false},
		{"longer than 500", l1 + strings.Repeat("a", 500), []payLine{p1}, false},
		{"the load's shortened", l1 + a[:200], []payLine{p1}, false},
		{"a space in the load's", l1 + a[:150] + " " + a[:150], []payLine{p1}, false},
		{"cut in a line, no payment left for it", cut, []payLine{p1}, false},
		{"cut short of 500", cut[:499], append([]payLine{p1}, slicesRepeat(p2, 30)...), false},
		{"lines only, short of 500", strings.Repeat(l1, 10), slicesRepeat(p1, 10), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cdataHeld(1, 2, 7, tc.data, tc.pays, nil); got != tc.want {
				t.Fatalf("cdataHeld(%q, %v) = %t, want %t", tc.data, tc.pays, got, tc.want)
			}
		})
	}
}

// cdataHeld holds the lines to their payments' order, newest first, by
// their dates, within orderMargin: payments of one line alike may be
// dated anywhere in their span, a NULL date anywhere.
func TestCDataOrder(t *testing.T) {
	a := strings.Repeat("aB3", 100)
	const day = 24 * 3600 * 1000000
	p1, p2, p3 := payLine{2, 1, 1234}, payLine{3, 2, 500000}, payLine{4, 1, 100}
	l1, l2, l3 := "7 2 1 2 1 12.34 | ", "7 2 1 3 2 5000.00 | ", "7 2 1 4 1 1.00 | "
	at := func(ds ...int64) map[payLine]dateSpan {
		m := map[payLine]dateSpan{}
		for i, p := range []payLine{p1, p2, p3} {
			if i < len(ds) {
				m[p] = spanWith(m, p, ds[i])
			}
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		data  string
		pays  []payLine
		dates map[payLine]dateSpan
		want  bool
	}{
		{"newest first", l2 + l1 + a, []payLine{p1, p2}, at(0, 3*day), true},
		{"dated alike", l2 + l1 + a, []payLine{p1, p2}, at(5, 5), true},
		{"out of order within the margin", l2 + l1 + a, []payLine{p1, p2}, at(2*day, 0), true},
		{"out of order beyond the margin", l2 + l1 + a, []payLine{p1, p2}, at(2*day+1, 0), false},
		{"behind a line two in front", l3 + l2 + l1 + a, []payLine{p1, p2, p3}, at(5*day/2, day, 0), false},
		{"a NULL date", l2 + l1 + a, []payLine{p1, p2}, at(3*day, math.MinInt64), true},
		{"one line's payments dated apart", l1 + l2 + l1 + a, []payLine{p1, p1, p2},
			map[payLine]dateSpan{p1: {0, 4 * day}, p2: {day, day}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cdataHeld(1, 2, 7, tc.data, tc.pays, tc.dates); got != tc.want {
				t.Fatalf("cdataHeld(%q, %v, %v) = %t, want %t", tc.data, tc.pays, tc.dates, got, tc.want)
			}
		})
	}
}

func slicesRepeat(p payLine, n int) []payLine {
	out := make([]payLine, n)
	for i := range out {
		out[i] = p
	}
	return out
}
