package script

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/workload/pgbench/expr"
)

// Behaviours marked "pgbench 15 confirms" below were checked against
// pgbench 15.18: a script's parse errors are printed before pgbench
// connects (pgbench -n -t 1 -f x.sql against a closed port), and what it
// sends is visible with --debug against a scratch server ("client 0
// sending ...").

// summary is a one-line golden description of a command.
func summary(c Command) string {
	var s string
	switch c.Kind {
	case SQL:
		s = fmt.Sprintf("SQL@%d %q", c.Line, c.Text)
		if c.Prepared != c.Text {
			s += fmt.Sprintf(" => %q %v", c.Prepared, c.Params)
		}
		if c.Gset {
			s += fmt.Sprintf(" gset(%s)", c.Prefix)
		}
		if c.Aset {
			s += fmt.Sprintf(" aset(%s)", c.Prefix)
		}
		if c.Compound {
			s += " compound"
		}
	case Set:
		s = fmt.Sprintf("Set@%d %s = %s", c.Line, c.Var, c.ExprSrc)
	case Sleep:
		arg := fmt.Sprint(c.SleepValue)
		if c.SleepVarSet {
			arg = ":" + c.SleepVar
		}
		s = fmt.Sprintf("Sleep@%d %s * %v", c.Line, arg, c.Unit)
	case If, Elif:
		s = fmt.Sprintf("%s@%d %s next=%d end=%d", kindName(c.Kind), c.Line, c.ExprSrc, c.Next, c.End)
	case Shell:
		s = fmt.Sprintf("Shell@%d %q", c.Line, c.Args)
	case SetShell:
		s = fmt.Sprintf("SetShell@%d %s %q", c.Line, c.Var, c.Args)
	case Else, Endif:
		s = fmt.Sprintf("%s@%d next=%d end=%d", kindName(c.Kind), c.Line, c.Next, c.End)
	default:
		s = fmt.Sprintf("%s@%d", kindName(c.Kind), c.Line)
	}
	return s
}

func kindName(k Kind) string {
	return [...]string{"SQL", "Set", "Sleep", "If", "Elif", "Else", "Endif",
		"StartPipeline", "EndPipeline", "SyncPipeline", "Shell", "SetShell"}[k]
}

func summaries(s *Script) []string {
	var out []string
	for _, c := range s.Commands {
		out = append(out, summary(c))
	}
	return out
}

func diffLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") == strings.Join(want, "\n") {
		return
	}
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("command %d:\n got %s\nwant %s", i, g, w)
		}
	}
}

// checkCommon checks what holds for every parsed command: File, Expr set
// for expressions, ParamPos pointing at the references.
func checkCommon(t *testing.T, s *Script, file string) {
	t.Helper()
	for i, c := range s.Commands {
		if c.File != file {
			t.Errorf("command %d: File = %q, want %q", i, c.File, file)
		}
		if c.Line < 1 {
			t.Errorf("command %d: Line = %d", i, c.Line)
		}
		switch c.Kind {
		case Set, If, Elif:
			if c.Expr == nil {
				t.Errorf("command %d (%s): Expr is nil", i, c.Text)
			}
		case SQL:
			if len(c.ParamPos) != len(c.Params) {
				t.Fatalf("command %d: %d ParamPos for %d Params", i, len(c.ParamPos), len(c.Params))
			}
			for j, p := range c.Params {
				if ref := c.Text[c.ParamPos[j]:]; !strings.HasPrefix(ref, ":"+p) {
					t.Errorf("command %d: ParamPos[%d] at %q, want :%s", i, j, ref, p)
				}
			}
		}
	}
}

func parseFile(t *testing.T, name string) *Script {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(name, string(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	checkCommon(t, s, name)
	return s
}

func TestTPCBOriginal(t *testing.T) {
	s := parseFile(t, "tpcb-original.sql")
	if s.Name != "tpcb-original.sql" || s.Title != "tpcb-original.sql" || s.Weight != 1 {
		t.Errorf("Name, Title, Weight = %q, %q, %d", s.Name, s.Title, s.Weight)
	}
	diffLines(t, summaries(s), []string{
		`Set@1 aid = random(1, 100000 * :scale)`,
		`Set@2 bid = random(1, 1 * :scale)`,
		`Set@3 tid = random(1, 10 * :scale)`,
		`Set@4 delta = random(-5000, 5000)`,
		`SQL@5 "BEGIN;"`,
		`SQL@6 "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;" => "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;" [delta aid]`,
		`SQL@7 "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;" => "SELECT abalance FROM pgbench_accounts WHERE aid = $1;" [aid]`,
		`SQL@8 "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;" => "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2;" [delta tid]`,
		`SQL@9 "UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;" => "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2;" [delta bid]`,
		`SQL@10 "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);" => "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP);" [tid bid aid delta]`,
		`SQL@11 "END;"`,
	})
	if got := s.Commands[0].Text; got != `\set aid random(1, 100000 * :scale)` {
		t.Errorf("Text of \\set = %q", got)
	}
}

func TestFeatures(t *testing.T) {
	s := parseFile(t, "features.sql")
	diffLines(t, summaries(s), []string{
		`Set@2 nbranches = 10 *    :scale`,
		`Set@4 id = random(1, :nbranches)`,
		// The block comment starts the command (pgbench drops only leading
		// white space and -- comments); ;, :x and \ in comments, quotes and
		// dollar quotes do not end it, but pgbench replaces :x everywhere.
		`SQL@6 "/* a block comment; with a semicolon\n   /* nested */ still comment */\nSELECT bid, bbalance\n  FROM pgbench_branches   -- trailing comment; not the end\n  WHERE bid = :id\n    AND bbalance::int > -1" => "/* a block comment; with a semicolon\n   /* nested */ still comment */\nSELECT bid, bbalance\n  FROM pgbench_branches   -- trailing comment; not the end\n  WHERE bid = $1\n    AND bbalance::int > -1" [id] gset(br_)`,
		`SQL@12 "SELECT ';', \":x\", $$ ; \\gset $$, $q$ :y ; $q$, E'\\' ;' AS e;" => "SELECT ';', \"$1\", $$ ; \\gset $$, $q$ $2 ; $q$, E'\\' ;' AS e;" [x y]`,
		`SQL@13 "SELECT 1 AS one ; SELECT 2 AS two" aset() compound`,
		`Sleep@14 10 * 1ms`,
		`Sleep@15 :id * 1µs`,
		`Sleep@16 2 * 1s`,
		`If@17 :br_bid = 1 next=10 end=16`,
		`SQL@18 "SELECT 'one';"`,
		`Elif@19 :br_bid = 2 next=14 end=16`,
		`If@20 :id > 5 next=13 end=13`,
		`SQL@21 "SELECT 'two, big';"`,
		`Endif@22 next=14 end=13`,
		`Else@23 next=16 end=16`,
		`SQL@24 "SELECT 'other';"`,
		`Endif@25 next=17 end=16`,
		`StartPipeline@26`,
		`SQL@27 "SELECT 1;"`,
		`SyncPipeline@28`,
		`SQL@29 "SELECT 2;"`,
		`EndPipeline@30`,
		`SQL@31 "SELECT :id + 1" => "SELECT $1 + 1" [id]`,
	})
}

// TestParse: table of scripts and the commands they give.
func TestParse(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"multi-line SQL", "SELECT\n  1\n  ,2\n;\n", []string{`SQL@1 "SELECT\n  1\n  ,2\n;"`}},
		{"several on a line", "SELECT 1; SELECT 2;SELECT 3;", []string{`SQL@1 "SELECT 1;"`, `SQL@1 "SELECT 2;"`, `SQL@1 "SELECT 3;"`}},
		// pgbench 15 confirms: the last command needs no ';'.
		{"no final semicolon", "SELECT 1;\nSELECT 2\n\n", []string{`SQL@1 "SELECT 1;"`, `SQL@2 "SELECT 2"`}},
		{"leading comments dropped", "-- first\n\n   -- second\n  SELECT 1 -- kept\n;", []string{`SQL@4 "SELECT 1 -- kept\n;"`}},
		{"comment-only lines", "-- a\n--b\n\n", nil},
		// pgbench 15 confirms: a /* */ comment alone is a command.
		{"block comment alone", "/* only */\n", []string{`SQL@1 "/* only */"`}},
		{"quotes", `SELECT 'a;b', 'it''s;', "x;""y", E'\';', U&'\0041;';`, []string{
			`SQL@1 "SELECT 'a;b', 'it''s;', \"x;\"\"y\", E'\\';', U&'\\0041;';"`}},
		// Standard strings: a backslash does not escape.
		{"backslash in standard string", `SELECT 'a\'; SELECT 2;`, []string{`SQL@1 "SELECT 'a\\';"`, `SQL@1 "SELECT 2;"`}},
		// pgbench 15 confirms: an E string continues on the next line.
		{"E string continued", "SELECT E'a'\n'b\\';' ;\nSELECT 2;", []string{"SQL@1 \"SELECT E'a'\\n'b\\\\';' ;\"", `SQL@3 "SELECT 2;"`}},
		{"dollar quotes", "SELECT $$;$$, $a$ $$ ; $a$, $1;", []string{`SQL@1 "SELECT $$;$$, $a$ $$ ; $a$, $1;"`}},
		// pgbench 15 confirms: $ inside an identifier does not quote.
		{"dollar in identifier", "SELECT a$b$ FROM t; SELECT 1a$b$ ;", []string{`SQL@1 "SELECT a$b$ FROM t;"`, `SQL@1 "SELECT 1a$b$ ;"`}},
		{"nested block comment", "SELECT /* a /* b; */ c; */ 1;", []string{`SQL@1 "SELECT /* a /* b; */ c; */ 1;"`}},
		{"line comment with semicolon", "SELECT 1 -- a; b\n, 2;", []string{`SQL@1 "SELECT 1 -- a; b\n, 2;"`}},
		// pgbench 15 confirms: ';' inside parentheses does not end a command.
		{"parentheses", "SELECT (1;\n2);\nSELECT 3;", []string{`SQL@1 "SELECT (1;\n2);"`, `SQL@3 "SELECT 3;"`}},
		// pgbench 15 confirms: a BEGIN ATOMIC body is one command.
		{"begin atomic", "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC; SELECT 1; END;\nSELECT f();",
			[]string{`SQL@1 "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC; SELECT 1; END;"`, `SQL@2 "SELECT f();"`}},
		{"begin atomic with case", "create or replace procedure p() begin atomic select case when true then 1 end; end;select 2;",
			[]string{`SQL@1 "create or replace procedure p() begin atomic select case when true then 1 end; end;"`, `SQL@1 "select 2;"`}},
		// pgbench 15 confirms: the BEGIN ATOMIC tracking is not reset by a
		// backslash command, so after one such a body is split (pgbench 15
		// then fails on the server's syntax error).
		{"begin atomic after backslash", "SELECT 1 \\sleep 0\nCREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END;",
			[]string{`SQL@1 "SELECT 1"`, `Sleep@1 0 * 1s`, `SQL@2 "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1;"`, `SQL@2 "END;"`}},
		{"plain begin", "BEGIN; END;", []string{`SQL@1 "BEGIN;"`, `SQL@1 "END;"`}},
		// pgbench 15 confirms: each occurrence is a new parameter; :: casts
		// and :1 are not references; non-ASCII names are.
		{"variables", "SELECT :a, :a::int, x::text, :1, :_b2, :é, a:::b;", []string{
			`SQL@1 "SELECT :a, :a::int, x::text, :1, :_b2, :é, a:::b;" => "SELECT $1, $2::int, x::text, :1, $3, $4, a:::b;" [a a _b2 é]`}},
		// pgbench 15 confirms: replaced in quotes and comments too.
		{"variables in quotes and comments", "SELECT ':x', \":y\" /* :z */ -- :w\n;", []string{
			`SQL@1 "SELECT ':x', \":y\" /* :z */ -- :w\n;" => "SELECT '$1', \"$2\" /* $3 */ -- $4\n;" [x y z w]`}},
		// pgbench 15 confirms: psql's :{?name} test becomes FALSE; :'x'
		// stays as written.
		{"psql variable syntax", "SELECT :{?x}, :'x', :\"x\";", []string{
			`SQL@1 "SELECT FALSE, :'x', :\"x\";"`}},
		// pgbench 15 confirms: \; joins statements into one command and \:
		// is a colon.
		{"compound", "SELECT 1 \\; SELECT 2 \\: x;", []string{`SQL@1 "SELECT 1 ; SELECT 2 : x;" compound`}},
		{"compound gset", "SELECT 1 AS a \\;\nSELECT :v AS b \\gset p_", []string{
			`SQL@1 "SELECT 1 AS a ;\nSELECT :v AS b" => "SELECT 1 AS a ;\nSELECT $1 AS b" [v] gset(p_) compound`}},
		// pgbench 15 confirms: a backslash ends the SQL before it.
		{"meta after SQL on a line", "SELECT 1 \\sleep 0\nSELECT 2;", []string{`SQL@1 "SELECT 1"`, `Sleep@1 0 * 1s`, `SQL@2 "SELECT 2;"`}},
		{"meta after semicolon", "SELECT 1; \\sleep 0 ms\nSELECT 2;", []string{`SQL@1 "SELECT 1;"`, `Sleep@1 0 * 1ms`, `SQL@2 "SELECT 2;"`}},
		{"gset", "SELECT 1 AS a \\gset", []string{`SQL@1 "SELECT 1 AS a" gset()`}},
		{"gset prefix", "SELECT 1 AS a \\gset x_", []string{`SQL@1 "SELECT 1 AS a" gset(x_)`}},
		{"aset", "SELECT 1 AS a \\aset", []string{`SQL@1 "SELECT 1 AS a" aset()`}},
		{"aset prefix", "SELECT 1 AS a\n\\ASET y_\n", []string{`SQL@1 "SELECT 1 AS a" aset(y_)`}},
		// pgbench 15 confirms: \gset may follow a ';' and blank lines.
		{"gset after semicolon", "SELECT 1 AS a;\n\n\\gset\nSELECT :a;", []string{`SQL@1 "SELECT 1 AS a;" gset()`, `SQL@4 "SELECT :a;" => "SELECT $1;" [a]`}},
		// pgbench 15 confirms: meta-command names ignore case.
		{"case", "\\SET x 1\n\\Sleep 1 MS\n", []string{`Set@1 x = 1`, `Sleep@2 1 * 1ms`}},
		// pgbench 15 confirms: a backslash alone is ignored.
		{"lone backslash", "\\\nSELECT 1;\n\\   \n", []string{`SQL@2 "SELECT 1;"`}},
		// pgbench 15 confirms: continuation lines, also with CR LF.
		{"continuation", "\\set x 1 +\\\n  2\n\\sleep 0 \\\nms\n", []string{`Set@1 x = 1 +   2`, `Sleep@3 0 * 1ms`}},
		{"continuation CRLF", "\\set x 1 +\\\r\n 2\r\n\\sleep 0 \\\r\nms\r\nSELECT 1;\r\n", []string{`Set@1 x = 1 +  2`, `Sleep@3 0 * 1ms`, `SQL@5 "SELECT 1;"`}},
		{"continuation after word", "\\set\\\nx 3\n", []string{`Set@1 x = 3`}},
		{"set spacing", "\\set   x   1 + 2   \n", []string{`Set@1 x = 1 + 2`}},
		// pgbench 15 confirms these \sleep forms.
		{"sleep forms", "\\sleep 1\n\\sleep 2 s\n\\sleep 3ms\n\\sleep 4 us\n\\sleep -1\n\\sleep +5us\n\\sleep :d\n\\sleep :d ms\n",
			[]string{`Sleep@1 1 * 1s`, `Sleep@2 2 * 1s`, `Sleep@3 3 * 1ms`, `Sleep@4 4 * 1µs`, `Sleep@5 -1 * 1s`, `Sleep@6 5 * 1µs`, `Sleep@7 :d * 1s`, `Sleep@8 :d * 1ms`}},
		{"if chain", "\\if :a\n\\elif :b\n\\elif :c\n\\else\n\\endif\n", []string{
			`If@1 :a next=1 end=4`, `Elif@2 :b next=2 end=4`, `Elif@3 :c next=3 end=4`, `Else@4 next=4 end=4`, `Endif@5 next=5 end=4`}},
		{"nested ifs", "\\if 1\n\\if 2\nSELECT 1;\n\\else\n\\endif\n\\elif 3\n\\if 4\n\\endif\n\\endif\n", []string{
			`If@1 1 next=5 end=8`, `If@2 2 next=3 end=4`, `SQL@3 "SELECT 1;"`, `Else@4 next=4 end=4`, `Endif@5 next=5 end=4`,
			`Elif@6 3 next=8 end=8`, `If@7 4 next=7 end=7`, `Endif@8 next=8 end=7`, `Endif@9 next=9 end=8`}},
		{"pipeline", "\\startpipeline\nSELECT 1;\n\\syncpipeline\nSELECT 2;\n\\endpipeline\n", []string{
			`StartPipeline@1`, `SQL@2 "SELECT 1;"`, `SyncPipeline@3`, `SQL@4 "SELECT 2;"`, `EndPipeline@5`}},
		// Pipelines through \if branches: pgbench runs these.
		{"pipeline in branches", "\\if :a\n\\startpipeline\n\\else\n\\startpipeline\n\\endif\nSELECT 1;\n\\endpipeline\n", []string{
			`If@1 :a next=2 end=4`, `StartPipeline@2`, `Else@3 next=4 end=4`, `StartPipeline@4`, `Endif@5 next=5 end=4`, `SQL@6 "SELECT 1;"`, `EndPipeline@7`}},
		{"pipeline maybe", "\\if :p\n\\startpipeline\n\\endif\nSELECT 1;\n\\if :p\n\\endpipeline\n\\endif\n", []string{
			`If@1 :p next=2 end=2`, `StartPipeline@2`, `Endif@3 next=3 end=2`, `SQL@4 "SELECT 1;"`, `If@5 :p next=6 end=6`, `EndPipeline@6`, `Endif@7 next=7 end=6`}},
		{"sleep in pipeline", "\\startpipeline\n\\sleep 1\n\\endpipeline\n", []string{`StartPipeline@1`, `Sleep@2 1 * 1s`, `EndPipeline@3`}},
		// pgbench 15 confirms: an unterminated quote at the end is sent as
		// it is (the server reports it).
		{"unterminated quote", "SELECT 'abc\n", []string{`SQL@1 "SELECT 'abc"`}},
		{"unterminated comment", "SELECT 1 /* x", []string{`SQL@1 "SELECT 1 /* x"`}},
		// pgbench 15 confirms: with \v before it, a "--" comment ended by a
		// lone \r swallows its command (pgbench's skip_sql_comments looks
		// for \n).
		{"vertical tab quirk", "\v-- a\rSELECT 2;\nSELECT 3;", []string{`SQL@2 "SELECT 3;"`}},
		{"CR LF", "SELECT 1;\r\nSELECT\r\n 2;\r\n", []string{`SQL@1 "SELECT 1;"`, "SQL@2 \"SELECT\\r\\n 2;\""}},
		{"set any variable name", "\\set 1abc 2\n", []string{`Set@1 1abc = 2`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.src
			if tt.want == nil {
				// Pad scripts with no command so that they parse.
				src += "\nSELECT 0;"
			}
			s, err := Parse("t.sql", src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			checkCommon(t, s, "t.sql")
			got := summaries(s)
			if tt.want == nil {
				got = got[:len(got)-1]
			}
			diffLines(t, got, tt.want)
		})
	}
}

func TestMetaText(t *testing.T) {
	s, err := Parse("t.sql", "\\set x 1 +\\\n 2\r\n  \\sleep   5 ms  \nSELECT 1 \\gset\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"\\set x 1 +\\\n 2", "\\sleep   5 ms  ", "SELECT 1"}
	for i, c := range s.Commands {
		if c.Text != want[i] {
			t.Errorf("command %d: Text = %q, want %q", i, c.Text, want[i])
		}
	}
}

func TestSleepValues(t *testing.T) {
	for _, tt := range []struct {
		src  string
		val  int64
		v    string
		unit time.Duration
	}{
		{`\sleep 0`, 0, "", time.Second},
		{`\sleep 1500 us`, 1500, "", time.Microsecond},
		{`\sleep 99999999999999999999999`, 1<<63 - 1, "", time.Second},
		{`\sleep -`, 0, "", time.Second},
		{`\sleep :é mS`, 0, "é", time.Millisecond},
	} {
		s, err := Parse("t.sql", tt.src)
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		c := s.Commands[0]
		if c.Kind != Sleep || c.SleepValue != tt.val || c.SleepVar != tt.v || c.Unit != tt.unit {
			t.Errorf("%s: got %d %q %v", tt.src, c.SleepValue, c.SleepVar, c.Unit)
		}
	}
}

// \set, \if and \elif keep their expression's source and its parse,
// which evaluates as expr's own.
func TestExpressions(t *testing.T) {
	s, err := Parse("t.sql", "\\set a 1 + 2\n\\if :a = 3\n\\elif :a < 3\n\\endif\n")
	if err != nil {
		t.Fatal(err)
	}
	env := &expr.Env{Lookup: func(string) (expr.Value, bool) { return expr.Value{Kind: expr.Int, I: 3}, true }}
	for i, tc := range []struct {
		src  string
		want expr.Value
	}{
		{"1 + 2", expr.Value{Kind: expr.Int, I: 3}},
		{":a = 3", expr.Value{Kind: expr.Bool, B: true}},
		{":a < 3", expr.Value{Kind: expr.Bool, B: false}},
	} {
		c := s.Commands[i]
		if c.ExprSrc != tc.src {
			t.Errorf("command %d: ExprSrc = %q, want %q", i, c.ExprSrc, tc.src)
		}
		if c.Expr == nil {
			t.Errorf("command %d (%s): Expr is nil", i, c.Text)
			continue
		}
		n, err := expr.Parse(tc.src)
		if err != nil {
			t.Fatalf("expr.Parse(%q): %v", tc.src, err)
		}
		v1, err1 := c.Expr.Eval(env)
		v2, err2 := n.Eval(env)
		if err1 != nil || err2 != nil || v1 != tc.want || v2 != tc.want {
			t.Errorf("command %d: Eval = %v, %v; expr's = %v, %v; want %v", i, v1, err1, v2, err2, tc.want)
		}
	}
}
