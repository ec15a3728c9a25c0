package pgbench

import (
	"errors"
	"fmt"
	"strings"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/pg"
)

// clientError is an error that ends a pgbench client, with the lines
// pgbench prints for it (PgbenchLines): the runner prints those under
// pgbench's output; err is txload's own account, for the others.
type clientError struct {
	err error
	// pgbench's lines, before the abort line; each line of a message
	// begins with "pgbench: error: " when it is the first of it.
	pre []string
	// the abort line, without "pgbench: error: " (a server's message may
	// follow it on more lines); "" for none.
	abort string
	// a server error the abort line ends with, as libpq words it: its
	// query (the text sent, "" for a prepared statement) and the
	// connection's client_encoding.
	server          error
	query, encoding string
}

func (e *clientError) Error() string { return e.err.Error() }
func (e *clientError) Unwrap() error { return e.err }

// PgbenchLines are the lines pgbench prints on stderr when this error ends
// its client, each ending in a newline.
func (e *clientError) PgbenchLines() string {
	var b strings.Builder
	for _, l := range e.pre {
		b.WriteString("pgbench: error: " + strings.TrimSuffix(l, "\n") + "\n")
	}
	if e.abort != "" {
		b.WriteString("pgbench: error: " + e.abort)
		if e.server != nil {
			b.WriteString(pg.LibpqMessage(e.server, e.query, e.encoding))
		} else {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// metaError is a meta-command's failure as pgbench reports it: msg (the
// evaluation's own error, "" for none), then "client N aborted in command
// M (WHAT) of script K; WHY". It is fatal to the client.
func (p *program) metaError(cmd int, what, why string, err error) error {
	e := &clientError{err: fmt.Errorf("%s:%d: %s", p.cmds(cmd).File, p.cmds(cmd).Line, why),
		abort: fmt.Sprintf("client %d aborted in command %d (%s) of script %d; %s", p.id, cmd, what, p.op, why)}
	if err != nil {
		e.err = fmt.Errorf("%s:%d: %w", p.cmds(cmd).File, p.cmds(cmd).Line, err)
		e.pre = []string{err.Error()}
	}
	return pg.Fatal(e)
}

// clientAborted is pgbench's "client N aborted: WHY".
func (p *program) clientAborted(cmd int, why string) error {
	c := p.cmds(cmd)
	return &clientError{err: fmt.Errorf("%s:%d: %s", c.File, c.Line, why), abort: fmt.Sprintf("client %d aborted: %s", p.id, why)}
}

// resultError is an error storing a \gset or \aset result: pgbench's line
// "client N script K command M query Q: WHAT", after pre.
func (p *program) resultError(cmd, query int, what string, pre ...string) error {
	c := p.cmds(cmd)
	return pg.Fatal(&clientError{err: fmt.Errorf("%s:%d: %s", c.File, c.Line, what), pre: pre,
		abort: fmt.Sprintf("client %d script %d command %d query %d: %s", p.id, p.op, cmd, query, what)})
}

// serverError wraps the server's error of the SQL command awaited at cmd
// (query the text sent, "" for a prepared statement): pgbench's "client N script K aborted
// in command M query Q: " and libpq's words. A Parse of a prepared
// statement that failed is printed first, as pgbench prints its PQprepare's
// error; its execution then fails as the statement does not exist.
func (p *program) serverError(c *executor.Conn, cmd int, r *executor.Result, query string) error {
	sc := p.cmds(cmd)
	if errors.Is(r.Err, executor.ErrCopy) {
		return pg.Fatal(&clientError{err: fmt.Errorf("%s:%d: %w", sc.File, sc.Line, r.Err), pre: []string{"COPY is not supported in pgbench, aborting"}})
	}
	e := &clientError{err: fmt.Errorf("%s:%d: %w", sc.File, sc.Line, r.Err),
		abort:  fmt.Sprintf("client %d script %d aborted in command %d query %d: ", p.id, p.op, cmd, r.Parts),
		server: r.Err, query: query, encoding: c.ClientEncoding()}
	if r.ParseFailed && p.mode == prepared {
		st := r.Stmt()
		e.pre = []string{strings.TrimSuffix(pg.LibpqMessage(r.Err, st.SQL, c.ClientEncoding()), "\n")}
		e.server = errors.New("ERROR:  prepared statement \"" + st.Name + "\" does not exist")
	}
	return e
}
