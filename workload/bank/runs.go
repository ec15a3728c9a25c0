package bank

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
)

// run is a run recorded in bank_run: the ledger ids it can have written,
// lo to hi-1 (hi is math.MaxInt64 for a run that did not record its end),
// and what it ran.
type run struct {
	lo, hi          int64
	iso, mode       int64
	amount, sel     int64
	accounts, initl int64
}

// readRuns reads bank_run, and notes a run recorded with settings other
// than bank_meta's (bank_meta and the marker rewritten together) or with a
// NULL.
func (a *audit) readRuns(ctx context.Context, tx pgx.Tx) ([]run, error) {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('bank_run') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, fmt.Errorf("looking for bank_run: %w", err)
	}
	if !exists {
		a.meta = append(a.meta, "no bank_run table, which records each run (the schema predates it, or it was dropped): run `txload init bank --drop`")
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT first_id, last_id, isolation, mode, amount, selection, accounts, initial_balance FROM bank_run`)
	if err != nil {
		return nil, fmt.Errorf("reading bank_run: %w", err)
	}
	defer rows.Close()
	var (
		runs              []run
		nulls, otherSetup int64
		other             string
	)
	for rows.Next() {
		var first, last, iso, mode, amount, sel, accounts, initial *int64
		if err := rows.Scan(&first, &last, &iso, &mode, &amount, &sel, &accounts, &initial); err != nil {
			return nil, fmt.Errorf("reading bank_run: %w", err)
		}
		if first == nil || iso == nil || mode == nil || amount == nil || sel == nil || accounts == nil || initial == nil {
			nulls++
			continue
		}
		r := run{lo: *first + 1, hi: math.MaxInt64, iso: *iso, mode: *mode, amount: *amount, sel: *sel, accounts: *accounts, initl: *initial}
		if last != nil {
			r.hi = *last
		}
		if r.accounts != a.accounts || r.initl != a.initial {
			otherSetup++
			other = settings(r.accounts, r.initl)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading bank_run: %w", err)
	}
	if nulls > 0 {
		a.meta = append(a.meta, fmt.Sprintf("%s in bank_run with a NULL where every run records a value", metrics.Count(nulls, "row")))
	}
	if otherSetup > 0 {
		a.meta = append(a.meta, fmt.Sprintf("%s recorded in bank_run on %s, where bank_meta says %s (the settings rewritten after it)",
			metrics.Count(otherSetup, "run"), other, settings(a.accounts, a.initial)))
	}
	return runs, nil
}

// bounds are the ids where some run's range starts or ends, sorted: the
// ledger's ids are bucketed by them (width_bucket), each bucket lying
// wholly inside or outside each run's range.
func bounds(runs []run) []int64 {
	var b []int64
	for _, r := range runs {
		b = append(b, r.lo)
		if r.hi != math.MaxInt64 {
			b = append(b, r.hi)
		}
	}
	slices.Sort(b)
	return slices.Compact(b)
}

// maxTermRuns is the most runs auditLedgerSQL holds the ledger to, one
// term per run for each row; with more, the rows are grouped
// (auditLedgerGroupedSQL), which costs a hash of each row.
const maxTermRuns = 32

// auditLedger counts the ledger's transfers and the rows no transfer
// writes, and holds each row to the runs whose ranges cover its id: one of
// them must have run its mode and amount, at its level or a weaker one
// (the level a row records is the one its server ran, which may be
// stronger than requested, never weaker), over a selection holding its
// accounts. A row is thus held to the run that wrote it, and to the union
// of runs only where runs overlapped (ran at once).
func (a *audit) auditLedger(ctx context.Context, tx pgx.Tx, runs []run) error {
	if len(runs) > maxTermRuns {
		return a.auditLedgerGrouped(ctx, tx, runs)
	}
	covered, fit := []string{"false"}, []string{"false"}
	for _, r := range runs {
		in := fmt.Sprintf("id >= %d", r.lo)
		if r.hi != math.MaxInt64 {
			in += fmt.Sprintf(" AND id < %d", r.hi)
		}
		covered = append(covered, "("+in+")")
		fit = append(fit, fmt.Sprintf("(%s AND isolation >= %d AND mode = %d AND amount = %d AND from_id <= %d AND to_id <= %d)", in, r.iso, r.mode, r.amount, r.sel, r.sel))
	}
	cov, fits := strings.Join(covered, " OR "), strings.Join(fit, " OR ")
	if err := tx.QueryRow(ctx, fmt.Sprintf(auditLedgerSQL, cov, fits)).Scan(&a.transfers, &a.levels[0], &a.levels[1], &a.levels[2],
		&a.badAmount, &a.selfTransfers, &a.nullLedger, &a.badCodes, &a.badReadCols, &a.uncovered, &a.misfits); err != nil {
		return fmt.Errorf("auditing the ledger: %w", err)
	}
	if a.misfits == 0 {
		return nil
	}
	var id, iso, mode, amount, acct *int64
	if err := tx.QueryRow(ctx, fmt.Sprintf(firstMisfitSQL, cov, fits)).Scan(&id, &iso, &mode, &amount, &acct); err != nil {
		return fmt.Errorf("auditing the ledger: %w", err)
	}
	var cover []run
	for _, r := range runs {
		if id != nil && r.lo <= *id && *id < r.hi {
			cover = append(cover, r)
		}
	}
	a.misfit(id, iso, mode, amount, acct, cover)
	return nil
}

// misfit describes the first ledger row none of the runs covering it
// could have written, and the first of those runs.
func (a *audit) misfit(id, iso, mode, amount, acct *int64, cover []run) {
	v := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	if len(cover) == 0 || id == nil {
		return
	}
	r := cover[0]
	a.firstMisfit = fmt.Sprintf("ledger id %d says %s, %s, amount %d, accounts up to %d; its run: %s, %s, amount %d, selection %d",
		*id, levelName(v(iso)), modeName(v(mode)), v(amount), v(acct), levelName(r.iso), modeName(r.mode), r.amount, r.sel)
}

// auditLedgerGrouped is auditLedger over more than maxTermRuns runs.
func (a *audit) auditLedgerGrouped(ctx context.Context, tx pgx.Tx, runs []run) error {
	th := bounds(runs)
	var sels []int64
	for _, r := range runs {
		sels = append(sels, r.sel+1)
	}
	slices.Sort(sels)
	rows, err := tx.Query(ctx, auditLedgerGroupedSQL, th, slices.Compact(sels))
	if err != nil {
		return fmt.Errorf("auditing the ledger: %w", err)
	}
	defer rows.Close()
	misfitAt := int64(math.MaxInt64)
	for rows.Next() {
		var bucket, iso, mode, amount, minID, maxAcct *int64
		var n, badAmount, self, nulls, codes, readCols int64
		if err := rows.Scan(&bucket, &iso, &mode, &amount, &n, &minID, &maxAcct, &badAmount, &self, &nulls, &codes, &readCols); err != nil {
			return fmt.Errorf("auditing the ledger: %w", err)
		}
		a.transfers += n
		if iso != nil && *iso >= 0 && *iso < 3 {
			a.levels[*iso] += n
		}
		a.badAmount += badAmount
		a.selfTransfers += self
		a.nullLedger += nulls
		a.badCodes += codes
		a.badReadCols += readCols
		cover := covering(runs, th, bucket)
		if len(cover) == 0 {
			a.uncovered += n
			continue
		}
		if iso != nil && mode != nil && amount != nil && slices.ContainsFunc(cover, func(r run) bool {
			return *iso >= r.iso && *mode == r.mode && *amount == r.amount && (maxAcct == nil || *maxAcct <= r.sel)
		}) {
			continue
		}
		a.misfits += n
		if minID != nil && *minID < misfitAt {
			misfitAt = *minID
			a.misfit(minID, iso, mode, amount, maxAcct, cover)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("auditing the ledger: %w", err)
	}
	return nil
}

// covering returns the runs whose range holds the ids of bucket b of th.
func covering(runs []run, th []int64, b *int64) []run {
	if b == nil || *b < 1 || int(*b) > len(th) {
		return nil
	}
	lo, hi := th[*b-1], int64(math.MaxInt64)
	if int(*b) < len(th) {
		hi = th[*b]
	}
	var out []run
	for _, r := range runs {
		if r.lo <= lo && r.hi >= hi {
			out = append(out, r)
		}
	}
	return out
}

func levelName(code int64) string {
	if code < 0 || code > 2 {
		return fmt.Sprintf("level %d", code)
	}
	return pg.Isolation(code).String()
}

func modeName(code int64) string {
	if code < 0 || int(code) >= len(transferNames) {
		return fmt.Sprintf("mode %d", code)
	}
	return Transfer(code).String()
}
