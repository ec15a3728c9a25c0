package pgbench

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/txload/txload/internal/pg"
	"github.com/txload/txload/internal/pg/driver"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/workload"
	"github.com/txload/txload/workload/pgbench/script"
)

// Markers inside the transactions (lag --mark-transactions): the marker's
// INSERT is queued just before the command that commits, in the same
// exchange (pipelined: no round trip of its own), so it commits or rolls
// back with the script's transaction. Its result is not a command of the
// script: -r has no line for it, its time is in the committing command's,
// and a failed marker counts as a failure of that command.

// markable says whether every transaction of the scripts can carry a
// marker: each SQL command must run inside an explicit BEGIN ... COMMIT/END
// block, opened and committed by separate commands, and a pipeline may
// commit once. A statement outside a block is a transaction of its own,
// which a marker sent beside it would not share; such scripts are refused
// rather than measured in part. The walk is linear: \if branches are read
// as if all were taken.
func (g *runGen) markable() error {
	for _, s := range g.scripts {
		if err := markableScript(s); err != nil {
			return err
		}
	}
	return nil
}

func markableScript(s *script.Script) error {
	inBlock, inPipe, commits, pipeCommits := false, false, 0, 0
	for i := range s.Commands {
		c := &s.Commands[i]
		switch c.Kind {
		case script.StartPipeline:
			inPipe, pipeCommits = true, 0
		case script.EndPipeline:
			inPipe = false
		case script.SQL:
			begins, ends := transactionEdges(c.Text)
			where := fmt.Sprintf("script %s, line %d (%s)", s.Name, c.Line, display(c))
			switch {
			case begins && ends:
				return fmt.Errorf("--mark-transactions: %s opens and commits a transaction in one command: the marker cannot go inside it", where)
			case begins:
				inBlock = true
			case !inBlock:
				return fmt.Errorf("--mark-transactions: %s runs outside a BEGIN ... END block: it is a transaction of its own, which a marker cannot share; put the script's statements in explicit transactions (the marker stream, --mark-interval, measures the lag without them)", where)
			}
			if ends {
				inBlock = false
				commits++
				if pipeCommits++; inPipe && pipeCommits > 1 {
					return fmt.Errorf("--mark-transactions: %s commits a second transaction in one pipeline: one marker at a time is in flight", where)
				}
			} else if rollsBack(c.Text) {
				inBlock = false
			}
		}
	}
	if commits == 0 {
		return fmt.Errorf("--mark-transactions: script %s never commits (no COMMIT or END): it has no transaction to mark", s.Name)
	}
	return nil
}

// rollsBack says whether a command's last statement is ROLLBACK or ABORT.
func rollsBack(text string) bool {
	parts := strings.Split(text, ";")
	for i := len(parts) - 1; i >= 0; i-- {
		if w := strings.Fields(strings.ToUpper(parts[i])); len(w) > 0 {
			return w[0] == "ROLLBACK" || w[0] == "ABORT"
		}
	}
	return false
}

// queueMark queues the attempt's marker before command pc, which commits:
// in the script's protocol, and in its pipeline if one is open.
func (p *program) queueMark(c *driver.Conn, pc int) {
	sql, args := p.mark.Begin()
	p.marking = true
	if p.markStmt == nil || p.markStmt.SQL != sql {
		p.markStmt = &driver.Stmt{SQL: sql}
		if p.mode == prepared {
			p.markStmt.Name = "txload_mark"
		}
	}
	p.markAt = len(p.pending)
	p.pending = append(p.pending, pc) // a failed marker is the commit's failure
	if p.mode == simple {
		p.text = substitute(p.text[:0], sql, args)
		c.Simple(p.text, p.markStmt, driver.CaptureNone)
		return
	}
	params := c.Bind(p.markStmt, driver.CaptureNone)
	for _, a := range args {
		switch v := a.(type) {
		case int32:
			params.Int(int64(v))
		case int64:
			params.Int(v)
		case int:
			params.Int(int64(v))
		default:
			params.String(fmt.Sprint(v))
		}
	}
	params.Send()
}

// substitute writes sql with its $n parameters replaced by args as literals.
func substitute(b []byte, sql string, args []any) []byte {
	for i := 0; i < len(sql); i++ {
		if sql[i] != '$' {
			b = append(b, sql[i])
			continue
		}
		j := i + 1
		for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(sql[i+1 : j])
		if err != nil || n < 1 || n > len(args) {
			b = append(b, sql[i])
			continue
		}
		switch v := args[n-1].(type) {
		case int32:
			b = strconv.AppendInt(b, int64(v), 10)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case int:
			b = strconv.AppendInt(b, int64(v), 10)
		default:
			b = append(b, '\'')
			b = append(b, strings.ReplaceAll(fmt.Sprint(v), "'", "''")...)
			b = append(b, '\'')
		}
		i = j - 1
	}
	return b
}

var rollbackTag = []byte("ROLLBACK")

// markCommitted resolves the open marker once the committing command's
// result is in without an error: a COMMIT of a transaction that had failed
// answers ROLLBACK, and its marker is gone with it.
func (p *program) markCommitted(r *driver.Result, at time.Time) {
	if bytes.Equal(r.Tag(), rollbackTag) {
		p.mark.RolledBack(false, at)
	} else {
		p.mark.Committed(at)
	}
	p.marking = false
}

// Ended resolves a marker left open by an attempt that failed: rolled back,
// or ambiguous when the connection was lost while COMMIT was in flight.
func (p *program) Ended(now time.Time, err error) {
	if !p.marking {
		return
	}
	class, _ := pg.Classify(err)
	p.mark.RolledBack(err == nil || class == metrics.AmbiguousCommit, now)
	p.marking = false
}

// program resolves its markers when an attempt fails.
var _ driver.Ender = (*program)(nil)

// marker returns client id's marker source, or nil.
func marker(opts workload.RunOptions, id int) workload.TxMarker {
	if opts.Marks == nil {
		return nil
	}
	return opts.Marks(id)
}
