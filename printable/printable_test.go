package printable

import "testing"

func TestQuoting(t *testing.T) {
	for _, c := range []struct {
		name, in, text, oneLine, block string
	}{
		{"plain", "check: ok", "check: ok", "check: ok", "check: ok"},
		{"escapes", "a\x1b[8m\x07\x7f\u009b\xff", `a\x1b[8m\x07\x7f\u009b\xff`, `a\x1b[8m\x07\x7f\u009b\xff`, `a\x1b[8m\x07\x7f\u009b\xff`},
		{"newline and tab", "a\tb\r\ncheck: ok", "a\tb\\x0d\ncheck: ok", `a\x09b\x0d\x0acheck: ok`, "a\tb\\x0d\n  check: ok"},
		{"an indented block", "G2-item: 2\n  for example:\n    T1", "G2-item: 2\n  for example:\n    T1", `G2-item: 2\x0a  for example:\x0a    T1`, "G2-item: 2\n  for example:\n    T1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Text(c.in); got != c.text {
				t.Errorf("Text = %q, want %q", got, c.text)
			}
			if got := OneLine(c.in); got != c.oneLine {
				t.Errorf("OneLine = %q, want %q", got, c.oneLine)
			}
			if got := Block(c.in); got != c.block {
				t.Errorf("Block = %q, want %q", got, c.block)
			}
		})
	}
}
