package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/txload/txload/metrics"
)

// Micros formats a time in µs compactly: 850µs, 3.24ms, 1.20s
// (metrics.Micros, under the name the report's callers know).
func Micros(us int64) string { return metrics.Micros(us) }

// MicrosF formats a mean.
func MicrosF(us float64) string { return Micros(int64(us + 0.5)) }

// Count is n with noun, in the plural unless n is 1 (metrics.Count, under
// the name the report's callers know): "1 operation", "2 operations".
func Count[N ~int | ~int64](n N, noun string) string { return metrics.Count(n, noun) }

// Seconds formats an elapsed time like 5.00s.
func Seconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// table lays out rows in aligned columns: the first left-aligned, the rest
// right-aligned.
type table struct{ rows [][]string }

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) String() string {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			switch {
			case i == 0:
				b.WriteString(c + pad)
			default:
				b.WriteString("  " + pad + c)
			}
		}
		b.WriteString("\n")
	}
	return trimLines(b.String())
}

// trimLines drops the spaces that padding leaves at the ends of lines.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}
