package ycsb

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/workload"
)

// program is one client's operations on the executor's I/O loops, as
// YCSB's CoreWorkload does them: a read of every field of a record, an
// update of one field, an insert of a new record, a scan of records from a
// key, and a read-modify-write (the read locks the record, the write
// stores the read's count plus one, one transaction). Each but the
// read-modify-write is one statement, a transaction of its own; with
// markers (failover, lag --mark-transactions) each is BEGIN, its
// statement, the marker and COMMIT in one exchange.
type program struct {
	s    *state
	rng  *rand.Rand
	mark *workload.Mark
	tx   int // 1 when each operation is an explicit transaction (markers)

	scr  *scrambled
	lat  *latest
	hot  *hotspot
	scnZ *zipfian // scan lengths, zipfian

	v   *values
	key []byte

	// The operation under way: its kind, record, field, scan length and
	// phase; an insert's sequence number.
	kind    kind
	keynum  int64
	field   int
	length  int64
	seq     int64
	phase   uint8
	running bool
	// inCommit says a read-modify-write's COMMIT is in flight, its
	// record's weight (rmwRows) weight.
	inCommit bool
	weight   uint64
}

const (
	phaseOne   uint8 = iota // the operation's statement (an RMW's read)
	phaseWrite              // an RMW's write and COMMIT
	phaseGone               // an RMW's record is missing: ROLLBACK
)

func newProgram(s *state, rng *rand.Rand, mark *workload.Mark) *program {
	c := s.cfg
	p := &program{s: s, rng: rng, mark: mark, v: newValues(c.fieldLength)}
	if mark != nil {
		p.tx = 1
	}
	switch c.distribution {
	case zipfianDist:
		p.scr = newScrambled(0, s.records+c.expectedInserts())
	case latestDist:
		p.lat = newLatest(s.records-1, s.latestZeta)
	case hotspotDist:
		p.hot = newHotspot(0, s.records-1, c.hotData, c.hotOpn)
	}
	if c.scanZipfian {
		p.scnZ = newZipfian(c.minScan, c.maxScan, zipfianConstant, s.scanZeta)
	}
	s.rows.mu.Lock()
	s.rows.progs = append(s.rows.progs, p)
	s.rows.mu.Unlock()
	return p
}

func (p *program) Connected(*executor.Conn) {}

// nextKeynum is YCSB's nextKeynum: a key drawn from the request
// distribution, again while it is beyond the newest acknowledged record.
func (p *program) nextKeynum() int64 {
	s := p.s
	last := s.last()
	for {
		var pos int64
		switch s.cfg.distribution {
		case zipfianDist:
			pos = p.scr.next(p.rng)
		case latestDist:
			pos = p.lat.next(p.rng, last)
		case hotspotDist:
			pos = p.hot.next(p.rng)
		default:
			pos = uniform(p.rng, 0, s.records-1)
		}
		if pos <= last {
			return s.keynum(pos)
		}
	}
}

// draw chooses the operation's record, field, length and value: a retry
// repeats them.
func (p *program) draw(k kind) {
	c := p.s.cfg
	p.kind = k
	if k == insert {
		p.seq = p.s.ins.start()
		p.keynum = p.s.base + p.seq
	} else {
		p.keynum = p.nextKeynum()
	}
	p.key = appendKey(p.key[:0], p.keynum)
	p.field = int(uniform(p.rng, 0, int64(c.fields)-1))
	switch {
	case k == scan && p.scnZ != nil:
		p.length = p.scnZ.next(p.rng, p.scnZ.items)
	case k == scan:
		p.length = uniform(p.rng, c.minScan, c.maxScan)
	case k == update || k == readModifyWrite:
		p.v.make(p.rng, p.key, p.field)
	}
}

func (p *program) Start(c *executor.Conn, op, attempt int) executor.Action {
	k := p.s.kinds[op]
	if attempt == 1 {
		p.draw(k)
	} else if k == insert {
		p.s.ins.retry(p.seq)
	}
	p.running = true
	p.phase = phaseOne
	st := p.s.st
	c.Pipeline(true)
	if p.tx == 1 || k == readModifyWrite {
		c.Bind(st.begin, executor.CaptureNone).Send()
	}
	switch k {
	case read:
		c.Bind(st.read, executor.CaptureFirst).Text(p.key).Send()
	case update:
		c.Bind(st.update[p.tx][p.field], executor.CaptureNone).Text(p.key).Text(p.v.val).Send()
	case insert:
		params := c.Bind(st.insert[p.tx], executor.CaptureNone).Text(p.key)
		for i := range p.s.cfg.fields {
			params.Text(p.v.make(p.rng, p.key, i))
		}
		params.Int(p.keynum).Send()
	case scan:
		c.Bind(st.scan, executor.CaptureNone).Text(p.key).Int(p.length).Send()
	case readModifyWrite:
		c.Bind(st.readForUpdate, executor.CaptureFirst).Text(p.key).Send()
	}
	if p.tx == 1 && k != readModifyWrite {
		p.mark.Queue(c)
		c.Bind(st.commit, executor.CaptureNone).Send()
	}
	c.Pipeline(false)
	return executor.Action{Kind: executor.Await}
}

var (
	commitTag  = []byte("COMMIT")
	update0Tag = []byte("UPDATE 0")
)

func (p *program) Resume(c *executor.Conn) executor.Action {
	for i := 0; i < c.Results(); i++ {
		if err := c.Result(i).Err; err != nil {
			return executor.Action{Kind: executor.Finish, Err: err, Stmt: -1}
		}
	}
	// The operation's statement follows BEGIN when there is one.
	r := c.Result(min(1, c.Results()-1))
	if p.tx == 0 && p.kind != readModifyWrite {
		r = c.Result(0)
	}
	switch p.phase {
	case phaseGone:
		return executor.Action{Kind: executor.Finish, Stmt: -1}
	case phaseWrite:
		return p.committed(c)
	}
	switch p.kind {
	case read:
		p.verify(r, p.s.cfg.fields)
	case update:
		if bytes.Equal(r.Tag(), update0Tag) {
			p.s.missing(p.keynum)
		}
	case readModifyWrite:
		return p.modify(c, r)
	}
	if p.tx == 1 {
		return p.committed(c)
	}
	return executor.Action{Kind: executor.Finish, Stmt: -1}
}

// verify checks a read's record: found, every field of its length.
func (p *program) verify(r *executor.Result, fields int) {
	if r.Kept() == 0 {
		p.s.missing(p.keynum)
		return
	}
	for i := range fields {
		if v, ok := r.Value(0, i); !ok || len(v) != p.s.cfg.fieldLength {
			p.s.badRead.Add(1)
			return
		}
	}
}

// modify writes a read-modify-write's field and the count it read plus
// one, then commits.
func (p *program) modify(c *executor.Conn, r *executor.Result) executor.Action {
	st := p.s.st
	fields := p.s.cfg.fields
	p.verify(r, fields)
	if r.Kept() == 0 {
		p.s.rmwGone.Add(1)
		c.Bind(st.rollback, executor.CaptureNone).Send()
		p.phase = phaseGone
		return executor.Action{Kind: executor.Await}
	}
	v, _ := r.Value(0, fields)
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return executor.Action{Kind: executor.Finish, Err: fmt.Errorf("read-modify-write: YCSB_RMW of %s is %q", p.key, v), Stmt: -1}
	}
	c.Pipeline(true)
	c.Bind(st.rmwUpdate[p.field], executor.CaptureNone).Text(p.key).Text(p.v.val).Int(n + 1).Send()
	p.mark.Queue(c)
	c.Bind(st.commit, executor.CaptureNone).Send()
	c.Pipeline(false)
	p.phase = phaseWrite
	p.inCommit, p.weight = true, p.s.rows.weight(p.keynum)
	return executor.Action{Kind: executor.Await}
}

// committed ends an operation whose last statement was COMMIT: after an
// error the server answers it with ROLLBACK.
func (p *program) committed(c *executor.Conn) executor.Action {
	last := c.Result(c.Results() - 1)
	if !bytes.Equal(last.Tag(), commitTag) {
		return executor.Action{Kind: executor.Finish, Err: fmt.Errorf("%s: COMMIT answered %q", p.kind, last.Tag()), Stmt: -1}
	}
	p.mark.Resolve(last, c.Now)
	if p.kind == readModifyWrite && p.phase == phaseWrite {
		p.inCommit = false
		if bytes.Equal(c.Result(0).Tag(), update0Tag) {
			p.s.missing(p.keynum)
		} else {
			p.s.rows.add(p.weight)
		}
	}
	return executor.Action{Kind: executor.Finish, Stmt: -1}
}

// Ended follows the attempt's outcome: an insert's, and its marker's.
func (p *program) Ended(now time.Time, err error) {
	p.mark.Ended(now, err)
	if p.inCommit {
		p.inCommit = false
		p.s.rows.ended(p.weight, err)
	}
	if !p.running {
		return
	}
	p.running = false
	if p.kind == insert {
		p.s.ins.ended(p.seq, err == nil)
	}
}
