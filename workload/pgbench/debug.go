package pgbench

import (
	"fmt"
	"io"
	"strings"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/workload/pgbench/script"
)

// tracer prints pgbench's -d lines for one client: the script it starts,
// each meta-command it executes, each SQL command it sends (prepared first
// on a new connection) and each look for its results. pgbench prints
// "receiving" whenever it looks at a connection awaiting results: once
// right after sending, and again when they arrive; the tracer does the
// same. A nil *tracer prints nothing.
type tracer struct {
	w        io.Writer
	id       int
	meta     [][]string // per script and command: the meta-command as pgbench prints it
	titles   []string
	prepared [][]bool // per script and command: prepared on this connection
}

func newTracer(w io.Writer, id int, scripts []*script.Script) *tracer {
	t := &tracer{w: w, id: id}
	for _, s := range scripts {
		t.titles = append(t.titles, s.Title)
		row := make([]string, len(s.Commands))
		for j := range s.Commands {
			row[j] = metaText(&s.Commands[j])
		}
		t.meta = append(t.meta, row)
		t.prepared = append(t.prepared, make([]bool, len(s.Commands)))
	}
	return t
}

// metaText is a meta-command as pgbench's -d prints it: its name and
// words, the expression of \set, \if and \elif left out.
func metaText(c *script.Command) string {
	words := strings.Fields(c.Text)
	if c.Kind == script.SQL || len(words) == 0 {
		return ""
	}
	switch c.Kind {
	case script.Set:
		return words[0] + " " + c.Var
	case script.If, script.Elif:
		return words[0]
	}
	return strings.Join(words, " ")
}

func (t *tracer) printf(format string, args ...any) {
	fmt.Fprintf(t.w, "pgbench: client %d "+format+"\n", append([]any{t.id}, args...)...)
}

func (t *tracer) script(op int) {
	if t != nil {
		t.printf("executing script \"%s\"", t.titles[op])
	}
}

func (t *tracer) metaCommand(op, pc int) {
	if t != nil {
		t.printf("executing %s", t.meta[op][pc])
	}
}

// send traces SQL command pc as it goes out: the text sent under the
// simple protocol, the statement under extended, its name under prepared.
func (t *tracer) send(op, pc int, st *executor.Stmt, simple []byte) {
	switch {
	case t == nil:
	case simple != nil:
		t.printf("sending %s", simple)
	case st.Name == "":
		t.printf("sending %s", st.SQL)
	default:
		if !t.prepared[op][pc] {
			t.prepared[op][pc] = true
			t.printf("preparing %s", st.Name)
		}
		t.printf("sending %s", st.Name)
	}
}

func (t *tracer) receiving() {
	if t != nil {
		t.printf("receiving")
	}
}

// connected: statements prepared on the old connection are gone.
func (t *tracer) connected() {
	if t == nil {
		return
	}
	for _, row := range t.prepared {
		clear(row)
	}
}
