package printable

import (
	"strings"
	"testing"
)

func TestQuoting(t *testing.T) {
	for _, c := range []struct {
		name, in, text, oneLine, block string
	}{
		{"plain", "check: ok", "check: ok", "check: ok", "check: ok"},
		{"escapes", "a\x1b[8m\x07\x7f\u009b\xff", `a\x1b[8m\x07\x7f\u009b\xff`, `a\x1b[8m\x07\x7f\u009b\xff`, `a\x1b[8m\x07\x7f\u009b\xff`},
		{"newline and tab", "a\tb\r\ncheck: ok", "a\tb\\x0d\ncheck: ok", `a\x09b\x0d\x0acheck: ok`, "a\tb\\x0d\n  check: ok"},
		{"bidirectional controls and separators", "\u202eko :kcehc\u202c\u2028check: ok\u2029\u2066x\u2069 café",
			`\u202eko :kcehc\u202c\u2028check: ok\u2029\u2066x\u2069 café`, `\u202eko :kcehc\u202c\u2028check: ok\u2029\u2066x\u2069 café`,
			`\u202eko :kcehc\u202c\u2028check: ok\u2029\u2066x\u2069 café`},
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

func TestWriter(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	// "é" cut between two writes, an escape in a third.
	for _, part := range []string{"caf\xc3", "\xa9 ok\n", "x\x1b[8m\n", "\xe2\x82"} {
		if _, err := w.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "café ok\nx\\x1b[8m\n\\xe2\\x82"; b.String() != want {
		t.Fatalf("wrote %q, want %q", b.String(), want)
	}
}
