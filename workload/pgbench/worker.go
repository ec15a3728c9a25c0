package pgbench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/internal/pg"
	"github.com/txload/txload/workload"
	"github.com/txload/txload/workload/pgbench/expr"
	"github.com/txload/txload/workload/pgbench/script"
)

type protocol uint8

const (
	simple protocol = iota
	extended
	prepared
)

func (p protocol) String() string { return [...]string{"simple", "extended", "prepared"}[p] }

func parseProtocol(s string) (protocol, error) {
	switch s {
	case "simple":
		return simple, nil
	case "extended":
		return extended, nil
	case "prepared":
		return prepared, nil
	}
	return 0, fmt.Errorf("--protocol %q is not allowed (allowed: simple, extended, prepared)", s)
}

func (p protocol) execMode() pgx.QueryExecMode {
	switch p {
	case extended:
		return pgx.QueryExecModeExec
	case prepared:
		return pgx.QueryExecModeCacheStatement
	}
	return pgx.QueryExecModeSimpleProtocol
}

// Ops reads the scale and returns one operation per script.
func (g *runGen) Ops(ctx context.Context, t *pg.Target, opts workload.RunOptions) (*workload.QueryLoad, error) {
	g.scale = g.tpcb.scale
	if g.builtin != "" || len(g.builtins) > 0 {
		conn, err := t.Connect(ctx)
		if err != nil {
			return nil, err
		}
		scale, err := detectScale(ctx, conn)
		conn.Close(ctx)
		if err != nil {
			return nil, err
		}
		if g.tpcb.scaleExplicit() && scale != g.tpcb.scale {
			fmt.Fprintf(os.Stderr, "warning: --scale %d ignored, using the scale of pgbench_branches: %d\n", g.tpcb.scale, scale)
		}
		g.scale = scale
	}
	seed := opts.Seed
	if g.randomSeed != "" {
		seed, _ = strconv.ParseUint(g.randomSeed, 10, 64)
	}
	// Client i draws what pgbench's client i draws under --random-seed.
	clientSeeds, defaultSeed := expr.PgbenchSeeds(seed, opts.Concurrency)
	load := &workload.QueryLoad{BlockingIO: true}
	weights := make([]int, len(g.scripts))
	total := 0
	for i, s := range g.scripts {
		load.Ops = append(load.Ops, s.Name)
		load.Statements = append(load.Statements, len(s.Commands))
		total += s.Weight
		weights[i] = total
	}
	load.NewWorker = func(ctx context.Context, id int) (workload.Worker, error) {
		w := &worker{g: g, t: t, id: id, maxTries: opts.MaxTries, weights: weights, total: total,
			mode: g.mode.execMode(), vars: make(map[string]expr.Value, len(g.vars)+8)}
		cs := seed ^ uint64(id)
		if id < len(clientSeeds) {
			cs = clientSeeds[id]
		}
		w.prng = expr.NewPRNG(cs)
		// Choosing the script has its own generator, as in pgbench, so a
		// mix does not shift the scripts' own draws.
		w.choice = rand.New(rand.NewPCG(cs, 0x6a09e667f3bcc908))
		for k, v := range g.vars {
			w.vars[k] = v
		}
		w.vars["scale"] = expr.Value{Kind: expr.Int, I: int64(g.scale)}
		w.vars["client_id"] = expr.Value{Kind: expr.Int, I: int64(id)}
		w.vars["random_seed"] = expr.Value{Kind: expr.Int, I: int64(seed)}
		if _, ok := w.vars["default_seed"]; !ok {
			w.vars["default_seed"] = expr.Value{Kind: expr.Int, I: defaultSeed}
		}
		w.env = expr.Env{Lookup: w.lookup, Rand: rand.New(w.prng), Debug: os.Stderr, DefaultSeed: defaultSeed}
		w.templates = make([][]template, len(g.scripts))
		for i, s := range g.scripts {
			w.templates[i] = make([]template, len(s.Commands))
			for j := range s.Commands {
				w.templates[i][j] = newTemplate(&s.Commands[j])
				w.templates[i][j].name = fmt.Sprintf("txload_%d_%d", i, j)
			}
		}
		if err := w.Reset(ctx); err != nil {
			return nil, err
		}
		return w, nil
	}
	return load, nil
}

// template is an SQL command ready to run: its literal pieces for the simple
// protocol and an argument buffer for the others.
type template struct {
	pieces []string // simple: text between variable references
	args   []any    // pipelines: mode, then one per parameter
	name   string   // prepared: the statement's name on the connection
}

func newTemplate(c *script.Command) template {
	if c.Kind != script.SQL {
		return template{}
	}
	t := template{args: make([]any, 1+len(c.Params))}
	prev := 0
	for i, p := range c.Params {
		at := c.ParamPos[i]
		t.pieces = append(t.pieces, c.Text[prev:at])
		prev = at + 1 + len(p)
	}
	t.pieces = append(t.pieces, c.Text[prev:])
	return t
}

type worker struct {
	g        *runGen
	t        *pg.Target
	id       int
	conn     *pgx.Conn
	mode     pgx.QueryExecMode
	maxTries int

	prng   *expr.PRNG // the scripts' random functions, as pgbench's
	choice *rand.Rand // which script to run
	saved  expr.PRNG  // the random state at the start of the transaction
	vars   map[string]expr.Value
	env    expr.Env

	weights   []int
	total     int
	templates [][]template
	rec       workload.StatementRecorder
	sb        strings.Builder
	batch     pipeline

	// The statements prepared on this connection (--protocol prepared), and
	// buffers for the text parameters of the one under way.
	prepared [][]bool
	params   [][]byte
	ends     []int
	buf      []byte

	// The run's context is watched once per connection, not per query:
	// pgconn starts a goroutine for every query whose context can be
	// cancelled, which costs more than the query's own syscalls. On
	// cancellation a past deadline interrupts whatever the connection is
	// waiting for.
	watched context.Context
	unwatch func() bool
}

func (w *worker) SetStatementRecorder(r workload.StatementRecorder) { w.rec = r }

func (w *worker) lookup(name string) (expr.Value, bool) {
	v, ok := w.vars[name]
	return v, ok
}

// Next picks a script by weight.
func (w *worker) Next() int {
	if len(w.weights) == 1 {
		return 0
	}
	r := w.choice.IntN(w.total)
	for i, cum := range w.weights {
		if r < cum {
			return i
		}
	}
	return len(w.weights) - 1
}

func (w *worker) Reset(ctx context.Context) error {
	w.stopWatching()
	if w.conn != nil {
		w.conn.Close(ctx)
		w.conn = nil
	}
	conn, err := w.t.ConnectWith(ctx, func(c *pgx.ConnConfig) { c.DialFunc = pg.BlockingDial })
	if err != nil {
		return err
	}
	w.conn = conn
	w.prepared = make([][]bool, len(w.g.scripts))
	for i, s := range w.g.scripts {
		w.prepared[i] = make([]bool, len(s.Commands))
	}
	return nil
}

func (w *worker) stopWatching() {
	if w.unwatch != nil {
		w.unwatch()
	}
	w.watched, w.unwatch = nil, nil
}

// watch arranges for ctx's cancellation to interrupt the connection.
func (w *worker) watch(ctx context.Context) {
	if ctx == w.watched {
		return
	}
	w.stopWatching()
	nc := w.conn.PgConn().Conn()
	w.watched = ctx
	w.unwatch = context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
}

func (w *worker) Close(ctx context.Context) {
	w.stopWatching()
	if w.conn != nil {
		w.conn.Close(ctx)
	}
}

// Do runs script op once. A retry replays the same random draws, as pgbench
// does, so the retried transaction is the one that failed.
func (w *worker) Do(ctx context.Context, op, attempt int) error {
	if attempt == 1 {
		w.saved = *w.prng
	} else {
		*w.prng = w.saved
	}
	w.batch.reset()
	w.watch(ctx)
	cmd, err := w.run(ctx, op)
	if err == nil {
		return nil
	}
	if w.rec != nil && cmd >= 0 {
		class, fatal := pg.Classify(err)
		w.rec.StatementError(op, cmd, !fatal && class.Retryable() && attempt < w.maxTries)
	}
	if !w.conn.IsClosed() && w.conn.PgConn().TxStatus() != 'I' {
		_, _ = w.conn.Exec(ctx, "ROLLBACK", pgx.QueryExecModeSimpleProtocol)
	}
	return err
}

// run executes the commands of script op; on error it returns the index of
// the command that failed.
func (w *worker) run(ctx context.Context, op int) (int, error) {
	s := w.g.scripts[op]
	cmds := s.Commands
	for pc := 0; pc < len(cmds); {
		c := &cmds[pc]
		start := time.Now()
		next, err := w.exec(ctx, op, pc, c)
		if err != nil {
			return pc, err
		}
		if w.rec != nil {
			w.rec.Statement(op, pc, time.Since(start))
		}
		pc = next
	}
	return -1, nil
}

func (w *worker) scriptErr(c *script.Command, err error) error {
	return pg.Fatal(fmt.Errorf("%s:%d: %w", c.File, c.Line, err))
}

// exec runs one command and returns the index of the next.
func (w *worker) exec(ctx context.Context, op, pc int, c *script.Command) (int, error) {
	cmds := w.g.scripts[op].Commands
	switch c.Kind {
	case script.Set:
		v, err := c.Expr.Eval(&w.env)
		if err != nil {
			return 0, w.scriptErr(c, err)
		}
		w.vars[c.Var] = v
	case script.Sleep:
		n := c.SleepValue
		if c.SleepVar != "" {
			v, ok := w.vars[c.SleepVar]
			if !ok {
				return 0, w.scriptErr(c, fmt.Errorf("undefined variable %q", c.SleepVar))
			}
			i, err := strconv.ParseInt(v.Text(), 10, 64)
			if err != nil {
				return 0, w.scriptErr(c, fmt.Errorf("\\sleep: variable %q is not an integer: %q", c.SleepVar, v.Text()))
			}
			n = i
		}
		t := time.NewTimer(time.Duration(n) * c.Unit)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		}
	case script.If:
		ok, err := w.cond(c)
		if err != nil {
			return 0, err
		}
		if ok {
			return pc + 1, nil
		}
		return w.nextBranch(cmds, c.Next)
	case script.Elif, script.Else:
		// Reached by running the end of a taken branch: leave the chain.
		j := pc
		for cmds[j].Kind != script.Endif {
			j = cmds[j].Next
		}
		return j + 1, nil
	case script.Endif:
	case script.StartPipeline:
		w.batch.start()
	case script.SyncPipeline, script.EndPipeline:
		if err := w.flush(ctx, op); err != nil {
			return 0, err
		}
		if c.Kind == script.EndPipeline {
			w.batch.active = false
		}
	case script.SQL:
		return pc + 1, w.sql(ctx, op, pc, c)
	}
	return pc + 1, nil
}

// nextBranch evaluates the chain of an \if from the branch at j on, after
// the previous one was false.
func (w *worker) nextBranch(cmds []script.Command, j int) (int, error) {
	for {
		c := &cmds[j]
		switch c.Kind {
		case script.Elif:
			ok, err := w.cond(c)
			if err != nil {
				return 0, err
			}
			if ok {
				return j + 1, nil
			}
			j = c.Next
		default: // Else or Endif
			return j + 1, nil
		}
	}
}

// cond evaluates an \if or \elif with pgbench's truth rule.
func (w *worker) cond(c *script.Command) (bool, error) {
	v, err := c.Expr.Eval(&w.env)
	if err != nil {
		return false, w.scriptErr(c, err)
	}
	return v.Truth(), nil
}

// sql runs an SQL command with its variables bound. Outside pipelines it
// speaks the protocol through pgconn as pgbench does through libpq: text
// parameters of unspecified type (the server infers them), statements
// prepared once per connection under their own names, results read as
// text and only kept for \gset and \aset.
func (w *worker) sql(ctx context.Context, op, pc int, c *script.Command) error {
	t := &w.templates[op][pc]
	if w.batch.active {
		text, args, err := w.bind(c, t, true)
		if err != nil {
			return err
		}
		w.batch.add(text, args, c)
		return nil
	}
	pgc := w.conn.PgConn()
	ctx = context.WithoutCancel(ctx) // watched once per connection: see watch
	if w.mode == pgx.QueryExecModeSimpleProtocol {
		text, _, err := w.bind(c, t, false)
		if err != nil {
			return err
		}
		mrr := pgc.Exec(ctx, text)
		var rr *pgconn.ResultReader
		for mrr.NextResult() {
			rr = mrr.ResultReader()
			if err := w.read(rr, c); err != nil {
				_ = mrr.Close()
				return err
			}
		}
		return mrr.Close()
	}
	if err := w.textParams(c); err != nil {
		return err
	}
	var rr *pgconn.ResultReader
	if w.mode == pgx.QueryExecModeCacheStatement {
		name := t.name
		if !w.prepared[op][pc] {
			if _, err := pgc.Prepare(ctx, name, c.Prepared, nil); err != nil {
				return err
			}
			w.prepared[op][pc] = true
		}
		rr = pgc.ExecPrepared(ctx, name, w.params, nil, nil)
	} else {
		rr = pgc.ExecParams(ctx, c.Prepared, w.params, nil, nil, nil)
	}
	return w.read(rr, c)
}

// read finishes a result: discarded, or stored by \gset / \aset.
func (w *worker) read(rr *pgconn.ResultReader, c *script.Command) error {
	if !c.Gset && !c.Aset {
		_, err := rr.Close()
		return err
	}
	fields := rr.FieldDescriptions()
	n := 0
	for rr.NextRow() {
		n++
		if c.Gset && n > 1 {
			continue
		}
		for i, raw := range rr.Values() {
			// pgbench stores a NULL as empty text.
			w.vars[c.Prefix+fields[i].Name] = expr.ParseValue(string(raw))
		}
	}
	if _, err := rr.Close(); err != nil {
		return err
	}
	if c.Gset && n != 1 {
		return w.scriptErr(c, fmt.Errorf("\\gset expects one row, got %d", n))
	}
	return nil
}

// textParams fills w.params with the text of c's parameters, in w.buf.
func (w *worker) textParams(c *script.Command) error {
	w.buf = w.buf[:0]
	w.params = w.params[:0]
	ends := w.ends[:0]
	defer func() { w.ends = ends }()
	for _, p := range c.Params {
		v, ok := w.vars[p]
		if !ok {
			return w.scriptErr(c, fmt.Errorf("undefined variable %q", p))
		}
		switch v.Kind {
		case expr.Int:
			w.buf = strconv.AppendInt(w.buf, v.I, 10)
		case expr.Str:
			w.buf = append(w.buf, v.S...)
		default:
			w.buf = append(w.buf, v.Text()...)
		}
		ends = append(ends, len(w.buf))
	}
	start := 0
	for _, end := range ends {
		if end < 0 {
			w.params = append(w.params, nil)
			continue
		}
		w.params = append(w.params, w.buf[start:end:end])
		start = end
	}
	return nil
}

// bind returns the statement text and arguments: for the simple protocol
// the values substituted as text, as pgbench does; else $n parameters.
func (w *worker) bind(c *script.Command, t *template, copyArgs bool) (string, []any, error) {
	if w.mode == pgx.QueryExecModeSimpleProtocol {
		w.sb.Reset()
		for i, p := range c.Params {
			w.sb.WriteString(t.pieces[i])
			if v, ok := w.vars[p]; ok {
				w.sb.WriteString(v.Text())
			} else {
				w.sb.WriteString(":" + p) // as pgbench: an unset variable stays as written
			}
		}
		w.sb.WriteString(t.pieces[len(t.pieces)-1])
		return w.sb.String(), []any{pgx.QueryExecModeSimpleProtocol}, nil
	}
	args := t.args
	if copyArgs {
		args = make([]any, len(t.args))
	}
	args[0] = w.mode
	for i, p := range c.Params {
		v, ok := w.vars[p]
		if !ok {
			return "", nil, w.scriptErr(c, fmt.Errorf("undefined variable %q", p))
		}
		args[i+1] = goValue(v)
	}
	return c.Prepared, args, nil
}

func goValue(v expr.Value) any {
	switch v.Kind {
	case expr.Int:
		return v.I
	case expr.Double:
		return v.F
	case expr.Bool:
		return v.B
	case expr.Null:
		return nil
	}
	return v.S
}

// store applies \gset (exactly one row) or \aset (every row, the last wins).
func (w *worker) store(rows pgx.Rows, c *script.Command) error {
	defer rows.Close()
	n := 0
	fields := rows.FieldDescriptions()
	for rows.Next() {
		n++
		if c.Gset && n > 1 {
			continue
		}
		for i, raw := range rows.RawValues() {
			w.vars[c.Prefix+fields[i].Name] = expr.ParseValue(string(raw)) // NULL: empty text, as pgbench
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if c.Gset && n != 1 {
		return w.scriptErr(c, fmt.Errorf("\\gset expects one row, got %d", n))
	}
	return nil
}

// pipeline collects the statements between \startpipeline and
// \syncpipeline or \endpipeline, sent as one batch.
type pipeline struct {
	active bool
	b      pgx.Batch
	cmds   []*script.Command
}

func (p *pipeline) reset() { *p = pipeline{} }
func (p *pipeline) start() { p.active = true; p.b = pgx.Batch{}; p.cmds = p.cmds[:0] }
func (p *pipeline) add(text string, args []any, c *script.Command) {
	p.b.Queue(text, args[1:]...)
	p.cmds = append(p.cmds, c)
}

// flush sends the pipeline's statements and reads their results.
func (w *worker) flush(ctx context.Context, op int) error {
	p := &w.batch
	if len(p.cmds) == 0 {
		return nil
	}
	br := w.conn.SendBatch(ctx, &p.b)
	var err error
	for _, c := range p.cmds {
		if c.Gset || c.Aset {
			rows, qerr := br.Query()
			if qerr == nil {
				qerr = w.store(rows, c)
			}
			err = errors.Join(err, qerr)
		} else if _, e := br.Exec(); e != nil {
			err = errors.Join(err, e)
		}
		if err != nil {
			break
		}
	}
	err = errors.Join(err, br.Close())
	p.b = pgx.Batch{}
	p.cmds = p.cmds[:0]
	return unjoin(err)
}

// unjoin returns the first error of a join, so that classification sees it.
func unjoin(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		if errs := j.Unwrap(); len(errs) > 0 {
			return errs[0]
		}
	}
	return err
}
