package script

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: Parse never panics, every error is an *Error with a line, and
// every command has sane fields.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"tpcb-original.sql", "features.sql"} {
		src, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
	for _, s := range []string{
		"", "\\", ";", "SELECT 1 \\gset", "\\if 1\n\\else\n\\endif", "$a$ ; $a", "E'\\", "'a'\n'b",
		"/* /* */", "\\set x 1 +\\\n 2", "\\sleep 1ms", ":{?x}", "create function f() begin atomic; end;",
		"\\startpipeline\nSELECT 1;\n\\endpipeline", "SELECT :a::int, :é", "\v-- a\rSELECT 1;",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse("f.sql", src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not *Error", err, err)
			}
			if e.Line < 1 || e.File != "f.sql" || e.Msg == "" {
				t.Fatalf("bad error %#v", e)
			}
			return
		}
		if len(s.Commands) == 0 {
			t.Fatal("no commands and no error")
		}
		for i, c := range s.Commands {
			if c.Line < 1 {
				t.Fatalf("command %d: line %d", i, c.Line)
			}
			switch c.Kind {
			case If, Elif, Else:
				if c.Next <= i || c.Next >= len(s.Commands) || c.End < c.Next {
					t.Fatalf("command %d: Next %d End %d", i, c.Next, c.End)
				}
			case Endif:
				if c.Next != i+1 || c.End != i {
					t.Fatalf("command %d: Next %d End %d", i, c.Next, c.End)
				}
			case SQL:
				if c.Text == "" || len(c.ParamPos) != len(c.Params) {
					t.Fatalf("command %d: %q %v %v", i, c.Text, c.Params, c.ParamPos)
				}
			}
		}
	})
}
