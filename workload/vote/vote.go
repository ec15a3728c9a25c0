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

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
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
CREATE MATERIALIZED VIEW article_votes AS` + viewSQL + `;
CREATE UNIQUE INDEX article_votes_article_id ON article_votes (article_id);
CREATE TABLE vote_variant (variant TEXT PRIMARY KEY)`

// viewSQL is article_votes' query, as init makes it (check holds the
// view's definition to it: definition.go).
const viewSQL = `
	SELECT article_id, count(*)::BIGINT AS votes, now() AS refreshed_at FROM vote GROUP BY article_id
	UNION ALL SELECT 0, count(*)::BIGINT, now() FROM vote`

// schema declares the vote tables for init.
func (g *gen) schema() workload.Schema {
	n := g.cfg.articles
	return workload.Schema{
		Workload: "vote",
		Tables:   []string{"vote_variant", "vote", "article"},
		Settings: fmt.Sprintf("articles=%d", n),
		Drop:     `DROP MATERIALIZED VIEW IF EXISTS article_votes`,
		Create:   schema,
		Load: func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO article (id, title) SELECT g, 'Article #' || g FROM generate_series(1, $1::BIGINT) AS g`, n); err != nil {
				return fmt.Errorf("loading %d articles: %w", n, err)
			}
			return nil
		},
		Describe: fmt.Sprintf("%d articles", n),
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
	ident     *identity    // which vote rows the run committed

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

// ops returns read and write; with --variant matview it starts the
// refresher, stopped by the load's Close.
func (g *gen) ops(ctx context.Context, t *pg.Target, opts workload.RunOptions) (*workload.QueryLoad, error) {
	rs := &runState{ident: newIdentity()}
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := g.schema().Require(ctx, conn); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	// Summed here, not in the server: the seed must not reach it (a
	// statement log) before the audit's snapshot.
	if rs.ident.before, rs.baseline, err = workload.CopyHashSum(ctx, conn.PgConn(), rs.ident.seed, identityCopy, &rs.ident.rowsBefore); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("counting votes and summing their identities: %w", err)
	}
	if err := recordVariant(ctx, conn, g.cfg.variant); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	load := &workload.QueryLoad{
		Ops:     []string{"read", "write"},
		Chooser: writeEvery(g.cfg.writeEvery),
		Report: func(ctx context.Context, total *metrics.Snapshot) (*workload.CheckResult, error) {
			return g.runReport(ctx, t, total, rs)
		},
	}
	st := newStatements(g.cfg.variant, t.Pooled())
	load.Protocol = workload.ProtocolOf(st.read, st.insert, st.bump, st.begin, st.commit)
	load.Drive = workload.Programs(t, func(id int) workload.Program {
		rng := rand.New(rand.NewPCG(opts.Seed, uint64(opts.FirstClient+id)))
		markName := "vote_mark"
		if t.Pooled() {
			markName = ""
		}
		p := &program{cfg: &g.cfg, st: st, rs: rs, rng: rng, ids: make([]int64, g.cfg.readBatch),
			mark: workload.NewMark(opts, id, markName)}
		rs.ident.add(p)
		if g.cfg.distribution == "zipf" {
			p.zipf = NewZipf(rng, g.cfg.articles, g.cfg.zipfExponent)
		}
		return p
	})
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

// recordVariant records that a run of variant writes votes: only counter
// runs bump article.votes, so check holds the counters to the vote rows
// exactly when every run was one. A database made before vote_variant
// existed gets it, with "unknown" when it already holds votes that earlier
// runs left unrecorded.
func recordVariant(ctx context.Context, conn *pgx.Conn, variant string) error {
	if _, err := conn.Exec(ctx, `DO $$ BEGIN
	IF to_regclass('vote_variant') IS NULL THEN
		CREATE TABLE vote_variant (variant TEXT PRIMARY KEY);
		INSERT INTO vote_variant SELECT 'unknown' WHERE EXISTS (SELECT FROM vote) OR EXISTS (SELECT FROM article WHERE votes <> 0);
	END IF;
END $$`); err != nil {
		return fmt.Errorf("making vote_variant: %w", err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO vote_variant VALUES ($1) ON CONFLICT DO NOTHING`, variant); err != nil {
		return fmt.Errorf("recording the variant in vote_variant: %w", err)
	}
	return nil
}

// writeEvery makes each client's chooser: every n-th of its operations is a
// vote (1), the others reads (0).
func writeEvery(n int) func(int) func() int {
	return func(int) func() int {
		k := 0
		return func() int {
			k++
			if k%n == 0 {
				return 1
			}
			return 0
		}
	}
}

var errNoSchema = errors.New("no vote schema in this database: run `txload init vote` first")

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
