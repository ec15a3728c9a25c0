package tpcc

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// The operations, in the order of QueryLoad.Ops. A New-Order dealt to
// roll back (1%, clause 2.4.1.4) is an operation of its own, so that the
// window's counts and latencies of both are exact; the report adds them up
// as the spec's New-Order.
const (
	opNewOrder = iota
	opPayment
	opOrderStatus
	opDelivery
	opStockLevel
	opNewOrderRollback
	numOps
)

var opNames = [numOps]string{"new-order", "payment", "order-status", "delivery", "stock-level", "new-order-rollback"}

// The phases of a transaction: the exchange awaited.
const (
	phaseRead     uint8 = iota // New-Order's first exchange
	phaseCommit                // the exchange that ends with COMMIT
	phaseRollback              // a New-Order's ROLLBACK of an unused item
)

// program is one terminal's transactions on the executor's I/O loops.
// Its inputs are drawn on an operation's first attempt, so that a retry
// repeats them.
type program struct {
	st         *statements
	warehouses int
	home, dist int // the terminal's warehouse and district (Stock-Level's)
	c          CValues
	rng        *rand.Rand
	mark       *workload.Mark
	obs        *observed

	op        int
	phase     uint8
	checked   bool // the connection's isolation level was read back
	effective pg.Isolation

	// New-Order's inputs; its items sorted by (warehouse, item) so that
	// two orders lock their stock in one order.
	d, cid, olCnt int
	lines         [15]line
	oid           int64
	allLocal      int
	// Payment's and Order-Status's inputs.
	cw, cd, amount int // amount in cents
	byName         bool
	last           []byte
	// Delivery's carrier, Stock-Level's threshold.
	carrier, threshold int

	arr  [3][]byte // New-Order's arrays as text
	text []byte    // Payment's amount as text
	want []byte    // New-Order's lines' command tag

	// What committed, for the report's checks of the inputs' shares.
	counts counts
}

type line struct{ item, supply, qty int }

// counts are what a terminal's committed transactions drew.
type counts struct {
	orderLines, remoteLines      int64
	payments, remotePayments     int64
	paymentsByName, statusByName int64
	orderStatus                  int64
	deliveries, districtsSkipped int64
	districtsDelivered           int64
}

func (c *counts) add(o counts) {
	c.orderLines += o.orderLines
	c.remoteLines += o.remoteLines
	c.payments += o.payments
	c.remotePayments += o.remotePayments
	c.paymentsByName += o.paymentsByName
	c.statusByName += o.statusByName
	c.orderStatus += o.orderStatus
	c.deliveries += o.deliveries
	c.districtsSkipped += o.districtsSkipped
	c.districtsDelivered += o.districtsDelivered
}

func (p *program) Connected(*executor.Conn) { p.checked = false }

// draw draws operation op's inputs (clauses 2.4.1, 2.5.1, 2.6.1, 2.7.1,
// 2.8.1).
func (p *program) draw(op int) {
	r := p.rng
	switch op {
	case opNewOrder, opNewOrderRollback:
		p.d = randInt(r, 1, districtsPerWH)
		p.cid = nuRand(r, aCID, p.c.CID, 1, customersPerDistrict)
		p.olCnt = randInt(r, 5, 15)
		p.allLocal = 1
		for i := range p.olCnt {
			l := &p.lines[i]
			l.item = p.item(i)
			l.supply = p.home
			if p.warehouses > 1 && r.IntN(100) == 0 {
				l.supply = p.other()
				p.allLocal = 0
			}
			l.qty = randInt(r, 1, 10)
		}
		if op == opNewOrderRollback {
			p.lines[p.olCnt-1].item = unusedItem
		}
		slices.SortFunc(p.lines[:p.olCnt], func(a, b line) int {
			if a.supply != b.supply {
				return a.supply - b.supply
			}
			return a.item - b.item
		})
	case opPayment:
		p.d = randInt(r, 1, districtsPerWH)
		p.cw, p.cd = p.home, p.d
		if p.warehouses > 1 && randInt(r, 1, 100) > 85 {
			p.cw, p.cd = p.other(), randInt(r, 1, districtsPerWH)
		}
		p.customer()
		p.amount = randInt(r, 100, 500000)
	case opOrderStatus:
		p.d = randInt(r, 1, districtsPerWH)
		p.customer()
	case opDelivery:
		p.carrier = randInt(r, 1, 10)
	case opStockLevel:
		p.threshold = randInt(r, 10, 20)
	}
}

// item draws the item of line i, distinct from those of the lines before.
func (p *program) item(i int) int {
	for {
		it := nuRand(p.rng, aItem, p.c.Item, 1, items)
		if !slices.ContainsFunc(p.lines[:i], func(l line) bool { return l.item == it }) {
			return it
		}
	}
}

// customer draws a customer by last name (60%) or by id.
func (p *program) customer() {
	p.byName = randInt(p.rng, 1, 100) <= 60
	if p.byName {
		p.last = appendLastName(p.last[:0], nuRand(p.rng, aLast, p.c.Last, 0, 999))
	} else {
		p.cid = nuRand(p.rng, aCID, p.c.CID, 1, customersPerDistrict)
	}
}

// other is a warehouse other than the home one.
func (p *program) other() int {
	w := randInt(p.rng, 1, p.warehouses-1)
	if w >= p.home {
		w++
	}
	return w
}

func (p *program) Start(c *executor.Conn, op, attempt int) executor.Action {
	p.op = op
	if attempt == 1 {
		p.draw(op)
	}
	c.Pipeline(true)
	c.Bind(p.st.begin, executor.CaptureNone).Send()
	if !p.checked {
		c.Bind(p.st.isolation, executor.CaptureFirst).Send()
	}
	w := int64(p.home)
	p.phase = phaseCommit
	switch op {
	case opNewOrder, opNewOrderRollback:
		c.Bind(p.st.noDistrict, executor.CaptureFirst).Int(w).Int(int64(p.d)).Send()
		c.Bind(p.st.noCustomer, executor.CaptureFirst).Int(w).Int(int64(p.d)).Int(int64(p.cid)).Send()
		p.arr[0] = p.array(p.arr[0], func(l line) int { return l.item })
		c.Bind(p.st.noItems, executor.CaptureNone).Text(p.arr[0]).Send()
		p.phase = phaseRead
	case opPayment:
		p.text = fixed(p.text[:0], int64(p.amount), 2)
		c.Bind(p.st.payWarehouse, executor.CaptureNone).Int(w).Text(p.text).Send()
		c.Bind(p.st.payDistrict, executor.CaptureNone).Int(w).Int(int64(p.d)).Text(p.text).Send()
		st := p.st.payByID
		if p.byName {
			st = p.st.payByName
		}
		b := c.Bind(st, executor.CaptureNone).Int(w).Int(int64(p.d)).Int(int64(p.cw)).Int(int64(p.cd))
		if p.byName {
			b.Text(p.last)
		} else {
			b.Int(int64(p.cid))
		}
		b.Text(p.text).Send()
		p.commit(c)
	case opOrderStatus:
		st := p.st.osByID
		if p.byName {
			st = p.st.osByName
		}
		b := c.Bind(st, executor.CaptureNone).Int(w).Int(int64(p.d))
		if p.byName {
			b.Text(p.last)
		} else {
			b.Int(int64(p.cid))
		}
		b.Send()
		p.commit(c)
	case opDelivery:
		c.Bind(p.st.delivery, executor.CaptureFirst).Int(w).Int(int64(p.carrier)).Send()
		p.commit(c)
	case opStockLevel:
		c.Bind(p.st.stockLevel, executor.CaptureFirst).Int(w).Int(int64(p.dist)).Int(int64(p.threshold)).Send()
		p.commit(c)
	}
	c.Pipeline(false)
	return executor.Action{Kind: executor.Await}
}

// commit queues the marker, if any, and COMMIT.
func (p *program) commit(c *executor.Conn) {
	p.mark.Queue(c)
	c.Bind(p.st.commit, executor.CaptureNone).Send()
}

// array writes New-Order's lines' field f as an array literal.
func (p *program) array(dst []byte, f func(line) int) []byte {
	dst = append(dst[:0], '{')
	for i := range p.olCnt {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendInt(dst, f(p.lines[i]))
	}
	return append(dst, '}')
}

func (p *program) fail(format string, args ...any) executor.Action {
	return executor.Action{Kind: executor.Finish, Err: fmt.Errorf("%s: "+format, append([]any{opNames[p.op]}, args...)...), Stmt: -1}
}

func (p *program) Resume(c *executor.Conn) executor.Action {
	for i := 0; i < c.Results(); i++ {
		if err := c.Result(i).Err; err != nil {
			return executor.Action{Kind: executor.Finish, Err: err, Stmt: -1}
		}
	}
	switch p.phase {
	case phaseRollback:
		return executor.Action{Kind: executor.Finish, Stmt: -1}
	case phaseCommit:
		return p.committed(c)
	}
	// New-Order's first exchange: BEGIN, [isolation,] district, customer,
	// items.
	i := 1
	if !p.checked {
		if a, ok := p.readIsolation(c); !ok {
			return a
		}
		i = 2
	}
	dr := c.Result(i)
	if dr.Kept() != 1 {
		return p.fail("district %d of warehouse %d not found", p.d, p.home)
	}
	v, _ := dr.Value(0, 0)
	oid, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return p.fail("reading the order id %q: %v", v, err)
	}
	p.oid = oid
	if c.Result(i+1).Kept() != 1 {
		return p.fail("customer %d of district %d of warehouse %d not found", p.cid, p.d, p.home)
	}
	found := c.Result(i + 2).Rows
	switch {
	case found < p.olCnt && p.op == opNewOrderRollback:
		// The unused item: the transaction rolls back, as the spec asks
		// (its district's order id with it).
		c.Bind(p.st.rollback, executor.CaptureNone).Send()
		p.phase = phaseRollback
		return executor.Action{Kind: executor.Await}
	case found < p.olCnt:
		return p.fail("%d of its %d items not found", p.olCnt-found, p.olCnt)
	case p.op == opNewOrderRollback:
		return p.fail("the unused item %d was found", unusedItem)
	}
	w, d := int64(p.home), int64(p.d)
	c.Pipeline(true)
	c.Bind(p.st.noOrder, executor.CaptureNone).Int(oid).Int(d).Int(w).Int(int64(p.cid)).Int(int64(p.olCnt)).Int(int64(p.allLocal)).Send()
	c.Bind(p.st.noNewOrder, executor.CaptureNone).Int(oid).Int(d).Int(w).Send()
	p.arr[1] = p.array(p.arr[1], func(l line) int { return l.supply })
	p.arr[2] = p.array(p.arr[2], func(l line) int { return l.qty })
	c.Bind(p.st.noLines, executor.CaptureNone).Int(oid).Int(d).Int(w).Text(p.arr[0]).Text(p.arr[1]).Text(p.arr[2]).Send()
	p.commit(c)
	c.Pipeline(false)
	p.phase = phaseCommit
	return executor.Action{Kind: executor.Await}
}

// readIsolation reads back the level the server runs the connection's
// transactions at (result 1 of the first exchange).
func (p *program) readIsolation(c *executor.Conn) (executor.Action, bool) {
	v, _ := c.Result(1).Value(0, 0)
	eff, err := pg.ServerIsolation(string(v))
	if err != nil {
		return executor.Action{Kind: executor.Finish, Err: pg.Fatal(fmt.Errorf("reading back the isolation level: %w", err)), Stmt: -1}, false
	}
	p.effective, p.checked = eff, true
	p.obs.Add(eff)
	return executor.Action{}, true
}

var (
	commitTag = []byte("COMMIT")
	insertOne = []byte("INSERT 0 1")
)

// committed checks the committing exchange's results, then that COMMIT
// committed (after an error the server answers it ROLLBACK), and counts
// what the transaction drew.
func (p *program) committed(c *executor.Conn) executor.Action {
	if !p.checked {
		if a, ok := p.readIsolation(c); !ok {
			return a
		}
	}
	n := c.Results()
	last := c.Result(n - 1)
	if tag := last.Tag(); !bytes.Equal(tag, commitTag) {
		return p.fail("COMMIT answered %q", tag)
	}
	// The transaction's own statement, before the marker and COMMIT.
	body := c.Result(n - 2)
	if p.mark.Open() {
		body = c.Result(n - 3)
	}
	k := &p.counts
	switch p.op {
	case opNewOrder:
		p.want = appendInt(append(p.want[:0], "INSERT 0 "...), p.olCnt)
		if !bytes.Equal(body.Tag(), p.want) {
			return p.fail("order lines: %q, want %q", body.Tag(), p.want)
		}
		k.orderLines += int64(p.olCnt)
		for _, l := range p.lines[:p.olCnt] {
			if l.supply != p.home {
				k.remoteLines++
			}
		}
	case opPayment:
		if !bytes.Equal(body.Tag(), insertOne) {
			return p.fail("no customer %s in district %d of warehouse %d (%s)", p.who(), p.cd, p.cw, body.Tag())
		}
		k.payments++
		if p.cw != p.home {
			k.remotePayments++
		}
		if p.byName {
			k.paymentsByName++
		}
	case opOrderStatus:
		if body.Rows == 0 {
			return p.fail("no customer %s with an order in district %d of warehouse %d", p.who(), p.d, p.home)
		}
		k.orderStatus++
		if p.byName {
			k.statusByName++
		}
	case opDelivery:
		v, _ := body.Value(0, 0)
		n, _ := strconv.Atoi(string(v))
		k.deliveries++
		k.districtsDelivered += int64(n)
		k.districtsSkipped += int64(districtsPerWH - n)
	}
	p.mark.Resolve(last, c.Now)
	return executor.Action{Kind: executor.Finish, Stmt: -1}
}

// who names the customer drawn.
func (p *program) who() string {
	if p.byName {
		return "named " + string(p.last)
	}
	return strconv.Itoa(p.cid)
}

// Ended resolves the marker of a transaction that failed.
func (p *program) Ended(now time.Time, err error) { p.mark.Ended(now, err) }
