package script

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestZZDiffPgbench(t *testing.T) {
	if os.Getenv("PGB_DIFF") == "" {
		t.Skip()
	}
	pieces := []string{`'a;b'`, `'it''s;'`, `E'x\';'`, `$$a;b$$`, `$q$ ;$$ $q$`, `/* c; /* n */ */ 1`, "1 -- c;\\x\n",
		`(SELECT 1)`, `1::int`, `':x'`, `:x`, `1 AS a$b$`, "'a'\n'b'", "E'a'\n'\\';'", `U&'\0041;'`, `1 AS "x;"`, `:{?y}`,
		`'\'`, "(1\n)", `1 AS ":x"`, "/* :x */ 2", `$t$\$t$`, "'a' -- c;\n 'b'", `E'\\'`, `1 AS begin`, `1 AS e, 'x'`, `1 AS "x""y"`, "'a'\r\n'b'", `$_1$x$_1$`, `1 AS z$$`}
	seps := []string{"\n", "", " ", "-- comment ; \\ \n", "/* c */ ", "\n\n", "\r\n"}
	terms := []string{";", ";", "\n\\sleep 0\n", "; \\sleep 0 ms\n", " \\; ", ";\\\n"}
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 400; iter++ {
		var sb strings.Builder
		sb.WriteString("\\set x 5\n")
		n := 1 + r.IntN(5)
		for i := 0; i < n; i++ {
			sb.WriteString(seps[r.IntN(len(seps))])
			if r.IntN(8) == 0 {
				sb.WriteString([]string{"CREATE OR REPLACE FUNCTION pg_temp.f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 2; END",
					"create or replace function pg_temp.g() returns int language sql\nbegin atomic select case when true then 1 end; end",
					"CREATE OR REPLACE PROCEDURE pg_temp.p() LANGUAGE sql BEGIN ATOMIC SELECT (1); END"}[r.IntN(3)])
				sb.WriteString(";")
				continue
			}
			sb.WriteString("SELECT ")
			k := 1 + r.IntN(3)
			for j := 0; j < k; j++ {
				if j > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString(pieces[r.IntN(len(pieces))])
			}
			term := terms[r.IntN(len(terms))]
			if i == n-1 && term == " \\; " {
				term = ";"
			}
			sb.WriteString(term)
		}
		src := sb.String()
		os.WriteFile("/tmp/pgb/d.sql", []byte(src), 0o644)
		out, _ := exec.Command("pgbench", "-n", "-t", "1", "-h", "127.0.0.1", "-p", "5477", "-U", "postgres", "--debug", "-f", "/tmp/pgb/d.sql", "postgres").CombinedOutput()
		var sent []string
		cur := -1
		for _, line := range strings.SplitAfter(string(out), "\n") {
			if strings.HasPrefix(line, "pgbench: ") {
				cur = -1
				if rest, ok := strings.CutPrefix(line, "pgbench: client 0 sending "); ok {
					sent = append(sent, rest)
					cur = len(sent) - 1
				}
				continue
			}
			if cur >= 0 {
				sent[cur] += line
			}
		}
		s, err := Parse("d.sql", src)
		if err != nil {
			t.Errorf("parse error %v for %q", err, src)
			continue
		}
		var mine []string
		for _, c := range s.Commands {
			if c.Kind != SQL {
				continue
			}
			txt := c.Text
			for j := len(c.Params) - 1; j >= 0; j-- {
				if c.Params[j] == "x" {
					p := c.ParamPos[j]
					txt = txt[:p] + "5" + txt[p+2:]
				}
			}
			mine = append(mine, txt)
		}
		bad := len(mine) != len(sent)
		for i := 0; !bad && i < len(mine); i++ {
			if strings.TrimRight(sent[i], " \t\r\n\f\v") != mine[i] {
				bad = true
			}
		}
		if bad || strings.Contains(string(out), "ERROR") {
			t.Errorf("script %q\npgbench: %q\nmine:    %q\n%s", src, sent, mine, fmt.Sprint(strings.Contains(string(out), "ERROR")))
			if strings.Contains(string(out), "ERROR") {
				t.Log(string(out))
			}
		}
	}
}
