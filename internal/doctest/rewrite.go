package doctest

import (
	"regexp"
	"strings"
)

// Rewritten is what a Run block holds after a rewrite from outputs, the
// lines each of its steps printed: its commands, each followed by its
// output as Shorten leaves it under the block's show and elide options.
func (b *Block) Rewritten(outputs [][]string) []string {
	show, elide := b.pattern("show"), b.pattern("elide")
	var out []string
	for i, s := range b.Steps {
		if !b.Options.Has("cmd") {
			out = append(out, "$ "+s.Cmd)
		}
		if i < len(outputs) {
			out = append(out, Shorten(outputs[i], show, elide)...)
		}
	}
	return out
}

// pattern is the block's option key as a regular expression (checked by
// Parse), or nil.
func (b *Block) pattern(key string) *regexp.Regexp {
	v, ok := b.Options[key]
	if !ok {
		return nil
	}
	return regexp.MustCompile(v)
}

// Vary is the block's vary option, or nil.
func (b *Block) Vary() *regexp.Regexp { return b.pattern("vary") }

// Rewrite returns the page with the content of the blocks in contents
// replaced, the rest as it was.
func (p *Page) Rewrite(contents map[*Block][]string) []byte {
	var out []string
	last := 0
	for _, b := range p.Blocks {
		c, ok := contents[b]
		if !ok {
			continue
		}
		out = append(out, p.Lines[last:b.start]...)
		out = append(out, c...)
		last = b.end
	}
	out = append(out, p.Lines[last:]...)
	return []byte(strings.Join(out, "\n") + "\n")
}
