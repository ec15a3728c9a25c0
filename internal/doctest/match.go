package doctest

import (
	"fmt"
	"regexp"
	"strings"
)

// Ellipsis is the line that stands for any number of lines.
const Ellipsis = "..."

var (
	hexRE      = regexp.MustCompile(`\b[0-9a-f]*(?:[0-9][0-9a-f]*[a-f]|[a-f][0-9a-f]*[0-9])[0-9a-f]*\b`)
	durationRE = regexp.MustCompile(`\d+(?:\.\d+)?(?:ns|µs|us|ms|s|m|h)(?:\d+(?:\.\d+)?(?:ns|µs|us|ms|s|m|h))*\b`)
	numberRE   = regexp.MustCompile(`\d+(?:[.,]\d+)*`)
	signRE     = regexp.MustCompile(`(^|[\s(=:])[+-](<n>|<d>)`)
	pluralRE   = regexp.MustCompile(`(<n>|<d>) ([A-Za-z]+?)(?:ies|es|s|y)?\b`)
	// versionRE finds the versions a page must show exactly: the pgbench
	// whose command line txload follows ("pgbench (15 (txload dev)", "pgbench
	// (PostgreSQL) 15.0"), which the installed pgbench decides.
	versionRE = regexp.MustCompile(`pgbench \((?:PostgreSQL\) )?\d+(?:\.\d+)?`)
)

// Mask turns a line of output into what is compared: numbers, durations
// and long hexadecimal tokens become placeholders (with their signs), a
// word after a number loses its plural, and runs of spaces become one, so
// that two runs of one command compare equal when their layout and words
// are the same.
func Mask(line string) string {
	line = versionRE.ReplaceAllStringFunc(line, func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return 'A' + (r - '0') // out of numberRE's reach, still compared
			}
			return r
		}, s)
	})
	line = hexRE.ReplaceAllStringFunc(line, func(s string) string {
		if len(s) < 7 {
			return s
		}
		return "<h>"
	})
	line = durationRE.ReplaceAllString(line, "<d>")
	line = numberRE.ReplaceAllString(line, "<n>")
	line = signRE.ReplaceAllString(line, "$1$2")
	line = pluralRE.ReplaceAllString(line, "$1 $2")
	return strings.Join(strings.Fields(line), " ")
}

// Compare matches what a command printed against what the page says, both
// masked, with lines matching vary (if not nil) left out of both; an
// Ellipsis line of want matches any number of lines. It returns "" when they
// match, else a description of the first difference.
func Compare(want, got []string, vary *regexp.Regexp) string {
	w, wraw := prepare(want, vary, true)
	g, graw := prepare(got, vary, false)
	if match(w, g) {
		return ""
	}
	return describe(w, g, wraw, graw)
}

// prepare masks lines, leaving out those vary matches and the blank ones
// that then trail, and returns them with the lines as they were.
func prepare(lines []string, vary *regexp.Regexp, ellipsis bool) (masked, raw []string) {
	defer func() {
		for len(masked) > 0 && strings.TrimSpace(raw[len(raw)-1]) == "" {
			masked, raw = masked[:len(masked)-1], raw[:len(raw)-1]
		}
	}()
	for _, l := range lines {
		if vary != nil && vary.MatchString(l) {
			continue
		}
		if ellipsis && strings.TrimSpace(l) == Ellipsis {
			if len(masked) == 0 || masked[len(masked)-1] != Ellipsis {
				masked, raw = append(masked, Ellipsis), append(raw, Ellipsis)
			}
			continue
		}
		masked, raw = append(masked, Mask(l)), append(raw, l)
	}
	return masked, raw
}

// match is glob matching over lines: Ellipsis matches any run of lines.
func match(w, g []string) bool {
	// dp[j] reports whether w[:i] matches g[:j], row by row.
	dp := make([]bool, len(g)+1)
	dp[0] = true
	for i := range w {
		next := make([]bool, len(g)+1)
		if w[i] == Ellipsis {
			any := false
			for j := 0; j <= len(g); j++ {
				any = any || dp[j]
				next[j] = any
			}
		} else {
			for j := 1; j <= len(g); j++ {
				next[j] = dp[j-1] && w[i] == g[j-1]
			}
		}
		dp = next
	}
	return dp[len(g)]
}

// describe names the first line where want and got part, reading both from
// the top up to the first ellipsis and from the bottom after the last.
func describe(w, g, wraw, graw []string) string {
	i := 0
	for i < len(w) && i < len(g) && w[i] != Ellipsis && w[i] == g[i] {
		i++
	}
	if i < len(w) && w[i] != Ellipsis {
		if i < len(g) {
			return fmt.Sprintf("line %d: the page says\n\t%s\nthe command printed\n\t%s", i+1, wraw[i], graw[i])
		}
		return fmt.Sprintf("line %d: the page says\n\t%s\nthe command printed no more lines", i+1, wraw[i])
	}
	if i == len(w) {
		return fmt.Sprintf("line %d: the page ends; the command printed more:\n\t%s", i+1, graw[i])
	}
	wi, gi := len(w)-1, len(g)-1
	for wi >= 0 && gi >= 0 && w[wi] != Ellipsis && w[wi] == g[gi] {
		wi--
		gi--
	}
	if wi >= 0 && w[wi] != Ellipsis {
		if gi >= 0 {
			return fmt.Sprintf("%d lines from the end: the page says\n\t%s\nthe command printed\n\t%s", len(w)-wi, wraw[wi], graw[gi])
		}
		return fmt.Sprintf("%d lines from the end: the page says\n\t%s\nthe command printed fewer lines", len(w)-wi, wraw[wi])
	}
	return "a line between the page's \"...\" lines is not in the command's output"
}

// Shorten is what a rewrite keeps of a command's output: with show, only
// the lines matching it (a gap becomes one Ellipsis); with elide, a run of
// more than three lines matching it keeps its first two and its last.
func Shorten(lines []string, show, elide *regexp.Regexp) []string {
	var out []string
	if show != nil {
		gap := false
		for _, l := range lines {
			if show.MatchString(l) {
				out = append(out, l)
				gap = false
			} else if !gap {
				out = append(out, Ellipsis)
				gap = true
			}
		}
		lines, out = out, nil
	}
	if elide == nil {
		return lines
	}
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && elide.MatchString(lines[j]) {
			j++
		}
		if j-i > 3 {
			out = append(out, lines[i], lines[i+1], Ellipsis, lines[j-1])
			i = j
			continue
		}
		if j == i {
			j++
		}
		out = append(out, lines[i:j]...)
		i = j
	}
	return out
}

// ExitStatus compares, for a command that ends by printing its exit status
// (`…; echo $?`), that status exactly: Compare masks numbers, and an exit
// status of 1 where the page says 0 is a change of behaviour, not of
// figures. It returns "" when they agree or the command prints no status.
func ExitStatus(cmd string, want, got []string) string {
	c := strings.TrimSpace(cmd)
	if !strings.HasSuffix(c, "echo $?") {
		return ""
	}
	last := func(lines []string) string {
		for i := len(lines) - 1; i >= 0; i-- {
			if l := strings.TrimSpace(lines[i]); l != "" {
				return l
			}
		}
		return ""
	}
	if w, g := last(want), last(got); w != g {
		return fmt.Sprintf("the exit status: the page says %s, the command exited %s", w, g)
	}
	return ""
}
