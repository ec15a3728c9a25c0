package cli

import (
	"fmt"
	"regexp"
	"strings"
)

// scriptCase is a case that runs one script file, s.sql, with args before it.
func scriptCase(name, text string, args ...string) pgbenchCase {
	return pgbenchCase{name: name, args: append(append([]string{"-n"}, args...), "-f", "s.sql"), files: map[string]string{"s.sql": text}, db: "empty"}
}

// params is a statement with n :variables, each set by -D.
func params(n int) (sql string, defines []string) {
	var refs []string
	for i := 0; i < n; i++ {
		refs = append(refs, fmt.Sprintf(":v%d", i))
		defines = append(defines, "-D", fmt.Sprintf("v%d=%d", i, i))
	}
	return "SELECT " + strings.Join(refs, ", ") + ";\n", defines
}

// newerOption: txload says, after pgbench's two lines, which pgbench has
// the option and how to follow it.
// helpBugs and helpHome are --help's last two lines: the tracker and the
// home page, txload's in pgbench's layout.
var (
	helpBugs = regexp.MustCompile(`(?m)^(Report bugs to )<[^>]*>`)
	helpHome = regexp.MustCompile(`(?m)^\S+ home page: <[^>]*>`)
)

const newerOption = "a line more: the pgbench version that has the option, and --pgbench-version"

// parsedVersion is what a script reads in pgbench's version line: the
// major version, as `pgbench --version | awk '{print $3}' | cut -d. -f1`.
func parsedVersion(s string) string {
	f := strings.Fields(s)
	if len(f) < 3 || f[0] != "pgbench" || f[1] != "(PostgreSQL)" {
		return "unparsable: " + s
	}
	major, _, _ := strings.Cut(f[2], ".")
	return "major version " + major
}

// pgbenchCases is the body of command lines TestPgbenchCasesLikePgbench
// compares: option errors, runs of the builtins, init, scripts with
// errors, meta-commands, limits and connection failures.
func pgbenchCases() []pgbenchCase {
	cases := []pgbenchCase{
		// The command line alone.
		// What version parsers read: "pgbench (PostgreSQL) N.M", then
		// the distribution's name (Debian's, or txload's).
		{name: "version", args: []string{"-V"}, db: "none", keep: parsedVersion},
		{name: "version long", args: []string{"--version"}, db: "none", keep: parsedVersion},
		// --help ends in pgbench's layout, with txload's tracker and home
		// page in place of PostgreSQL's (its bugs are not PostgreSQL's).
		{name: "help ends as pgbench's", args: []string{"--help"}, db: "none", keep: func(s string) string {
			l := strings.Split(strings.TrimSpace(s), "\n")
			end := strings.Join(l[len(l)-2:], "\n")
			end = helpHome.ReplaceAllString(end, "NAME home page: <ADDRESS>")
			return helpBugs.ReplaceAllString(end, "${1}<ADDRESS>")
		}},
		{name: "help begins as pgbench's", args: []string{"-?"}, db: "none", keep: func(s string) string {
			return strings.Join(strings.Split(s, "\n")[:10], "\n")
		}},
		{name: "unknown option", args: []string{"--frobnicate"}, db: "none"},
		{name: "unknown short option", args: []string{"-x"}, db: "none"},
		{name: "clients zero", args: []string{"-c", "0"}, db: "none"},
		{name: "clients not a number", args: []string{"-c", "abc"}, db: "none"},
		{name: "jobs zero", args: []string{"-j", "0"}, db: "none"},
		{name: "transactions and time", args: []string{"-t", "10", "-T", "10"}, db: "none"},
		{name: "bad protocol", args: []string{"-M", "fast"}, db: "none"},
		{name: "bad init step", args: []string{"-i", "-I", "dtx"}, db: "none"},
		{name: "scale zero", args: []string{"-i", "-s", "0"}, db: "none"},
		{name: "fillfactor too low", args: []string{"-i", "-F", "5"}, db: "none"},
		{name: "rate zero", args: []string{"-R", "0"}, db: "none"},
		{name: "latency limit negative", args: []string{"-L", "-1"}, db: "none"},
		{name: "max tries zero without time", args: []string{"--max-tries", "0"}, db: "none"},
		{name: "sampling rate too high", args: []string{"-l", "--sampling-rate", "2"}, db: "none"},
		{name: "log prefix without log", args: []string{"--log-prefix", "x"}, db: "none"},
		{name: "aggregate without log", args: []string{"--aggregate-interval", "1"}, db: "none"},
		{name: "init and run options", args: []string{"-i", "-S"}, db: "none"},
		{name: "unknown builtin", args: []string{"-b", "nosuch"}, db: "none"},
		{name: "ambiguous builtin", args: []string{"-b", "s"}, db: "none"},
		{name: "builtin list", args: []string{"-b", "list"}, db: "none"},
		{name: "show script", args: []string{"--show-script", "select-only"}, db: "none"},
		{name: "missing script file", args: []string{"-f", "nosuch.sql"}, db: "none"},
		{name: "bad random seed", args: []string{"--random-seed", "abc"}, db: "none"},
		{name: "bad partition method", args: []string{"-i", "--partitions", "2", "--partition-method", "list"}, db: "none"},
		{name: "too many arguments", args: []string{"a", "b"}, db: "none"},
		{name: "bad define", args: []string{"-D", "novalue"}, db: "none"},
		// -d as pgbench 15 reads it: --debug.
		{name: "d then bad option", args: []string{"-d", "--bad-option"}, db: "none"},
		{name: "d is debug", args: []string{"-d", "-n", "-S", "-t", "1", "--random-seed", "5"}, collapse: true},

		// Runs of the builtins (numbers masked).
		{name: "tpcb-like", args: []string{"-t", "10"}},
		{name: "select-only", args: []string{"-n", "-S", "-t", "10"}},
		{name: "simple-update prepared", args: []string{"-n", "-N", "-t", "5", "-M", "prepared"}},
		{name: "select-only extended", args: []string{"-n", "-S", "-t", "5", "-M", "extended"}},
		{name: "two clients two threads", args: []string{"-n", "-S", "-t", "5", "-c", "2", "-j", "2"}},
		{name: "weighted builtins", args: []string{"-n", "-b", "select-only@2", "-b", "simple-update@1", "-t", "30", "-r"}},
		{name: "scale ignored", args: []string{"-n", "-S", "-t", "2", "-s", "5"}},
		{name: "vacuum all", args: []string{"-v", "-S", "-t", "2"}},
		{name: "rate", args: []string{"-n", "-S", "-t", "5", "-R", "500"}},
		{name: "rate and latency limit", args: []string{"-n", "-S", "-t", "5", "-R", "500", "-L", "1000"}},
		{name: "connect", args: []string{"-n", "-C", "-S", "-t", "5"}},
		{name: "max tries", args: []string{"-n", "-S", "-t", "5", "--max-tries", "3"}},
		{name: "failures detailed", args: []string{"-n", "-S", "-t", "5", "--failures-detailed"}},
		{name: "progress", args: []string{"-n", "-S", "-T", "2", "-P", "1"}, inexact: true},
		{name: "missing tables", args: []string{"-S", "-t", "1"}, db: "empty"},
		{name: "missing tables without vacuum", args: []string{"-n", "-t", "1"}, db: "empty"},

		// Init.
		{name: "init", args: []string{"-i", "-q"}, db: "empty"},
		{name: "init server-side", args: []string{"-i", "-I", "dtGvp"}, db: "empty"},
		{name: "init foreign keys", args: []string{"-i", "-q", "--foreign-keys"}, db: "empty"},
		{name: "init partitions", args: []string{"-i", "-q", "--partitions", "3"}, db: "empty"},
		{name: "init hash partitions", args: []string{"-i", "-q", "--partitions", "2", "--partition-method", "hash"}, db: "empty"},
		{name: "init tables only", args: []string{"-i", "-I", "dt"}, db: "empty"},
		{name: "init unlogged fillfactor", args: []string{"-i", "-q", "--unlogged-tables", "-F", "90"}, db: "empty"},
		{name: "init no vacuum", args: []string{"-i", "-q", "-n"}, db: "empty"},
		{name: "init vacuum without tables", args: []string{"-i", "-I", "v"}, db: "empty"},

		// Scripts that run.
		scriptCase("select", "SELECT 1;\n", "-t", "3"),
		scriptCase("set and select", "\\set x 1 + 2 * 3\nSELECT :x;\n", "-t", "3"),
		scriptCase("functions", "\\set a abs(-5) + greatest(1, 2) + least(3, 4)\n\\set b random(1, 10)\n\\set c pow(2, 10)\n\\set d hash(5)\nSELECT :a, :c, :d;\n", "-t", "2"),
		scriptCase("gset and if", "SELECT 5 AS five \\gset\n\\if :five = 5\nSELECT 'yes';\n\\else\nSELECT 1/0;\n\\endif\n", "-t", "2"),
		scriptCase("gset prefix", "SELECT 1 AS a, 2 AS b \\gset p_\nSELECT :p_a + :p_b;\n", "-t", "2"),
		scriptCase("aset", "SELECT 1 AS a \\; SELECT 2 AS b \\aset\nSELECT :a + :b;\n", "-t", "2"),
		scriptCase("aset no rows", "SELECT 1 AS a WHERE false \\aset\nSELECT 1;\n", "-t", "2"),
		scriptCase("compound gset", "SELECT 1 AS a \\; SELECT 2 AS b \\gset\nSELECT :b;\n", "-t", "2"),
		scriptCase("defines", "SELECT :foo::text, :bar;\n", "-t", "2", "-D", "foo=hello", "-D", "bar=42"),
		scriptCase("defines prepared", "SELECT :foo::text, :bar::int;\n", "-t", "2", "-D", "foo=hello", "-D", "bar=42", "-M", "prepared"),
		scriptCase("builtin variables", "SELECT :scale, :client_id;\n", "-t", "2"),
		scriptCase("sleep", "\\sleep 1 ms\n\\sleep 10us\nSELECT 1;\n", "-t", "2"),
		scriptCase("sleep variable", "\\set d 2\n\\sleep :d ms\nSELECT 1;\n", "-t", "2"),
		scriptCase("debug function", "\\set x debug(7)\nSELECT :x;\n", "-t", "1"),
		scriptCase("double and boolean", "\\set x 1.5 * 2\n\\set y true and not false\n\\if :y\nSELECT :x;\n\\endif\n", "-t", "1"),
		scriptCase("elif", "\\set x 2\n\\if :x = 1\nSELECT 1;\n\\elif :x = 2\nSELECT 2;\n\\else\nSELECT 3;\n\\endif\n", "-t", "2"),
		scriptCase("only meta-commands", "\\set x 1\n", "-t", "2"),
		scriptCase("comments and blank lines", "-- a comment\n\n  SELECT 1; -- trailing\n\n", "-t", "2"),
		scriptCase("multi-line statement", "SELECT\n  1\n  + 2;\n", "-t", "2"),
		scriptCase("pipeline", "\\startpipeline\nSELECT 1;\nSELECT 2;\n\\endpipeline\n", "-t", "2", "-M", "extended"),
		scriptCase("pipeline prepared", "\\startpipeline\nSELECT 1;\n\\syncpipeline\nSELECT 2;\n\\endpipeline\n", "-t", "2", "-M", "prepared"),
		scriptCase("transaction", "BEGIN;\nSELECT 1;\nCOMMIT;\n", "-t", "3"),
		scriptCase("255 parameters prepared", func() string { s, _ := params(255); return s }(), append([]string{"-t", "1", "-M", "prepared"}, func() []string { _, d := params(255); return d }()...)...),
		scriptCase("notice", "DO $$ BEGIN RAISE NOTICE 'hello'; END $$;\n", "-t", "1"),
		scriptCase("warning", "DO $$ BEGIN RAISE WARNING 'careful'; END $$;\n", "-t", "1"),

		// Scripts pgbench refuses before running (exit 1).
		scriptCase("if syntax error", "\\if 1 +\nSELECT 1;\n\\endif\n"),
		scriptCase("set syntax error", "\\set x 1 +\n"),
		scriptCase("set syntax error in the middle", "\\set x (1 + ) * 2\n"),
		scriptCase("unknown function", "\\set x frobnicate(1)\n"),
		scriptCase("unexpected function name", "\\set s foo\n"),
		scriptCase("wrong number of arguments", "\\set x abs(1, 2)\n"),
		scriptCase("set missing argument", "\\set\n"),
		scriptCase("set missing expression", "\\set x\n"),
		scriptCase("invalid command", "\\frobnicate\n"),
		scriptCase("invalid command with arguments", "SELECT 1;\n\\frob a b\n"),
		scriptCase("sleep missing argument", "\\sleep\n"),
		scriptCase("sleep too many arguments", "\\sleep 1 ms extra\n"),
		scriptCase("sleep bad unit", "\\sleep 1 hours\n"),
		scriptCase("sleep not a number", "\\sleep abc\n"),
		scriptCase("gset first", "\\gset\nSELECT 1;\n"),
		scriptCase("gset after meta-command", "\\set x 1\n\\gset\n"),
		scriptCase("gset too many arguments", "SELECT 1 \\gset a b\n"),
		scriptCase("else without if", "\\else\n"),
		scriptCase("endif without if", "\\endif\n"),
		scriptCase("if without endif", "\\if 1\nSELECT 1;\n"),
		scriptCase("elif after else", "\\if 1\n\\else\n\\elif 1\n\\endif\n"),
		scriptCase("else unexpected argument", "\\if 1\n\\else x\n\\endif\n"),
		scriptCase("empty script", "-- nothing\n"),
		scriptCase("setshell missing argument", "\\setshell x\n"),
		scriptCase("shell missing command", "\\shell\n"),
		scriptCase("256 parameters extended", func() string { s, _ := params(256); return s }(), "-M", "extended"),
		scriptCase("256 parameters prepared", func() string { s, _ := params(256); return s }(), "-M", "prepared"),

		// Scripts whose client aborts while running (exit 2).
		scriptCase("end of script in a transaction", "BEGIN;\nSELECT 1;\n", "-t", "10"),
		scriptCase("end of script in a transaction prepared", "BEGIN;\nSELECT 1;\n", "-t", "10", "-M", "prepared"),
		scriptCase("set invalid variable name", "\\set . 1\nSELECT 1;\n", "-t", "2"),
		scriptCase("gset question mark column", "SELECT 1 \\gset\n", "-t", "2"),
		scriptCase("gset bad column name", "SELECT 1 AS \"bad name!\" \\gset\n", "-t", "2"),
		scriptCase("gset two rows", "SELECT 1 AS a UNION SELECT 2 \\gset\n", "-t", "2"),
		scriptCase("gset no rows", "SELECT 1 AS a WHERE false \\gset\n", "-t", "2"),
		scriptCase("gset on a command", "CREATE TEMP TABLE IF NOT EXISTS t (a int) \\gset\n", "-t", "2"),
		scriptCase("gset compound two rows", "SELECT 1 \\; SELECT 1 AS a UNION SELECT 2 \\gset\n", "-t", "2"),
		scriptCase("division by zero in set", "\\set x 1/0\n", "-t", "2"),
		scriptCase("undefined variable in set", "\\set x :nosuch + 1\n", "-t", "2"),
		scriptCase("undefined variable in if", "\\if :nosuch\n\\endif\n", "-t", "2"),
		scriptCase("cannot coerce", "\\set x 1 and true\n", "-t", "1"),
		scriptCase("sleep undefined variable", "\\sleep :nosuch\n", "-t", "2"),
		scriptCase("sleep bad variable", "SELECT 'abc' AS s \\gset\n\\sleep :s\n", "-t", "2"),
		scriptCase("sql division by zero", "SELECT 1;\nSELECT 1/0;\n", "-t", "3"),
		scriptCase("sql syntax error", "SELECT foo bar baz;\n", "-t", "2"),
		scriptCase("sql syntax error extended", "SELECT foo bar baz;\n", "-t", "2", "-M", "extended"),
		scriptCase("sql syntax error prepared", "SELECT foo bar baz;\n", "-t", "2", "-M", "prepared"),
		scriptCase("sql syntax error second line", "SELECT 1,\n  2 3;\n", "-t", "1"),
		scriptCase("sql syntax error long line", "SELECT 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25 26;\n", "-t", "1"),
		scriptCase("sql error at a character prepared", "SELECT 'x'::int;\n", "-t", "1", "-M", "prepared"),
		scriptCase("sql error at a character simple", "SELECT 'x'::int;\n", "-t", "1"),
		scriptCase("missing table", "SELECT * FROM nosuch;\n", "-t", "1"),
		scriptCase("unique violation detail", "CREATE TEMP TABLE u (a int PRIMARY KEY);\nINSERT INTO u VALUES (1), (1);\n", "-t", "1"),
		scriptCase("function hint", "SELECT nosuchfunction(1);\n", "-t", "1"),
		scriptCase("plpgsql context", "DO $$ BEGIN RAISE EXCEPTION 'boom'; END $$;\n", "-t", "1"),
		scriptCase("parameters context", "SET log_parameter_max_length_on_error = -1;\nSELECT :a::int / :b::int;\n", "-t", "1", "-M", "extended", "-D", "a=1", "-D", "b=0"),
		scriptCase("undefined variable simple", "SELECT :two;\n", "-t", "2"),
		scriptCase("undefined variable extended", "SELECT :two;\n", "-t", "2", "-M", "extended"),
		scriptCase("undefined variable prepared", "SELECT :two;\n", "-t", "2", "-M", "prepared"),
		scriptCase("undefined variable typed prepared", "SELECT :two::int + 1 AS x \\gset\nSELECT :x;\n", "-t", "1", "-M", "prepared"),
		scriptCase("dollar parameter simple", "SELECT $1;\n", "-t", "1"),
		scriptCase("dollar parameter prepared", "SELECT $1;\n", "-t", "1", "-M", "prepared"),
		scriptCase("256 parameters simple", func() string { s, _ := params(256); return s }(), "-t", "1"),
		scriptCase("copy", "COPY (SELECT 1) TO STDOUT;\n", "-t", "1"),
		scriptCase("error in second transaction", "SELECT 1/(:client_id + 1 - 1);\n", "-t", "2"),
		scriptCase("abort after some", "\\set x random(1, 1)\nSELECT CASE WHEN :x = 1 THEN 1/0 END;\n", "-t", "3"),

		// Pipelines misused: pgbench aborts the client (exit 2).
		scriptCase("startpipeline twice", "\\startpipeline\n\\startpipeline\nSELECT 1;\n\\endpipeline\n", "-t", "2", "-M", "extended"),
		scriptCase("endpipeline alone", "\\endpipeline\n", "-t", "2", "-M", "extended"),
		scriptCase("syncpipeline alone", "\\syncpipeline\n", "-t", "2", "-M", "extended"),
		scriptCase("pipeline left open", "\\startpipeline\nSELECT 1;\n", "-t", "2", "-M", "extended"),
		scriptCase("gset in pipeline", "\\startpipeline\nSELECT 1 AS a \\gset\n\\endpipeline\n", "-t", "2", "-M", "extended"),
		scriptCase("aset in pipeline", "\\startpipeline\nSELECT 1 AS a \\aset\n\\endpipeline\n", "-t", "2", "-M", "extended"),
		scriptCase("sleep in pipeline", "\\startpipeline\nSELECT 1;\n\\sleep 1 ms\n\\endpipeline\n", "-t", "2", "-M", "extended"),
		scriptCase("pipeline in simple mode", "\\startpipeline\nSELECT 1;\n\\endpipeline\n", "-t", "2"),
		scriptCase("error in pipeline", "\\startpipeline\nSELECT 1/0;\nSELECT 1;\n\\endpipeline\n", "-t", "2", "-M", "extended"),

		// \shell and \setshell.
		scriptCase("shell", "\\shell echo hello from the shell\nSELECT 1;\n", "-t", "2"),
		scriptCase("shell with variables", "\\set x 42\n\\shell echo x is :x and ::literal\n", "-t", "1"),
		scriptCase("setshell", "\\setshell x echo 5\nSELECT :x + 1;\n", "-t", "2"),
		scriptCase("setshell with variables", "\\set a 3\n\\setshell x expr :a + 4\n\\if :x = 7\nSELECT 'seven';\n\\else\nSELECT 1/0;\n\\endif\n", "-t", "1"),
		scriptCase("setshell spaces around the integer", "\\setshell x printf ' 12 \\n'\nSELECT :x;\n", "-t", "1"),
		scriptCase("setshell not an integer", "\\setshell x echo abc\n", "-t", "1"),
		scriptCase("setshell no output", "\\setshell x true\n", "-t", "1"),
		scriptCase("shell fails", "\\shell exit 3\n", "-t", "1"),
		scriptCase("shell undefined variable", "\\shell echo :nosuch\n", "-t", "1"),
		scriptCase("setshell undefined variable", "\\setshell x echo :nosuch\n", "-t", "1"),
		scriptCase("setshell invalid variable name", "\\setshell 1x echo 1\n", "-t", "1"),
		scriptCase("shell too long", "\\shell echo "+strings.Repeat("x", 300)+"\n", "-t", "1"),
		scriptCase("setshell reads a file", "\\setshell x cat n.txt\nSELECT :x;\n", "-t", "1"),

		// More option errors.
		{name: "threads more than clients", args: []string{"-c", "2", "-j", "3"}, db: "none", keep: func(string) string { return "" }},
		{name: "negative transactions", args: []string{"-t", "-1"}, db: "none"},
		{name: "time zero", args: []string{"-T", "0"}, db: "none"},
		{name: "progress zero", args: []string{"-P", "0"}, db: "none"},
		{name: "negative rate", args: []string{"-R", "-1"}, db: "none"},
		{name: "negative scale", args: []string{"-s", "-1"}, db: "none"},
		{name: "negative max tries", args: []string{"--max-tries=-1"}, db: "none"},
		{name: "fillfactor too high", args: []string{"-i", "-F", "101"}, db: "none"},
		{name: "no init steps", args: []string{"-i", "-I", ""}, db: "none"},
		{name: "partitions in benchmarking mode", args: []string{"--partitions", "2"}, db: "none"},
		{name: "partition method without partitions", args: []string{"-i", "--partition-method", "hash"}, db: "none"},
		{name: "negative partitions", args: []string{"-i", "--partitions=-1"}, db: "none"},
		{name: "zero weight", args: []string{"-b", "select-only@0"}, db: "none"},
		{name: "negative weight", args: []string{"-b", "select-only@-1"}, db: "none"},
		{name: "weight not a number", args: []string{"-b", "select-only@abc"}, db: "none"},
		{name: "define without name", args: []string{"-D", "=bar"}, db: "none"},
		{name: "define invalid name", args: []string{"-D", "1x=2"}, db: "none"},
		{name: "show unknown script", args: []string{"--show-script", "nosuch"}, db: "none"},
		{name: "sampling with aggregate", args: []string{"-l", "--aggregate-interval", "1", "--sampling-rate", "0.5"}, db: "none"},
		{name: "aggregate and duration", args: []string{"-l", "--aggregate-interval", "3", "-T", "5"}, db: "none"},
		{name: "latency limit zero", args: []string{"-L", "0"}, db: "none"},
		{name: "ambiguous long option", args: []string{"--p", "5"}, db: "none"},
		{name: "missing option argument", args: []string{"-c"}, db: "none"},
		{name: "exit on abort is pgbench 17's", args: []string{"--exit-on-abort"}, db: "none", differs: newerOption},
		{name: "dbname is pgbench 17's", args: []string{"--dbname", "x"}, db: "none", differs: newerOption},
		{name: "connect and log", args: []string{"-C", "-l", "--aggregate-interval", "1", "-i"}, db: "none"},

		// More scripts that run.
		scriptCase("two scripts", "SELECT 1;\n", "-t", "4", "-f", "s.sql@2", "--random-seed", "7", "-r"),
		{name: "stdin script", args: []string{"-n", "-t", "2", "-f", "-"}, stdin: "SELECT 1;\n", db: "empty"},
		scriptCase("scale variable", "\\set x :scale * 2\nSELECT :x;\n", "-t", "1", "-s", "3"),
		scriptCase("define scale", "SELECT :scale;\n", "-t", "1", "-D", "scale=5"),
		scriptCase("negative sleep", "\\sleep -1\nSELECT 1;\n", "-t", "1"),
		scriptCase("pg_sleep", "SELECT pg_sleep(0.01);\n", "-t", "2"),
		scriptCase("variable in quotes", "\\set x 5\nSELECT ':x';\n", "-t", "1"),
		scriptCase("variable in quotes prepared", "\\set x 5\nSELECT ':x';\n", "-t", "1", "-M", "prepared"),
		scriptCase("non-ascii variable name", "\\set é 5\nSELECT :é;\n", "-t", "1"),
		scriptCase("non-ascii text", "SELECT 'é' AS e \\gset\nSELECT length(':e');\n", "-t", "1"),
		scriptCase("non-ascii literal", "SELECT 'héllo wörld';\n", "-t", "1", "-M", "extended"),
		scriptCase("rollback", "BEGIN;\nSELECT 1;\nROLLBACK;\n", "-t", "2"),
		scriptCase("elif not taken with undefined", "\\if true\nSELECT 1;\n\\elif :nosuch\nSELECT 2;\n\\endif\n", "-t", "1"),
		scriptCase("gset prepared", "SELECT 7 AS x \\gset\nSELECT :x;\n", "-t", "2", "-M", "prepared"),
		scriptCase("compound", "SELECT 1 \\; SELECT 2;\n", "-t", "1"),
		scriptCase("per command report", "\\set x 1\nSELECT :x;\n\\sleep 1 ms\n", "-t", "3", "-r"),
		scriptCase("hash functions", "\\set a hash_murmur2(5, 1) + hash_fnv1a(5, 1)\n\\set b permute(3, 10, 1)\nSELECT :a, :b;\n", "-t", "1"),
		scriptCase("random distributions", "\\set a random_gaussian(1, 10, 2.5)\n\\set b random_exponential(1, 10, 1.5)\n\\set c random_zipfian(1, 10, 1.5)\nSELECT 1;\n", "-t", "2", "--random-seed", "3"),
		scriptCase("case expression", "\\set x CASE WHEN 1 > 2 THEN 1 ELSE 2 END\nSELECT :x;\n", "-t", "1"),

		// More run-time errors.
		scriptCase("gaussian parameter", "\\set x random_gaussian(1, 10, 1.5)\n", "-t", "1"),
		scriptCase("exponential parameter", "\\set x random_exponential(1, 10, 0)\n", "-t", "1"),
		scriptCase("zipfian parameter", "\\set x random_zipfian(1, 10, 0.5)\n", "-t", "1"),
		scriptCase("empty random range", "\\set x random(5, 1)\n", "-t", "1"),
		scriptCase("bigint overflow", "\\set x 9223372036854775807 + 1\n", "-t", "1"),
		scriptCase("double to int", "\\set x int(1e300)\n", "-t", "1"),
		scriptCase("permute size", "\\set x permute(1, 0)\n", "-t", "1"),
		scriptCase("malformed variable", "SELECT 'abc' AS v \\gset\n\\set x :v + 1\n", "-t", "1"),
		scriptCase("gset prefix invalid name", "SELECT 1 \\gset p_\n", "-t", "1"),
		scriptCase("compound second part fails", "SELECT 1 \\; SELECT 1/0;\n", "-t", "1"),
		scriptCase("aset compound empty middle", "SELECT 1 AS a \\; SELECT 2 AS b WHERE false \\; SELECT 3 AS c \\aset\nSELECT :a + :c;\n", "-t", "1"),
		scriptCase("error position multibyte", "SELECT 'é', 'ü', 'x'::int;\n", "-t", "1"),
		scriptCase("error position multibyte extended", "SELECT 'é', 'ü', :v::int;\n", "-t", "1", "-M", "extended", "-D", "v=x"),
		scriptCase("latin1 bytes", "SELECT 'caf\xe9';\n", "-t", "1"),
		func() pgbenchCase {
			c := scriptCase("end of script in a transaction with two clients", "BEGIN;\nSELECT 1;\n", "-t", "3", "-c", "2")
			c.unordered = true
			return c
		}(),
		scriptCase("one client aborts", "\\if :client_id = 1\nSELECT 1/0;\n\\endif\nSELECT 1;\n", "-t", "3", "-c", "3", "-j", "3"),
		scriptCase("abort with connect", "SELECT 1/0;\n", "-t", "2", "-C"),
		scriptCase("abort with per command report", "SELECT 1;\nSELECT 1/0;\n", "-t", "2", "-r"),
		scriptCase("abort with failures detailed", "SELECT 1/0;\n", "-t", "2", "--failures-detailed", "--max-tries", "2"),
		scriptCase("abort under a rate", "SELECT 1/0;\n", "-t", "2", "-R", "100"),
		scriptCase("rollback of a failed block", "BEGIN;\nSELECT 1/0;\nCOMMIT;\n", "-t", "1"),
		scriptCase("deadlock words", "DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = 'deadlock_detected'; END $$;\n", "-t", "1", "--max-tries", "2"),
		scriptCase("serialization failure given up", "DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = 'serialization_failure'; END $$;\n", "-t", "2", "--verbose-errors"),
		scriptCase("serialization failure retried", "DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = 'serialization_failure'; END $$;\n", "-t", "1", "--max-tries", "3", "--verbose-errors", "--failures-detailed"),
		scriptCase("raise with detail and hint", "DO $$ BEGIN RAISE EXCEPTION 'boom' USING DETAIL = 'the detail', HINT = 'the hint'; END $$;\n", "-t", "1"),
		scriptCase("notice with detail", "DO $$ BEGIN RAISE NOTICE 'note' USING DETAIL = 'more'; END $$;\n", "-t", "1"),
		scriptCase("internal query position", "DO $$ BEGIN EXECUTE 'SELECT 1 +'; END $$;\n", "-t", "1"),

		// Meta-commands in capitals: pgbench names them as written.
		scriptCase("capital set fails", "\\SET x 1/0\n", "-t", "1"),
		scriptCase("capital sleep fails", "\\Sleep :nosuch\n", "-t", "1"),
		scriptCase("capital if", "\\IF 1\nSELECT 1;\n\\ENDIF\n", "-t", "1"),
		scriptCase("sleep double variable", "\\set d 1.5\n\\sleep :d ms\nSELECT 1;\n", "-t", "1"),
		scriptCase("sleep variable microseconds", "\\set d 200\n\\sleep :d us\nSELECT 1;\n", "-t", "1"),
		scriptCase("define with equals", "SELECT :x::text;\n", "-t", "1", "-D", "x='a=b'"),
		scriptCase("quote in a value", "SELECT :x;\n", "-t", "1", "-D", "x='it''s'"),
		scriptCase("invalid command in an if", "\\if 1\n\\frob\n\\endif\n"),
		scriptCase("log", "SELECT 1;\n", "-t", "3", "-l"),
		scriptCase("ddl prepared", "CREATE TEMP TABLE IF NOT EXISTS x (a int);\nINSERT INTO x VALUES (1);\n", "-t", "2", "-M", "prepared"),

		// More init.
		{name: "init scale 2", args: []string{"-i", "-q", "-s", "2"}, db: "empty"},
		{name: "init tablespace", args: []string{"-i", "-q", "--tablespace", "pg_default", "--index-tablespace", "pg_default"}, db: "empty"},
		{name: "init all steps", args: []string{"-i", "-q", "-I", "dtgvpf"}, db: "empty"},
		{name: "init server-side partitions", args: []string{"-i", "-I", "dtGvp", "--partitions", "2"}, db: "empty"},
		{name: "init keys without tables", args: []string{"-i", "-I", "p"}, db: "empty"},
		{name: "init over existing tables", args: []string{"-i", "-q"}},
		{name: "builtin at another scale", args: []string{"-n", "-t", "1", "-S", "-s", "1"}},
		{name: "builtin per command report", args: []string{"-n", "-t", "3", "-r", "--random-seed", "3"}},

		// More connection failures.
		{name: "conninfo database", db: "none", args: []string{"-n", "-S", "-t", "1", "dbname=nosuchdb"}},
		{name: "conninfo refused", db: "none", args: []string{"-n", "-S", "-t", "1", "host=127.0.0.1 port=1 dbname=x"}},
		{name: "two hosts refused", db: "empty", args: []string{"-n", "-S", "-t", "1", "-h", "127.0.0.1,127.0.0.2", "-p", "1"}},
		{name: "init connection refused", db: "empty", args: []string{"-i", "-p", "1"}},

		// Connection failures.
		{name: "no such database", args: []string{"-n", "-S", "-t", "1", "-d", "nosuchdb"}, db: "none"},
		{name: "no such database init", args: []string{"-i", "nosuchdb"}, db: "none"},
		{name: "no such user", db: "empty", args: []string{"-n", "-S", "-t", "1", "-U", "nosuchuser"}},
		{name: "connection refused", db: "empty", args: []string{"-n", "-S", "-t", "1", "-p", "1"}},
		{name: "port out of range", db: "empty", args: []string{"-n", "-S", "-t", "1", "-p", "99999"}},
		{name: "port not a number", db: "empty", args: []string{"-n", "-S", "-t", "1", "-p", "abc"}},
		{name: "no such host", db: "empty", args: []string{"-n", "-S", "-t", "1", "-h", "nosuchhost.invalid"}},
		{name: "no such socket", db: "empty", args: []string{"-n", "-S", "-t", "1", "-h", "/nonexistent"}},
	}
	// setshell reads a file written by the case.
	for i := range cases {
		if cases[i].name == "setshell reads a file" {
			cases[i].files["n.txt"] = "17\n"
		}
	}
	return cases
}
