package append

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/history"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
)

// program is one client's transactions: each attempt draws fresh
// operations (a retry is a new transaction, with values of its own), runs
// them one statement at a time as Jepsen's client does (BEGIN goes with
// the first), then COMMIT; a single operation runs without BEGIN.
type program struct {
	r      *runState
	st     *statements
	rng    *rand.Rand
	client int

	intended time.Time // of the attempt under way (executor.Conn.Intended)
	a        history.Attempt
	open     bool // a.Ops were drawn and the attempt has not ended
	single   bool
	i        int // the operation under way
	phase    uint8
}

const (
	phaseOp     uint8 = iota // an operation's statement (an update-insert's UPDATE)
	phaseInsert              // an update-insert's INSERT, the UPDATE having found no row
	phaseCommit
)

var (
	commitTag   = []byte("COMMIT")
	updateNoRow = []byte("UPDATE 0")
)

// Setup makes single-operation transactions, which run without BEGIN, run
// at the level asked for.
func (p *program) Setup(c *executor.Conn) {
	c.Simple([]byte("SET default_transaction_isolation = '"+p.r.cfg.isolation.String()+"'"), nil, executor.CaptureNone)
}

func (p *program) Connected(*executor.Conn) {}

func (p *program) Start(c *executor.Conn, _, _ int) executor.Action {
	p.intended = c.Intended
	if err := p.r.draw(p); err != nil {
		return executor.Action{Kind: executor.Finish, Err: pg.Fatal(err), Stmt: -1}
	}
	p.single, p.i, p.phase = len(p.a.Ops) == 1, 0, phaseOp
	if p.single {
		p.queue(c, p.a.Ops[0])
		return executor.Action{Kind: executor.Await}
	}
	c.Pipeline(true)
	c.Bind(p.st.begin, executor.CaptureNone).Send()
	p.queue(c, p.a.Ops[0])
	c.Pipeline(false)
	return executor.Action{Kind: executor.Await}
}

// queue queues op's statement: the INSERT of an update-insert in
// phaseInsert.
func (p *program) queue(c *executor.Conn, op history.Op) {
	ac, tb := 0, table(op.Key)
	if p.single {
		ac = 1
	}
	var s *executor.Stmt
	capture := executor.CaptureNone
	switch {
	case op.Kind == history.Read:
		s, capture = p.st.read[ac][tb], executor.CaptureFirst
	case p.r.cfg.mode == Upsert:
		s = p.st.upsert[ac][tb]
	case p.phase == phaseInsert:
		s = p.st.insert[ac][tb]
	default:
		s = p.st.update[ac][tb]
	}
	params := c.Bind(s, capture).Int(op.Key)
	if op.Kind == history.Append {
		params.Int(op.Value)
	}
	params.Send()
}

func (p *program) Resume(c *executor.Conn) executor.Action {
	for i := range c.Results() {
		if err := c.Result(i).Err; err != nil {
			return executor.Action{Kind: executor.Finish, Err: err, Stmt: -1}
		}
	}
	last := c.Result(c.Results() - 1)
	switch p.phase {
	case phaseCommit:
		if tag := last.Tag(); !bytes.Equal(tag, commitTag) {
			return executor.Action{Kind: executor.Finish, Err: fmt.Errorf("append: COMMIT answered %q", tag), Stmt: -1}
		}
		return executor.Action{Kind: executor.Finish, Stmt: -1}
	case phaseOp:
		op := &p.a.Ops[p.i]
		if op.Kind == history.Read {
			list, err := readList(last)
			if err != nil {
				return executor.Action{Kind: executor.Finish, Err: pg.Fatal(fmt.Errorf("append: reading key %d: %w", op.Key, err)), Stmt: -1}
			}
			op.List = list
		} else if p.r.cfg.mode == UpdateInsert && bytes.Equal(last.Tag(), updateNoRow) {
			p.phase = phaseInsert
			p.queue(c, *op)
			return executor.Action{Kind: executor.Await}
		}
	}
	p.phase = phaseOp
	p.i++
	switch {
	case p.i < len(p.a.Ops):
		p.queue(c, p.a.Ops[p.i])
	case p.single:
		return executor.Action{Kind: executor.Finish, Stmt: -1}
	default:
		p.phase = phaseCommit
		c.Bind(p.st.commit, executor.CaptureNone).Send()
	}
	return executor.Action{Kind: executor.Await}
}

// Ended records the attempt's outcome in the history: committed; failed,
// with the server's SQLSTATE, or without one when the connection was lost
// before the transaction could commit, or when the run ended before its
// next statements were sent; unknown when it was lost while the
// committing statement ran (or the program failed on its own).
func (p *program) Ended(now time.Time, err error) {
	if !p.open {
		return // a connection lost while idle
	}
	outcome, state := history.Committed, ""
	if err != nil {
		outcome = history.Failed
		class, _ := pg.Classify(err)
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			state = pe.Code
		}
		switch {
		case class == metrics.AmbiguousCommit:
			outcome = history.Unknown
		case class == metrics.ConnectionLost, state != "", errors.Is(err, executor.ErrRunEnded):
		default:
			outcome = history.Unknown // txload's own error: nothing is known
		}
	}
	p.r.complete(p, outcome, state, now)
}

// readList reads a key's list from a read's result: no row is the empty
// list.
func readList(r *executor.Result) ([]int64, error) {
	if r.Kept() == 0 {
		return []int64{}, nil
	}
	all, _ := r.Value(0, 0)
	return parseList(all)
}

// parseList reads a list as a row holds it: "1,2,3"; NULL or "" is empty.
// Each value must be in the one form txload writes it (decimal, no sign
// but a minus, no leading zero, no empty value): "01", "+1" or "1,2," is a
// value no transaction wrote, an error; the list is returned with it when
// every value is an integer all the same (an empty one left out), so that
// a checker can go on.
func parseList(all []byte) ([]int64, error) {
	list := []int64{}
	if len(all) == 0 {
		return list, nil
	}
	var buf [20]byte
	var bad []byte
	for f := range bytes.SplitSeq(all, []byte{','}) {
		n, err := strconv.ParseInt(string(f), 10, 64)
		switch {
		case err != nil && len(f) > 0:
			return nil, fmt.Errorf("%q is not a list of integers", all)
		case err == nil && bytes.Equal(strconv.AppendInt(buf[:0], n, 10), f):
			list = append(list, n)
			continue
		case err == nil:
			list = append(list, n)
		}
		if bad == nil {
			bad = f
		}
	}
	if bad != nil {
		return list, fmt.Errorf("%q is not a list of integers as txload writes them (%q)", all, bad)
	}
	return list, nil
}
