package script

import (
	"errors"
	"strings"
	"testing"
)

// TestErrors: each bad script and its exact error. Where the message is
// pgbench's own, pgbench 15 confirms it (it prints "x.sql:LINE: MSG" and,
// for conditionals, names the command number instead of the line).
func TestErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"unknown meta-command", "SELECT 1;\n\\foo bar\n", `x.sql:2: unknown meta-command "\foo"`},
		{"unknown after sql", "SELECT 1 \\gsetx\n", `x.sql:1: unknown meta-command "\gsetx"`},
		{"set without expression", "\\set x\n", `x.sql:1: missing expression in command "set"`},
		{"set without expression at end", "\\set x   ", `x.sql:1: missing expression in command "set"`},
		{"if without expression", "\\if\n\\endif\n", `x.sql:1: missing expression in command "if"`},
		{"set without variable", "\\set\n", `x.sql:1: missing argument in command "set"`},
		{"shell without command", "\\shell\n", `x.sql:1: missing command in command "shell"`},
		{"setshell without command", "\\setshell x\n", `x.sql:1: missing argument in command "setshell"`},
		{"sleep without argument", "\\sleep\n", `x.sql:1: missing argument in command "sleep"`},
		{"sleep bad unit", "\\sleep 1 xs\n", `x.sql:1: unrecognized time unit, must be us, ms or s (xs) in command "sleep"`},
		{"sleep bad glued unit", "\\sleep 1min\n", `x.sql:1: unrecognized time unit, must be us, ms or s (min) in command "sleep"`},
		{"sleep not a number", "\\sleep abc\n", `x.sql:1: invalid sleep time, must be an integer (abc) in command "sleep"`},
		{"sleep glued unit and unit", "\\sleep 1ms extra\n", `x.sql:1: invalid sleep time, must be an integer (1ms) in command "sleep"`},
		{"sleep too many", "\\sleep 1 ms extra\n", `x.sql:1: too many arguments in command "sleep"`},
		{"else argument", "\\if 1\n\\else foo\n\\endif\n", `x.sql:2: unexpected argument in command "else"`},
		{"endif argument", "\\if 1\n\\endif x\n", `x.sql:2: unexpected argument in command "endif"`},
		{"startpipeline argument", "\\startpipeline x\n", `x.sql:1: unexpected argument in command "startpipeline"`},
		{"unmatched endif", "SELECT 1;\n\\endif\n", `x.sql:2: \endif without matching \if`},
		{"else twice", "\\if 1\n\\else\n\\else\n\\endif\n", `x.sql:3: \else after \else`},
		{"elif after else", "\\if 1\n\\else\n\\elif 1\n\\endif\n", `x.sql:3: \elif after \else`},
		{"elif without if", "\\elif 1\n", `x.sql:1: \elif without matching \if`},
		{"else without if", "\\else\n", `x.sql:1: \else without matching \if`},
		{"unclosed if", "SELECT 1;\n\\if 1\nSELECT 2;\n", `x.sql:2: \if without matching \endif`},
		{"unclosed nested if", "\\if 1\n\\if 2\n\\endif\n\\if 3\n", `x.sql:4: \if without matching \endif`},
		// pgbench checks conditionals after parsing the whole script.
		{"syntax error before conditionals", "\\endif\n\\foo\n", `x.sql:2: unknown meta-command "\foo"`},
		{"gset first", "\\gset\n", `x.sql:1: \gset must follow an SQL command`},
		// pgbench 15 says line 2 here (where its scan resumed); this names
		// the \gset's line.
		{"gset after meta", "\\set x 1\n\n\n\\gset\n", `x.sql:4: \gset must follow an SQL command`},
		{"aset after meta", "\\sleep 1\n\\aset\n", `x.sql:2: \aset must follow an SQL command`},
		{"gset twice", "SELECT 1 \\gset\n\\gset\n", `x.sql:2: \gset must follow an SQL command`},
		{"gset after aset", "SELECT 1 \\aset\n\\gset\n", `x.sql:2: \gset must follow an SQL command`},
		{"gset too many", "SELECT 1 \\gset a b\n", `x.sql:1: too many arguments in command "gset"`},
		{"empty", "", `x.sql:1: empty command list for script "x.sql"`},
		{"only comments", "-- nothing\n\n   -- here\n", `x.sql:1: empty command list for script "x.sql"`},
		{"only backslash", "\\\n", `x.sql:1: empty command list for script "x.sql"`},
		// Bytes that are not printable text are escaped, never printed raw.
		{"escape sequence in a meta-command", "SELECT 1;\n\\\x1b[2Jfoo\n", `x.sql:2: unknown meta-command "\\x1b[2Jfoo"`},
		{"control character in an expression", "\\set x 1 \x01 2\n", `x.sql:1: unexpected character (\x01) at column 3 in command "set"`},
		{"line separator in a sleep", "\\sleep 1\u2028\n", `x.sql:1: unrecognized time unit, must be us, ms or s (\u2028) in command "sleep"`},
		{"tab in a sleep unit", "\\sleep 1 m\ts x\n", `x.sql:1: too many arguments in command "sleep"`},
		// A binary file is refused with the offset of its first NUL (other
		// bytes go to the server as they are, as pgbench sends them).
		{"binary", "\x7fELF\x02\x01\x01\x00\x00", `x.sql:1: not a text file: NUL byte at offset 7`},
		{"NUL after text", "SELECT 1;\n\nSELECT\x00 2;\n", `x.sql:3: not a text file: NUL byte at offset 17`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("x.sql", tt.src)
			if err == nil {
				t.Fatalf("no error; commands %q", summaries(s))
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not *Error", err, err)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
			if e.File != "x.sql" || e.Line < 1 {
				t.Errorf("File, Line = %q, %d", e.File, e.Line)
			}
		})
	}
}

// An expression's error is expr's, wrapped as pgbench does ("... in
// command "set"").
func TestExpressionErrors(t *testing.T) {
	for _, src := range []string{
		"SELECT 1;\n\\set x 1 +\n",
		"SELECT 1;\n\\set x 1 \\gset\n", // pgbench: unexpected character (\)
		"SELECT 1;\n\\if (1\n\\endif\n",
	} {
		_, err := Parse("x.sql", src)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: error %v is not *Error", src, err)
			continue
		}
		if e.Line != 2 || !strings.HasPrefix(err.Error(), "x.sql:2: ") || !strings.Contains(e.Msg, ` in command "`) {
			t.Errorf("%q: error %q", src, err)
		}
	}
}

// Pipelines misused, which pgbench finds only when it runs the script
// (txload run refuses them before it touches the database).
func TestCheckPipelines(t *testing.T) {
	for _, tt := range []struct{ name, src, want string }{
		{"pipeline unclosed", "SELECT 0;\n\\startpipeline\nSELECT 1;\n", `x.sql:2: end of script reached with pipeline open`},
		{"pipeline not started", "SELECT 1;\n\\endpipeline\n", `x.sql:2: \endpipeline: not in pipeline mode`},
		{"sync outside pipeline", "\\syncpipeline\n", `x.sql:1: \syncpipeline: not in pipeline mode`},
		{"pipeline nested", "\\startpipeline\n\\startpipeline\n\\endpipeline\n", `x.sql:2: \startpipeline: already in pipeline mode`},
		{"pipeline ended twice", "\\startpipeline\n\\endpipeline\n\\endpipeline\n", `x.sql:3: \endpipeline: not in pipeline mode`},
		{"pipeline closed in all branches", "\\startpipeline\n\\if 1\n\\endpipeline\n\\else\n\\endpipeline\n\\endif\n\\endpipeline\n", `x.sql:7: \endpipeline: not in pipeline mode`},
		{"gset in pipeline", "\\startpipeline\nSELECT 1\n\\gset\n\\endpipeline\n", `x.sql:3: \gset is not allowed in pipeline mode`},
		{"aset in pipeline", "\\startpipeline\nSELECT 1 \\aset\n\\endpipeline\n", `x.sql:2: \aset is not allowed in pipeline mode`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("x.sql", tt.src)
			if err != nil {
				t.Fatalf("pgbench parses it, and so must Parse: %v", err)
			}
			if err := CheckPipelines(s); err == nil || err.Error() != tt.want {
				t.Errorf("CheckPipelines: %v, want %s", err, tt.want)
			}
		})
	}
}

// Each error as pgbench 15 prints it (pgbench's syntax_error and
// CheckConditional, captured from the installed pgbench 15.18): the line
// of the command and a caret at the column pgbench points at.
func TestErrorsAsPgbench(t *testing.T) {
	for _, tt := range []struct{ name, src, want string }{
		{"if syntax error", "\\if 1 +\nSELECT 1;\n\\endif\n", "pgbench: error: s.sql:1: syntax error in command \"if\"\n\\if 1 +\n       ^ error found here\n"},
		{"set syntax error", "\\set x 1 +\n", "pgbench: error: s.sql:1: syntax error in command \"set\"\n\\set x 1 +\n          ^ error found here\n"},
		{"syntax error in the middle", "\\set x (1 + ) * 2\n", "pgbench: error: s.sql:1: syntax error in command \"set\"\n\\set x (1 + ) * 2\n            ^ error found here\n"},
		{"unknown function", "\\set x frobnicate(1)\n", "pgbench: error: s.sql:1: unexpected function name (frobnicate) in command \"set\"\n\\set x frobnicate(1)\n                ^ error found here\n"},
		{"function name alone", "\\set s foo\n", "pgbench: error: s.sql:1: unexpected function name (foo) in command \"set\"\n\\set s foo\n         ^ error found here\n"},
		{"arguments", "\\set x abs(1, 2)\n", "pgbench: error: s.sql:1: unexpected number of arguments (abs) in command \"set\"\n\\set x abs(1, 2)\n               ^ error found here\n"},
		{"set without expression", "\\set x\n", "pgbench: error: s.sql:1: syntax error in command \"set\"\n\\set x\n      ^ error found here\n"},
		{"set without variable", "\\set\n", "pgbench: error: s.sql:1: missing argument in command \"set\"\n"},
		{"invalid command", "SELECT 1;\n\\frob a b\n", "pgbench: error: s.sql:2: invalid command in command \"frob\"\n\\frob a b\n"},
		{"sleep without argument", "\\sleep\n", "pgbench: error: s.sql:1: missing argument in command \"sleep\"\n\\sleep\n"},
		{"sleep too many", "\\sleep 1 ms extra\n", "pgbench: error: s.sql:1: too many arguments in command \"sleep\"\n\\sleep 1 ms extra\n            ^ error found here\n"},
		{"sleep unit", "\\sleep 1 hours\n", "pgbench: error: s.sql:1: unrecognized time unit, must be us, ms or s (hours) in command \"sleep\"\n\\sleep 1 hours\n         ^ error found here\n"},
		{"sleep not a number", "\\sleep abc\n", "pgbench: error: s.sql:1: invalid sleep time, must be an integer (abc) in command \"sleep\"\n\\sleep abc\n       ^ error found here\n"},
		// pgbench 15 names line 2 here (it counts lines its own way, see parse.go).
		{"gset first", "\\gset\nSELECT 1;\n", "pgbench: error: s.sql:2: \\gset must follow an SQL command\n"},
		{"gset after meta", "\\set x 1\n\\gset\n", "pgbench: error: s.sql:2: \\gset must follow an SQL command (\\set x 1)\n"},
		{"gset too many", "SELECT 1 \\gset a b\n", "pgbench: error: s.sql:1: too many arguments in command \"gset\"\n\\gset a b\n"},
		{"else without if", "\\else\n", "pgbench: error: condition error in script \"s.sql\" command 1: \\else without matching \\if\n"},
		{"elif after else", "\\if 1\n\\else\n\\elif 1\n\\endif\n", "pgbench: error: condition error in script \"s.sql\" command 3: \\elif after \\else\n"},
		{"if without endif", "\\if 1\nSELECT 1;\n", "pgbench: error: condition error in script \"s.sql\" command 3: \\if without matching \\endif\n"},
		{"else argument", "\\if 1\n\\else x\n\\endif\n", "pgbench: error: s.sql:2: unexpected argument in command \"else\"\n\\else x\n"},
		{"setshell", "\\setshell x\n", "pgbench: error: s.sql:1: missing argument in command \"setshell\"\n\\setshell x\n"},
		{"shell", "\\shell\n", "pgbench: error: s.sql:1: missing command in command \"shell\"\n\\shell\n"},
		{"empty", "-- nothing\n", "pgbench: error: empty command list for script \"s.sql\"\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s.sql", tt.src)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v", err)
			}
			if got := e.Pgbench("pgbench"); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	e := &Error{File: "a/b.sql", Line: 7, Msg: "oops"}
	if got := e.Error(); got != "a/b.sql:7: oops" {
		t.Errorf("Error() = %q", got)
	}
}

func TestPrintable(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain \\foo \"q\" é ü 日本", "plain \\foo \"q\" é ü 日本"},
		{"a\x1b[31mb", `a\x1b[31mb`},
		{"\x00\x7f\xff", `\x00\x7f\xff`},
		{"tab\there\nnewline", `tab\x09here\x0anewline`},
		{"sep\u2028\u00a0", `sep\u2028\u00a0`},
		{"\U000e0001", `\U000e0001`},
		{"\ufffd is printable", "\ufffd is printable"},
	} {
		if got := Printable(tt.in); got != tt.want {
			t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	e := &Error{File: "bad\x1bname.sql", Line: 3, Msg: "unknown meta-command \"\\\x9b\""}
	if got, want := e.Error(), `bad\x1bname.sql:3: unknown meta-command "\\x9b"`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
