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
// own connection, prepared, each its own transaction.
type Client struct {
	r       *Run
	s       int
	table   string
	conn    *pgx.Conn
	rng     *rand.Rand
	key     int64
	started bool
	flushed bool
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
// The first time it is called once the warm-up is over, the session flushes
// its statistics and waits (a millisecond or so) until the counters are
// sampled, so that they start the measured period exactly: the statements
// before are the warm-up's, those after the measured period's.
func (c *Client) Boundary(ctx context.Context) {
	if c.flushed || c.r.opts.Warmup == 0 || time.Now().Before(c.r.Collector().Measured()) {
		return
	}
	c.flushed = true
	if c.r.sampler.DB {
		ForceFlush(ctx, c.conn)
	}
	c.r.flushed <- struct{}{}
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-c.r.baseTaken:
	case <-t.C:
	case <-ctx.Done():
	}
}

// Do runs attempt of a statement of kind k whose intended start was
// intended, and records it if it succeeds. A retry repeats the key range
// of the first attempt.
func (c *Client) Do(ctx context.Context, k Kind, intended time.Time, attempt int) error {
	col := c.r.Collector()
	if !c.started {
		c.started = true
		col.Started(c.s, intended)
	}
	col.Through(c.s, intended)
	n := c.r.cfg.WorkUnit
	if k == Update {
		n = c.r.cfg.UpdateWorkUnit
	}
	if attempt == 1 {
		c.key = Key(c.rng, c.r.cfg.Scale, n)
	}
	var rows int64
	if k == Select {
		var sum pgtype.Int8
		if err := c.conn.QueryRow(ctx, "pgio_select", c.key, c.key+n-1).Scan(&rows, &sum); err != nil {
			return err
		}
	} else {
		tag, err := c.conn.Exec(ctx, "pgio_update", c.key, c.key+n-1)
		if err != nil {
			return err
		}
		rows = tag.RowsAffected()
	}
	col.Record(c.s, k, intended, time.Since(intended), rows)
	return nil
}

// Close flushes the session's statistics, so that the run's last sample of
// the database's counters holds all of its work, and closes the connection.
func (c *Client) Close(ctx context.Context) {
	if c.conn == nil {
		return
	}
	if c.r.sampler.DB {
		ForceFlush(ctx, c.conn)
	}
	c.conn.Close(ctx)
	c.conn = nil
	if col := c.r.Collector(); col != nil {
		col.Done(c.s)
	}
}
