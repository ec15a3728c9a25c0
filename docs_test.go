package txload_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines keeps the README a few screens: what txload is, the quick
// start, install, the commands, the shared flags, exit codes, the layout and
// links; everything else is a page of docs/.
const readmeMaxLines = 400

// TestDocsLinks checks that every relative link in README.md and docs/*.md
// names a file that exists and, when it has a #fragment into a Markdown
// file, a heading of that file (GitHub's anchors), and that the README stays
// within readmeMaxLines.
func TestDocsLinks(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the details to a page of docs/", n, readmeMaxLines)
	}
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"README.md"}, pages...)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a := headingAnchors(string(b))
		anchors[path] = a
		return a
	}
	links := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(string(b)) {
			links++
			target, frag, _ := strings.Cut(l.target, "#")
			path := page
			if target != "" {
				path = filepath.Join(filepath.Dir(page), target)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d: link %q: %v", page, l.line, l.target, err)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			if !anchorsOf(path)[frag] {
				t.Errorf("%s:%d: link %q: %s has no heading with the anchor #%s", page, l.line, l.target, path, frag)
			}
		}
	}
	if links < 20 {
		t.Errorf("found only %d relative links in README.md and docs/: the link reader is broken", links)
	}
}

type mdLink struct {
	line   int
	target string
}

var linkRE = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)

// markdownLinks returns the relative link targets of a Markdown text, outside
// code fences and inline code.
func markdownLinks(text string) []mdLink {
	var out []mdLink
	fence := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(stripInlineCode(line), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, mdLink{line: i + 1, target: target})
		}
	}
	return out
}

// stripInlineCode removes `code spans` from a line, so that a link written
// as an example inside one is not taken for a link.
func stripInlineCode(line string) string {
	var b strings.Builder
	in := false
	for _, r := range line {
		if r == '`' {
			in = !in
			continue
		}
		if !in {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// headingAnchors returns the anchors GitHub gives a text's headings:
// lowercased, punctuation other than - and _ dropped, spaces made hyphens,
// and -1, -2, … after a repeated one.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(h, " ") {
			continue
		}
		a := slug(strings.TrimSpace(h))
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestHeadingAnchors(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"## Quick start", "quick-start"},
		{"### `txload run tpcb-like | simple-update | select-only | script`", "txload-run-tpcb-like--simple-update--select-only--script"},
		{"## Metrics address (`--metrics-addr`, checked before the database is touched)", "metrics-address---metrics-addr-checked-before-the-database-is-touched"},
		{"### Run (run, sweep, lag)", "run-run-sweep-lag"},
		{"# What the numbers mean", "what-the-numbers-mean"},
	} {
		if a := headingAnchors(c.heading); !a[c.want] {
			t.Errorf("%q: anchors %v, want %q", c.heading, a, c.want)
		}
	}
	if a := headingAnchors("## Flags\n## Flags\n```\n## Not a heading\n```\n"); !a["flags"] || !a["flags-1"] || a["not-a-heading"] {
		t.Errorf("repeated heading and fenced text: %v", a)
	}
}
