package vote

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/internal/pg"
	"github.com/txload/txload/workload"
)

// The view holds one row per voted article and a sentinel row, article 0,
// with the total number of votes: a read fetches it in the same statement,
// so it knows exactly how many votes the view it read includes, and when
// that view was refreshed.
const schema = `
CREATE TABLE article (
	id    BIGINT PRIMARY KEY,
	title TEXT,
	votes BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE vote (
	article_id BIGINT NOT NULL,
	user_id    BIGINT NOT NULL
);
CREATE INDEX vote_article_id ON vote (article_id);
CREATE MATERIALIZED VIEW article_votes AS
	SELECT article_id, count(*)::BIGINT AS votes, now() AS refreshed_at FROM vote GROUP BY article_id
	UNION ALL SELECT 0, count(*)::BIGINT, now() FROM vote;
CREATE UNIQUE INDEX article_votes_article_id ON article_votes (article_id)`

const dropSQL = `DROP MATERIALIZED VIEW IF EXISTS article_votes; DROP TABLE IF EXISTS vote, article`

// Init creates and loads the schema server-side, in one transaction.
func (g *gen) Init(ctx context.Context, t *pg.Target, opts workload.InitOptions) error {
	conn, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT count(*) = 2 FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_name IN ('article', 'vote')`).Scan(&exists); err != nil {
		return fmt.Errorf("looking for the vote schema: %w", err)
	}
	if exists && !opts.Drop {
		var n int64
		var view bool
		if err := conn.QueryRow(ctx, `SELECT count(*), to_regclass('article_votes') IS NOT NULL FROM article`).Scan(&n, &view); err == nil &&
			n == g.cfg.articles && view {
			logf(opts, "init: vote schema already holds %d articles; --drop recreates it\n", n)
			return nil
		}
		return fmt.Errorf("init vote: the vote schema exists with other settings; --drop recreates it")
	}
	start := time.Now()
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, dropSQL); err != nil {
			return fmt.Errorf("dropping vote tables: %w", err)
		}
		if _, err := tx.Exec(ctx, schema); err != nil {
			return fmt.Errorf("creating vote tables: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO article (id, title) SELECT g, 'Article #' || g FROM generate_series(1, $1::BIGINT) AS g`,
			g.cfg.articles); err != nil {
			return fmt.Errorf("loading %d articles: %w", g.cfg.articles, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("init vote: %w", err)
	}
	logf(opts, "init: %d articles in %.2fs\n", g.cfg.articles, time.Since(start).Seconds())
	return nil
}

func logf(opts workload.InitOptions, format string, args ...any) {
	if opts.Log != nil {
		fmt.Fprintf(opts.Log, format, args...)
	}
}

const (
	insertSQL      = `INSERT INTO vote (article_id, user_id) VALUES ($1, $2)`
	bumpSQL        = `UPDATE article SET votes = votes + 1 WHERE id = $1`
	readJoinSQL    = `SELECT a.id, a.title, vc.votes FROM article a JOIN (SELECT article_id, COUNT(user_id) AS votes FROM vote WHERE article_id = ANY($1) GROUP BY article_id) vc ON a.id = vc.article_id WHERE a.id = ANY($1)`
	readCounterSQL = `SELECT id, title, votes FROM article WHERE id = ANY($1)`
	readMatviewSQL = `SELECT a.id, a.title, COALESCE(av.votes, 0), t.votes,
	(extract(epoch FROM clock_timestamp() - t.refreshed_at) * 1e6)::BIGINT
FROM article a LEFT JOIN article_votes av ON av.article_id = a.id
CROSS JOIN (SELECT votes, refreshed_at FROM article_votes WHERE article_id = 0) t
WHERE a.id = ANY($1)`
)

// runState is what one run shares between its workers, the refresher and
// the report.
type runState struct {
	baseline  int64        // vote rows before the run
	committed atomic.Int64 // votes the run committed

	// matview
	reads, stalenessSum, stalenessMax, ageSumMicros atomic.Int64
	refreshes, refreshErrors                        atomic.Int64
	lastViewVotes                                   atomic.Int64

	cancel context.CancelFunc
	done   chan struct{}
}

func (r *runState) observe(staleness, ageMicros int64) {
	r.reads.Add(1)
	r.stalenessSum.Add(staleness)
	r.ageSumMicros.Add(ageMicros)
	for {
		m := r.stalenessMax.Load()
		if staleness <= m || r.stalenessMax.CompareAndSwap(m, staleness) {
			return
		}
	}
}

// Ops returns read and write; with --variant matview it starts the
// refresher, stopped by the load's Close.
func (g *gen) Ops(ctx context.Context, t *pg.Target, opts workload.RunOptions) (*workload.QueryLoad, error) {
	rs := &runState{}
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM vote`).Scan(&rs.baseline); err != nil {
		conn.Close(ctx)
		if isUndefined(err) {
			return nil, errNoSchema
		}
		return nil, fmt.Errorf("counting votes: %w", err)
	}
	g.run = rs
	load := &workload.QueryLoad{
		Ops: []string{"read", "write"},
		NewWorker: func(ctx context.Context, id int) (workload.Worker, error) {
			rng := rand.New(rand.NewPCG(opts.Seed, uint64(id)))
			w := &worker{g: g, rs: rs, t: t, rng: rng, ids: make([]int64, g.cfg.readBatch)}
			if g.cfg.distribution == "zipf" {
				w.zipf = NewZipf(rng, g.cfg.articles, g.cfg.zipfExponent)
			}
			if err := w.Reset(ctx); err != nil {
				return nil, err
			}
			return w, nil
		},
	}
	if g.cfg.variant != "matview" {
		conn.Close(ctx)
		return load, nil
	}
	// Refresh once before the workers start, so the view includes every vote
	// of earlier runs.
	if err := refresh(ctx, conn, rs); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rs.cancel, rs.done = cancel, make(chan struct{})
	go g.refresher(rctx, t, conn, rs)
	var once sync.Once
	load.Close = func() {
		once.Do(func() {
			cancel()
			<-rs.done
		})
	}
	return load, nil
}

var errNoSchema = errors.New("no vote schema in this database: run `txload init vote` first")

func isUndefined(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}

// refresh refreshes the view and records how many votes it now includes.
func refresh(ctx context.Context, conn *pgx.Conn, rs *runState) error {
	if _, err := conn.Exec(ctx, `REFRESH MATERIALIZED VIEW article_votes`); err != nil {
		return fmt.Errorf("refreshing article_votes: %w", err)
	}
	var n int64
	if err := conn.QueryRow(ctx, `SELECT votes FROM article_votes WHERE article_id = 0`).Scan(&n); err != nil {
		return fmt.Errorf("reading article_votes: %w", err)
	}
	rs.refreshes.Add(1)
	rs.lastViewVotes.Store(n)
	return nil
}

// refresher refreshes the view every --refresh on its own connection,
// reconnecting after errors, until ctx ends.
func (g *gen) refresher(ctx context.Context, t *pg.Target, conn *pgx.Conn, rs *runState) {
	defer close(rs.done)
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	tick := time.NewTicker(g.cfg.refresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if conn == nil || conn.IsClosed() {
			c, err := t.Connect(ctx)
			if err != nil {
				rs.refreshErrors.Add(1)
				continue
			}
			conn = c
		}
		if err := refresh(ctx, conn, rs); err != nil && ctx.Err() == nil {
			rs.refreshErrors.Add(1)
		}
	}
}

type worker struct {
	g    *gen
	rs   *runState
	t    *pg.Target
	conn *pgx.Conn
	rng  *rand.Rand
	zipf *Zipf
	n    int     // operations picked so far
	ids  []int64 // a read's articles, or a write's in ids[0]
	user int64
}

func (w *worker) pick() int64 {
	if w.zipf != nil {
		return w.zipf.Next()
	}
	return 1 + w.rng.Int64N(w.g.cfg.articles)
}

// Next makes every --write-every-th operation a write, and picks its
// articles now so that a retry repeats them.
func (w *worker) Next() int {
	w.n++
	if w.n%w.g.cfg.writeEvery == 0 {
		w.ids[0] = w.pick()
		w.user = w.rng.Int64N(1 << 40)
		return 1
	}
	for i := range w.ids {
		w.ids[i] = w.pick()
	}
	return 0
}

func (w *worker) Reset(ctx context.Context) error {
	if w.conn != nil {
		w.conn.Close(ctx)
		w.conn = nil
	}
	conn, err := w.t.Connect(ctx)
	if err != nil {
		return err
	}
	w.conn = conn
	return nil
}

func (w *worker) Close(ctx context.Context) {
	if w.conn != nil {
		w.conn.Close(ctx)
	}
}

func (w *worker) Do(ctx context.Context, op, _ int) error {
	if op == 0 {
		return w.read(ctx)
	}
	err := w.write(ctx)
	if err == nil {
		w.rs.committed.Add(1)
		return nil
	}
	if !w.conn.IsClosed() {
		// Best effort: a failed statement leaves the transaction aborted.
		_, _ = w.conn.Exec(ctx, "ROLLBACK")
	}
	if pg.IsConnectionError(err) {
		return pg.DuringCommit(err) // the vote may have committed
	}
	return err
}

func (w *worker) write(ctx context.Context) error {
	a := w.ids[0]
	if w.g.cfg.variant != "counter" {
		_, err := w.conn.Exec(ctx, insertSQL, a, w.user)
		return err
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(insertSQL, a, w.user)
	b.Queue(bumpSQL, a)
	b.Queue("COMMIT")
	br := w.conn.SendBatch(ctx, b)
	var err error
	for i := 0; i < b.Len() && err == nil; i++ {
		var tag pgconn.CommandTag
		tag, err = br.Exec()
		switch {
		case err != nil:
		case i == 2 && tag.RowsAffected() != 1:
			err = fmt.Errorf("vote: article %d does not exist", a)
		case i == 3 && tag.String() != "COMMIT":
			err = fmt.Errorf("vote: COMMIT answered %q", tag.String())
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

func (w *worker) read(ctx context.Context) error {
	var id, votes int64
	var title string
	switch w.g.cfg.variant {
	case "join", "counter":
		q := readJoinSQL
		if w.g.cfg.variant == "counter" {
			q = readCounterSQL
		}
		rows, err := w.conn.Query(ctx, q, w.ids)
		if err != nil {
			return err
		}
		_, err = pgx.ForEachRow(rows, []any{&id, &title, &votes}, func() error { return nil })
		return err
	}
	var viewVotes, ageMicros int64
	n := 0
	rows, err := w.conn.Query(ctx, readMatviewSQL, w.ids)
	if err != nil {
		return err
	}
	if _, err := pgx.ForEachRow(rows, []any{&id, &title, &votes, &viewVotes, &ageMicros}, func() error { n++; return nil }); err != nil {
		return err
	}
	if n == 0 {
		return nil // none of the articles exists: nothing read from the view
	}
	// Votes whose commit the worker has not yet counted may already be in
	// the view: staleness is never negative.
	stale := max(w.rs.baseline+w.rs.committed.Load()-viewVotes, 0)
	w.rs.observe(stale, max(ageMicros, 0))
	return nil
}
