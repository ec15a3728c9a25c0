package bank

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/internal/pg"
	"github.com/txload/txload/workload"
)

const schema = `
CREATE TABLE bank_meta (
	accounts        INT NOT NULL,
	initial_balance BIGINT NOT NULL
);
CREATE TABLE bank_account (
	id      INT PRIMARY KEY,
	balance BIGINT NOT NULL,
	version BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE bank_ledger (
	from_id      INT NOT NULL,
	to_id        INT NOT NULL,
	amount       BIGINT NOT NULL,
	from_read    BIGINT,          -- versions the transfer read (NULL: delta, read nothing)
	to_read      BIGINT,
	from_written BIGINT NOT NULL, -- versions its writes produced
	to_written   BIGINT NOT NULL,
	isolation    SMALLINT NOT NULL, -- level the server ran it at: 0 rc, 1 rr, 2 ser
	mode         SMALLINT NOT NULL  -- 0 read-modify-write, 1 delta, 2 for-update
)`

const dropSQL = `DROP TABLE IF EXISTS bank_ledger, bank_account, bank_meta`

// Init creates and loads the schema server-side, in one transaction.
func (g *gen) Init(ctx context.Context, t *pg.Target, opts workload.InitOptions) error {
	conn, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT count(*) = 3 FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_name IN ('bank_meta', 'bank_account', 'bank_ledger')`).Scan(&exists); err != nil {
		return fmt.Errorf("looking for the bank schema: %w", err)
	}
	if exists && !opts.Drop {
		var accounts int
		var initial int64
		if err := conn.QueryRow(ctx, `SELECT accounts, initial_balance FROM bank_meta`).Scan(&accounts, &initial); err == nil &&
			accounts == g.cfg.accounts && initial == g.cfg.initialBalance {
			logf(opts, "init: bank schema already holds %d accounts; --drop recreates it\n", accounts)
			return nil
		}
		return fmt.Errorf("init bank: the bank schema exists with other settings; --drop recreates it")
	}
	start := time.Now()
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, dropSQL); err != nil {
			return fmt.Errorf("dropping bank tables: %w", err)
		}
		if _, err := tx.Exec(ctx, schema); err != nil {
			return fmt.Errorf("creating bank tables: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO bank_account (id, balance) SELECT g, $1::BIGINT FROM generate_series(1, $2::INT) AS g`,
			g.cfg.initialBalance, g.cfg.accounts); err != nil {
			return fmt.Errorf("loading %d accounts: %w", g.cfg.accounts, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO bank_meta VALUES ($1, $2)`, g.cfg.accounts, g.cfg.initialBalance); err != nil {
			return fmt.Errorf("writing bank_meta: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("init bank: %w", err)
	}
	logf(opts, "init: %d accounts of balance %d in %.2fs\n", g.cfg.accounts, g.cfg.initialBalance, time.Since(start).Seconds())
	return nil
}

func logf(opts workload.InitOptions, format string, args ...any) {
	if opts.Log != nil {
		fmt.Fprintf(opts.Log, format, args...)
	}
}

// observed collects the isolation levels the workers' server ran.
type observed struct {
	mu     sync.Mutex
	levels map[pg.Isolation]int
}

func (o *observed) add(i pg.Isolation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.levels == nil {
		o.levels = map[pg.Isolation]int{}
	}
	o.levels[i]++
}

// Notes reports the isolation level the server actually ran, and warns when
// it is not the one requested.
func (g *gen) Notes() []workload.Line {
	g.observed.mu.Lock()
	defer g.observed.mu.Unlock()
	var lines []workload.Line
	for _, iso := range []pg.Isolation{pg.ReadCommitted, pg.RepeatableRead, pg.Serializable} {
		if g.observed.levels[iso] == 0 {
			continue
		}
		v := iso.String()
		if iso != g.cfg.isolation {
			v += fmt.Sprintf(" (WARNING: requested %s; the server ran %s)", g.cfg.isolation, iso)
		}
		lines = append(lines, workload.Line{Label: "isolation (server)", Value: v})
	}
	return lines
}

const (
	selectSQL          = `SELECT id, balance, version FROM bank_account WHERE id IN ($1, $2)`
	selectForUpdateSQL = selectSQL + ` ORDER BY id FOR UPDATE`
	// Both writes and the ledger row in one statement; versions are bumped
	// server-side, so a write that overwrote versions it never read shows up
	// as written − read > 1.
	writeSQL = `WITH upd AS (
	UPDATE bank_account SET balance = CASE WHEN id = $1 THEN $3::BIGINT ELSE $4::BIGINT END, version = version + 1
	WHERE id IN ($1, $2) RETURNING id, version)
INSERT INTO bank_ledger (from_id, to_id, amount, from_read, to_read, from_written, to_written, isolation, mode)
SELECT $1, $2, $5, $6, $7, (SELECT version FROM upd WHERE id = $1), (SELECT version FROM upd WHERE id = $2), $8, $9`
	deltaSQL = `WITH upd AS (
	UPDATE bank_account SET balance = balance + CASE WHEN id = $1 THEN -$3::BIGINT ELSE $3::BIGINT END, version = version + 1
	WHERE id IN ($1, $2) RETURNING id, version)
INSERT INTO bank_ledger (from_id, to_id, amount, from_written, to_written, isolation, mode)
SELECT $1, $2, $3, (SELECT version FROM upd WHERE id = $1), (SELECT version FROM upd WHERE id = $2), $4, $5`
)

// Ops returns the transfer operation.
func (g *gen) Ops(ctx context.Context, t *pg.Target, opts workload.RunOptions) (*workload.QueryLoad, error) {
	return &workload.QueryLoad{
		Ops: []string{"transfer"},
		NewWorker: func(ctx context.Context, id int) (workload.Worker, error) {
			w := &worker{g: g, t: t, rng: rand.New(rand.NewPCG(opts.Seed, uint64(id)))}
			if err := w.Reset(ctx); err != nil {
				return nil, err
			}
			return w, nil
		},
	}, nil
}

type worker struct {
	g         *gen
	t         *pg.Target
	conn      *pgx.Conn
	effective pg.Isolation
	begin     string
	rng       *rand.Rand
	from, to  int32
}

func (w *worker) Next() int {
	n := int32(w.g.cfg.selection)
	w.from = 1 + w.rng.Int32N(n)
	w.to = 1 + w.rng.Int32N(n-1)
	if w.to >= w.from {
		w.to++
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
	eff, err := pg.Effective(ctx, conn, w.g.cfg.isolation)
	if err != nil {
		conn.Close(ctx)
		return err
	}
	w.conn, w.effective, w.begin = conn, eff, w.g.cfg.isolation.BeginSQL()
	w.g.observed.add(eff)
	return nil
}

func (w *worker) Close(ctx context.Context) {
	if w.conn != nil {
		w.conn.Close(ctx)
	}
}

// errDeclined: the source account cannot cover the amount; the transfer is
// rolled back and counts as done.
var errDeclined = errors.New("insufficient funds")

func (w *worker) Do(ctx context.Context, _, _ int) error {
	err := w.transfer(ctx)
	if err == nil || errors.Is(err, errDeclined) {
		return nil
	}
	if !w.conn.IsClosed() {
		// Best effort: a failed statement leaves the transaction aborted.
		_, _ = w.conn.Exec(ctx, "ROLLBACK")
	}
	return err
}

func (w *worker) transfer(ctx context.Context) error {
	c := &w.g.cfg
	if c.transfer == Delta {
		b := &pgx.Batch{}
		b.Queue(w.begin)
		b.Queue(deltaSQL, w.from, w.to, c.amount, int16(w.effective), int16(Delta))
		b.Queue("COMMIT")
		return w.finish(ctx, b)
	}
	b := &pgx.Batch{}
	b.Queue(w.begin)
	if c.transfer == ForUpdate {
		b.Queue(selectForUpdateSQL, w.from, w.to)
	} else {
		b.Queue(selectSQL, w.from, w.to)
	}
	br := w.conn.SendBatch(ctx, b)
	var fromBal, toBal, fromVer, toVer int64
	_, err := br.Exec()
	if err == nil {
		var rows pgx.Rows
		rows, err = br.Query()
		if err == nil {
			var id int32
			var bal, ver int64
			n := 0
			_, err = pgx.ForEachRow(rows, []any{&id, &bal, &ver}, func() error {
				n++
				if id == w.from {
					fromBal, fromVer = bal, ver
				} else {
					toBal, toVer = bal, ver
				}
				return nil
			})
			if err == nil && n != 2 {
				err = fmt.Errorf("transfer: read %d of accounts %d and %d, want 2", n, w.from, w.to)
			}
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if fromBal < c.amount {
		_, err := w.conn.Exec(ctx, "ROLLBACK")
		if err == nil {
			err = errDeclined
		}
		return err
	}
	b = &pgx.Batch{}
	b.Queue(writeSQL, w.from, w.to, fromBal-c.amount, toBal+c.amount, c.amount, fromVer, toVer, int16(w.effective), int16(c.transfer))
	b.Queue("COMMIT")
	return w.finish(ctx, b)
}

// finish sends a batch that ends with COMMIT and checks every result. A
// connection lost while it was in flight leaves the commit ambiguous.
func (w *worker) finish(ctx context.Context, b *pgx.Batch) error {
	br := w.conn.SendBatch(ctx, b)
	var err error
	for i := 0; i < b.Len() && err == nil; i++ {
		var tag pgconn.CommandTag
		tag, err = br.Exec()
		if err == nil && i == b.Len()-1 && tag.String() != "COMMIT" {
			err = fmt.Errorf("transfer: COMMIT answered %q", tag.String())
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil && pg.IsConnectionError(err) {
		return pg.DuringCommit(err)
	}
	return err
}
