package bank

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
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
CREATE SEQUENCE bank_ledger_id;
CREATE TABLE bank_ledger (
	from_id      INT NOT NULL,
	to_id        INT NOT NULL,
	amount       BIGINT NOT NULL,
	from_read    BIGINT,          -- versions the transfer read (NULL: delta, read nothing)
	to_read      BIGINT,
	from_written BIGINT NOT NULL, -- versions its writes produced
	to_written   BIGINT NOT NULL,
	isolation    SMALLINT NOT NULL, -- level the server ran it at: 0 rc, 1 rr, 2 ser
	mode         SMALLINT NOT NULL, -- 0 read-modify-write, 1 delta, 2 for-update
	id           BIGINT NOT NULL DEFAULT nextval('bank_ledger_id')
);
ALTER SEQUENCE bank_ledger_id OWNED BY bank_ledger.id;
-- One row per run: what it ran, and the ledger ids it can have written
-- (above first_id, below last_id; last_id NULL: the run did not record
-- its end). check holds each ledger row to the runs whose ids cover it.
CREATE TABLE bank_run (
	first_id        BIGINT NOT NULL,
	last_id         BIGINT,
	isolation       SMALLINT NOT NULL, -- the weakest level its server ran
	mode            SMALLINT NOT NULL,
	amount          BIGINT NOT NULL,
	selection       INT NOT NULL,
	accounts        INT NOT NULL,      -- bank_meta's when it started
	initial_balance BIGINT NOT NULL,
	committed       BIGINT,            -- transfers it saw commit, and those
	unknown         BIGINT             -- of unknown outcome (NULL: not reported)
)`

// schema declares the bank's tables for init.
func (g *gen) schema() workload.Schema {
	c := g.cfg
	return workload.Schema{
		Workload: "bank",
		Tables:   []string{"bank_run", "bank_ledger", "bank_account", "bank_meta"},
		Settings: settings(int64(c.accounts), c.initialBalance),
		Create:   schema,
		Load: func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO bank_account (id, balance) SELECT g, $1::BIGINT FROM generate_series(1, $2::INT) AS g`,
				c.initialBalance, c.accounts); err != nil {
				return fmt.Errorf("loading %d accounts: %w", c.accounts, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO bank_meta VALUES ($1, $2)`, c.accounts, c.initialBalance); err != nil {
				return fmt.Errorf("writing bank_meta: %w", err)
			}
			return nil
		},
		Describe: fmt.Sprintf("%d accounts of balance %d", c.accounts, c.initialBalance),
	}
}

// observed collects the isolation levels the workers' server ran, and the
// transfers declined for want of funds (they commit nothing).
type observed struct {
	workload.Isolations
	declined atomic.Int64
}

const (
	selectSQL          = `SELECT id, balance, version FROM bank_account WHERE id IN ($1, $2)`
	selectForUpdateSQL = selectSQL + ` ORDER BY id FOR UPDATE`
	// Both writes and the ledger row in one statement; versions are bumped
	// server-side, so a write that overwrote versions it never read shows up
	// as written − read > 1. The two accounts are written in id order: lo,
	// then hi once lo is done (hi's UPDATE waits on lo's result). An
	// UPDATE … WHERE id IN ($1, $2) locks the rows in the order its scan
	// meets them, which differs between two transfers of the same pair (an
	// updated row's new version lies elsewhere in the table): the two
	// deadlock, and the server breaks it only after deadlock_timeout (1 s),
	// a stall of the workload's own making at read committed. The balances
	// written are still what the client computed from its read, so the lost
	// updates read committed lets through are unchanged.
	writeSQL = `WITH lo AS (
	UPDATE bank_account SET balance = CASE WHEN id = $1 THEN $3::BIGINT ELSE $4::BIGINT END, version = version + 1
	WHERE id = LEAST($1::INT, $2::INT) RETURNING id, version),
hi AS (
	UPDATE bank_account SET balance = CASE WHEN id = $1 THEN $3::BIGINT ELSE $4::BIGINT END, version = version + 1
	WHERE id = GREATEST($1::INT, $2::INT) AND EXISTS (SELECT 1 FROM lo) RETURNING id, version),
upd AS (SELECT id, version FROM lo UNION ALL SELECT id, version FROM hi)
INSERT INTO bank_ledger (from_id, to_id, amount, from_read, to_read, from_written, to_written, isolation, mode)
SELECT $1, $2, $5, $6, $7, (SELECT version FROM upd WHERE id = $1), (SELECT version FROM upd WHERE id = $2), $8, $9`
	deltaSQL = `WITH lo AS (
	UPDATE bank_account SET balance = balance + CASE WHEN id = $1 THEN -$3::BIGINT ELSE $3::BIGINT END, version = version + 1
	WHERE id = LEAST($1::INT, $2::INT) RETURNING id, version),
hi AS (
	UPDATE bank_account SET balance = balance + CASE WHEN id = $1 THEN -$3::BIGINT ELSE $3::BIGINT END, version = version + 1
	WHERE id = GREATEST($1::INT, $2::INT) AND EXISTS (SELECT 1 FROM lo) RETURNING id, version),
upd AS (SELECT id, version FROM lo UNION ALL SELECT id, version FROM hi)
INSERT INTO bank_ledger (from_id, to_id, amount, from_written, to_written, isolation, mode)
SELECT $1, $2, $3, (SELECT version FROM upd WHERE id = $1), (SELECT version FROM upd WHERE id = $2), $4, $5`
)

// ops prepares a run of transfers: the schema must be complete; the ledger's
// size before the run lets the report reconcile ambiguous commits.
func (g *gen) ops(ctx context.Context, t *pg.Target, opts workload.RunOptions) (*workload.QueryLoad, error) {
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := g.requireSettings(ctx, conn); err != nil {
		return nil, err
	}
	var before int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM bank_ledger`).Scan(&before); err != nil {
		return nil, fmt.Errorf("counting the ledger: %w", err)
	}
	first, err := g.recordStart(ctx, conn)
	if err != nil {
		return nil, err
	}
	obs := &observed{}
	ident := newIdentity()
	st := newStatements(&g.cfg, t.Pooled())
	return &workload.QueryLoad{
		Ops:      []string{"transfer"},
		Protocol: workload.ProtocolOf(st.begin, st.read, st.readForUpdate, st.write, st.delta, st.commit),
		Drive: workload.Programs(t, func(id int) workload.Program {
			markName := "bank_mark"
			if t.Pooled() {
				markName = ""
			}
			p := &program{cfg: &g.cfg, st: st, obs: obs, rng: rand.New(rand.NewPCG(opts.Seed, uint64(opts.FirstClient+id))),
				mark: workload.NewMark(opts, id, markName), ident: ident}
			ident.add(p)
			return p
		}),
		Report: func(ctx context.Context, total *metrics.Snapshot) (*workload.CheckResult, error) {
			last, err := recordEnd(ctx, t, first, g.cfg.isolation, obs, reconcile(total, 0, obs))
			if err != nil {
				return nil, err
			}
			if res, err := workload.CheckColumns(ctx, t, workload.ColumnsOf(schema)); res != nil || err != nil {
				return res, err
			}
			if last, err = ident.claimLate(ctx, t, first, last); err != nil {
				return nil, err
			}
			res, rec, err := g.runReport(ctx, t, total, before, obs)
			if err != nil {
				return nil, err
			}
			if err := ident.audit(ctx, t, first, last, rec, res); err != nil {
				return nil, err
			}
			return res, nil
		},
	}, nil
}

// recordStart records the run in bank_run before its first transfer: its
// level, mode, amount and selection, bank_meta's settings, and the ledger
// id its transfers' ids will be above. It returns that id. It refuses to
// start when that id is not above every id bank_run and the ledger hold
// (the sequence set back): its range would overlap a recorded run's, and
// rows another run wrote would be held to this one. Ids a concurrent run
// took are no exception: the statement's snapshot holds only what
// committed before it began, whose ids the sequence gave out before.
func (g *gen) recordStart(ctx context.Context, conn *pgx.Conn) (int64, error) {
	c := &g.cfg
	var first int64
	var prior *int64
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `WITH prior AS (SELECT GREATEST((SELECT max(GREATEST(first_id, last_id)) FROM bank_run), (SELECT max(id) FROM bank_ledger)) AS id),
	ins AS (INSERT INTO bank_run (first_id, isolation, mode, amount, selection, accounts, initial_balance, committed, unknown)
	SELECT nextval('bank_ledger_id'), $1, $2, $3, $4, accounts, initial_balance, NULL, NULL FROM bank_meta
	WHERE (SELECT count(*) FROM bank_meta) = 1 RETURNING first_id)
	SELECT ins.first_id, prior.id FROM ins, prior`,
			int16(c.isolation), int16(c.transfer), c.amount, c.selection).Scan(&first, &prior)
		if err == nil && prior != nil && *prior >= first {
			return errSetBack
		}
		return err
	})
	switch pe := (*pgconn.PgError)(nil); {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, fmt.Errorf("recording the run in bank_run: bank_meta does not hold the one row init wrote: run `txload init bank --drop`")
	case errors.As(err, &pe) && pe.Code == "42P01": // made before bank_run
		return 0, fmt.Errorf("recording the run in bank_run: the bank schema predates bank_run (%w): run `txload init bank --drop`", err)
	case errors.As(err, &pe) && pe.Code == "42703": // made before bank_run's counts
		return 0, fmt.Errorf("recording the run in bank_run: the bank schema predates bank_run's counts of each run's transfers (%w): run `txload init bank --drop`", err)
	case errors.Is(err, errSetBack):
		return 0, fmt.Errorf("recording the run in bank_run: the ledger id sequence bank_ledger_id gave %d, but bank_run and bank_ledger already hold ids up to %d "+
			"(the sequence was set back): this run's ids would overlap a recorded run's; set it past them (SELECT setval('bank_ledger_id', %d)) or run `txload init bank --drop`",
			first, *prior, *prior)
	case err != nil:
		return 0, fmt.Errorf("recording the run in bank_run: %w", err)
	}
	return first, nil
}

var errSetBack = errors.New("the ledger id sequence was set back")

// requireSettings holds the run to the schema's settings, which it runs
// on whatever --init: --accounts or --initial-balance given and other than
// the marker's, or a --selection beyond its accounts, is a settings error.
func (g *gen) requireSettings(ctx context.Context, conn *pgx.Conn) error {
	m, err := workload.ReadMarker(ctx, conn, "bank")
	if err != nil {
		return err
	}
	if err := m.Require("bank"); err != nil {
		return err
	}
	var accounts, initial int64
	if _, err := fmt.Sscanf(m.Settings, "accounts=%d initial-balance=%d", &accounts, &initial); err != nil {
		return fmt.Errorf("the bank schema's marker holds settings txload cannot read (%q): run `txload init bank --drop`", m.Settings)
	}
	c := &g.cfg
	var differ []string
	if g.flags.Changed("accounts") && int64(c.accounts) != accounts {
		differ = append(differ, fmt.Sprintf("--accounts %d", c.accounts))
	}
	if g.flags.Changed("initial-balance") && c.initialBalance != initial {
		differ = append(differ, fmt.Sprintf("--initial-balance %d", c.initialBalance))
	}
	if int64(c.selection) > accounts {
		differ = append(differ, fmt.Sprintf("--selection %d", c.selection))
	}
	if len(differ) > 0 {
		return &workload.SettingsError{Workload: "bank", Msg: fmt.Sprintf(
			"the database holds the bank schema of %s, not the %s asked: give its values, or recreate it with `txload init bank --drop`",
			m.Settings, strings.Join(differ, " "))}
	}
	return nil
}

// recordEnd records, after the run's last transfer, the ledger id its
// transfers' ids are below, which it returns, the weakest level its
// server ran (a server may run a stronger one than requested), and how
// many transfers it saw commit and how many ended of unknown outcome (rec),
// to which check holds the rows of its ids.
func recordEnd(ctx context.Context, t *pg.Target, first int64, requested pg.Isolation, obs *observed, rec workload.Reconciliation) (int64, error) {
	level := requested
	if w, ok := obs.Weakest(); ok && w < level {
		level = w
	}
	conn, err := t.Connect(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var last int64
	if err := conn.QueryRow(ctx, `UPDATE bank_run SET last_id = nextval('bank_ledger_id'), isolation = LEAST(isolation, $2), committed = $3, unknown = $4
	WHERE first_id = $1 RETURNING last_id`,
		first, int16(level), rec.Committed, rec.Unknown).Scan(&last); err != nil {
		return 0, fmt.Errorf("recording the run's end in bank_run: %w", err)
	}
	return last, nil
}
