package bank

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// statements are the bank's statements, made once per run: named (prepared
// once per connection) unless a pooler forbids session state.
type statements struct {
	begin, read, readForUpdate, write, delta, commit, rollback, isolation *executor.Stmt
}

func newStatements(c *config, pooled bool) *statements {
	name := func(n string) string {
		if pooled {
			return ""
		}
		return "bank_" + n
	}
	return &statements{
		begin:         &executor.Stmt{SQL: c.isolation.BeginSQL(), Name: name("begin"), Begins: true},
		read:          &executor.Stmt{SQL: selectSQL, Name: name("read")},
		readForUpdate: &executor.Stmt{SQL: selectForUpdateSQL, Name: name("read_for_update")},
		write:         &executor.Stmt{SQL: writeSQL, Name: name("write")},
		delta:         &executor.Stmt{SQL: deltaSQL, Name: name("delta")},
		commit:        &executor.Stmt{SQL: "COMMIT", Name: name("commit"), Commits: true},
		rollback:      &executor.Stmt{SQL: "ROLLBACK", Name: name("rollback")},
		isolation:     &executor.Stmt{SQL: "SELECT current_setting('transaction_isolation')", Name: name("isolation")},
	}
}

// program is one client's transfers on the executor's I/O loops: a read
// (both accounts, in the transaction's first exchange with BEGIN), then the
// writes, the ledger row and COMMIT in a second; a delta transfer is one
// exchange. The first transaction on each connection also reads back the
// isolation level the server runs it at.
type program struct {
	cfg *config
	st  *statements
	obs *observed
	rng *rand.Rand

	from, to  int32
	effective pg.Isolation
	checked   bool // the connection's level was read back
	phase     uint8

	// mark writes a marker inside each transfer (lag --mark-transactions),
	// pipelined just before its COMMIT; nil: none.
	mark *workload.Mark

	// ident is the run's identity of the ledger rows it wrote; hash is
	// the row of the transfer whose writes were sent, open until it ends.
	ident *identity
	hash  uint64
	open  bool
	buf   []byte
}

const (
	phaseRead uint8 = iota
	phaseWrite
	phaseDeclined
)

func (p *program) Connected(*executor.Conn) { p.checked = false }

// pick draws the transfer's accounts: a retry repeats them.
func (p *program) pick() {
	n := int32(p.cfg.selection)
	p.from = 1 + p.rng.Int32N(n)
	p.to = 1 + p.rng.Int32N(n-1)
	if p.to >= p.from {
		p.to++
	}
}

func (p *program) Start(c *executor.Conn, _, attempt int) executor.Action {
	if attempt == 1 {
		p.pick()
	}
	c.Pipeline(true)
	c.Bind(p.st.begin, executor.CaptureNone).Send()
	if !p.checked {
		c.Bind(p.st.isolation, executor.CaptureFirst).Send()
	}
	switch p.cfg.transfer {
	case Delta:
		if p.checked {
			p.queueDelta(c)
		}
	case ForUpdate:
		c.Bind(p.st.readForUpdate, executor.CaptureAll).Int(int64(p.from)).Int(int64(p.to)).Send()
	default:
		c.Bind(p.st.read, executor.CaptureAll).Int(int64(p.from)).Int(int64(p.to)).Send()
	}
	c.Pipeline(false)
	p.phase = phaseRead
	return executor.Action{Kind: executor.Await}
}

func (p *program) queueDelta(c *executor.Conn) {
	p.buf, p.hash = p.ident.hash(p.buf, p.from, p.to, p.cfg.amount, false, 0, 0, p.effective, Delta)
	p.open = true
	c.Bind(p.st.delta, executor.CaptureNone).Int(int64(p.from)).Int(int64(p.to)).Int(p.cfg.amount).
		Int(int64(p.effective)).Int(int64(Delta)).Send()
	p.mark.Queue(c) // the marker, in the pipeline before COMMIT
	c.Bind(p.st.commit, executor.CaptureNone).Send()
}

func (p *program) Resume(c *executor.Conn) executor.Action {
	for i := 0; i < c.Results(); i++ {
		if err := c.Result(i).Err; err != nil {
			return executor.Action{Kind: executor.Finish, Err: err, Stmt: -1}
		}
	}
	switch p.phase {
	case phaseDeclined:
		p.obs.declined.Add(1)
		return executor.Action{Kind: executor.Finish, Stmt: -1}
	case phaseWrite:
		return p.committed(c)
	}
	i := 1
	if !p.checked {
		v, _ := c.Result(1).Value(0, 0)
		eff, err := pg.ServerIsolation(string(v))
		if err != nil {
			return executor.Action{Kind: executor.Finish, Err: pg.Fatal(fmt.Errorf("reading back the isolation level: %w", err)), Stmt: -1}
		}
		p.effective, p.checked = eff, true
		p.obs.Add(eff)
		i = 2
	}
	if p.cfg.transfer == Delta {
		if i == c.Results() { // the level was read first: now the transfer
			c.Pipeline(true)
			p.queueDelta(c)
			c.Pipeline(false)
			p.phase = phaseWrite
			return executor.Action{Kind: executor.Await}
		}
		return p.committed(c)
	}
	r := c.Result(i)
	if r.Kept() != 2 {
		return executor.Action{Kind: executor.Finish, Err: fmt.Errorf("transfer: read %d of accounts %d and %d, want 2", r.Kept(), p.from, p.to), Stmt: -1}
	}
	var fromBal, toBal, fromVer, toVer int64
	for row := 0; row < 2; row++ {
		id := atoi(r, row, 0)
		if int32(id) == p.from {
			fromBal, fromVer = atoi(r, row, 1), atoi(r, row, 2)
		} else {
			toBal, toVer = atoi(r, row, 1), atoi(r, row, 2)
		}
	}
	amount := p.cfg.amount
	if fromBal < amount {
		// Declined for want of funds: rolled back, counted as done.
		c.Bind(p.st.rollback, executor.CaptureNone).Send()
		p.phase = phaseDeclined
		return executor.Action{Kind: executor.Await}
	}
	p.buf, p.hash = p.ident.hash(p.buf, p.from, p.to, amount, true, fromVer, toVer, p.effective, p.cfg.transfer)
	p.open = true
	c.Pipeline(true)
	c.Bind(p.st.write, executor.CaptureNone).Int(int64(p.from)).Int(int64(p.to)).Int(fromBal - amount).Int(toBal + amount).
		Int(amount).Int(fromVer).Int(toVer).Int(int64(p.effective)).Int(int64(p.cfg.transfer)).Send()
	p.mark.Queue(c) // the marker, in the pipeline before COMMIT
	c.Bind(p.st.commit, executor.CaptureNone).Send()
	c.Pipeline(false)
	p.phase = phaseWrite
	return executor.Action{Kind: executor.Await}
}

var commitTag = []byte("COMMIT")

// committed checks that COMMIT committed: after an error the server answers
// COMMIT with ROLLBACK.
func (p *program) committed(c *executor.Conn) executor.Action {
	if tag := c.Result(c.Results() - 1).Tag(); !bytes.Equal(tag, commitTag) {
		return executor.Action{Kind: executor.Finish, Err: fmt.Errorf("transfer: COMMIT answered %q", tag), Stmt: -1}
	}
	p.mark.Resolve(c.Result(c.Results()-1), c.Now)
	return executor.Action{Kind: executor.Finish, Stmt: -1}
}

// Ended resolves the marker of a transfer that failed, and tells the
// run's identity how a transfer whose writes were sent ended.
func (p *program) Ended(now time.Time, err error) {
	p.mark.Ended(now, err)
	if p.open {
		p.open = false
		p.ident.Ended(p.hash, err)
	}
}

func atoi(r *executor.Result, row, col int) int64 {
	v, _ := r.Value(row, col)
	n, _ := strconv.ParseInt(string(v), 10, 64)
	return n
}
