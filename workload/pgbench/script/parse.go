package script

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"

	txtprintable "github.com/txload/txload/printable"
	"github.com/txload/txload/workload/pgbench/expr"
)

// maxArgs is pgbench's MAX_ARGS: a meta-command has at most maxArgs-1
// arguments.
const maxArgs = 256

// parser holds the state of one Parse.
type parser struct {
	file       string
	src        string
	lex        sqlLexer
	lineStarts []int // offsets of the first byte of each line
	cmds       []Command
	gsetLines  map[int]int // command index -> line of its \gset or \aset
	lastMeta   int         // the line of the last meta-command read
	major      int         // the pgbench version parsed for (0: the newest)
}

// parse parses src; file names it in errors and title is the Script's
// Title.
func parse(file, title, src string, major int) (*Script, error) {
	if err := checkText(file, src); err != nil {
		return nil, err
	}
	p := &parser{file: file, src: src, lex: sqlLexer{src: src}, lineStarts: []int{0}, major: major}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			p.lineStarts = append(p.lineStarts, i+1)
		}
	}
	if err := p.run(); err != nil {
		return nil, err
	}
	if len(p.cmds) == 0 {
		msg := fmt.Sprintf("empty command list for script \"%s\"", file)
		return nil, &Error{File: file, Line: 1, Msg: msg, pg: pgForm{plain: msg}}
	}
	if err := p.checkConditionals(); err != nil {
		return nil, err
	}
	return &Script{Name: file, Title: title, Weight: 1, Commands: p.cmds, gsetLines: p.gsetLines}, nil
}

// lineOf returns the line (from 1) of offset off; pgbench counts '\n's.
func (p *parser) lineOf(off int) int {
	return sort.Search(len(p.lineStarts), func(i int) bool { return p.lineStarts[i] > off })
}

func (p *parser) errorf(off int, format string, args ...any) *Error {
	return &Error{File: p.file, Line: p.lineOf(off), Msg: fmt.Sprintf(format, args...)}
}

// run is pgbench's ParseScript loop: collect SQL up to a ';', a backslash
// or the end; then, at a backslash, read the meta-command.
func (p *parser) run() error {
	var buf sqlBuf
	for {
		buf.reset()
		res := p.lex.scan(&buf)
		p.addSQL(&buf)
		if res == scanBackslash {
			if err := p.meta(p.lex.pos - 1); err != nil {
				return err
			}
		}
		if res == scanEOF {
			return nil
		}
	}
}

// addSQL makes a command of the collected text, unless it holds only white
// space and "--" comments (pgbench's skip_sql_comments).
func (p *parser) addSQL(b *sqlBuf) {
	text := b.text
	i := 0
	for {
		if i < len(text) && isCSpace(text[i]) {
			i++
		} else if i+1 < len(text) && text[i] == '-' && text[i+1] == '-' {
			j := strings.IndexByte(string(text[i:]), '\n')
			if j < 0 {
				return
			}
			i += j + 1
		} else {
			break
		}
	}
	if i == len(text) {
		return
	}
	end := len(text)
	for end > i && isCSpace(text[end-1]) {
		end--
	}
	s := string(text[i:end])
	prepared, params, pos := parseQuery(s)
	p.cmds = append(p.cmds, Command{
		Kind:     SQL,
		File:     p.file,
		Line:     p.lineOf(b.offs[i]),
		Text:     s,
		Prepared: prepared,
		Params:   params,
		ParamPos: pos,
		Compound: b.compound,
	})
}

// isCSpace is C's isspace in the C locale.
func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// parseQuery is pgbench's parseQuery: every :name in the text, wherever it
// is (quotes and comments included), becomes $1, $2, ... in order, one
// per occurrence; a run of colons not followed by a name (as in a ::
// cast) is skipped whole. A name starts with a letter, '_' or a non-ASCII
// byte and goes on with those and digits.
func parseQuery(s string) (prepared string, params []string, pos []int) {
	var sb strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if s[i] != ':' {
			i++
			continue
		}
		j := i + 1
		if j < len(s) && isIdentStart(s[j]) {
			for j++; j < len(s) && isVarChar(s[j]); j++ {
			}
		}
		if j == i+1 {
			for i < len(s) && s[i] == ':' {
				i++
			}
			continue
		}
		params = append(params, s[i+1:j])
		pos = append(pos, i)
		sb.WriteString(s[last:i])
		fmt.Fprintf(&sb, "$%d", len(params))
		last = j
		i = j
	}
	if params == nil {
		return s, nil, nil
	}
	sb.WriteString(s[last:])
	return sb.String(), params, pos
}

// metaLexer reads the words of a meta-command as pgbench's exprscan.l:
// separated by [ \t\r\f\v], up to the end of the line; a backslash at the
// end of a line continues the command on the next.
type metaLexer struct {
	src string
	pos int
}

// continuation returns the length of a continuation (\ then \n or \r\n) at
// i, or 0.
func continuation(src string, i int) int {
	if i >= len(src) || src[i] != '\\' {
		return 0
	}
	if strings.HasPrefix(src[i+1:], "\n") {
		return 2
	}
	if strings.HasPrefix(src[i+1:], "\r\n") {
		return 3
	}
	return 0
}

func isMetaSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'
}

// word returns the next word and its offset; ok is false at the end of the
// command (the newline is consumed) or of the script.
func (m *metaLexer) word() (w string, off int, ok bool) {
	src := m.src
	for m.pos < len(src) {
		c := src[m.pos]
		switch {
		case isMetaSpace(c):
			m.pos++
		case continuation(src, m.pos) > 0:
			m.pos += continuation(src, m.pos)
		case c == '\n':
			m.pos++
			return "", 0, false
		default:
			start := m.pos
			for m.pos < len(src) && !isMetaSpace(src[m.pos]) && src[m.pos] != '\n' {
				if k := continuation(src, m.pos); k > 0 {
					w = src[start:m.pos]
					m.pos += k
					return w, start, true
				}
				m.pos++
			}
			return src[start:m.pos], start, true
		}
	}
	return "", 0, false
}

// skipSpace skips white space and continuations and returns where the
// next word begins.
func (m *metaLexer) skipSpace() int {
	for m.pos < len(m.src) {
		if isMetaSpace(m.src[m.pos]) {
			m.pos++
		} else if k := continuation(m.src, m.pos); k > 0 {
			m.pos += k
		} else {
			break
		}
	}
	return m.pos
}

// rest returns the rest of the command, up to the end of its line (which is
// consumed), continuations replaced by a space, without surrounding space.
func (m *metaLexer) rest() string {
	var sb strings.Builder
	src := m.src
	for m.pos < len(src) {
		if k := continuation(src, m.pos); k > 0 {
			sb.WriteByte(' ')
			m.pos += k
			continue
		}
		c := src[m.pos]
		m.pos++
		if c == '\n' {
			break
		}
		sb.WriteByte(c)
	}
	return strings.TrimFunc(sb.String(), func(r rune) bool { return r < 0x80 && isMetaSpace(byte(r)) })
}

// meta reads the meta-command whose backslash is at offset bs (the lexer
// is just after it) and adds it, merges it (\gset, \aset), or ignores it
// (a lone backslash). Its errors are worded as pgbench's: each also holds
// the form pgbench prints (see Error.Pgbench), with the command's line and
// the column where pgbench points.
func (p *parser) meta(bs int) error {
	m := &metaLexer{src: p.src, pos: bs + 1}
	defer func() { p.lex.pos = m.pos }()

	name, _, ok := m.word()
	if !ok {
		return nil // a backslash alone on its line: pgbench ignores it
	}
	cmd := Command{File: p.file, Line: p.lineOf(bs), Name: name}
	defer func() { p.lastMeta = cmd.Line }()
	text := func() string {
		return strings.TrimRight(p.src[bs:m.pos], "\r\n")
	}
	// fail is an error at the command, in txload's words (msg) and
	// pgbench's (pgMsg, more; its line echoed when line, the caret at
	// column col, -1 for none).
	fail := func(msg, pgMsg, more string, line bool, col int) *Error {
		e := p.errorf(bs, "%s", msg)
		e.pg = pgForm{msg: pgMsg, more: more, command: name, column: col}
		if line {
			e.pg.line = text()
		}
		return e
	}

	switch lname := asciiLower(name); lname {
	case "set", "if", "elif":
		cmd.Kind = map[string]Kind{"set": Set, "if": If, "elif": Elif}[lname]
		if cmd.Kind == Set {
			v, _, ok := m.word()
			if !ok {
				return fail(fmt.Sprintf("missing argument in command \"%s\"", name), "missing argument", "", false, -1)
			}
			cmd.Var = v
		}
		exprAt := m.skipSpace()
		cmd.ExprSrc = m.rest()
		cmd.Text = text()
		// Where pgbench's scanner stood at the end of the expression:
		// on the newline (or the last character of a script without one).
		endCol := m.pos - 1 - bs
		if m.pos > 0 && m.pos <= len(p.src) && p.src[m.pos-1] == '\n' {
			endCol = len(strings.TrimRight(p.src[bs:m.pos-1], "\r"))
		}
		if cmd.ExprSrc == "" {
			return fail(fmt.Sprintf("missing expression in command \"%s\"", name), "syntax error", "", true, endCol)
		}
		n, err := expr.Parse(cmd.ExprSrc)
		if err != nil {
			e := fail(fmt.Sprintf("%v in command \"%s\"", err, name), "", "", true, endCol)
			var se *expr.SyntaxError
			if errors.As(err, &se) {
				e.pg.msg = se.Msg
				if se.Msg != "syntax error" {
					e.pg.more = se.Detail
				}
				if se.Pos < len(cmd.ExprSrc) {
					e.pg.column = exprAt - bs + se.End - 1
				}
			} else {
				e.pg.msg = err.Error()
			}
			return e
		}
		cmd.Expr = n
		p.cmds = append(p.cmds, cmd)
		return nil
	}

	// The other commands: whitespace-separated words.
	var args []string
	var offs []int // each word's column
	for {
		w, off, ok := m.word()
		if !ok {
			break
		}
		if len(args)+1 >= maxArgs {
			return fail(fmt.Sprintf("too many arguments in command \"%s\"", name), "too many arguments", "", false, -1)
		}
		args = append(args, w)
		offs = append(offs, off-bs)
	}
	cmd.Text = text()

	lname := asciiLower(name)
	if lname == "syncpipeline" && p.major > 0 && p.major < 17 {
		lname = "" // pgbench 17's
	}
	switch lname {
	case "shell":
		if len(args) < 1 {
			return fail(fmt.Sprintf("missing command in command \"%s\"", name), "missing command", "", true, -1)
		}
		cmd.Kind, cmd.Args = Shell, args
	case "setshell":
		if len(args) < 2 {
			return fail(fmt.Sprintf("missing argument in command \"%s\"", name), "missing argument", "", true, -1)
		}
		cmd.Kind, cmd.Var, cmd.Args = SetShell, args[0], args[1:]
	case "sleep":
		if err := p.sleep(&cmd, args, offs, fail); err != nil {
			return err
		}
	case "else", "endif", "startpipeline", "endpipeline", "syncpipeline":
		if len(args) > 0 {
			return fail(fmt.Sprintf("unexpected argument in command \"%s\"", name), "unexpected argument", "", true, -1)
		}
		cmd.Kind = map[string]Kind{"else": Else, "endif": Endif, "startpipeline": StartPipeline,
			"endpipeline": EndPipeline, "syncpipeline": SyncPipeline}[lname]
	case "gset", "aset":
		if len(args) > 1 {
			return fail(fmt.Sprintf("too many arguments in command \"%s\"", name), "too many arguments", "", true, -1)
		}
		// pgbench merges \gset and \aset into the previous command, which
		// must be SQL not already ended by one (blank lines, comments and
		// a ';' may separate them).
		if len(p.cmds) == 0 || p.cmds[len(p.cmds)-1].Kind != SQL ||
			p.cmds[len(p.cmds)-1].Gset || p.cmds[len(p.cmds)-1].Aset {
			e := p.errorf(bs, "\\%s must follow an SQL command", lname)
			// pgbench says \gset for both, names the command before, and
			// a line of its own (as pgbench 15 counts, measured): the one
			// after the previous meta-command, or with none the number
			// of newlines in the script.
			e.pg = pgForm{msg: "\\gset must follow an SQL command", column: -1, lineno: max(1, strings.Count(p.src, "\n"))}
			if p.lastMeta > 0 {
				e.pg.lineno = p.lastMeta + 1
			}
			if len(p.cmds) > 0 && (p.cmds[len(p.cmds)-1].Kind != SQL) {
				e.pg.more = p.cmds[len(p.cmds)-1].firstLine()
			}
			return e
		}
		prev := &p.cmds[len(p.cmds)-1]
		prev.Gset, prev.Aset = lname == "gset", lname == "aset"
		if len(args) == 1 {
			prev.Prefix = args[0]
		}
		if p.gsetLines == nil {
			p.gsetLines = map[int]int{}
		}
		p.gsetLines[len(p.cmds)-1] = cmd.Line
		return nil
	default:
		return fail(fmt.Sprintf("unknown meta-command \"\\%s\"", name), "invalid command", "", true, -1)
	}
	p.cmds = append(p.cmds, cmd)
	return nil
}

// firstLine is how pgbench shows a command in its messages: its first
// line, at most 127 bytes.
func (c *Command) firstLine() string {
	l := c.Text
	if len(l) > 127 {
		l = l[:127]
	}
	if i := strings.IndexAny(l, "\n\r"); i >= 0 {
		l = l[:i]
	}
	return l
}

// sleep reads \sleep's arguments as pgbench 15 does: a number (with an
// optional sign and an optional unit glued to it: 10ms) or :variable, then
// an optional unit us, ms or s (in any case). offs are the words' columns.
func (p *parser) sleep(cmd *Command, args []string, offs []int, fail func(msg, pgMsg, more string, line bool, col int) *Error) error {
	name := cmd.Name
	if len(args) < 1 {
		return fail(fmt.Sprintf("missing argument in command \"%s\"", name), "missing argument", "", true, -1)
	}
	if len(args) > 2 {
		return fail(fmt.Sprintf("too many arguments in command \"%s\"", name), "too many arguments", "", true, offs[2])
	}
	cmd.Kind = Sleep
	arg := args[0]
	unit, unitCol := "", 0
	if len(args) == 2 {
		unit, unitCol = args[1], offs[1]
	}
	if strings.HasPrefix(arg, ":") {
		// pgbench looks the variable up when it runs (":" alone names
		// the variable "").
		cmd.SleepVar = arg[1:]
		cmd.SleepVarSet = true
	} else {
		i := 0
		if i < len(arg) && (arg[i] == '+' || arg[i] == '-') {
			i++
		}
		digits := i
		for i < len(arg) && arg[i] >= '0' && arg[i] <= '9' {
			i++
		}
		if i < len(arg) {
			if len(args) == 1 && i > digits {
				unit, unitCol = arg[i:], offs[0]+i
			} else {
				return fail(fmt.Sprintf("invalid sleep time, must be an integer (%s) in command \"%s\"", arg, name),
					"invalid sleep time, must be an integer", arg, true, offs[0])
			}
		}
		cmd.SleepValue = atoi(arg[:i])
	}
	switch asciiLower(unit) {
	case "", "s":
		cmd.Unit = time.Second
	case "ms":
		cmd.Unit = time.Millisecond
	case "us":
		cmd.Unit = time.Microsecond
	default:
		return fail(fmt.Sprintf("unrecognized time unit, must be us, ms or s (%s) in command \"%s\"", unit, name),
			"unrecognized time unit, must be us, ms or s", unit, true, unitCol)
	}
	return nil
}

// atoi reads [+-]digits (possibly only a sign: 0), saturating.
func atoi(s string) int64 {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	const limit = 1<<63 - 1
	var v int64
	for i := 0; i < len(s); i++ {
		d := int64(s[i] - '0')
		if v > (limit-d)/10 {
			v = limit
			break
		}
		v = v*10 + d
	}
	if neg {
		return -v
	}
	return v
}

func validVariableName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 0x80 || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return true
}

// checkText refuses a script holding a NUL byte: a binary file (pgbench
// would read it only up to the NUL). Any other bytes are sent as they are,
// as pgbench sends them: the server reads them in the client encoding.
func checkText(file, src string) error {
	i := strings.IndexByte(src, 0)
	if i < 0 {
		return nil
	}
	line := 1 + strings.Count(src[:i], "\n")
	return &Error{File: file, Line: line, Msg: fmt.Sprintf("not a text file: NUL byte at offset %d", i)}
}

func printable(s string) string {
	return txtprintable.Quote(s, func(r rune) bool { return !unicode.IsPrint(r) })
}
