package vote

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/workload"
)

// statements are the vote workload's, made once per run: named (prepared
// once per connection) unless a pooler forbids session state.
type statements struct {
	read, insert, bump, begin, commit *executor.Stmt
}

func newStatements(variant string, pooled bool) *statements {
	name := func(n string) string {
		if pooled {
			return ""
		}
		return "vote_" + n
	}
	read := readJoinSQL
	switch variant {
	case "counter":
		read = readCounterSQL
	case "matview":
		read = readMatviewSQL
	}
	return &statements{
		read:   &executor.Stmt{SQL: read, Name: name("read")},
		insert: &executor.Stmt{SQL: insertSQL, Name: name("insert")},
		bump:   &executor.Stmt{SQL: bumpSQL, Name: name("bump")},
		begin:  &executor.Stmt{SQL: "BEGIN", Name: name("begin"), Begins: true},
		commit: &executor.Stmt{SQL: "COMMIT", Name: name("commit"), Commits: true},
	}
}

// users is how many voters a vote draws its user_id from, uniformly: 0 to
// users-1.
const users = 1 << 40

// program is one client's reads and votes on the executor's I/O loops: a
// read is one statement; a vote is one INSERT (join, matview), or BEGIN,
// the INSERT, the counter's UPDATE and COMMIT in one exchange (counter).
type program struct {
	cfg  *config
	st   *statements
	rs   *runState
	rng  *rand.Rand
	zipf *Zipf
	ids  []int64 // a read's articles, or a vote's in ids[0]
	user int64
	op   int
	arr  []byte // a read's articles as an array literal
	// mark writes a marker inside each vote's transaction (lag
	// --mark-transactions); nil: none.
	mark *workload.Mark
	// hash is the vote's row's (the run's identity), open while an
	// attempt of it is under way.
	hash uint64
	open bool
	buf  []byte
}

func (p *program) Connected(*executor.Conn) {}

func (p *program) pick() int64 {
	if p.zipf != nil {
		return p.zipf.Next()
	}
	return 1 + p.rng.Int64N(p.cfg.articles)
}

// Start draws the operation's articles on its first attempt, so that a
// retry repeats them, and sends it.
func (p *program) Start(c *executor.Conn, op, attempt int) executor.Action {
	p.op = op
	if attempt == 1 {
		if op == 1 {
			p.ids[0], p.user = p.pick(), p.rng.Int64N(users)
			p.buf, p.hash = p.rs.ident.hash(p.buf, p.ids[0], p.user)
		} else {
			for i := range p.ids {
				p.ids[i] = p.pick()
			}
		}
	}
	if op == 0 {
		b := append(p.arr[:0], '{')
		for i, id := range p.ids {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, id, 10)
		}
		p.arr = append(b, '}')
		capture := executor.CaptureNone
		if p.cfg.variant == "matview" {
			capture = executor.CaptureFirst
		}
		c.Bind(p.st.read, capture).Text(p.arr).Send()
		return executor.Action{Kind: executor.Await}
	}
	p.open = true
	if p.cfg.variant != "counter" && p.mark == nil {
		c.Bind(p.st.insert, executor.CaptureNone).Int(p.ids[0]).Int(p.user).Send()
		return executor.Action{Kind: executor.Await}
	}
	// One exchange: BEGIN, the vote, the counter's UPDATE, the marker,
	// COMMIT.
	c.Pipeline(true)
	c.Bind(p.st.begin, executor.CaptureNone).Send()
	c.Bind(p.st.insert, executor.CaptureNone).Int(p.ids[0]).Int(p.user).Send()
	if p.cfg.variant == "counter" {
		c.Bind(p.st.bump, executor.CaptureNone).Int(p.ids[0]).Send()
	}
	p.mark.Queue(c)
	c.Bind(p.st.commit, executor.CaptureNone).Send()
	c.Pipeline(false)
	return executor.Action{Kind: executor.Await}
}

// Ended resolves the marker of a vote that failed, and tells the run's
// identity how a vote ended.
func (p *program) Ended(now time.Time, err error) {
	p.mark.Ended(now, err)
	if p.open {
		p.open = false
		p.rs.ident.Ended(p.hash, err)
	}
}

var (
	updateOne = []byte("UPDATE 1")
	commitTag = []byte("COMMIT")
)

func (p *program) Resume(c *executor.Conn) executor.Action {
	for i := 0; i < c.Results(); i++ {
		if err := c.Result(i).Err; err != nil {
			return executor.Action{Kind: executor.Finish, Err: err, Stmt: -1}
		}
	}
	if p.op == 1 {
		if p.cfg.variant == "counter" && !bytes.Equal(c.Result(2).Tag(), updateOne) {
			return executor.Action{Kind: executor.Finish, Err: fmt.Errorf("vote: article %d does not exist", p.ids[0]), Stmt: -1}
		}
		if c.Results() > 1 { // BEGIN ... COMMIT
			last := c.Result(c.Results() - 1)
			if tag := last.Tag(); !bytes.Equal(tag, commitTag) {
				return executor.Action{Kind: executor.Finish, Err: fmt.Errorf("vote: COMMIT answered %q", tag), Stmt: -1}
			}
			p.mark.Resolve(last, c.Now)
		}
		p.rs.committed.Add(1)
		return executor.Action{Kind: executor.Finish, Stmt: -1}
	}
	if r := c.Result(0); p.cfg.variant == "matview" && r.Kept() > 0 {
		viewVotes, age := intAt(r, 3), intAt(r, 4)
		// Votes whose commit no client has counted yet may already be in
		// the view: staleness is never negative.
		stale := max(p.rs.baseline+p.rs.committed.Load()-viewVotes, 0)
		p.rs.observe(stale, max(age, 0))
	}
	return executor.Action{Kind: executor.Finish, Stmt: -1}
}

func intAt(r *executor.Result, col int) int64 {
	v, _ := r.Value(0, col)
	n, _ := strconv.ParseInt(string(v), 10, 64)
	return n
}
