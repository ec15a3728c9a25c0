package bank

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// audit is what the ledger, versions and balances say.
type audit struct {
	accounts, initial int64
	transfers         int64 // ledger rows
	lostUpdates       int64 // writes that overwrote versions they never read
	lostForbidden     int64 // of those, written at repeatable read or above
	lostAllowed       int64 // of those, written at read committed
	mismatched        int64 // accounts whose balance ≠ initial + ledger net
	versionMismatch   int64 // accounts whose version ≠ number of ledger writes
	negative          int64
	expected, actual  int64 // total balances
	deltaRows         int64
	levels            [3]int64 // ledger rows per isolation level
}

const auditLedgerSQL = `SELECT count(*),
	COALESCE(sum(COALESCE(from_written - from_read - 1, 0) + COALESCE(to_written - to_read - 1, 0)), 0),
	COALESCE(sum(CASE WHEN isolation > 0 THEN COALESCE(from_written - from_read - 1, 0) + COALESCE(to_written - to_read - 1, 0) ELSE 0 END), 0),
	COALESCE(sum(CASE WHEN mode = 1 THEN 1 ELSE 0 END), 0),
	COALESCE(sum(CASE WHEN isolation = 0 THEN 1 ELSE 0 END), 0),
	COALESCE(sum(CASE WHEN isolation = 1 THEN 1 ELSE 0 END), 0),
	COALESCE(sum(CASE WHEN isolation = 2 THEN 1 ELSE 0 END), 0)
FROM bank_ledger`

const auditAccountsSQL = `WITH flows AS (
	SELECT from_id AS id, -amount AS delta FROM bank_ledger
	UNION ALL SELECT to_id, amount FROM bank_ledger),
net AS (SELECT id, sum(delta) AS net, count(*) AS writes FROM flows GROUP BY id)
SELECT count(*),
	COALESCE(sum(CASE WHEN a.balance <> m.initial_balance + COALESCE(n.net, 0) THEN 1 ELSE 0 END), 0),
	COALESCE(sum(CASE WHEN a.version <> COALESCE(n.writes, 0) THEN 1 ELSE 0 END), 0),
	COALESCE(sum(CASE WHEN a.balance < 0 THEN 1 ELSE 0 END), 0),
	COALESCE(sum(a.balance), 0),
	max(m.initial_balance)
FROM bank_account a LEFT JOIN net n ON n.id = a.id CROSS JOIN bank_meta m`

func runAudit(ctx context.Context, t *pg.Target) (*audit, error) {
	a := &audit{}
	noSchema := errors.New("no bank schema in this database: run `txload init bank` first")
	err := workload.ReadSnapshot(ctx, t, "check bank", noSchema, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, auditLedgerSQL).Scan(&a.transfers, &a.lostUpdates, &a.lostForbidden, &a.deltaRows,
			&a.levels[0], &a.levels[1], &a.levels[2]); err != nil {
			return fmt.Errorf("auditing the ledger: %w", err)
		}
		var initial *int64
		if err := tx.QueryRow(ctx, auditAccountsSQL).Scan(&a.accounts, &a.mismatched, &a.versionMismatch, &a.negative, &a.actual, &initial); err != nil {
			return fmt.Errorf("auditing the accounts: %w", err)
		}
		if initial == nil {
			return errors.New("bank_meta is empty: run `txload init bank --drop`")
		}
		a.initial = *initial
		return nil
	})
	if err != nil {
		return nil, err
	}
	a.lostAllowed = a.lostUpdates - a.lostForbidden
	a.expected = a.accounts * a.initial
	return a, nil
}

// violations lists what the isolation levels the ledger rows ran at forbid.
func (a *audit) violations() []string {
	var v []string
	if a.lostForbidden > 0 {
		v = append(v, fmt.Sprintf("%d lost updates written at repeatable read or serializable", a.lostForbidden))
	}
	if a.versionMismatch > 0 {
		v = append(v, fmt.Sprintf("%d accounts whose version does not match their ledger rows (a write without its ledger row)", a.versionMismatch))
	}
	// Only a lost update at read committed may make a balance disagree with
	// the ledger, or money appear or vanish.
	if a.lostAllowed == 0 {
		if a.mismatched > 0 {
			v = append(v, fmt.Sprintf("%d accounts whose balance disagrees with the ledger", a.mismatched))
		}
		if a.actual != a.expected {
			v = append(v, fmt.Sprintf("money drift of %+d", a.actual-a.expected))
		}
	}
	// Transfers that read the balance refuse to overdraw it; only blind
	// delta transfers may.
	if a.negative > 0 && a.deltaRows == 0 && a.lostAllowed == 0 {
		v = append(v, fmt.Sprintf("%d negative balances", a.negative))
	}
	return v
}

// totals are iso-load's balance lines.
func (a *audit) totals() []workload.Line {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	return []workload.Line{
		{Label: "exp total balance", Value: i(a.expected)},
		{Label: "act total balance", Value: i(a.actual)},
	}
}

// anomalies are the counts the audit adds to them.
func (a *audit) anomalies() []workload.Line {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	return []workload.Line{
		{Label: "money drift", Value: fmt.Sprintf("%+d", a.actual-a.expected)},
		{Label: "lost updates", Value: i(a.lostUpdates)},
		{Label: "accounts off ledger", Value: i(a.mismatched)},
		{Label: "negative balances", Value: i(a.negative)},
		{Label: "ledger transfers", Value: fmt.Sprintf("%d (rc %d, rr %d, ser %d)", a.transfers, a.levels[0], a.levels[1], a.levels[2])},
	}
}

// result is what check prints: the totals, then the anomalies; lines is
// how to lay them out.
func (a *audit) result(lines []workload.Line) *workload.CheckResult {
	return &workload.CheckResult{
		Lines:      lines,
		Violations: a.violations(),
		Columns:    [][2]string{{"lost_updates", "lost updates"}, {"drift", "drift"}},
		Values: map[string]int64{
			"expected_total": a.expected, "actual_total": a.actual, "drift": a.actual - a.expected,
			"lost_updates": a.lostUpdates, "lost_updates_forbidden": a.lostForbidden,
			"accounts_off_ledger": a.mismatched, "version_mismatches": a.versionMismatch,
			"negative_balances": a.negative, "ledger_transfers": a.transfers,
		},
	}
}

// check audits ledger, versions and balances; it may run at any time.
func (g *gen) check(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
	a, err := runAudit(ctx, t)
	if err != nil {
		return nil, err
	}
	return a.result(append(a.totals(), a.anomalies()...)), nil
}

// runReport is iso-load's four lines, the run's own counts, then what the
// audit found. before is the ledger's size before the run: the transfers the
// ledger gained beyond those txload saw commit are ambiguous commits that did
// commit.
func (g *gen) runReport(ctx context.Context, t *pg.Target, total *metrics.Snapshot, before int64, obs *observed) (*workload.CheckResult, error) {
	a, err := runAudit(ctx, t)
	if err != nil {
		return nil, err
	}
	op := total.Ops[0]
	avg := time.Duration(op.Response.Mean() * float64(time.Microsecond))
	lines := []workload.Line{
		// Of every request counted here, the drain's included: the
		// summary's mean above is the measured window's alone.
		{Label: "avg latency", Value: avg.Round(time.Microsecond).String() + " (window and drain)"},
		{Label: "total requests", Value: strconv.FormatInt(op.OK+op.FailedTotal(), 10)},
	}
	lines = append(lines, a.totals()...)
	lines = append(lines,
		workload.Line{Label: "committed", Value: strconv.FormatInt(op.OK, 10)},
		workload.Line{Label: "failed", Value: strconv.FormatInt(op.FailedTotal(), 10)},
		workload.Line{Label: "retried", Value: fmt.Sprintf("%d (%d retries)", op.Retried, op.Retries)},
	)
	rec := workload.Reconcile(op, a.transfers-before)
	rec.Committed -= obs.declined.Load() // rolled back: no ledger row
	lines = append(lines, rec.Lines("ledger")...)
	lines = append(lines, a.anomalies()...)
	res := a.result(append(lines, obs.Notes(g.cfg.isolation)...))
	rec.Into(res)
	return res, nil
}
