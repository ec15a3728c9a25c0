package doctest

import (
	"regexp"
	"strings"
	"testing"
)

func TestMask(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"   1.0s    8623.0 ops/s  errors 0  p50 401µs  max 27.66ms", "2.0s 9075.0 ops/s errors 3 p50 2.99ms max 1m0s"},
		{"money drift:         +540", "money drift: -12"},
		{"drain: 1 operation in flight", "drain: 8 operations in flight"},
		{"retried: 1 transaction, 1 retry", "retried: 12 transactions, 30 retries"},
		{"started PostgreSQL 18.3.0 on 127.0.0.1:44247 (data in /tmp/txload-pg-3674780685/data)",
			"started PostgreSQL 18.3.0 on 127.0.0.1:5432 (data in /tmp/txload-pg-1/data)"},
		{"run id 3f2a9c01d7", "run id 99ab0c1e2f"},
		{"100000 of 200000 tuples (50%) done", "1 of 2 tuples (100%) done"},
	} {
		if Mask(c.a) != Mask(c.b) {
			t.Errorf("Mask(%q) = %q\nMask(%q) = %q: want them equal", c.a, Mask(c.a), c.b, Mask(c.b))
		}
	}
	for _, c := range []struct{ a, b string }{
		{"p50 401µs", "p50 401 ms"},       // layout: a number and a word are not a duration
		{"check: ok", "check: VIOLATION"}, // words
		{"lost updates: 3", "lost update: 3"},
		{"ambiguous: 0 (0 of them committed)", "ambiguous: 0 (0 of them failed)"},
		{"a b", "ab"},
		{"pgbench (18 (txload dev), server 15.18)", "pgbench (15 (txload dev), server 15.18)"},
		{"pgbench (PostgreSQL) 15.0 (txload dev)", "pgbench (PostgreSQL) 18.0 (txload dev)"},
	} {
		if Mask(c.a) == Mask(c.b) {
			t.Errorf("Mask(%q) = Mask(%q) = %q: want them different", c.a, c.b, Mask(c.a))
		}
	}
}

func TestCompare(t *testing.T) {
	vary := regexp.MustCompile(`^NOTICE`)
	for _, c := range []struct {
		name      string
		want, got string
		ok        bool
	}{
		{"equal masked", "a 1\nb 2ms", "a  7\nb 3s", true},
		{"missing line", "a\nb\nc", "a\nc", false},
		{"extra line", "a\nb", "a\nb\nc", false},
		{"ellipsis none", "a\n...\nb", "a\nb", true},
		{"ellipsis many", "a\n...\nb", "a\nx\ny\nb", true},
		{"ellipsis at end", "a\n...", "a\nx\ny", true},
		{"ellipsis at start", "...\nb", "x\nb", true},
		{"ellipsis twice", "a\n...\nc\n...\ne", "a\nb\nc\nd\ne", true},
		{"ellipsis, order", "a\n...\nc\n...\ne", "a\nb\ne\nd\nc", false},
		{"vary left out", "a\nb", "a\nNOTICE: x\nb", true},
		{"vary both sides", "a\nNOTICE: y\nb", "a\nb", true},
		{"empty", "", "", true},
		{"trailing blank lines", "a\n", "a\n\n", true},
		// A varying last line (a verdict a loaded machine adds) leaves a
		// blank line before it trailing: left out as well.
		{"blank before a vary line at the end", "a\nb\n", "a\nb\n\nNOTICE: x\n", true},
		{"blank line kept inside", "a\nb", "a\n\nb", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Compare(lines(c.want), lines(c.got), vary)
			if (d == "") != c.ok {
				t.Errorf("Compare = %q, want ok=%v", d, c.ok)
			}
		})
	}
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestShorten(t *testing.T) {
	in := lines("head\nrow 1\nrow 2\nrow 3\nrow 4\nrow 5\ntail\nx\ny")
	got := strings.Join(Shorten(in, nil, regexp.MustCompile(`^row`)), "|")
	if want := "head|row 1|row 2|...|row 5|tail|x|y"; got != want {
		t.Errorf("elide: %q, want %q", got, want)
	}
	got = strings.Join(Shorten(in, regexp.MustCompile(`^(head|tail|y)`), nil), "|")
	if want := "head|...|tail|...|y"; got != want {
		t.Errorf("show: %q, want %q", got, want)
	}
}

func TestParseAndRewrite(t *testing.T) {
	src := "# Page\n<!-- samples: server=own databases=\"bench ascii:SQL_ASCII\" -->\n\n" +
		"<!-- sample: file hot.sql -->\n```\nSELECT 1;\n```\n\n" +
		"<!-- sample: run show=\"^check\" -->\n```\n$ txload check bank \\\n  --url $URL\ncheck: ok\n$ echo $?\n0\n```\n\n" +
		"```sh\ngo test ./...\n```\n\n" +
		"<!-- sample: not run: a real failover manager; made 2026-11-27 with txload 63fbdd6 -->\n```\n$ pg_autoctl\n```\n\n" +
		"```sql\nSELECT 2;\n```\n"
	p, err := Parse("p.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if p.Settings["databases"] != "bench ascii:SQL_ASCII" || p.Settings["server"] != "own" {
		t.Errorf("settings %v", p.Settings)
	}
	if len(p.Blocks) != 5 {
		t.Fatalf("%d blocks, want 5", len(p.Blocks))
	}
	kinds := []Kind{File, Run, Plain, NotRun, Plain}
	samples := []bool{false, true, true, true, false}
	for i, b := range p.Blocks {
		if b.Kind != kinds[i] || b.Sample() != samples[i] {
			t.Errorf("block %d (line %d): kind %v sample %v, want %v %v", i, b.Line, b.Kind, b.Sample(), kinds[i], samples[i])
		}
	}
	run := p.Blocks[1]
	if len(run.Steps) != 2 || run.Steps[0].Cmd != "txload check bank \\\n  --url $URL" || strings.Join(run.Steps[1].Want, "|") != "0" {
		t.Fatalf("steps %#v", run.Steps)
	}
	out := p.Rewrite(map[*Block][]string{run: run.Rewritten([][]string{{"server: x", "check: VIOLATION"}, {"1"}})})
	want := strings.Replace(src, "check: ok\n$ echo $?\n0\n", "...\ncheck: VIOLATION\n$ echo $?\n...\n", 1)
	if string(out) != want {
		t.Errorf("rewrite:\n%s\nwant\n%s", out, want)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, src := range []string{
		"```\nnever closed\n",
		"<!-- sample: run colour=red -->\n```\n$ x\n```\n",
		"<!-- sample: run -->\n```\nno command\n```\n",
		"<!-- sample: run show=\"(\" -->\n```\n$ x\n```\n",
		"<!-- sample: not run: needs a cluster -->\n```\n$ x\nout\n```\n",
		"<!-- sample: not run: needs a cluster -->\n```\ncheck: ok\n```\n", // output without a "$ " line says when it was made too
		"<!-- sample: not run: -->\n```\nx\n```\n",
		"<!-- sample: file a/b -->\n```\nx\n```\n",
		"<!-- sample: runs -->\n```\n$ x\n```\n",
	} {
		if _, err := Parse("p.md", []byte(src)); err == nil {
			t.Errorf("Parse accepted %q", src)
		}
	}
}

func TestExitStatus(t *testing.T) {
	for _, c := range []struct {
		cmd, want, got string
		ok             bool
	}{
		{"txload check bank; echo $?", "check: ok\n0", "check: ok\n0\n", true},
		{"txload check bank; echo $?", "check: ok\n0", "VIOLATION\n1", false},
		{"echo $?", "1", "0", false},
		{"psql -Atc 'select count(*)'", "80", "81", true}, // not a status: masked
	} {
		if d := ExitStatus(c.cmd, lines(c.want), lines(c.got)); (d == "") != c.ok {
			t.Errorf("ExitStatus(%q, %q, %q) = %q, want ok=%v", c.cmd, c.want, c.got, d, c.ok)
		}
	}
}

func TestLooksLikeOutput(t *testing.T) {
	for _, c := range []struct {
		name string
		lang string
		text string
		want bool
	}{
		{"report", "", "bank on PostgreSQL 18.3: closed loop, 8 workers, 5.00s measured", true},
		{"progress", "", "   1.0s     433.0 ops/s  errors 0  retries 0", true},
		{"check", "", "exp total balance:   1000000000\ncheck: ok", true},
		{"error line", "", "txload: --failover-command failed (exit status 3): no such formation", true},
		{"merge warning", "", "txload: merge: warning: m1.json, m2.json each ran on an embedded server of its own", true},
		{"verdict", "text", "verdict: at serializable: ok", true},
		{"history", "console", "history: 920 attempts: 607 committed, 313 failed, 0 unknown", true},
		{"anomaly", "", "G2-item: 1 (anti-dependency cycle: a cycle with two or more rw edges; forbidden at serializable)", true},
		{"pgbench banner", "", "pgbench (15 (txload dev), server 18.3)", true},
		{"pgbench line", "", "pgbench: client 0 receiving", true},
		{"tps", "", "tps = 394.643005 (without initial connection time)", true},
		{"percentiles", "", "  response  7.90ms  5.87ms  15.74ms", true},
		{"lag block", "", "replication lag (a streaming standby of an embedded server): 990 markers", true},
		{"sweep", "", "sweep select-only: SLO p99<=50ms on response time", true},
		{"scrape", "", `txload_workers{instance="0/1",workload="bank"} 4`, true},
		{"wrote", "", "wrote report.html", true},
		{"layout diagram", "text", "cmd/txload            main: root command\n   retries,    pgbench (+expr, format, JSON,     step verdict", false},
		{"a listing of commands", "", "txload failover bank   # embedded primary + standby", false},
		{"sql", "sql", "SELECT 1; -- check: ok", false},
		{"go", "go", `fmt.Println("check: ok")`, false},
		{"a listing tagged sh", "sh", "txload run bank --rate 800 # 800 ops/s", false},
		{"json lines", "", `{"client":1,"outcome":"committed"}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &Block{Lang: c.lang, Content: lines(c.text)}
			if got := b.LooksLikeOutput(); got != c.want {
				t.Errorf("LooksLikeOutput(%q, ```%s) = %v, want %v", c.text, c.lang, got, c.want)
			}
		})
	}
}
