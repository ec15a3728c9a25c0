package bank

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// audit is what the ledger, versions and balances say. The ledger lets the
// audit replay every account's versions exactly: a transfer's write of
// version w is the balance of the version r it read plus its delta (a
// delta transfer's r is w-1), so the balance an honest history ends with
// is determined, lost updates included, and anything else is found.
type audit struct {
	accounts, initial int64 // bank_meta's
	transfers         int64 // ledger rows
	levels            [3]int64

	lostUpdates  int64 // writes that overwrote versions they never read
	lostLevel    int64 // of those, written at repeatable read or above
	lostLocked   int64 // of those, for-update transfers at read committed
	badReads     int64 // writes that read a version not written before them
	offLedger    int64 // accounts whose balance ≠ initial + ledger net
	offReplay    int64 // accounts whose balance ≠ their replayed balance
	firstOff     offAccount
	moreWrites   int64 // accounts with more ledger writes than versions
	fewerWrites  int64 // accounts with versions no ledger write made
	otherWrites  int64 // accounts whose writes are as many as their versions, but not versions 1 to it
	negative     int64
	negativeNoOD int64 // of those, in accounts no delta transfer wrote
	rows         int64 // rows of bank_account
	inRange      int64 // rows of ids 1..accounts (the primary key keeps them distinct)
	orphanWrites int64 // ledger writes of ids that are not accounts
	expected     int64 // accounts × initial
	actual       int64 // sum of balances
	replayed     int64 // sum of the replayed balances of accounts 1..accounts
	explainedBy  int64 // accounts whose replay differs from initial + net
}

// offAccount is the first account off its replay, for the violation.
type offAccount struct{ id, balance, replayed int64 }

// writesSQL is every write the ledger records, one row per account
// written: its version v, the version r it read (a delta transfer reads
// v-1), its delta d.
const writesSQL = `SELECT from_id AS id, from_written AS v, COALESCE(from_read, from_written - 1) AS r, -amount AS d, isolation AS iso, mode FROM bank_ledger
	UNION ALL
	SELECT to_id, to_written, COALESCE(to_read, to_written - 1), amount, isolation, mode FROM bank_ledger`

// auditSQL sums the writes by account (hashed: no sort) and returns, in
// one snapshot: row kind 0, the sums over every account; kind 2, each
// account with stale writes (id, balance, net of its ledger, whether its
// row exists), whose replay replaySQL finishes; kind 3, the first account
// without stale writes whose balance is not its initial one plus its
// ledger net (id, balance, that sum). An account's writes are versions 1
// to its version, each once, when their count, bounds and first two
// power sums are those of 1..n.
const auditSQL = `WITH w AS (` + writesSQL + `),
per AS MATERIALIZED (
	SELECT id, count(*) AS n, min(v) AS minv, max(v) AS maxv, sum(v) AS s1, sum(LEAST(v, 3000000000) * LEAST(v, 3000000000)) AS s2, sum(d) AS net,
		count(*) FILTER (WHERE r >= 0 AND r < v - 1) AS stale,
		COALESCE(sum(v - r - 1) FILTER (WHERE r >= 0 AND r < v - 1), 0) AS lost,
		COALESCE(sum(v - r - 1) FILTER (WHERE r >= 0 AND r < v - 1 AND iso > 0), 0) AS lost_level,
		COALESCE(sum(v - r - 1) FILTER (WHERE r >= 0 AND r < v - 1 AND iso = 0 AND mode = 2), 0) AS lost_locked,
		count(*) FILTER (WHERE r < 0 OR r >= v) AS bad_reads,
		bool_or(mode = 1) AS delta
	FROM w GROUP BY id),
acct AS NOT MATERIALIZED (
	SELECT COALESCE(a.id, per.id) AS id, a.id IS NOT NULL AS present, a.balance, a.version,
		per.n, per.minv, per.maxv, per.s1, per.s2, per.net, per.stale, per.lost, per.lost_level, per.lost_locked, per.bad_reads, per.delta,
		m.accounts AS nacc, m.initial_balance AS init
	FROM bank_account a FULL JOIN per ON per.id = a.id CROSS JOIN bank_meta m)
SELECT 0 AS kind,
	count(*) FILTER (WHERE present),
	count(*) FILTER (WHERE present AND id BETWEEN 1 AND nacc),
	COALESCE(sum(balance), 0),
	count(*) FILTER (WHERE balance < 0),
	count(*) FILTER (WHERE balance < 0 AND NOT COALESCE(delta, false)),
	count(*) FILTER (WHERE present AND balance <> init + COALESCE(net, 0)),
	count(*) FILTER (WHERE present AND COALESCE(stale, 0) = 0 AND balance <> init + COALESCE(net, 0)),
	COALESCE(sum(net) FILTER (WHERE id BETWEEN 1 AND nacc), 0),
	count(*) FILTER (WHERE present AND n > version),
	count(*) FILTER (WHERE present AND COALESCE(n, 0) < version),
	count(*) FILTER (WHERE present AND n = version AND NOT (minv = 1 AND maxv = n AND s1 = n * (n + 1) / 2 AND s2 = n * (n + 1) * (2 * n + 1) / 6)),
	COALESCE(sum(lost), 0), COALESCE(sum(lost_level), 0), COALESCE(sum(lost_locked), 0), COALESCE(sum(bad_reads), 0),
	COALESCE(sum(n) FILTER (WHERE NOT present AND (id < 1 OR id > nacc)), 0),
	max(nacc), max(init)
FROM acct
UNION ALL
SELECT 2, id, COALESCE(balance, 0), COALESCE(net, 0), present::INT, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
FROM acct WHERE stale > 0
UNION ALL
(SELECT 3, id, balance, init + COALESCE(net, 0), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
FROM acct WHERE present AND COALESCE(stale, 0) = 0 AND balance <> init + COALESCE(net, 0) ORDER BY id LIMIT 1)`

// replaySQL returns, for the accounts $1 (those with stale writes), the
// stale writes (v, r, x): their writes in version order (one sort), p the
// running sum of deltas (the balance change of versions 1..v had every
// write read the version before it), and x = p(v-1) - p(r), p(r) read
// v-r rows back: what versions r+1..v-1 changed.
const replaySQL = `WITH w AS (SELECT * FROM (` + writesSQL + `) w0 WHERE id = ANY($1)),
s AS (
	SELECT id, v, r, p - d - lag(p, GREATEST(LEAST(v - r, v + 1, 2147483647), 1)::INT, 0::BIGINT) OVER (PARTITION BY id ORDER BY v) AS x
	FROM (SELECT id, v, r, d, (sum(d) OVER (PARTITION BY id ORDER BY v ROWS UNBOUNDED PRECEDING))::BIGINT AS p FROM w) s1)
SELECT id, array_agg(v), array_agg(r), array_agg(x) FROM s WHERE r >= 0 AND r < v - 1 GROUP BY id`

const auditLedgerSQL = `SELECT count(*),
	count(*) FILTER (WHERE isolation = 0), count(*) FILTER (WHERE isolation = 1), count(*) FILTER (WHERE isolation = 2)
FROM bank_ledger`

// staleWrite is a write computed from a stale read: version v of an
// account, computed from version r; x is what the versions between r and
// v-1 changed, replayed as if each had read the one before.
type staleWrite struct{ v, r, x int64 }

func runAudit(ctx context.Context, t *pg.Target) (*audit, error) {
	a := &audit{}
	noSchema := errors.New("no bank schema in this database: run `txload init bank` first")
	err := workload.ReadSnapshot(ctx, t, "check bank", noSchema, func(tx pgx.Tx) error {
		roomToSum(ctx, tx)
		if err := tx.QueryRow(ctx, auditLedgerSQL).Scan(&a.transfers, &a.levels[0], &a.levels[1], &a.levels[2]); err != nil {
			return fmt.Errorf("auditing the ledger: %w", err)
		}
		return a.replay(ctx, tx)
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// roomToSum gives the audit's transaction the memory its sums by account
// need (64MB of work_mem: at 100000 accounts the server's default makes
// them spill to disk, three times slower), where the server has the
// setting; a server without it audits with what it has.
func roomToSum(ctx context.Context, tx pgx.Tx) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return
	}
	if _, err := sp.Exec(ctx, "SELECT set_config('work_mem', '64MB', true)"); err != nil {
		_ = sp.Rollback(ctx)
		return
	}
	_ = sp.Commit(ctx)
}

// replay reads the sums and the accounts with stale writes, then finishes
// those accounts' replay.
func (a *audit) replay(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, auditSQL)
	if err != nil {
		return fmt.Errorf("auditing the accounts: %w", err)
	}
	defer rows.Close()
	type staleAccount struct {
		balance, net int64
		present      bool
	}
	var (
		kind       int64
		c          [16]int64
		nacc, init *int64
		stale      = map[int64]staleAccount{}
		ids        []int64
	)
	dst := []any{&kind}
	for i := range c {
		dst = append(dst, &c[i])
	}
	dst = append(dst, &nacc, &init)
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return fmt.Errorf("auditing the accounts: %w", err)
		}
		switch kind {
		case 0:
			if nacc == nil || init == nil {
				return errors.New("bank_meta is empty: run `txload init bank --drop`")
			}
			a.accounts, a.initial = *nacc, *init
			a.rows, a.inRange, a.actual, a.negative, a.negativeNoOD = c[0], c[1], c[2], c[3], c[4]
			a.offLedger, a.offReplay = c[5], c[6]
			a.expected = a.accounts * a.initial
			a.replayed = a.expected + c[7]
			a.moreWrites, a.fewerWrites, a.otherWrites = c[8], c[9], c[10]
			a.lostUpdates, a.lostLevel, a.lostLocked, a.badReads, a.orphanWrites = c[11], c[12], c[13], c[14], c[15]
		case 2:
			stale[c[0]] = staleAccount{balance: c[1], net: c[2], present: c[3] == 1}
			ids = append(ids, c[0])
		case 3:
			a.off(c[0], c[1], c[2])
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("auditing the accounts: %w", err)
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err = tx.Query(ctx, replaySQL, ids)
	if err != nil {
		return fmt.Errorf("replaying the ledger: %w", err)
	}
	defer rows.Close()
	var (
		id         int64
		sv, sr, sx []int64
	)
	for rows.Next() {
		if err := rows.Scan(&id, &sv, &sr, &sx); err != nil {
			return fmt.Errorf("replaying the ledger: %w", err)
		}
		ws := make([]staleWrite, len(sv))
		for i := range sv {
			ws[i] = staleWrite{v: sv[i], r: sr[i], x: sx[i]}
		}
		o, acc := offset(ws), stale[id]
		if id >= 1 && id <= a.accounts {
			a.replayed += o
		}
		if o != 0 {
			a.explainedBy++
		}
		if acc.present && acc.balance != a.initial+acc.net+o {
			a.offReplay++
			a.off(id, acc.balance, a.initial+acc.net+o)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("replaying the ledger: %w", err)
	}
	return nil
}

// off notes an account off its replay: the violation names the first.
func (a *audit) off(id, balance, replayed int64) {
	if a.firstOff.id == 0 || id < a.firstOff.id {
		a.firstOff = offAccount{id: id, balance: balance, replayed: replayed}
	}
}

// offset finishes an account's replay from its stale writes, in version
// order: the balance of version v is initial + p(v) + o(v), where p is the
// running sum of deltas and o is 0 until the first stale write; a write of
// v computed from version r sets o to o(r) - x (x = p(v-1) - p(r)) for
// the versions from v on. It returns o of the last version.
func offset(ws []staleWrite) int64 {
	if len(ws) == 0 {
		return 0
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].v < ws[j].v })
	starts := []int64{0} // versions where o changes, and o from there on
	offs := []int64{0}
	for _, w := range ws {
		k := sort.Search(len(starts), func(i int) bool { return starts[i] > w.r }) - 1
		starts = append(starts, w.v)
		offs = append(offs, offs[k]-w.x)
	}
	return offs[len(offs)-1]
}

// drift is the money that appeared (or vanished); explained is the part
// of it the ledger's replay accounts for (read committed's lost updates).
func (a *audit) drift() int64     { return a.actual - a.expected }
func (a *audit) explained() int64 { return a.replayed - a.expected }

// violations says what the audit found that no honest history explains:
// what the ledger rows' isolation levels forbid, and what no transaction
// wrote.
func (a *audit) violations() []string {
	var v []string
	// add says n of noun (in the plural unless n is 1), then the rest.
	add := func(n int64, noun, rest string, args ...any) {
		if n > 0 {
			v = append(v, metrics.Count(n, noun)+" "+fmt.Sprintf(rest, args...))
		}
	}
	add(a.lostLevel, "lost update", "written at repeatable read or serializable (the level forbids them)")
	add(a.lostLocked, "lost update", "in for-update transfers at read committed (SELECT … FOR UPDATE forbids them)")
	add(a.accounts-a.inRange, "account", "missing (bank_meta has %d, ids 1 to %d)", a.accounts, a.accounts)
	add(a.inRange-a.accounts, "account row", "more than bank_meta's %d (an id duplicated)", a.accounts)
	add(a.rows-a.inRange, "row", "in bank_account outside accounts 1 to %d (added by no transfer)", a.accounts)
	add(a.orphanWrites, "ledger write", "of accounts that do not exist")
	add(a.moreWrites, "account", "with more ledger writes than versions (a ledger row duplicated or added, a write applied twice, or a version set back)")
	add(a.fewerWrites, "account", "with versions no ledger row wrote (a ledger row deleted, a version bumped, or a write without its ledger row)")
	add(a.otherWrites, "account", "whose ledger writes are not versions 1 to its version, each once (a ledger row's version changed)")
	add(a.badReads, "ledger write", "that read a version not yet written")
	if a.offReplay > 0 {
		f := a.firstOff
		v = append(v, fmt.Sprintf("%s whose balance is not what the ledger replays to (first: account %d holds %d, its ledger %d)",
			metrics.Count(a.offReplay, "account"), f.id, f.balance, f.replayed))
	}
	if d := a.drift() - a.explained(); d != 0 {
		v = append(v, fmt.Sprintf("money drift of %+d that no read-committed lost update explains (drift %+d, the ledger's replay explains %+d)",
			d, a.drift(), a.explained()))
	}
	add(a.negativeNoOD, "negative balance", "in accounts no delta transfer wrote (read-modify-write and for-update refuse to overdraw)")
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
	explained := fmt.Sprintf("%+d", a.explained())
	if a.lostUpdates > 0 {
		explained += fmt.Sprintf(" (by the lost updates of %s, replayed from the ledger)", metrics.Count(a.explainedBy, "account"))
	}
	return []workload.Line{
		{Label: "money drift", Value: fmt.Sprintf("%+d", a.drift())},
		{Label: "drift explained", Value: explained},
		{Label: "lost updates", Value: i(a.lostUpdates)},
		{Label: "accounts off ledger", Value: i(a.offLedger)},
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
			"expected_total": a.expected, "actual_total": a.actual, "drift": a.drift(),
			"drift_explained": a.explained(), "drift_unexplained": a.drift() - a.explained(),
			"lost_updates": a.lostUpdates, "lost_updates_forbidden": a.lostLevel + a.lostLocked,
			"accounts_off_ledger": a.offLedger, "accounts_off_replay": a.offReplay,
			"version_mismatches": a.moreWrites + a.fewerWrites + a.otherWrites,
			"negative_balances":  a.negative, "ledger_transfers": a.transfers,
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
		workload.Line{Label: "retried", Value: fmt.Sprintf("%d (%s)", op.Retried, metrics.Count(op.Retries, "retry"))},
	)
	rec := workload.Reconcile(op, a.transfers-before)
	rec.Committed -= obs.declined.Load() // rolled back: no ledger row
	lines = append(lines, rec.Lines("ledger")...)
	lines = append(lines, a.anomalies()...)
	res := a.result(append(lines, obs.Notes(g.cfg.isolation)...))
	rec.Into(res)
	return res, nil
}
