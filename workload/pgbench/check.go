package pgbench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// rule is what a builtin guarantees of pgbench's tables, from init (every
// balance 0, the history empty) on, at any isolation level: its updates
// add a delta to the row (never lost), and its history row records it in
// the same transaction.
type rule int

const (
	// anyBuiltin: what every mix of the builtins keeps, even after
	// pgbench truncated the history (it does before each run unless -n):
	// tellers and branches gain the same deltas (tpcb-like moves both,
	// the others neither). `check tpcb` and select-only audit this.
	anyBuiltin rule = iota
	// tpcbLike: each transaction adds its delta to one account, one
	// teller and one branch, and records it in the history: every row's
	// balance is the sum of its history deltas.
	tpcbLike
	// simpleUpdate: each transaction adds its delta to one account and
	// records it in the history; tellers and branches are not touched.
	simpleUpdate
)

// ruleOf is the rule of the named builtin workload.
func ruleOf(builtin string) rule {
	switch builtin {
	case "tpcb-like":
		return tpcbLike
	case "simple-update":
		return simpleUpdate
	}
	return anyBuiltin
}

// tpcbAudit is what pgbench's tables say.
type tpcbAudit struct {
	a, b, t, h, rows int64 // sums of the balances and history deltas; history rows
	// history rows with a NULL in a column the builtins write, with a
	// delta outside the ±5000 their scripts draw, with a filler (the
	// builtins leave it NULL), with an mtime in the future or before the
	// init that emptied the history (at datedFrom, where it is known),
	// beyond the margins of mtimeMargin.
	nullHistory, wideDelta, historyFiller, future, early int64
	datedFrom                                            time.Time
	// runFrom is where a run's window starts, in the session's time
	// zone (the run's, which it pins): the before-audit's local time less runMargin (or the one it
	// was given); inRun the history rows with an mtime from runFrom to
	// this audit's local time plus runMargin.
	runFrom time.Time
	inRun   int64
	// zone is the audit's session time zone, which a run pins every
	// session of its own to (ops).
	zone string
	// per table (accounts, tellers, branches): rows, rows of ids 1..n
	// (n from the scale, which is the number of branches), rows whose
	// balance is not the sum of their history deltas, the first of them
	// (id, balance, history sum); history rows naming ids that are not
	// rows of the table.
	shape [3]tableAudit
	// recorded: txload's init made the tables and recorded the scripts
	// txload ran on them since (txload_pgbench_builtin); moved: one of
	// them moves tellers and branches. untouched are the tellers and
	// branches whose balance is not init's 0. pgbench's own runs are not
	// recorded: only simple-update's rule reads the record (holdsRecord).
	recorded, moved bool
	// recordLost: txload's init made the tables, and its record of them
	// is gone or names others while some of init's are still there (a
	// violation); recordOther: it names only others (a line). readRecord.
	recordLost, recordOther string
	// mixed: simple-update ran too, whose history rows name tellers
	// and branches it did not move (ruleFor).
	mixed       bool
	untouched   [2]int64
	markerScale int64  // the scale init recorded in its marker (0: none)
	ident       uint64 // the history's identity sum (identity.go), when seeded
	identDated  uint64 // that of the rows dated from runFrom on
	identOK     bool
	// present is which transactions in doubt have a history row, read
	// past workload.MaxInDoubt (nil: not read).
	present workload.Present
}

type tableAudit struct {
	rows, inRange, off, firstID, orphans int64
	nulls                                int64 // rows with a NULL balance
	// the first off row's balance and history sum, as text: a column
	// widened to bigint may hold what no int64 sum holds
	firstBal, firstHist string
	// rows whose bid is not their id's branch (accounts, tellers), and
	// rows whose filler is not what init writes
	misplaced, filler int64
	// rows whose balance is outside integer's range, the type init makes
	// it (a column widened to bigint can hold one; the sums leave them
	// out, so that no sum overflows), and the first of them
	huge                 int64
	firstHugeID, hugeBal string
}

// tables of pgbench, in tpcbAudit.shape's order: name, id column, balance
// column, rows per scale; misplaced, the condition of a row whose bid is
// not its id's branch (init writes (id - 1) / per + 1, and no builtin
// changes it; multiplied, not divided: CockroachDB's "/" is a DECIMAL's),
// and filler, of a filler that is not what init writes: pgbench's -i and
// txload's write an empty string in the accounts (blank-padded) and leave the
// tellers' and branches' NULL; no builtin writes one.
var auditTables = [3]struct {
	name, what, id, balance string
	per                     int64
	misplaced, filler       string
}{
	{"pgbench_accounts", "account", "aid", "abalance", naccounts,
		"t.bid IS NULL OR CASE WHEN t.bid BETWEEN 1 AND " + bidMax + " THEN t.aid NOT BETWEEN (CAST(t.bid AS BIGINT) - 1) * 100000 + 1 AND CAST(t.bid AS BIGINT) * 100000 ELSE true END", "t.filler IS DISTINCT FROM ''"},
	{"pgbench_tellers", "teller", "tid", "tbalance", ntellers,
		"t.bid IS NULL OR CASE WHEN t.bid BETWEEN 1 AND " + bidMax + " THEN t.tid NOT BETWEEN (CAST(t.bid AS BIGINT) - 1) * 10 + 1 AND CAST(t.bid AS BIGINT) * 10 ELSE true END", "t.filler IS NOT NULL"},
	{"pgbench_branches", "branch", "bid", "bbalance", nbranches, "false", "t.filler IS NOT NULL"},
}

// bidMax is the highest bid whose accounts' range is a bigint's
// ((2^63 - 1) / 100000): a bid widened to bigint and set beyond it is
// misplaced, not an overflow of the check's arithmetic (a CASE, because
// SQL does not promise to evaluate an OR's operands in order).
const bidMax = "92233720368547"

// intRange is the range of integer, the type init makes the balances and
// the history's delta: a builtin's update of init's column errs beyond
// it, and no run's random walk of ±5000 comes near it.
const intRange = "-2147483648 AND 2147483647"

// tableAuditSQL audits one table against the history: its rows, those of
// ids 1..n, those whose balance is not their history's sum, the first of
// them, history rows for ids it does not have, rows with a NULL balance
// (counted apart: NULL is not <> anything), rows whose bid is not their
// id's branch, and rows whose filler is not init's.
func tableAuditSQL(name, id, balance, misplaced, filler string) string {
	return fmt.Sprintf(`WITH h AS (SELECT %[2]s AS id, sum(delta) AS s FROM pgbench_history GROUP BY %[2]s),
j AS (SELECT t.%[2]s AS tid, t.%[3]s AS bal, h.id AS hid, COALESCE(h.s, 0) AS s, (%[4]s) AS misplaced, (%[5]s) AS filler
	FROM %[1]s t FULL JOIN h ON h.id = t.%[2]s)
SELECT count(tid), count(tid) FILTER (WHERE tid BETWEEN 1 AND $1),
	count(*) FILTER (WHERE tid IS NOT NULL AND bal <> s),
	COALESCE(min(tid) FILTER (WHERE bal <> s), 0),
	COALESCE(sum(bal) FILTER (WHERE bal BETWEEN `+intRange+`), 0),
	count(*) FILTER (WHERE tid IS NULL),
	count(*) FILTER (WHERE tid IS NOT NULL AND bal IS NULL),
	count(*) FILTER (WHERE tid IS NOT NULL AND misplaced),
	count(*) FILTER (WHERE tid IS NOT NULL AND filler),
	count(*) FILTER (WHERE tid IS NOT NULL AND bal NOT BETWEEN `+intRange+`),
	COALESCE(min(tid) FILTER (WHERE tid IS NOT NULL AND bal NOT BETWEEN `+intRange+`)::text, '')
FROM j`, name, id, balance, misplaced, filler)
}

// The margins of the history's mtime. The builtins write CURRENT_TIMESTAMP
// into a timestamp without time zone: the writer's session time zone
// (UTC-12 to UTC+14) decides what it reads, and pgbench's own runs may
// have another than the check's. mtimeMargin holds every row to the
// server's clock in UTC, a day either way: a row dated more than a day
// after now, or a day before the marker of the init that emptied the
// history, was written by none of them. runMargin holds a run's rows to
// the run, in the time zone its first session saw, which every session of
// the run is pinned to (ops): the margin covers a daylight-saving change
// (an hour) and a clock stepped back.
const (
	mtimeMargin    = "interval '1 day'"
	runMarginWords = "2 hours"
	runMargin      = "interval '" + runMarginWords + "'"
)

// historyAuditSQL audits pgbench_history: the scale (the branches), the
// sum of its deltas, its rows, and those that no builtin writes (see
// tpcbAudit); $1 is the marker's time when the init emptied the history
// (NULL: not known), $2 a run's window start (NULL: this audit's own).
const historyAuditSQL = `SELECT (SELECT count(*) FROM pgbench_branches), COALESCE(sum(delta) FILTER (WHERE delta BETWEEN ` + intRange + `), 0), count(*),
	count(*) FILTER (WHERE tid IS NULL OR bid IS NULL OR aid IS NULL OR delta IS NULL OR mtime IS NULL),
	count(*) FILTER (WHERE delta NOT BETWEEN -5000 AND 5000),
	count(*) FILTER (WHERE filler IS NOT NULL),
	count(*) FILTER (WHERE mtime > (now() AT TIME ZONE 'UTC') + ` + mtimeMargin + `),
	count(*) FILTER (WHERE mtime < ($1::timestamptz AT TIME ZONE 'UTC') - ` + mtimeMargin + `),
	COALESCE($2::timestamp, localtimestamp - ` + runMargin + `),
	count(*) FILTER (WHERE mtime BETWEEN COALESCE($2::timestamp, localtimestamp - ` + runMargin + `) AND localtimestamp + ` + runMargin + `)
	FROM pgbench_history`

// runTPCBAudit audits the tables in one snapshot; with a run's identity,
// it also sums the history's (before the run, in the client: sumIdentity).
// runFrom, if not nil, is the start of the run's window (the
// before-audit's runFrom).
func runTPCBAudit(ctx context.Context, t *pg.Target, id *identity, before bool, runFrom *time.Time) (*tpcbAudit, error) {
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := requireTables(ctx, conn); err != nil {
		return nil, err
	}
	a := &tpcbAudit{zone: conn.PgConn().ParameterStatus("TimeZone")}
	m, err := workload.ReadMarker(ctx, conn, tpcbMarker)
	if err != nil {
		return nil, err
	}
	for _, f := range strings.Fields(m.Settings) {
		if v, ok := strings.CutPrefix(f, "scale="); ok {
			a.markerScale, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	// The marker's time, read before the snapshot: an init since made the
	// history later still.
	var markedAt *time.Time
	if m.Found {
		if err := conn.QueryRow(ctx, `SELECT updated_at FROM `+workload.MarkerTable+` WHERE workload = $1`, tpcbMarker).Scan(&markedAt); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("reading the time of %s's init: %w", tpcbMarker, err)
		}
	}
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := workload.CatalogFirst(ctx, tx); err != nil {
			return err
		}
		emptied, err := a.readRecord(ctx, tx, m.Found)
		if err != nil {
			return err
		}
		// The history's rows are dated from the init only where it
		// emptied them (the record of the current tables says so).
		if !emptied || !a.recorded {
			markedAt = nil
		}
		if markedAt != nil {
			a.datedFrom = *markedAt
		}
		if err := tx.QueryRow(ctx, historyAuditSQL, markedAt, runFrom).
			Scan(&a.shape[2].rows, &a.h, &a.rows, &a.nullHistory, &a.wideDelta, &a.historyFiller, &a.future, &a.early, &a.runFrom, &a.inRun); err != nil {
			return fmt.Errorf("auditing pgbench_history: %w", err)
		}
		scale := a.shape[2].rows
		sums := [3]*int64{&a.a, &a.t, &a.b}
		for i, tb := range auditTables {
			s := &a.shape[i]
			if err := tx.QueryRow(ctx, tableAuditSQL(tb.name, tb.id, tb.balance, tb.misplaced, tb.filler), tb.per*scale).
				Scan(&s.rows, &s.inRange, &s.off, &s.firstID, sums[i], &s.orphans, &s.nulls, &s.misplaced, &s.filler, &s.huge, &s.firstHugeID); err != nil {
				return fmt.Errorf("auditing %s: %w", tb.name, err)
			}
			if s.off > 0 {
				if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT %[3]s::text, (SELECT COALESCE(sum(delta), 0) FROM pgbench_history WHERE %[2]s = $1)::text FROM %[1]s WHERE %[2]s = $1 LIMIT 1`,
					tb.name, tb.id, tb.balance), s.firstID).Scan(&s.firstBal, &s.firstHist); err != nil {
					return fmt.Errorf("reading %s %d: %w", tb.id, s.firstID, err)
				}
			}
			if s.huge > 0 {
				if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT %[3]s::text FROM %[1]s WHERE %[2]s::text = $1 LIMIT 1`, tb.name, tb.id, tb.balance), s.firstHugeID).Scan(&s.hugeBal); err != nil {
					return fmt.Errorf("reading %s %s: %w", tb.id, s.firstHugeID, err)
				}
			}
		}
		// Last: a dialect without COPY, md5 or bit strings fails here,
		// and leaves identOK false.
		a.sumIdentity(ctx, tx, id, before)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("check tpcb: %w", err)
	}
	return a, nil
}

// covered says whether the history holds every change of the accounts:
// false after pgbench truncated it (or after rows left it).
func (a *tpcbAudit) covered() bool { return a.shape[0].off == 0 && a.shape[0].orphans == 0 }

// violations is what the rule's transactions cannot have left, where
// asked is the builtin the check was asked for (r is the rule it holds the
// tables to: ruleFor). They are what was found: none of it is an anomaly
// of an isolation level (the builtins' updates are never lost at any
// level).
func (a *tpcbAudit) violations(r, asked rule) []string {
	return append(a.shapeViolations(r), a.historyViolations(r, asked)...)
}

// holdsRecord says whether the check asked for holds the tellers and
// branches to the record of the scripts txload ran: only simple-update's,
// which claims that only it (and select-only) ran. `check tpcb` is the
// check of any mix, pgbench's own runs among them, which the record does
// not hold; `check tpcb-like` is asked after tpcb-like ran, by txload or
// not.
func holdsRecord(asked rule) bool { return asked == simpleUpdate }

// shapeViolations are what no run of a builtin leaves, whatever the
// tables held before it: rows missing or added, NULLs, history rows
// outside the tables or the scripts' range.
func (a *tpcbAudit) shapeViolations(r rule) []string {
	var v []string
	scale := a.shape[2].rows
	// Only tables txload's init made (their record says so: pgbench -i
	// makes new ones, which the marker does not describe).
	if a.recordLost != "" {
		v = append(v, a.recordLost)
	}
	if a.recorded && a.markerScale != 0 && a.markerScale != scale {
		v = append(v, fmt.Sprintf("pgbench_branches holds scale %d, but init recorded scale=%d in txload_init (rows added or deleted behind it)", scale, a.markerScale))
	}
	for i, tb := range auditTables {
		s := a.shape[i]
		want := tb.per * scale
		if missing := want - s.inRange; missing > 0 {
			v = append(v, fmt.Sprintf("%s missing (scale %d has %s 1 to %d)", metrics.Count(missing, tb.what), scale, tb.id, want))
		}
		if extra := s.rows - min(s.inRange, want); extra > 0 {
			v = append(v, fmt.Sprintf("%s in %s beyond %s 1 to %d (added, or an id duplicated)", metrics.Count(extra, "row"), tb.name, tb.id, want))
		}
		if s.huge > 0 {
			v = append(v, fmt.Sprintf("%s in %s whose %s is outside integer's range, -2147483648 to 2147483647 (first: %s %s holds %s): init makes the column integer, whose update by a builtin errs beyond it",
				metrics.Count(s.huge, "row"), tb.name, tb.balance, tb.id, s.firstHugeID, s.hugeBal))
		}
		if s.nulls > 0 {
			v = append(v, fmt.Sprintf("%s in %s with a NULL %s (pgbench's init and builtins always write one)", metrics.Count(s.nulls, "row"), tb.name, tb.balance))
		}
		if s.misplaced > 0 {
			v = append(v, fmt.Sprintf("%s whose bid is not their %s's branch ((%s - 1) / %d + 1: pgbench's init and txload's write it, and no builtin changes it)",
				metrics.Count(s.misplaced, tb.what), tb.id, tb.id, tb.per))
		}
		if s.filler > 0 {
			init := "NULL"
			if i == 0 {
				init = "blank ('')"
			}
			v = append(v, fmt.Sprintf("%s in %s whose filler is not %s (pgbench's init and txload's write it so, and no builtin writes it)", metrics.Count(s.filler, "row"), tb.name, init))
		}
		// Every builtin's history row names an account, teller and
		// branch of the scale (simple-update's too, though it moves no
		// teller or branch).
		if s.orphans > 0 {
			v = append(v, fmt.Sprintf("history rows of %s that %s does not have", metrics.Count(s.orphans, tb.id+" id"), tb.name))
		}
	}
	if a.nullHistory > 0 {
		v = append(v, fmt.Sprintf("%s with a NULL tid, bid, aid, delta or mtime (the builtins write every one)", metrics.Count(a.nullHistory, "history row")))
	}
	if a.wideDelta > 0 {
		v = append(v, fmt.Sprintf("%s with a delta outside -5000 to 5000 (the builtins draw random(-5000, 5000))", metrics.Count(a.wideDelta, "history row")))
	}
	if a.historyFiller > 0 {
		v = append(v, fmt.Sprintf("%s with a filler (the builtins leave it NULL)", metrics.Count(a.historyFiller, "history row")))
	}
	if a.future > 0 {
		v = append(v, fmt.Sprintf("%s with an mtime more than a day after now in UTC (the builtins write CURRENT_TIMESTAMP, in a time zone of UTC-12 to UTC+14)", metrics.Count(a.future, "history row")))
	}
	if a.early > 0 {
		v = append(v, fmt.Sprintf("%s with an mtime more than a day before the init that emptied the history (%s UTC, the time of %s's row in %s; the builtins write CURRENT_TIMESTAMP)",
			metrics.Count(a.early, "history row"), a.datedFrom.UTC().Format(time.DateTime), tpcbMarker, workload.MarkerTable))
	}
	return v
}

// historyViolations are what the rule's transactions cannot have left
// since init: balances that are not their history's sum, sums that
// disagree, tellers and branches moved where only scripts that do not
// move them ran.
func (a *tpcbAudit) historyViolations(r, asked rule) []string {
	var v []string
	if holdsRecord(asked) && a.recorded && !a.moved {
		for i, tb := range auditTables[1:] {
			if n := a.untouched[i]; n > 0 {
				v = append(v, fmt.Sprintf("%s whose %s is not init's 0, though txload ran no builtin but select-only or simple-update on the tables since init (%s records the scripts it ran), and neither moves one (after pgbench's own runs, which txload does not record, `txload check tpcb` checks what every builtin keeps)",
					metrics.Count(n, tb.what), tb.balance, recordTable))
			}
		}
	}
	for i, tb := range auditTables {
		s := a.shape[i]
		if r == anyBuiltin || (r == simpleUpdate && i > 0) {
			continue
		}
		if s.off > 0 {
			v = append(v, fmt.Sprintf("%s whose %s is not the sum of their history deltas (first: %s %d holds %s, its history %s): a balance changed, or history rows deleted, duplicated or added (after pgbench truncated the history, as it does before each run unless -n, or other scripts ran, `txload check tpcb` checks what every builtin keeps)",
				metrics.Count(s.off, tb.what), tb.balance, tb.id, s.firstID, s.firstBal, s.firstHist))
		}
	}
	switch {
	case r == tpcbLike && (a.a != a.t || a.t != a.b || a.b != a.h):
		v = append(v, fmt.Sprintf("balances disagree: accounts %d, tellers %d, branches %d, history %d (tpcb-like adds each delta to all four)", a.a, a.t, a.b, a.h))
	case r == simpleUpdate && a.a != a.h:
		v = append(v, fmt.Sprintf("balances disagree: accounts %d, history %d (simple-update adds each delta to both)", a.a, a.h))
	case r != tpcbLike && a.t != a.b:
		v = append(v, fmt.Sprintf("balances disagree: tellers %d, branches %d (only tpcb-like moves them, by the same delta)", a.t, a.b))
	}
	return v
}

// ruleFor is the rule the tables can be held to when r is asked: after
// simple-update ran on them (the record says so), tpcb-like's tellers and
// branches are not the sums of the history, which holds simple-update's
// rows too, so tpcb-like is held to simple-update's rule (its runs'
// audits hold each run's own changes to tpcb-like's).
func (a *tpcbAudit) ruleFor(r rule) rule {
	if r == tpcbLike && a.mixed {
		return simpleUpdate
	}
	return r
}

func (a *tpcbAudit) result(asked rule) *workload.CheckResult {
	r := a.ruleFor(asked)
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	res := &workload.CheckResult{
		Lines: []workload.Line{
			{Label: "sum(abalance)", Value: i(a.a)},
			{Label: "sum(bbalance)", Value: i(a.b)},
			{Label: "sum(tbalance)", Value: i(a.t)},
			{Label: "sum(history.delta)", Value: i(a.h)},
			{Label: "history rows", Value: i(a.rows)},
		},
		Violations: a.violations(r, asked),
		Values: map[string]int64{"sum_abalance": a.a, "sum_bbalance": a.b, "sum_tbalance": a.t, "sum_delta": a.h, "history_rows": a.rows,
			"accounts_off_history": a.shape[0].off, "tellers_off_history": a.shape[1].off, "branches_off_history": a.shape[2].off},
	}
	res.Values["history_complete"] = 1
	switch {
	case r == tpcbLike:
		res.Lines = append(res.Lines, workload.Line{Label: "off history", Value: fmt.Sprintf("%d accounts, %d tellers, %d branches", a.shape[0].off, a.shape[1].off, a.shape[2].off)})
	case r == simpleUpdate:
		res.Lines = append(res.Lines, workload.Line{Label: "off history", Value: fmt.Sprintf("%d accounts (simple-update moves no teller or branch)", a.shape[0].off)})
	case !a.covered():
		// Every transaction changes the balances and adds its delta to the
		// history at once: rows left the history. pgbench truncates it
		// before each run (unless -n), so only the tellers and branches
		// can be checked against each other.
		res.Values["history_complete"] = 0
		res.Lines = append(res.Lines, workload.Line{Label: "history",
			Value: fmt.Sprintf("no longer covers every change (%d accounts are not the sum of their history deltas): pgbench truncates pgbench_history before each run unless -n; tellers and branches agree; `check tpcb-like` or `check simple-update` audits every row against a history that holds every change",
				a.shape[0].off)})
	}
	if a.recordOther != "" {
		res.Lines = append(res.Lines, workload.Line{Label: recordTable, Value: a.recordOther})
	}
	if r != asked {
		res.Lines = append(res.Lines, workload.Line{Label: "rule", Value: fmt.Sprintf("simple-update ran on the tables too (%s records it), whose history rows name tellers and branches it does not move: they are held to simple-update's rule; a run's audit holds its own changes to %s's", recordTable, asked)})
	}
	return res
}

// checkOf is the Check hook of a builtin (anyBuiltin: `check tpcb`).
func checkOf(r rule) func(context.Context, *pg.Target) (*workload.CheckResult, error) {
	return func(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
		if res, err := workload.CheckColumns(ctx, t, initColumns()); res != nil || err != nil {
			return res, err
		}
		a, err := runTPCBAudit(ctx, t, nil, false, nil)
		if err != nil {
			return nil, err
		}
		res := a.result(r)
		res.Lines = append(res.Lines, workload.AfterTheFact("history rows"))
		return res, nil
	}
}

// checkTPCB is `check tpcb`: what every builtin keeps.
func checkTPCB(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
	return checkOf(anyBuiltin)(ctx, t)
}

// runAudit is a builtin run's own audit. It checks what the run changed:
// the history rows it added reconciled with the transactions it saw commit
// (the difference is ambiguous commits that did commit), by count and by
// identity (which rows: identity.go), and the sums the rule moves, after
// the run minus before. Where the tables obeyed the rule before the run
// (every balance its history's sum, the sums agreeing), they must after
// it; where they did not (pgbench truncated the history, as it does before
// each run unless -n), the run is held to its own changes only.
func runAudit(ctx context.Context, t *pg.Target, r rule, op *metrics.OpStats, before *tpcbAudit, id *identity) (*workload.CheckResult, error) {
	if res, err := workload.CheckColumns(ctx, t, initColumns()); res != nil || err != nil {
		return res, err
	}
	a, err := runTPCBAudit(ctx, t, id, false, &before.runFrom)
	if err != nil {
		return nil, err
	}
	res := a.result(r)
	if pre := before.historyViolations(before.ruleFor(r), r); len(pre) > 0 {
		res.Violations = append(a.shapeViolations(r), a.changeViolations(r, before)...)
		why := pre[0]
		switch off := before.shape; {
		case r == simpleUpdate && off[0].off > 0:
			why = fmt.Sprintf("%s off their history: pgbench truncates it before each run unless -n", metrics.Count(off[0].off, "account"))
		case r == tpcbLike && off[0].off+off[1].off+off[2].off > 0:
			why = fmt.Sprintf("%d accounts, %d tellers, %d branches off their history: pgbench truncates it before each run unless -n", off[0].off, off[1].off, off[2].off)
		}
		res.Lines = append(res.Lines, workload.Line{Label: "before the run",
			Value: fmt.Sprintf("the tables did not obey %s's rule (%s); the audit holds what the run changed to it, not the whole history", r, why)})
	} else if a.ruleFor(r) != r {
		res.Violations = append(res.Violations, a.changeViolations(r, before)...)
	}
	// Every row the run added is dated within it: as many more rows are
	// as it added (a row deleted beside it lowers both).
	if added, dated := a.rows-before.rows, a.inRun-before.inRun; dated < added {
		res.Violations = append(res.Violations, fmt.Sprintf("%s the run added not dated within it (%d added, %d more with an mtime from %s to the audit's time plus %s, in the run's time zone, %s, which every session of the run is pinned to and its CURRENT_TIMESTAMP is written in): a row re-dated beside the run",
			metrics.Count(added-dated, "history row"), added, dated, a.runFrom.Format(time.DateTime), runMarginWords, a.zone))
	}
	if v := a.datedViolation(before); v != "" {
		res.Violations = append(res.Violations, v)
	}
	rec := workload.Reconcile(op, a.rows-before.rows)
	res.Lines = append(res.Lines, rec.Lines("history")...)
	rec.Into(res)
	res.Lines = append(res.Lines, workload.Line{Label: "history identity", Value: a.identityLine(before, id, rec.Unknown, res)})
	return res, nil
}

// changeViolations are the sums the run moved that disagree with the rule.
func (a *tpcbAudit) changeViolations(r rule, b *tpcbAudit) []string {
	da, dt, db, dh := a.a-b.a, a.t-b.t, a.b-b.b, a.h-b.h
	switch {
	case r == tpcbLike && (da != dt || dt != db || db != dh):
		return []string{fmt.Sprintf("the run's changes disagree: accounts %+d, tellers %+d, branches %+d, history %+d (tpcb-like adds each delta to all four)", da, dt, db, dh)}
	case r == simpleUpdate && (da != dh || dt != 0 || db != 0):
		return []string{fmt.Sprintf("the run's changes disagree: accounts %+d, history %+d, tellers %+d, branches %+d (simple-update adds each delta to the first two only)", da, dh, dt, db)}
	}
	return nil
}

// identityLine holds the history rows the run added to the ones its
// transactions wrote, adding a violation to res where they differ.
func (a *tpcbAudit) identityLine(b *tpcbAudit, id *identity, unknown int64, res *workload.CheckResult) string {
	if !a.identOK || !b.identOK {
		return "not summed (the server has no md5 or bit strings): the rows are counted only"
	}
	ok, tried, known := id.explains(a.ident-b.ident, unknown, a.present)
	switch {
	case !tried && int64(known) >= unknown:
		res.Violations = append(res.Violations, workload.Unverifiable("transactions", known))
		return fmt.Sprintf("NOT CHECKED: %d transactions in doubt, and more than the %d whose subsets the audit tries have a history row", known, workload.MaxInDoubt)
	case !tried:
		return fmt.Sprintf("not checked: %d outcomes unknown, %d of them known by their rows; the rows are counted only", unknown, known)
	case !ok:
		res.Violations = append(res.Violations, "the history rows the run added are not the ones its transactions wrote (their identity sum differs, with any subset of the transactions in doubt): a row deleted, changed or added beside the run")
		return "differs"
	}
	if known > 0 {
		return fmt.Sprintf("the rows the run's transactions wrote (with a subset of the %d in doubt)", known)
	}
	return "the rows the run's transactions wrote"
}

func (r rule) String() string {
	switch r {
	case tpcbLike:
		return "tpcb-like"
	case simpleUpdate:
		return "simple-update"
	}
	return "the builtins"
}
