package pgbench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
	"github.com/txload/txload/workload/pgbench/expr"
	"github.com/txload/txload/workload/pgbench/script"
)

// program runs pgbench scripts as an executor Program: a state machine over
// the script's commands that queues each SQL command on the connection and
// continues when its result is in, as pgbench's own client state machine
// does. Nothing is allocated per transaction on the paths the builtins take.
//
// An error that ends the client carries pgbench's lines for it (see
// clientError): a meta-command that failed, a \gset that got no row, a
// script that ended inside a transaction block or a pipeline.
type program struct {
	scripts [][]script.Command
	stmts   [][]*executor.Stmt // per script and command: the SQL commands' statements
	mode    script.Protocol
	id      int // the client's number, in pgbench's lines

	prng  *expr.PRNG // the scripts' random functions, as pgbench's
	saved expr.PRNG  // the random state at the start of the transaction
	// vars holds each variable behind a pointer that stays its own once
	// set (a variable is never unset), so that params and sets can keep
	// it: a command finds its variables without a map lookup after the
	// first time.
	vars   map[string]*expr.Value
	params [][][]*expr.Value // per script, command and parameter: nil until found
	sets   [][]*expr.Value   // per script and command: \set's variable, nil until set
	// recent are the variables expressions looked up last (:scale in
	// every builtin transaction): found again without the map's hashing.
	recent     [4]recentVar
	recentNext int
	env        expr.Env

	op, pc int
	// at is the time the command under way began: the end of the last
	// one, read once per \set, or the loop's time of the exchange that
	// resumed the program. sent is when the exchange awaited was sent.
	at, sent time.Time
	sleeping bool
	inPipe   bool
	pending  []int  // commands (pc) of the exchange awaited, in queue order
	text     []byte // a simple-protocol statement with its values

	// pgbench: behave as pgbench where txload run differs (print the
	// server's notices; count a transaction that ends inside a block,
	// then abort). log takes notices and shell commands' standard error;
	// stdout the standard output of \shell.
	pgbench     bool
	log, stdout io.Writer

	// mark writes a marker inside each transaction (nil: none): queued
	// before the committing command, its result is pending[markAt] while
	// marking.
	mark   *workload.Mark
	markAt int
	// trace prints pgbench's -d lines (nil: none).
	trace *tracer
	// ident adds each builtin transaction's history row to the run's
	// identity sum (nil: not a builtin run with an audit).
	ident *identityEnder
}

// newProgram makes client id's program; pgbenchID is the client's number
// in pgbench's lines.
func (g *runGen) newProgram(id, pgbenchID int, seed uint64, vars map[string]expr.Value, log io.Writer, defaultSeed int64, mark *workload.Mark) *program {
	p := &program{mode: g.mode, id: pgbenchID, vars: make(map[string]*expr.Value, len(vars)+8), prng: expr.NewPRNG(seed),
		mark: mark, markAt: -1, pgbench: g.preset != nil, log: log, stdout: g.stdout}
	if p.log == nil {
		p.log = io.Discard
	}
	if p.stdout == nil {
		p.stdout = p.log
	}
	for k, v := range vars {
		p.vars[k] = &v
	}
	p.env = expr.Env{Lookup: p.lookup, Rand: rand.New(p.prng), Debug: log, DefaultSeed: defaultSeed}
	// Prepared statements are named as pgbench names them: P_0, P_1, ...
	// over the SQL commands of every script in order.
	n := 0
	preps := preparedWrites(g.scripts)
	for _, s := range g.scripts {
		p.scripts = append(p.scripts, s.Commands)
		row := make([]*executor.Stmt, len(s.Commands))
		for j := range s.Commands {
			c := &s.Commands[j]
			if c.Kind != script.SQL {
				continue
			}
			st := &executor.Stmt{SQL: c.Prepared}
			st.Begins, st.Commits = transactionEdges(c.Text)
			st.Writes, st.RollbackTo, st.Savepoint = statementTraits(c.Text, preps)
			if g.mode == prepared {
				st.Name = "P_" + strconv.Itoa(n)
			}
			n++
			row[j] = st
		}
		p.stmts = append(p.stmts, row)
		params := make([][]*expr.Value, len(s.Commands))
		for j := range s.Commands {
			params[j] = make([]*expr.Value, len(s.Commands[j].Params))
		}
		p.params = append(p.params, params)
		p.sets = append(p.sets, make([]*expr.Value, len(s.Commands)))
	}
	return p
}

func (p *program) lookup(name string) (expr.Value, bool) {
	for i := range p.recent {
		if r := &p.recent[i]; r.ref != nil && r.name == name {
			return *r.ref, true
		}
	}
	v := p.vars[name]
	if v == nil {
		return expr.Value{}, false
	}
	p.recent[p.recentNext] = recentVar{name: name, ref: v}
	p.recentNext = (p.recentNext + 1) % len(p.recent)
	return *v, true
}

// recentVar is a variable an expression looked up.
type recentVar struct {
	name string
	ref  *expr.Value
}

// param is parameter i of SQL command pc of the script under way: nil
// while the variable is not set.
func (p *program) param(pc, i int, name string) *expr.Value {
	ref := &p.params[p.op][pc][i]
	if *ref == nil {
		*ref = p.vars[name]
	}
	return *ref
}

// cmds returns command pc of the script under way.
func (p *program) cmds(pc int) *script.Command { return &p.scripts[p.op][pc] }

// Connected: statements prepared on the old connection are gone; the
// executor prepares them again on first use. Under pgbench the server's
// notices are printed as libpq prints them.
func (p *program) Connected(c *executor.Conn) {
	p.trace.connected()
	if p.pgbench {
		c.Notice = func(pe *pgconn.PgError) { fmt.Fprint(p.log, pg.LibpqNotice(pe, "", c.ClientEncoding())) }
	}
}

// Start runs script op from its first command. A retry replays the same
// random draws, as pgbench does, so that the retried transaction is the one
// that failed.
func (p *program) Start(c *executor.Conn, op, attempt int) executor.Action {
	if attempt == 1 {
		p.saved = *p.prng
	} else {
		*p.prng = p.saved
	}
	p.op, p.pc, p.inPipe, p.sleeping = op, 0, false, false
	p.ident.start()
	p.at = c.Now
	p.trace.script(op)
	p.pending, p.markAt = p.pending[:0], -1
	return p.run(c)
}

// Statement maps the i-th statement of the exchange to its command.
func (p *program) Statement(i int) int {
	if i < len(p.pending) {
		return p.pending[i]
	}
	return -1
}

// Resume continues after a \sleep or the results of SQL commands.
func (p *program) Resume(c *executor.Conn) executor.Action {
	p.at = c.Now
	if p.sleeping {
		p.sleeping = false
		c.Statement(p.op, p.pc-1, c.Now.Sub(p.sent))
		return p.run(c)
	}
	cmds := p.scripts[p.op]
	p.trace.receiving()
	for i, pc := range p.pending {
		r := c.Result(i)
		cmd := &cmds[pc]
		if i == p.markAt {
			if r.Err != nil {
				return executor.Action{Kind: executor.Finish, Err: fmt.Errorf("%s:%d: the transaction's marker: %w", cmd.File, cmd.Line, r.Err), Stmt: pc}
			}
			continue
		}
		if r.Err != nil {
			// The text libpq would show the error's position in: what was
			// sent, with $n under the extended protocol; none for a
			// prepared statement's execution.
			query := ""
			switch p.mode {
			case simple:
				query = string(p.text)
			case extended:
				query = p.stmts[p.op][pc].SQL
			}
			// pgbench reads a pipeline's results at its \endpipeline, and
			// names that command.
			shown := pc
			if k := p.pc - 1; k >= 0 && cmds[k].Kind == script.EndPipeline {
				shown = k
			}
			return executor.Action{Kind: executor.Finish, Err: p.serverError(c, shown, r, query), Stmt: pc}
		}
		if cmd.Gset || cmd.Aset {
			if err := p.store(r, pc, cmd); err != nil {
				return executor.Action{Kind: executor.Finish, Err: err, Stmt: pc}
			}
		}
		if p.mark.Open() && p.stmts[p.op][pc].Commits {
			p.mark.Resolve(r, c.Now)
		}
	}
	// The latency of a command is the time it was awaited: a pipeline's
	// statements are charged to its \endpipeline.
	c.Statement(p.op, p.pc-1, c.Now.Sub(p.sent))
	p.pending, p.markAt = p.pending[:0], -1
	return p.run(c)
}

// store applies \gset (exactly one row) or \aset (the last row, if any), as
// pgbench: a new variable needs a valid name.
func (p *program) store(r *executor.Result, pc int, cmd *script.Command) error {
	if cmd.Gset && r.Rows != 1 {
		return p.resultError(pc, r.Parts, fmt.Sprintf("expected one row, got %d", r.Rows))
	}
	if r.Kept() == 0 {
		return nil
	}
	what := "gset"
	if cmd.Aset {
		what = "aset"
	}
	for i := 0; i < r.Columns; i++ {
		v, _ := r.Value(0, i) // pgbench stores a NULL as empty text
		name := cmd.Prefix + string(r.Name(i))
		if err := p.assign(what, name, expr.ParseValue(string(v))); err != nil {
			return p.resultError(pc, r.Parts, "error storing into variable "+name, err.Error())
		}
	}
	return nil
}

// assign sets variable name, which must be a valid name when it is new
// (pgbench's lookupCreateVariable; what names the command in the error).
func (p *program) assign(what, name string, v expr.Value) error {
	_, err := p.set(what, name, v)
	return err
}

// set is assign, returning where the variable is kept.
func (p *program) set(what, name string, v expr.Value) (*expr.Value, error) {
	ref := p.vars[name]
	if ref == nil {
		if !script.ValidVariableName(name) {
			return nil, fmt.Errorf("%s: invalid variable name: \"%s\"", what, name)
		}
		ref = new(expr.Value)
		p.vars[name] = ref
	}
	*ref = v
	return ref, nil
}

// run executes commands from p.pc until one must be awaited.
func (p *program) run(c *executor.Conn) executor.Action {
	cmds := p.scripts[p.op]
	for p.pc < len(cmds) {
		pc := p.pc
		cmd := &cmds[pc]
		if cmd.Kind != script.SQL {
			p.trace.metaCommand(p.op, pc)
		}
		switch cmd.Kind {
		case script.Set:
			p.env.Script, p.env.Command = p.op, pc+1
			v, err := cmd.Expr.Eval(&p.env)
			if err != nil {
				return p.fail(pc, p.metaError(pc, cmd.Name, "evaluation of meta-command failed", err))
			}
			if ref := p.sets[p.op][pc]; ref != nil {
				*ref = v
			} else if p.sets[p.op][pc], err = p.set(cmd.Name, cmd.Var, v); err != nil {
				return p.fail(pc, p.metaError(pc, "set", "assignment of meta-command failed", err))
			}
			// One clock read a \set: its end is the next command's start.
			end := time.Now()
			c.Statement(p.op, pc, end.Sub(p.at))
			p.at = end
			p.pc++
		case script.Sleep:
			d, err := p.sleepFor(cmd)
			if err != nil {
				return p.fail(pc, p.metaError(pc, "sleep", "execution of meta-command failed", err))
			}
			p.pc++
			p.sleeping, p.sent = true, time.Now()
			return executor.Action{Kind: executor.Sleep, At: p.sent.Add(d)}
		case script.If:
			ok, err := p.cond(cmd, pc)
			if err != nil {
				return p.fail(pc, p.metaError(pc, cmd.Name, "evaluation of meta-command failed", err))
			}
			if ok {
				p.pc++
			} else if p.pc, err = p.nextBranch(cmds, cmd.Next); err != nil {
				return p.fail(pc, err)
			}
		case script.Elif, script.Else:
			// Reached by running the end of a taken branch: leave the chain.
			j := pc
			for cmds[j].Kind != script.Endif {
				j = cmds[j].Next
			}
			p.pc = j + 1
		case script.Endif:
			p.pc++
		case script.Shell, script.SetShell:
			start := time.Now()
			if err := p.shell(cmd); err != nil {
				what := "shell"
				if cmd.Kind == script.SetShell {
					what = "setshell"
				}
				return p.fail(pc, p.metaError(pc, what, "execution of meta-command failed", err))
			}
			p.at = time.Now()
			c.Statement(p.op, pc, p.at.Sub(start))
			p.pc++
		case script.StartPipeline:
			// txload run refused these before the run (script.CheckPipelines).
			switch {
			case p.mode == simple:
				return p.fail(pc, p.metaError(pc, "startpipeline", "cannot use pipeline mode with the simple query protocol", nil))
			case p.inPipe:
				return p.fail(pc, p.metaError(pc, "startpipeline", "already in pipeline mode", nil))
			}
			c.Pipeline(true)
			p.inPipe = true
			p.pc++
		case script.SyncPipeline:
			if !p.inPipe {
				return p.fail(pc, p.metaError(pc, "syncpipeline", "not in pipeline mode", nil))
			}
			c.Sync()
			p.pc++
		case script.EndPipeline:
			if !p.inPipe {
				return p.fail(pc, p.metaError(pc, "endpipeline", "not in pipeline mode", nil))
			}
			c.Pipeline(false)
			p.inPipe = false
			p.pc++
			if len(p.pending) > 0 {
				p.sent = p.at
				return executor.Action{Kind: executor.Await}
			}
		case script.SQL:
			if p.inPipe && (cmd.Gset || cmd.Aset) {
				what := map[bool]string{true: "gset", false: "aset"}[cmd.Gset]
				return p.fail(pc, p.metaError(pc, what, "\\"+what+" is not allowed in pipeline mode", nil))
			}
			if p.mark != nil && !p.mark.Open() && p.stmts[p.op][pc].Commits {
				p.queueMark(c, pc)
			}
			p.queue(c, pc, cmd)
			p.pc++
			if !p.inPipe {
				p.trace.receiving() // pgbench's first look, right after sending
				p.sent = p.at
				return executor.Action{Kind: executor.Await}
			}
		}
	}
	if p.inPipe {
		return executor.Action{Kind: executor.Finish, Err: pg.Fatal(p.clientAborted(len(cmds)-1, "end of script reached with pipeline open")), Stmt: -1}
	}
	if !c.Idle() {
		// The script ended inside a transaction block: pgbench counts the
		// transaction and aborts the client; txload run fails it (it
		// never committed) and stops, saying so.
		err := p.clientAborted(len(cmds)-1, "end of script reached without completing the last transaction")
		if p.pgbench {
			return executor.Action{Kind: executor.Finish, Err: &workload.AbortAfter{Err: err}, Stmt: -1}
		}
		return executor.Action{Kind: executor.Finish, Err: pg.Fatal(err), Stmt: -1}
	}
	return executor.Action{Kind: executor.Finish, Stmt: -1}
}

// fail ends the attempt on an error of the script itself (an expression,
// an undefined variable): no retry can cure it.
func (p *program) fail(pc int, err error) executor.Action {
	return executor.Action{Kind: executor.Finish, Err: err, Stmt: pc}
}

// queue sends SQL command pc with its variables bound: substituted as text
// for the simple protocol, as pgbench does (an unset variable stays as
// written); else as text parameters of types the server infers, an unset
// variable's as NULL (pgbench 15 sends what getVariable gives it: NULL).
func (p *program) queue(c *executor.Conn, pc int, cmd *script.Command) {
	st := p.stmts[p.op][pc]
	capture := executor.CaptureNone
	switch {
	case cmd.Gset:
		capture = executor.CaptureFirst
	case cmd.Aset:
		capture = executor.CaptureLast
	}
	p.pending = append(p.pending, pc)
	if p.mode == simple {
		b := p.text[:0]
		prev := 0
		for i, name := range cmd.Params {
			at := cmd.ParamPos[i]
			b = append(b, cmd.Text[prev:at]...)
			prev = at + 1 + len(name)
			if v := p.param(pc, i, name); v != nil {
				b = appendValue(b, *v)
			} else {
				b = append(b, cmd.Text[at:prev]...) // as pgbench: left as written
			}
		}
		b = append(b, cmd.Text[prev:]...)
		p.text = b
		p.trace.send(p.op, pc, st, b)
		c.Simple(b, st, capture)
		return
	}
	p.trace.send(p.op, pc, st, nil)
	params := c.Bind(st, capture)
	for i, name := range cmd.Params {
		ref := p.param(pc, i, name)
		if ref == nil {
			params.Null()
			continue
		}
		switch v := *ref; {
		case v.Kind == expr.Int:
			params.Int(v.I)
		case v.Kind == expr.Str:
			params.String(v.S)
		case v.Kind == expr.Null:
			params.Null()
		default:
			params.String(v.Text())
		}
	}
	params.Send()
}

func appendValue(b []byte, v expr.Value) []byte {
	switch v.Kind {
	case expr.Int:
		return strconv.AppendInt(b, v.I, 10)
	case expr.Str:
		return append(b, v.S...)
	}
	return append(b, v.Text()...)
}

// sleepFor is a \sleep's duration. A variable is read as pgbench reads it
// (atoi: its leading integer; "1.5" sleeps 1 unit), and must begin with a
// digit when that reads as 0.
func (p *program) sleepFor(cmd *script.Command) (time.Duration, error) {
	n := cmd.SleepValue
	if cmd.SleepVarSet {
		v, ok := p.lookup(cmd.SleepVar)
		if !ok {
			return 0, fmt.Errorf("%s: undefined variable \"%s\"", cmd.Name, cmd.SleepVar)
		}
		text := v.Text()
		if v.Kind == expr.Int {
			n = v.I
		} else {
			n = atoi(text)
		}
		if n == 0 && (text == "" || text[0] < '0' || text[0] > '9') {
			return 0, fmt.Errorf("%s: invalid sleep time \"%s\" for variable \"%s\"", cmd.Name, text, cmd.SleepVar)
		}
	}
	return time.Duration(n) * cmd.Unit, nil
}

// atoi is C's: optional white space and sign, then the leading digits; 0
// when there are none.
func atoi(s string) int64 {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	var n int64
	for _, r := range s {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int64(r-'0')
	}
	if neg {
		return -n
	}
	return n
}

// cond evaluates an \if or \elif with pgbench's truth rule.
func (p *program) cond(c *script.Command, pc int) (bool, error) {
	p.env.Script, p.env.Command = p.op, pc+1
	v, err := c.Expr.Eval(&p.env)
	if err != nil {
		return false, err
	}
	return v.Truth(), nil
}

// nextBranch evaluates the chain of an \if from the branch at j on, after
// the previous one was false.
func (p *program) nextBranch(cmds []script.Command, j int) (int, error) {
	for {
		c := &cmds[j]
		if c.Kind != script.Elif {
			return j + 1, nil // Else or Endif
		}
		ok, err := p.cond(c, j)
		if err != nil {
			return 0, p.metaError(j, c.Name, "evaluation of meta-command failed", err)
		}
		if ok {
			return j + 1, nil
		}
		j = c.Next
	}
}

// statementTraits says what a command's tag does not: whether it may
// write though its tag says SELECT (a data-modifying WITH, SELECT INTO;
// retest 13: a WITH … INSERT … RETURNING under a SELECT, committed before
// a failure, was retried and applied again; an EXECUTE of a statement
// prepared so, retest 14, or of one the scripts do not PREPARE), whether
// it is a ROLLBACK TO SAVEPOINT, whose tag is a ROLLBACK's, and the
// savepoint a SAVEPOINT, ROLLBACK TO or RELEASE names (executor.Stmt).
// The UPDATE of FOR [NO KEY] UPDATE locks, and writes nothing. prepared
// is whether each statement the scripts PREPARE writes (preparedWrites).
func statementTraits(text string, prepared map[string]bool) (writes, rollbackTo bool, savepoint string) {
	words := script.Words(text)
	if len(words) > 0 && strings.EqualFold(words[0], "EXECUTE") {
		if len(words) < 2 {
			return true, false, ""
		}
		w, known := prepared[script.Ident(words[1])]
		return w || !known, false, ""
	}
	writes = modifies(words)
	if len(words) < 2 {
		return writes, false, ""
	}
	switch first := strings.ToUpper(words[0]); first {
	case "ROLLBACK", "RELEASE":
		rest := words[1:]
		if first == "ROLLBACK" {
			rest = skipWord(rest, "WORK", "TRANSACTION")
			if len(rest) == 0 || !strings.EqualFold(rest[0], "TO") {
				return writes, false, ""
			}
			rollbackTo, rest = true, rest[1:]
		}
		if rest = skipWord(rest, "SAVEPOINT"); len(rest) > 0 {
			savepoint = script.Ident(rest[0])
		}
	case "SAVEPOINT":
		savepoint = script.Ident(words[1])
	}
	return writes, rollbackTo, savepoint
}

// skipWord is words without its first if that is one of kws.
func skipWord(words []string, kws ...string) []string {
	for _, k := range kws {
		if len(words) > 0 && strings.EqualFold(words[0], k) {
			return words[1:]
		}
	}
	return words
}

// modifies says whether words hold a data-modifying keyword: INSERT,
// DELETE, MERGE, INTO (SELECT INTO), or an UPDATE that is not FOR [NO KEY]
// UPDATE's lock.
func modifies(words []string) bool {
	for i, w := range words {
		switch strings.ToUpper(w) {
		case "INSERT", "DELETE", "MERGE", "INTO":
			return true
		case "UPDATE":
			if i == 0 || !strings.EqualFold(words[i-1], "FOR") && !strings.EqualFold(words[i-1], "KEY") {
				return true
			}
		}
	}
	return false
}

// preparedWrites is, for each statement the scripts PREPARE (PREPARE name
// [(types)] AS statement), whether it writes (modifies): one whose text
// takes a variable (PREPARE pw AS :q, its statement given with -D) may
// write (retest 15).
func preparedWrites(scripts []*script.Script) map[string]bool {
	out := map[string]bool{}
	for _, s := range scripts {
		for _, c := range s.Commands {
			if c.Kind != script.SQL {
				continue
			}
			for _, part := range script.Statements(c.Text) {
				words := script.Words(part)
				if len(words) > 2 && strings.EqualFold(words[0], "PREPARE") && !strings.EqualFold(words[1], "TRANSACTION") {
					name := script.Ident(words[1])
					out[name] = out[name] || len(c.Params) > 0 || modifies(words[2:])
				}
			}
		}
	}
	return out
}

// transactionEdges says whether a command opens a transaction block (its
// first statement is BEGIN or START TRANSACTION) or may end one with a
// commit (any of its statements is COMMIT, END, or PREPARE TRANSACTION).
// A compound's statements are joined by ';' in text, split where the
// script's lexer ends them (retest 12: a ';' inside a comment split
// "/* ; */ COMMIT" in two, and its COMMIT went unseen). Each is read past
// its leading comments: a "/* c */ COMMIT" commits all the same (retest
// 11: taken for no COMMIT, a failure after it was retried and the
// committed block applied again).
func transactionEdges(text string) (begins, commits bool) {
	for i, part := range script.Statements(text) {
		w := strings.Fields(strings.ToUpper(script.AfterComments(strings.TrimSuffix(part, ";"))))
		if len(w) == 0 {
			continue
		}
		switch w[0] {
		case "BEGIN", "START":
			if i == 0 {
				begins = true
			}
		case "COMMIT", "END":
			commits = true
		case "PREPARE":
			commits = commits || (len(w) > 1 && w[1] == "TRANSACTION")
		}
	}
	return begins, commits
}
