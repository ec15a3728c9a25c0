package bank

import (
	"cmp"
	"context"
	"errors"
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
// what it ran, and, if it reported, the transfers it saw commit and those
// of unknown outcome.
type run struct {
	lo, hi             int64
	iso, mode          int64
	amount, sel        int64
	accounts, initl    int64
	reported           bool
	committed, unknown int64
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
	rows, err := tx.Query(ctx, `SELECT first_id, last_id, isolation, mode, amount, selection, accounts, initial_balance, committed, unknown FROM bank_run`)
	if err != nil {
		return nil, fmt.Errorf("reading bank_run: %w", err)
	}
	defer rows.Close()
	var (
		runs              []run
		nulls, otherSetup int64
		negative          int64 // runs that reported a count below 0
		other             string
	)
	for rows.Next() {
		var first, last, iso, mode, amount, sel, accounts, initial, committed, unknown *int64
		if err := rows.Scan(&first, &last, &iso, &mode, &amount, &sel, &accounts, &initial, &committed, &unknown); err != nil {
			return nil, fmt.Errorf("reading bank_run: %w", err)
		}
		if first == nil || iso == nil || mode == nil || amount == nil || sel == nil || accounts == nil || initial == nil {
			nulls++
			continue
		}
		r := run{lo: *first + 1, hi: math.MaxInt64, iso: *iso, mode: *mode, amount: *amount, sel: *sel, accounts: *accounts, initl: *initial}
		if last != nil {
			r.hi = *last
			if committed != nil && unknown != nil {
				r.reported, r.committed, r.unknown = true, *committed, *unknown
				if r.committed < 0 || r.unknown < 0 { // its ids covered, its rows not held
					negative++
					r.reported = false
				}
			}
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
	if negative > 0 {
		a.meta = append(a.meta, fmt.Sprintf("%s in bank_run with a count of transfers below 0, which no run reports", metrics.Count(negative, "row")))
	}
	if otherSetup > 0 {
		a.meta = append(a.meta, fmt.Sprintf("%s recorded in bank_run on %s, where bank_meta says %s (the settings rewritten after it)",
			metrics.Count(otherSetup, "run"), other, settings(a.accounts, a.initial)))
	}
	return runs, nil
}

// holdBounds holds the ids runs recorded as their first and last to what
// they are: each one a run took from bank_ledger_id, so that no ledger row
// and no other bound holds it. A run recorded beside the real one over
// its bounds, or over a ledger row's id, is one that never ran (retest 16:
// a read-committed run recorded over ids 12 to 14 beside a serializable
// delta run, 14 a row of the real run's, made one of its transfers a lost
// update, and money minted with it passed as its replay). One recorded
// between two gaps of the ledger's ids is not told from two runs at once:
// docs/failures.md's table says so.
func (a *audit) holdBounds(ctx context.Context, tx pgx.Tx, runs []run) error {
	var ids []int64
	for _, r := range runs {
		ids = append(ids, r.lo-1)
		if r.hi != math.MaxInt64 {
			ids = append(ids, r.hi)
		}
	}
	slices.Sort(ids)
	shared, first := int64(0), int64(0)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] && (i == 1 || ids[i-2] != ids[i]) {
			if shared++; shared == 1 {
				first = ids[i]
			}
		}
	}
	var rows int64
	var firstRow *int64
	if err := tx.QueryRow(ctx, `SELECT count(*), min(id) FROM bank_ledger WHERE id = ANY($1)`, slices.Compact(ids)).Scan(&rows, &firstRow); err != nil {
		return fmt.Errorf("reading the ledger rows at the runs' bounds: %w", err)
	}
	if shared > 0 {
		a.meta = append(a.meta, fmt.Sprintf("%s recorded in bank_run as the bound of more than one run (first: %d): each run's first and last id is one it took from bank_ledger_id, which no other run takes (a run recorded that never ran)",
			metrics.Count(shared, "id"), first))
	}
	if rows > 0 {
		a.meta = append(a.meta, fmt.Sprintf("%s at an id recorded in bank_run as a run's first or last (first: %d): a run's bounds are ids it took from bank_ledger_id, which no transfer takes (a run recorded that never ran, or a row's id moved)",
			metrics.Count(rows, "ledger row"), *firstRow))
	}
	// Nor can a bound lie outside what the sequence gave: below its
	// least value or above its last (retest 17: a forged run whose last
	// id was 99999999, or whose first was 0, passed). A sequence the
	// check cannot read is said so, a VIOLATION: it was skipped, and a
	// sequence dropped, made a view, or its SELECT revoked let the same
	// forgery pass (retest 18). pg_sequence_last_value needs USAGE or
	// SELECT, as a run's nextval does. CockroachDB's sequences are not
	// read so: there the bounds are held to the ledger and each other.
	if len(ids) == 0 || tx.Conn().PgConn().ParameterStatus("crdb_version") != "" {
		return nil
	}
	var last *int64
	var least int64
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		return sp.QueryRow(ctx, `SELECT pg_sequence_last_value(s.seqrelid), s.seqmin FROM pg_sequence s WHERE s.seqrelid = 'bank_ledger_id'::regclass`).Scan(&last, &least)
	})
	if err == nil && last == nil {
		// Set (setval …, false; RESTART) and not called since: the next
		// value it gives is its last_value, which SELECT on it reads
		// (retest 19: the upper bound was dropped, and a forged run up
		// to 99999999 passed after a RESTART at the next value).
		var next int64
		if err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
			return sp.QueryRow(ctx, `SELECT last_value FROM bank_ledger_id`).Scan(&next)
		}); err != nil {
			a.meta = append(a.meta, fmt.Sprintf("bank_ledger_id was set (setval with is_called false, or RESTART) and has given no value since, and the checking role cannot read the next it gives (%v): the runs' bounds cannot be held to it; SELECT on it lets them be", err))
			return nil
		}
		next--
		last = &next
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		a.meta = append(a.meta, "bank_ledger_id is not a sequence, where init makes the sequence each run takes its ledger ids and its bounds from (`txload init bank --drop` makes it again): the runs' bounds cannot be held to it")
		return nil
	case err != nil:
		a.meta = append(a.meta, fmt.Sprintf("the runs' bounds cannot be held to bank_ledger_id, the sequence each run takes its ledger ids and its bounds from (%v): init makes it, and the checking role needs USAGE or SELECT on it", err))
		return nil
	}
	var outside int64
	firstOut := int64(0)
	for _, id := range slices.Compact(ids) {
		if id < least || id > *last {
			if outside++; outside == 1 {
				firstOut = id
			}
		}
	}
	if outside > 0 {
		a.meta = append(a.meta, fmt.Sprintf("%s recorded in bank_run as a run's bound that bank_ledger_id never gave (first: %d; it gives %d on, and gave %d last): a run recorded that never ran, or the sequence altered since (set back, restarted, its least value raised)",
			metrics.Count(outside, "id"), firstOut, least, *last))
	}
	return nil
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

// group is runs whose ranges overlap (runs at once), or one run: the
// ledger ids of the union of their ranges, lo to hi-1, and the sums of
// what they saw; open if one of them did not report (its range is open, or
// its counts unknown), when the group's rows are not held to the sums.
type group struct {
	lo, hi             int64
	runs               int64
	committed, unknown int64
	open               bool
}

// groups are the runs' ranges merged where they overlap, in id order.
func groups(runs []run) []group {
	rs := slices.Clone(runs)
	slices.SortFunc(rs, func(a, b run) int { return cmp.Compare(a.lo, b.lo) })
	var out []group
	for _, r := range rs {
		if n := len(out); n > 0 && r.lo < out[n-1].hi {
			g := &out[n-1]
			g.hi = max(g.hi, r.hi)
			g.runs++
			g.committed += r.committed
			g.unknown += r.unknown
			g.open = g.open || !r.reported
			continue
		}
		out = append(out, group{lo: r.lo, hi: r.hi, runs: 1, committed: r.committed, unknown: r.unknown, open: !r.reported})
	}
	return out
}

// held are the groups whose rows are held to their runs' counts.
func held(runs []run) []group {
	return slices.DeleteFunc(groups(runs), func(g group) bool { return g.open })
}

// holdCounts holds each group's ledger rows (rows[i], of gs[i]) to its
// runs' counts: at least the transfers they saw commit, at most those and
// the ones of unknown outcome.
func (a *audit) holdCounts(gs []group, rows []int64) {
	for i, g := range gs {
		n := rows[i]
		if n >= g.committed && n-g.committed <= g.unknown {
			continue
		}
		runs := "its run"
		if g.runs > 1 {
			runs = fmt.Sprintf("its %d runs", g.runs)
		}
		first := fmt.Sprintf("ids %d to %d, %s, where %s saw %d commit and %d end of unknown outcome", g.lo, g.hi-1, metrics.Count(n, "row"), runs, g.committed, g.unknown)
		if n < g.committed {
			if a.fewerRows++; a.fewerRows == 1 {
				a.firstFewer = first
			}
			continue
		}
		if a.moreRows++; a.moreRows == 1 {
			a.firstMore = first
		}
	}
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
	gs := held(runs)
	counts, inGroup := make([]int64, len(gs)), ""
	for _, g := range gs {
		inGroup += fmt.Sprintf(",\n\tcount(*) FILTER (WHERE id >= %d AND id < %d)", g.lo, g.hi)
	}
	dst := []any{&a.transfers, &a.levels[0], &a.levels[1], &a.levels[2],
		&a.badAmount, &a.selfTransfers, &a.nullLedger, &a.badCodes, &a.badReadCols, &a.uncovered, &a.misfits}
	for i := range counts {
		dst = append(dst, &counts[i])
	}
	cov, fits := strings.Join(covered, " OR "), strings.Join(fit, " OR ")
	if err := tx.QueryRow(ctx, fmt.Sprintf(auditLedgerSQL, cov, fits, inGroup)).Scan(dst...); err != nil {
		return fmt.Errorf("auditing the ledger: %w", err)
	}
	a.holdCounts(gs, counts)
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
	gs := held(runs)
	counts := make([]int64, len(gs))
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
		// A bucket lies wholly inside or outside each range, so
		// inside or outside each group's.
		if bucket != nil && *bucket >= 1 && int(*bucket) <= len(th) {
			lo := th[*bucket-1]
			if i := slices.IndexFunc(gs, func(g group) bool { return g.lo <= lo && lo < g.hi }); i >= 0 {
				counts[i] += n
			}
		}
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
	a.holdCounts(gs, counts)
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
