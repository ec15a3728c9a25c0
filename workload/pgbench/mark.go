package pgbench

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/txload/txload/executor"
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

// markName is the marker statement's name: prepared once per connection
// under --protocol prepared, unnamed otherwise, as the script's own.
func (g *runGen) markName() string {
	if g.mode == prepared {
		return "txload_mark"
	}
	return ""
}

// queueMark queues the attempt's marker before command pc, which commits:
// in the script's protocol, and in its pipeline if one is open.
func (p *program) queueMark(c *executor.Conn, pc int) {
	p.markAt = len(p.pending)
	p.pending = append(p.pending, pc) // a failed marker is the commit's failure
	if p.mode != simple {
		p.mark.Queue(c)
		return
	}
	st, args := p.mark.Begin()
	p.text = substitute(p.text[:0], st.SQL, args)
	c.Simple(p.text, st, executor.CaptureNone)
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

// Ended resolves a marker left open by an attempt that failed, and tells
// the run's identity sum how a builtin's transaction ended.
func (p *program) Ended(now time.Time, err error) {
	p.mark.Ended(now, err)
	p.ident.end(now, err)
}

// program resolves its markers, and counts its history rows, when an
// attempt ends.
var _ executor.Ender = (*program)(nil)
