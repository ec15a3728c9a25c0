package pgbench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/txload/txload/internal/pg"
	"github.com/txload/txload/internal/pg/driver"
	"github.com/txload/txload/workload"
	"github.com/txload/txload/workload/pgbench/expr"
	"github.com/txload/txload/workload/pgbench/script"
)

// program runs pgbench scripts as a driver Program: a state machine over
// the script's commands that queues each SQL command on the connection and
// continues when its result is in, as pgbench's own client state machine
// does. Nothing is allocated per transaction on the paths the builtins take.
type program struct {
	scripts [][]script.Command
	stmts   [][]*driver.Stmt // per script and command: the SQL commands' statements
	mode    protocol

	prng  *expr.PRNG // the scripts' random functions, as pgbench's
	saved expr.PRNG  // the random state at the start of the transaction
	vars  map[string]expr.Value
	env   expr.Env

	op, pc   int
	sent     time.Time // when the exchange awaited was sent
	sleeping bool
	inPipe   bool
	pending  []int  // commands (pc) of the exchange awaited, in queue order
	text     []byte // a simple-protocol statement with its values

	// mark writes a marker inside each transaction (nil: none): queued
	// before the committing command, its result is pending[markAt] while
	// marking.
	mark   *workload.Mark
	markAt int
	// trace prints pgbench's -d lines (nil: none).
	trace *tracer
}

// newProgram makes client id's program.
func (g *runGen) newProgram(id int, seed uint64, vars map[string]expr.Value, debug io.Writer, defaultSeed int64, mark *workload.Mark) *program {
	p := &program{mode: g.mode, vars: make(map[string]expr.Value, len(vars)+8), prng: expr.NewPRNG(seed), mark: mark, markAt: -1}
	for k, v := range vars {
		p.vars[k] = v
	}
	p.env = expr.Env{Lookup: p.lookup, Rand: rand.New(p.prng), Debug: debug, DefaultSeed: defaultSeed}
	for i, s := range g.scripts {
		p.scripts = append(p.scripts, s.Commands)
		row := make([]*driver.Stmt, len(s.Commands))
		for j := range s.Commands {
			c := &s.Commands[j]
			if c.Kind != script.SQL {
				continue
			}
			st := &driver.Stmt{SQL: c.Prepared}
			st.Begins, st.Commits = transactionEdges(c.Text)
			if g.mode == prepared {
				st.Name = fmt.Sprintf("txload_%d_%d", i, j)
			}
			row[j] = st
		}
		p.stmts = append(p.stmts, row)
	}
	return p
}

func (p *program) lookup(name string) (expr.Value, bool) {
	v, ok := p.vars[name]
	return v, ok
}

// Connected: statements prepared on the old connection are gone; the
// driver prepares them again on first use.
func (p *program) Connected(*driver.Conn) { p.trace.connected() }

// Start runs script op from its first command. A retry replays the same
// random draws, as pgbench does, so that the retried transaction is the one
// that failed.
func (p *program) Start(c *driver.Conn, op, attempt int) driver.Action {
	if attempt == 1 {
		p.saved = *p.prng
	} else {
		*p.prng = p.saved
	}
	p.op, p.pc, p.inPipe, p.sleeping = op, 0, false, false
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
func (p *program) Resume(c *driver.Conn) driver.Action {
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
				return driver.Action{Kind: driver.Finish, Err: fmt.Errorf("%s:%d: the transaction's marker: %w", cmd.File, cmd.Line, r.Err), Stmt: pc}
			}
			continue
		}
		if r.Err != nil {
			// The command's place in its script, for the message; the
			// server's error stays what classifies it.
			return driver.Action{Kind: driver.Finish, Err: fmt.Errorf("%s:%d: %w", cmd.File, cmd.Line, r.Err), Stmt: pc}
		}
		if cmd.Gset || cmd.Aset {
			if err := p.store(r, cmd); err != nil {
				return driver.Action{Kind: driver.Finish, Err: err, Stmt: pc}
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

// store applies \gset (exactly one row) or \aset (the last row, if any).
func (p *program) store(r *driver.Result, cmd *script.Command) error {
	if cmd.Gset && r.Rows != 1 {
		return scriptErr(cmd, fmt.Errorf("\\gset expects one row, got %d", r.Rows))
	}
	if r.Kept() == 0 {
		return nil
	}
	for i := 0; i < r.Columns; i++ {
		v, _ := r.Value(0, i) // pgbench stores a NULL as empty text
		name := cmd.Prefix + string(r.Name(i))
		p.vars[name] = expr.ParseValue(string(v))
	}
	return nil
}

func scriptErr(c *script.Command, err error) error {
	return pg.Fatal(fmt.Errorf("%s:%d: %w", c.File, c.Line, err))
}

// run executes commands from p.pc until one must be awaited.
func (p *program) run(c *driver.Conn) driver.Action {
	cmds := p.scripts[p.op]
	for p.pc < len(cmds) {
		pc := p.pc
		cmd := &cmds[pc]
		if cmd.Kind != script.SQL {
			p.trace.metaCommand(p.op, pc)
		}
		switch cmd.Kind {
		case script.Set:
			start := time.Now()
			p.env.Script, p.env.Command = p.op, pc+1
			v, err := cmd.Expr.Eval(&p.env)
			if err != nil {
				return p.fail(cmd, pc, err)
			}
			p.vars[cmd.Var] = v
			c.Statement(p.op, pc, time.Since(start))
			p.pc++
		case script.Sleep:
			d, err := p.sleepFor(cmd)
			if err != nil {
				return p.fail(cmd, pc, err)
			}
			p.pc++
			p.sleeping, p.sent = true, time.Now()
			return driver.Action{Kind: driver.Sleep, At: p.sent.Add(d)}
		case script.If:
			ok, err := p.cond(cmd, pc)
			if err != nil {
				return p.fail(cmd, pc, err)
			}
			if ok {
				p.pc++
			} else if p.pc, err = p.nextBranch(cmds, cmd.Next); err != nil {
				return p.fail(cmd, pc, err)
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
		case script.StartPipeline:
			c.Pipeline(true)
			p.inPipe = true
			p.pc++
		case script.SyncPipeline:
			c.Sync()
			p.pc++
		case script.EndPipeline:
			c.Pipeline(false)
			p.inPipe = false
			p.pc++
			if len(p.pending) > 0 {
				p.sent = time.Now()
				return driver.Action{Kind: driver.Await}
			}
		case script.SQL:
			if p.mark != nil && !p.mark.Open() && p.stmts[p.op][pc].Commits {
				p.queueMark(c, pc)
			}
			if err := p.queue(c, pc, cmd); err != nil {
				return p.fail(cmd, pc, err)
			}
			p.pc++
			if !p.inPipe {
				p.trace.receiving() // pgbench's first look, right after sending
				p.sent = time.Now()
				return driver.Action{Kind: driver.Await}
			}
		}
	}
	return driver.Action{Kind: driver.Finish, Stmt: -1}
}

// fail ends the attempt on an error of the script itself (an expression,
// an undefined variable): no retry can cure it.
func (p *program) fail(cmd *script.Command, pc int, err error) driver.Action {
	return driver.Action{Kind: driver.Finish, Err: scriptErr(cmd, err), Stmt: pc}
}

// queue sends SQL command pc with its variables bound: substituted as text
// for the simple protocol, as pgbench does (an unset variable stays as
// written); else as text parameters of types the server infers.
func (p *program) queue(c *driver.Conn, pc int, cmd *script.Command) error {
	st := p.stmts[p.op][pc]
	capture := driver.CaptureNone
	switch {
	case cmd.Gset:
		capture = driver.CaptureFirst
	case cmd.Aset:
		capture = driver.CaptureLast
	}
	p.pending = append(p.pending, pc)
	if p.mode == simple {
		b := p.text[:0]
		prev := 0
		for i, name := range cmd.Params {
			at := cmd.ParamPos[i]
			b = append(b, cmd.Text[prev:at]...)
			prev = at + 1 + len(name)
			if v, ok := p.vars[name]; ok {
				b = appendValue(b, v)
			} else {
				b = append(b, cmd.Text[at:prev]...) // as pgbench: left as written
			}
		}
		b = append(b, cmd.Text[prev:]...)
		p.text = b
		p.trace.send(p.op, pc, st, b)
		c.Simple(b, st, capture)
		return nil
	}
	for _, name := range cmd.Params {
		if _, ok := p.vars[name]; !ok {
			p.pending = p.pending[:len(p.pending)-1]
			return fmt.Errorf("undefined variable %q", name)
		}
	}
	p.trace.send(p.op, pc, st, nil)
	params := c.Bind(st, capture)
	for _, name := range cmd.Params {
		switch v := p.vars[name]; v.Kind {
		case expr.Int:
			params.Int(v.I)
		case expr.Str:
			params.String(v.S)
		case expr.Null:
			params.Null()
		default:
			params.String(v.Text())
		}
	}
	params.Send()
	return nil
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
// (atoi: its leading integer; "1.5" sleeps 1 unit).
func (p *program) sleepFor(cmd *script.Command) (time.Duration, error) {
	n := cmd.SleepValue
	if cmd.SleepVar != "" {
		v, ok := p.vars[cmd.SleepVar]
		if !ok {
			return 0, fmt.Errorf("undefined variable %q", cmd.SleepVar)
		}
		if v.Kind == expr.Int {
			n = v.I
		} else {
			n = atoi(v.Text())
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
			return 0, err
		}
		if ok {
			return j + 1, nil
		}
		j = c.Next
	}
}

// transactionEdges says whether a command opens a transaction block (its
// first statement is BEGIN or START TRANSACTION) or may end one with a
// commit (any of its statements is COMMIT, END, or PREPARE TRANSACTION).
// A compound's statements are joined by ';' in text.
func transactionEdges(text string) (begins, commits bool) {
	for i, part := range strings.Split(text, ";") {
		w := strings.Fields(strings.ToUpper(part))
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
