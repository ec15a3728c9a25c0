package pgio

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// SelectSQL reads a range of rows of table: its statement for pgio's
// SELECT, prepared.
func SelectSQL(table string) string {
	return "SELECT count(*), sum(scratch) FROM " + table + " WHERE mykey BETWEEN $1 AND $2"
}

// UpdateSQL changes a range of rows of table.
func UpdateSQL(table string) string {
	return "UPDATE " + table + " SET scratch = scratch + 1 WHERE mykey BETWEEN $1 AND $2"
}

// Client is one client-mode session: pgio's statements from txload on its
// own connection, prepared; each its own transaction, or (--commit run)
// every statement of a phase in one.
type Client struct {
	r       *Run
	s       int
	table   string
	conn    *pgx.Conn
	rng     *rand.Rand
	key     int64
	started bool
	// next is the first boundary of the run the session has not reached;
	// inTx says a --commit run transaction is open.
	next int
	inTx bool
	// dead says the session ended on an error (Fail).
	dead bool
}

// NewClient connects session s of a client-mode run.
func (r *Run) NewClient(ctx context.Context, s int) (*Client, error) {
	c := &Client{r: r, s: s, table: r.TableOf(s), rng: rand.New(rand.NewPCG(r.opts.Seed, uint64(s)))}
	if err := c.Reset(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Reset replaces the connection and prepares the statements on it.
func (c *Client) Reset(ctx context.Context) error {
	if c.conn != nil {
		c.conn.Close(ctx)
		c.conn = nil
	}
	c.inTx = false
	conn, err := c.r.target.Connect(ctx)
	if err != nil {
		return err
	}
	for name, sql := range map[string]string{"pgio_select": SelectSQL(c.table), "pgio_update": UpdateSQL(c.table)} {
		if _, err := conn.Prepare(ctx, name, sql); err != nil {
			conn.Close(ctx)
			return fmt.Errorf("preparing %s: %w", sql, err)
		}
	}
	// What the new backend read to set itself up (the catalogs) is in its
	// pending statistics: flushed now, before the run's first sample of
	// pg_stat_database, rather than into the measured period.
	if c.r.sampler.DB {
		ForceFlush(ctx, conn)
	}
	c.conn = conn
	return nil
}

// StartClient starts a client-mode run whose sessions are connected: its
// clock, and the first sample of the counters, taken before any statement.
func (r *Run) StartClient(ctx context.Context, start time.Time) error {
	r.begin(ctx, start.Add(r.opts.Warmup))
	s, err := r.sampler.Sample(ctx)
	if err != nil {
		return err
	}
	s.At = start
	if r.opts.Warmup == 0 {
		r.setBase(s)
	}
	r.Collector().Sample(s)
	r.sampleLoop(ctx, 0, start.Add(1))
	return nil
}

// Boundary is called between statements, before the next one is chosen.
// Once the session is past one of the run's boundaries it reaches it: at
// the end of the warm-up it ends its transaction (--commit run), flushes
// its statistics and waits (a millisecond or so) until the counters are
// sampled, so that they start the measured period exactly: the statements
// before are the warm-up's, those after the measured period's. At an
// interval's end it flushes them when the database's counters are the
// run's only per-interval block counts (Run.flushEach), and goes on.
func (c *Client) Boundary(ctx context.Context) {
	r := c.r
	now := time.Now()
	if c.next >= len(r.bounds) || now.Before(r.bounds[c.next]) {
		return
	}
	from, base := c.next, false
	for c.next < len(r.bounds) && !now.Before(r.bounds[c.next]) {
		base = base || (r.opts.Warmup > 0 && r.bounds[c.next].Equal(r.Collector().Measured()))
		c.next++
	}
	if base && c.inTx {
		c.commit(ctx)
	}
	if r.sampler.DB && (base || r.flushEach()) {
		ForceFlush(ctx, c.conn)
	}
	r.reached(from, c.next)
	if !base {
		return
	}
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-r.baseTaken:
	case <-t.C:
	case <-ctx.Done():
	}
}

// commit ends the session's --commit run transaction; a failure is the
// session's.
func (c *Client) commit(ctx context.Context) {
	c.inTx = false
	if _, err := c.conn.Exec(ctx, "COMMIT"); err != nil && ctx.Err() == nil {
		c.Fail(ctx, time.Now(), fmt.Errorf("committing its transaction: %w", err))
	}
}

// Do runs attempt of a statement of kind k whose intended start was
// intended, and returns the rows it touched; Record records it, with the
// time the engine is told it ended. A retry repeats the key range of the
// first attempt. Under --commit run the first statement of a phase opens
// its transaction.
func (c *Client) Do(ctx context.Context, k Kind, intended time.Time, attempt int) (int64, error) {
	col := c.r.Collector()
	if !c.started {
		c.started = true
		col.Started(c.s, intended)
	}
	col.Through(c.s, intended)
	first, width := c.r.cfg.Span(k)
	if attempt == 1 {
		c.key = Key(c.rng, first)
	}
	if c.r.cfg.Commit == CommitRun && !c.inTx {
		if _, err := c.conn.Exec(ctx, "BEGIN"); err != nil {
			return 0, err
		}
		c.inTx = true
	}
	var rows int64
	if k == Select {
		var sum pgtype.Int8
		if err := c.conn.QueryRow(ctx, "pgio_select", c.key, c.key+width-1).Scan(&rows, &sum); err != nil {
			return 0, err
		}
	} else {
		tag, err := c.conn.Exec(ctx, "pgio_update", c.key, c.key+width-1)
		if err != nil {
			return 0, err
		}
		rows = tag.RowsAffected()
		c.r.wrote(c.s, c.phase(intended))
	}
	return rows, nil
}

// Record records a statement of kind k that Do ran, from its intended
// start to end: the time the engine is told it ended, so that both count
// it in the same interval, window or drain.
func (c *Client) Record(k Kind, intended, end time.Time, rows int64) {
	c.r.Collector().Record(c.s, k, intended, end.Sub(intended), rows)
}

// InTx says the session's statements share a transaction that an error
// ends: the session cannot go on after one (--commit run).
func (c *Client) InTx() bool { return c.inTx }

func (c *Client) phase(t time.Time) int {
	if t.Before(c.r.Collector().Measured()) {
		return 0
	}
	return 1
}

// Fail ends the session on err at at: its transaction is rolled back and
// the run says so.
func (c *Client) Fail(ctx context.Context, at time.Time, err error) {
	if c.inTx && !c.conn.IsClosed() {
		_, _ = c.conn.Exec(ctx, "ROLLBACK")
	}
	c.inTx, c.dead = false, true
	c.r.sessionFailed(c.s, c.phase(at), at, err)
}

// Dead says the session ended on an error.
func (c *Client) Dead() bool { return c.dead }

// Close ends the session's transaction (--commit run), flushes its
// statistics, so that the run's last sample of the database's counters
// holds all of its work, and closes the connection.
func (c *Client) Close(ctx context.Context) {
	if c.conn == nil {
		return
	}
	if c.inTx {
		c.commit(ctx)
	}
	if c.r.sampler.DB {
		ForceFlush(ctx, c.conn)
	}
	c.conn.Close(ctx)
	c.conn = nil
	if col := c.r.Collector(); col != nil {
		col.Done(c.s)
		// The sampler waits for no boundary of this session any more.
		c.r.reached(c.next, len(c.r.bounds))
		c.next = len(c.r.bounds)
	}
}
