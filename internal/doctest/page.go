package doctest

import (
	"fmt"
	"regexp"
	"strings"
)

// Page is a Markdown page read for its samples.
type Page struct {
	Path     string
	Lines    []string // the page, a line each, without their newlines
	Settings Options  // from the page's <!-- samples: ... --> comment
	Blocks   []*Block // every fenced block, in page order
}

// Kind says what a block is to the harness.
type Kind int

const (
	Plain  Kind = iota // a block of no concern: code, SQL, JSON, a table
	Run                // a sample run and compared
	File               // a file the page's samples use
	NotRun             // a sample marked as not run, with why
)

// Block is a fenced block of a page.
type Block struct {
	Line    int // the opening fence's line, from 1
	Lang    string
	Kind    Kind
	Options Options // a Run block's options
	Name    string  // a File block's name
	Reason  string  // a NotRun block's reason
	Content []string
	Steps   []Step // a Run block's commands and what they print
	// start and end index the content in Page.Lines: [start, end).
	start, end int
}

// Step is a command of a sample and the lines the page says it prints.
type Step struct {
	Cmd  string
	Want []string
}

// Options are a directive's key=value pairs; a bare word is a key with the
// value "true".
type Options map[string]string

// Has reports whether the option is given.
func (o Options) Has(key string) bool { _, ok := o[key]; return ok }

var (
	directiveRE = regexp.MustCompile(`^<!--\s*sample:\s*(.*?)\s*-->\s*$`)
	settingsRE  = regexp.MustCompile(`^<!--\s*samples:\s*(.*?)\s*-->\s*$`)
)

// knownOptions are the options a directive may carry: a misspelt one is an
// error, not an option silently ignored.
var knownOptions = map[string]bool{"cmd": true, "show": true, "elide": true, "vary": true,
	"setup": true, "copy": true, "long": true, "needs": true, "timeout": true}

var knownSettings = map[string]bool{"server": true, "databases": true, "env": true, "needs": true, "long": true}

// Parse reads a page's blocks and directives.
func Parse(path string, src []byte) (*Page, error) {
	p := &Page{Path: path, Lines: strings.Split(strings.TrimSuffix(string(src), "\n"), "\n"), Settings: Options{}}
	for i := 0; i < len(p.Lines); i++ {
		line := p.Lines[i]
		if m := settingsRE.FindStringSubmatch(line); m != nil {
			o, err := parseOptions(m[1], knownSettings)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
			}
			for k, v := range o {
				p.Settings[k] = v
			}
			continue
		}
		if !strings.HasPrefix(line, "```") {
			continue
		}
		b := &Block{Line: i + 1, Lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), start: i + 1}
		j := i + 1
		for j < len(p.Lines) && strings.TrimRight(p.Lines[j], " ") != "```" {
			j++
		}
		if j == len(p.Lines) {
			return nil, fmt.Errorf("%s:%d: a fenced block that is never closed", path, i+1)
		}
		b.end = j
		b.Content = append([]string(nil), p.Lines[b.start:b.end]...)
		if err := b.directive(p.Lines, i); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		if b.Kind == Run {
			steps, err := b.steps()
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
			}
			b.Steps = steps
		}
		p.Blocks = append(p.Blocks, b)
		i = j
	}
	return p, nil
}

// directive reads the comment right above the fence at line i, if any.
func (b *Block) directive(lines []string, i int) error {
	k := i - 1
	for k >= 0 && strings.TrimSpace(lines[k]) == "" {
		k--
	}
	if k < 0 {
		return nil
	}
	m := directiveRE.FindStringSubmatch(lines[k])
	if m == nil {
		return nil
	}
	d := m[1]
	switch {
	case d == "run" || strings.HasPrefix(d, "run "):
		o, err := parseOptions(strings.TrimPrefix(d, "run"), knownOptions)
		if err != nil {
			return err
		}
		b.Kind, b.Options = Run, o
		for _, key := range []string{"show", "elide", "vary"} {
			if v, ok := o[key]; ok {
				if _, err := regexp.Compile(v); err != nil {
					return fmt.Errorf("sample option %s: %w", key, err)
				}
			}
		}
	case strings.HasPrefix(d, "file "):
		b.Kind, b.Name = File, strings.TrimSpace(strings.TrimPrefix(d, "file "))
		if b.Name == "" || strings.ContainsAny(b.Name, "/ ") {
			return fmt.Errorf("sample file %q: a file name, without a directory", b.Name)
		}
	case strings.HasPrefix(d, "not run:"):
		b.Kind, b.Reason = NotRun, strings.TrimSpace(strings.TrimPrefix(d, "not run:"))
		if b.Reason == "" {
			return fmt.Errorf("a sample not run says why")
		}
		if (b.showsOutput() || b.LooksLikeOutput()) && !madeRE.MatchString(b.Reason) {
			return fmt.Errorf("a sample not run that shows output says why and when it was made: %q lacks \"made YYYY-MM-DD with txload VERSION\"", b.Reason)
		}
	default:
		return fmt.Errorf("unknown sample directive %q (run, file NAME, not run: WHY; made DATE with txload VERSION)", d)
	}
	return nil
}

// showsOutput reports whether a block shows commands with their output
// ("$ " lines and others), not only commands.
func (b *Block) showsOutput() bool {
	cmds, other := 0, 0
	for _, l := range b.Content {
		switch {
		case strings.HasPrefix(l, "$ "):
			cmds++
		case strings.TrimSpace(l) != "":
			other++
		}
	}
	return cmds > 0 && other > 0
}

var madeRE = regexp.MustCompile(`made \d{4}-\d{2}-\d{2} with txload \S+`)

// steps splits a Run block into its commands and their output.
func (b *Block) steps() ([]Step, error) {
	if cmd, ok := b.Options["cmd"]; ok {
		return []Step{{Cmd: cmd, Want: b.Content}}, nil
	}
	var steps []Step
	for i := 0; i < len(b.Content); i++ {
		line := b.Content[i]
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			for strings.HasSuffix(cmd, `\`) && i+1 < len(b.Content) {
				i++
				cmd += "\n" + b.Content[i]
			}
			steps = append(steps, Step{Cmd: cmd})
			continue
		}
		if len(steps) == 0 {
			return nil, fmt.Errorf("a sample's first line is a command (\"$ ...\") unless it says cmd=\"...\": %q", line)
		}
		steps[len(steps)-1].Want = append(steps[len(steps)-1].Want, line)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("a sample with no command")
	}
	return steps, nil
}

// Sample reports whether a block shows commands, so that it must be run or
// marked: a block tagged sh, console, shell or bash, or whose first line is
// a command.
func (b *Block) Sample() bool {
	switch b.Lang {
	case "sh", "console", "shell", "bash":
		return true
	}
	for _, l := range b.Content {
		if strings.TrimSpace(l) != "" {
			return strings.HasPrefix(l, "$ ")
		}
	}
	return false
}

// parseOptions reads `key=value key="quoted value" word` pairs.
func parseOptions(s string, known map[string]bool) (Options, error) {
	o := Options{}
	s = strings.TrimSpace(s)
	for s != "" {
		end := strings.IndexAny(s, " =")
		if end < 0 {
			end = len(s)
		}
		key := s[:end]
		s = s[end:]
		val := "true"
		if strings.HasPrefix(s, "=") {
			s = s[1:]
			if strings.HasPrefix(s, `"`) {
				close := strings.Index(s[1:], `"`)
				if close < 0 {
					return nil, fmt.Errorf("option %s: a quote that is never closed", key)
				}
				val, s = s[1:close+1], s[close+2:]
			} else {
				sp := strings.IndexByte(s, ' ')
				if sp < 0 {
					sp = len(s)
				}
				val, s = s[:sp], s[sp:]
			}
		}
		if !known[key] {
			return nil, fmt.Errorf("unknown sample option %q", key)
		}
		o[key] = val
		s = strings.TrimSpace(s)
	}
	return o, nil
}

// outputRE finds a line of txload's output (or pgbench's, which txload
// pgbench prints): a progress or report line, a check's verdict, an error
// line, a history's figures.
var outputRE = regexp.MustCompile(`ops/s|\bcheck: |\bmeasured\b|VIOLATION|(^|: )txload: |^\s*wrote |^verdict:|^history: |^pgbench: |\bpgbench \((\d|PostgreSQL\))|^tps = |^server: |started PostgreSQL|^(replication lag|sweep) [^:]*: |^(failover|comparison|convergence|markers|init|drain|ambiguous|committed|pgio|G[0-9a-z-]+):|^\s*(response|service|lag) +\d|^txload_[a-z_]+\{`)

// LooksLikeOutput reports whether a block holds what reads as txload's
// output: a block of text (no language, or text/console/output) with a
// line outputRE finds. Such a block shows a run, so it must be one
// (<!-- sample: run -->) or say why not and when it was made.
func (b *Block) LooksLikeOutput() bool {
	switch b.Lang {
	case "", "text", "console", "output":
	default:
		return false
	}
	for _, l := range b.Content {
		if outputRE.MatchString(l) {
			return true
		}
	}
	return false
}
