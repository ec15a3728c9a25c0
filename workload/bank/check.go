package bank

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

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

	// What init recorded, and what is wrong with it or with bank_meta.
	meta []string

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
	overdrawn    int64 // accounts replayed below zero by a withdrawal that refuses to overdraw
	firstOver    overdraft
	nullRows     int64 // rows of bank_account with a NULL balance or version
	rows         int64 // rows of bank_account
	inRange      int64 // rows of ids 1..accounts (the primary key keeps them distinct)
	orphanWrites int64 // ledger writes of ids that are not accounts
	expected     int64 // accounts × initial
	actual       int64 // sum of balances
	replayed     int64 // sum of the replayed balances of accounts 1..accounts
	explainedBy  int64 // accounts whose replay differs from initial + net

	// Ledger rows no transfer writes: an amount below 1, a transfer to
	// its own account, a NULL where a transfer always writes a value, a
	// level or mode that is none of 0, 1, 2, reads recorded by a delta
	// transfer or missing from one that reads.
	badAmount, selfTransfers, nullLedger, badCodes, badReadCols int64

	// Ledger rows whose id no run recorded in bank_run covers, and rows
	// that none of the runs covering them could have written (another
	// level, mode, amount, or an account beyond its selection).
	uncovered, misfits int64
	firstMisfit        string

	// Why the accounts' audit stopped: one of its sums beyond 64 bits.
	beyond64 string

	// Groups of runs that reported (runs at once grouped) whose ledger
	// ids hold fewer rows than they saw commit, or more than those and
	// the transfers of unknown outcome.
	fewerRows, moreRows   int64
	firstFewer, firstMore string
}

// offAccount is the first account off its replay, for the violation.
type offAccount struct{ id, balance, replayed int64 }

// overdraft is the first account replayed below zero by a withdrawal
// that refuses to overdraw: the version that withdrawal wrote and its
// replayed balance.
type overdraft struct{ id, version, balance int64 }

// writesSQL is every write the ledger records, one row per account
// written: its version v, the version r it read (a delta transfer reads
// v-1), its delta d, the transfer's level and mode, and src, whether it is
// the transfer's withdrawal.
const writesSQL = `SELECT from_id AS id, from_written AS v, COALESCE(from_read, from_written - 1) AS r, -amount AS d, isolation AS iso, mode, true AS src FROM bank_ledger
	UNION ALL
	SELECT to_id, to_written, COALESCE(to_read, to_written - 1), amount, isolation, mode, false FROM bank_ledger`

// refusesSQL says a write is a withdrawal of a transfer that refuses to
// overdraw: read-modify-write (0) and for-update (2) roll back a transfer
// whose source holds less than the amount, so the balance such a write
// leaves is never below zero; a delta transfer (1) does not look.
const refusesSQL = `src AND mode IN (0, 2)`

// auditSQL sums the writes by account (hashed: no sort) and returns, in
// one snapshot: row kind 0, the sums over every account; kind 2, each
// account with stale writes (id, balance, net of its ledger, whether its
// row exists), whose replay replaySQL finishes; kind 3, the first account
// without stale writes whose balance is not its initial one plus its
// ledger net (id, balance, that sum), NULL balances being counted apart;
// kind 4, the blocks of versions in
// which an account without stale writes may have been overdrawn (id,
// block, the balance change before it), which overdraftSQL replays.
//
// The writes are summed by account in blocks of 256 versions first: an
// account's balance before a block is the initial balance plus the blocks
// before it, and within the block it is at least that plus the block's
// withdrawals, so only a block where that bound is below zero can hold an
// overdraft. An account's writes are versions 1 to n, each once, when
// there are n of them, the least is 1, the greatest n, and the sum of a
// hash of each version, seeded anew by each check ($1), is that of 1..n:
// count, bounds and power sums can be matched by other versions ({2,3,7}
// and {1,5,6}), the seeded hash only by guessing the seed. $2 is the
// number of accounts, $3 the initial balance.
const auditSQL = `WITH w AS (` + writesSQL + `),
b AS MATERIALIZED (
	SELECT id, v >> 8 AS blk, count(*) AS n, min(v) AS minv, max(v) AS maxv, sum(hashint8extended(v, $1)) AS fp, sum(d) AS net,
		COALESCE(sum(d) FILTER (WHERE d < 0), 0) AS neg,
		COALESCE(bool_or(` + refusesSQL + `), false) AS refuses,
		count(*) FILTER (WHERE r >= 0 AND r < v - 1) AS stale,
		COALESCE(sum(v - r - 1) FILTER (WHERE r >= 0 AND r < v - 1), 0) AS lost,
		COALESCE(sum(v - r - 1) FILTER (WHERE r >= 0 AND r < v - 1 AND iso > 0), 0) AS lost_level,
		COALESCE(sum(v - r - 1) FILTER (WHERE r >= 0 AND r < v - 1 AND iso = 0 AND mode = 2), 0) AS lost_locked,
		count(*) FILTER (WHERE r < 0 OR r >= v) AS bad_reads,
		bool_or(mode = 1) AS delta
	FROM w GROUP BY id, v >> 8),
per AS MATERIALIZED (
	SELECT id, sum(n)::BIGINT AS n, min(minv) AS minv, max(maxv) AS maxv, sum(fp) AS fp, sum(net) AS net, sum(neg) AS neg, bool_or(refuses) AS refuses,
		sum(stale) AS stale, sum(lost) AS lost, sum(lost_level) AS lost_level, sum(lost_locked) AS lost_locked, sum(bad_reads) AS bad_reads,
		bool_or(delta) AS delta
	FROM b GROUP BY id),
e AS (SELECT g AS n, sum(hashint8extended(g, $1)) OVER (ORDER BY g ROWS UNBOUNDED PRECEDING) AS fp
	FROM generate_series(1::BIGINT, (SELECT COALESCE(max(n), 0) FROM per)) g),
acct AS NOT MATERIALIZED (
	SELECT COALESCE(a.id, per.id) AS id, a.id IS NOT NULL AS present, a.balance, a.version,
		per.n, per.minv, per.maxv, per.fp, e.fp AS efp, per.net, per.stale, per.lost, per.lost_level, per.lost_locked, per.bad_reads, per.delta
	FROM bank_account a FULL JOIN per ON per.id = a.id LEFT JOIN e ON e.n = per.n)
SELECT 0 AS kind,
	count(*) FILTER (WHERE present),
	count(*) FILTER (WHERE present AND id BETWEEN 1 AND $2),
	COALESCE(sum(balance), 0),
	count(*) FILTER (WHERE balance < 0),
	count(*) FILTER (WHERE balance < 0 AND NOT COALESCE(delta, false)),
	count(*) FILTER (WHERE present AND balance <> $3 + COALESCE(net, 0)),
	count(*) FILTER (WHERE present AND COALESCE(stale, 0) = 0 AND balance <> $3 + COALESCE(net, 0)),
	COALESCE(sum(net) FILTER (WHERE id BETWEEN 1 AND $2), 0),
	count(*) FILTER (WHERE present AND n > version),
	count(*) FILTER (WHERE present AND COALESCE(n, 0) < version),
	count(*) FILTER (WHERE present AND n = version AND (minv = 1 AND maxv = n AND fp = efp) IS NOT TRUE),
	COALESCE(sum(lost), 0), COALESCE(sum(lost_level), 0), COALESCE(sum(lost_locked), 0), COALESCE(sum(bad_reads), 0),
	COALESCE(sum(n) FILTER (WHERE NOT present AND (id < 1 OR id > $2)), 0),
	count(*) FILTER (WHERE present AND (balance IS NULL OR version IS NULL))
FROM acct
UNION ALL
SELECT 2, id, COALESCE(balance, 0), COALESCE(net, 0), present::INT, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
FROM acct WHERE stale > 0
UNION ALL
(SELECT 3, id, balance, $3 + COALESCE(net, 0), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
FROM acct WHERE present AND COALESCE(stale, 0) = 0 AND balance <> $3 + COALESCE(net, 0) ORDER BY id LIMIT 1)
UNION ALL
SELECT 4, id, blk, before, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 FROM (
	SELECT b.id, b.blk, b.neg, b.refuses, COALESCE(sum(b.net) OVER (PARTITION BY b.id ORDER BY b.blk ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
	FROM b JOIN per ON per.id = b.id WHERE per.refuses AND per.stale = 0 AND $3 + per.neg < 0) b1
WHERE refuses AND $3 + before + neg < 0`

// overdraftSQL replays the blocks of versions kind 4 of auditSQL named
// ($1 accounts, $2 blocks, $3 balance changes before them; $4 the initial
// balance), in version order, and returns each account whose replay goes
// below zero at a withdrawal that refuses to overdraw: its lowest such
// balance, and the version that wrote it.
const overdraftSQL = `WITH f AS (SELECT * FROM unnest($1::BIGINT[], $2::BIGINT[], $3::NUMERIC[]) AS f(id, blk, before)),
w AS (SELECT w0.*, f.before FROM (` + writesSQL + `) w0 JOIN f ON f.id = w0.id AND f.blk = w0.v >> 8),
x AS (SELECT id, v, src, mode, ($4 + before + sum(d) OVER (PARTITION BY id, v >> 8 ORDER BY v ROWS UNBOUNDED PRECEDING))::BIGINT AS bal FROM w)
SELECT id, min(ARRAY[bal, v]) FROM x WHERE ` + refusesSQL + ` AND bal < 0 GROUP BY id`

// ledgerChecks are the rows no transfer writes, counted over the ledger.
const ledgerChecks = `count(*) FILTER (WHERE amount < 1),
	count(*) FILTER (WHERE from_id = to_id),
	count(*) FILTER (WHERE from_id IS NULL OR to_id IS NULL OR amount IS NULL OR from_written IS NULL OR to_written IS NULL OR isolation IS NULL OR mode IS NULL OR id IS NULL),
	count(*) FILTER (WHERE isolation NOT IN (0, 1, 2) OR mode NOT IN (0, 1, 2)),
	count(*) FILTER (WHERE (mode = 1) IS DISTINCT FROM (from_read IS NULL) OR (mode = 1) IS DISTINCT FROM (to_read IS NULL))`

// auditLedgerSQL counts the ledger's transfers, by level, the rows no
// transfer writes, the rows whose id no run covers (%[1]s: a row's id in
// some run's range) and those that none of the runs covering them could
// have written (%[2]s: the row fits some run's range, level, mode, amount
// and selection): one term per run, for up to maxTermRuns runs; then
// (%[3]s) the rows of each held group of runs.
const auditLedgerSQL = `SELECT count(*),
	count(*) FILTER (WHERE isolation = 0), count(*) FILTER (WHERE isolation = 1), count(*) FILTER (WHERE isolation = 2),
	` + ledgerChecks + `,
	count(*) FILTER (WHERE (%[1]s) IS NOT TRUE),
	count(*) FILTER (WHERE (%[1]s) AND (%[2]s) IS NOT TRUE)%[3]s
FROM bank_ledger`

// firstMisfitSQL is the first ledger row of those auditLedgerSQL counts as
// written by none of the runs covering it.
const firstMisfitSQL = `SELECT id, isolation, mode, amount, GREATEST(from_id, to_id) FROM bank_ledger
WHERE (%[1]s) AND (%[2]s) IS NOT TRUE ORDER BY id LIMIT 1`

// auditLedgerGroupedSQL is auditLedgerSQL for more runs: the ledger's
// rows grouped by the runs whose ids may cover them (the bucket of $1, the
// sorted bounds of bank_run's ranges), level, mode, amount and the runs'
// selections its accounts fit ($2, each selection + 1, sorted): the groups
// are as few as the runs unless the ledger was tampered with. Each group
// has its first id and the highest account its rows name.
const auditLedgerGroupedSQL = `SELECT width_bucket(id, $1::BIGINT[]), isolation, mode, amount, count(*), min(id), max(GREATEST(from_id, to_id)),
	` + ledgerChecks + `
FROM bank_ledger GROUP BY 1, 2, 3, 4, width_bucket(GREATEST(from_id, to_id), $2::BIGINT[])`

// replaySQL returns, for the accounts $1 (those with stale writes), one
// row per segment of each account's versions, a segment being the versions
// from one stale write up to the next (segment 0: those before the
// first): the stale write that opens it (v, r, x), and the lowest p at a
// withdrawal that refuses to overdraw in it (with its version). The writes
// are taken in version order (one sort); p is the running sum of deltas
// (the balance change of versions 1..v had every write read the version
// before it), and x = p(v-1) - p(r), p(r) read v-r rows back: what
// versions r+1..v-1 changed.
const replaySQL = `WITH w AS (SELECT * FROM (` + writesSQL + `) w0 WHERE id = ANY($1)),
s1 AS (
	SELECT id, v, r, d, src, mode, r >= 0 AND r < v - 1 AS stale,
		(sum(d) OVER o)::BIGINT AS p,
		count(*) FILTER (WHERE r >= 0 AND r < v - 1) OVER o AS seg
	FROM w WINDOW o AS (PARTITION BY id ORDER BY v ROWS UNBOUNDED PRECEDING)),
s AS (
	SELECT id, v, r, src, mode, stale, seg, p,
		p - d - lag(p, GREATEST(LEAST(v - r, v + 1, 2147483647), 1)::INT, 0::BIGINT) OVER (PARTITION BY id ORDER BY v) AS x
	FROM s1)
SELECT id, seg, COALESCE(min(v) FILTER (WHERE stale), 0), COALESCE(min(r) FILTER (WHERE stale), 0), COALESCE(min(x) FILTER (WHERE stale), 0),
	min(ARRAY[p, v]) FILTER (WHERE ` + refusesSQL + `)
FROM s GROUP BY id, seg`

// staleWrite is a write computed from a stale read: version v of an
// account, computed from version r; x is what the versions between r and
// v-1 changed, replayed as if each had read the one before.
type staleWrite struct{ v, r, x int64 }

func runAudit(ctx context.Context, t *pg.Target) (*audit, error) {
	a := &audit{}
	noSchema := errors.New("no bank schema in this database: run `txload init bank` first")
	err := workload.ReadSnapshot(ctx, t, "check bank", noSchema, func(tx pgx.Tx) error {
		roomToSum(ctx, tx)
		if err := a.readMeta(ctx, tx); err != nil {
			return err
		}
		runs, err := a.readRuns(ctx, tx)
		if err != nil {
			return err
		}
		if err := a.holdBounds(ctx, tx, runs); err != nil {
			return err
		}
		if err := a.auditLedger(ctx, tx, runs); err != nil {
			return err
		}
		// In a savepoint, which an overflow rolls back, not the snapshot.
		err = pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error { return a.replay(ctx, sp) })
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "22003" {
			// The server's bigint arithmetic over the ledger overflowed:
			// honest transfers, each applied by the server in bigint,
			// leave no such values. What the replay did not finish is left
			// out.
			a.beyond64 = fmt.Sprintf("the ledger's replay is beyond a 64-bit integer (%s): a balance, amount or version near 2^63, which no transfer writes", pe.Message)
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// settings are the bank's settings in the words of the init marker.
func settings(accounts, initial int64) string {
	return fmt.Sprintf("accounts=%d initial-balance=%d", accounts, initial)
}

// readMeta reads bank_meta, which must be the one row init wrote, and
// holds it to the settings init recorded in its marker. The audit goes by
// bank_meta; without it, by the marker.
func (a *audit) readMeta(ctx context.Context, tx pgx.Tx) error {
	var rows, nulls int64
	var accounts, initial *int64
	if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE accounts IS NULL OR initial_balance IS NULL), min(accounts), min(initial_balance) FROM bank_meta`).
		Scan(&rows, &nulls, &accounts, &initial); err != nil {
		return fmt.Errorf("reading bank_meta: %w", err)
	}
	have := ""
	switch {
	case rows != 1 || nulls > 0:
		a.meta = append(a.meta, fmt.Sprintf("bank_meta holds %s (%d with a NULL), where init wrote one", metrics.Count(rows, "row"), nulls))
	default:
		a.accounts, a.initial = *accounts, *initial
		have = settings(a.accounts, a.initial)
	}
	m, problems, err := workload.CheckMarker(ctx, tx, "bank", have)
	if err != nil {
		return err
	}
	a.meta = append(a.meta, problems...)
	if have == "" {
		if _, err := fmt.Sscanf(m.Settings, "accounts=%d initial-balance=%d", &a.accounts, &a.initial); err != nil {
			return fmt.Errorf("bank_meta holds %s and %s has no bank settings: run `txload init bank --drop`", metrics.Count(rows, "row"), workload.MarkerTable)
		}
	}
	return nil
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

// block is a block of an account's versions that may hold an overdraft:
// kind 4 of auditSQL.
type block struct{ id, blk, before int64 }

// replay reads the sums, the accounts with stale writes and the blocks
// that may hold an overdraft, then finishes those accounts' replay and
// replays those blocks.
func (a *audit) replay(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, auditSQL, rand.Int64(), a.accounts, a.initial)
	if err != nil {
		return fmt.Errorf("auditing the accounts: %w", err)
	}
	defer rows.Close()
	type staleAccount struct {
		balance, net int64
		present      bool
	}
	var (
		kind   int64
		n      [17]pgtype.Numeric
		c      [17]int64
		stale  = map[int64]staleAccount{}
		ids    []int64
		blocks []block
	)
	dst := []any{&kind}
	for i := range n {
		dst = append(dst, &n[i])
	}
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return fmt.Errorf("auditing the accounts: %w", err)
		}
		// The sums are numerics: a value near 2^63 written by hand makes
		// one that no 64-bit integer holds, which no run can (the money
		// is init's, which fits), a violation rather than a scan error.
		for i := range n {
			v, err := n[i].Int64Value()
			if err != nil && a.beyond64 == "" {
				a.beyond64 = fmt.Sprintf("a sum over bank_account and bank_ledger is beyond a 64-bit integer (%s): "+
					"a balance or amount near 2^63, which no transfer writes (init's money fits one)", numericText(n[i]))
			}
			c[i] = v.Int64 // 0 beyond 64 bits
		}
		switch kind {
		case 0:
			a.rows, a.inRange, a.actual, a.negative, a.negativeNoOD = c[0], c[1], c[2], c[3], c[4]
			a.offLedger, a.offReplay = c[5], c[6]
			a.expected = a.accounts * a.initial
			a.replayed = a.expected + c[7]
			a.moreWrites, a.fewerWrites, a.otherWrites = c[8], c[9], c[10]
			a.lostUpdates, a.lostLevel, a.lostLocked, a.badReads, a.orphanWrites = c[11], c[12], c[13], c[14], c[15]
			a.nullRows = c[16]
		case 2:
			stale[c[0]] = staleAccount{balance: c[1], net: c[2], present: c[3] == 1}
			ids = append(ids, c[0])
		case 3:
			a.off(c[0], c[1], c[2])
		case 4:
			blocks = append(blocks, block{id: c[0], blk: c[1], before: c[2]})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("auditing the accounts: %w", err)
	}
	if err := a.overdrafts(ctx, tx, blocks); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err = tx.Query(ctx, replaySQL, ids)
	if err != nil {
		return fmt.Errorf("replaying the ledger: %w", err)
	}
	defer rows.Close()
	segs := map[int64][]segment{}
	for rows.Next() {
		var id int64
		var s segment
		var low []int64
		if err := rows.Scan(&id, &s.seg, &s.w.v, &s.w.r, &s.w.x, &low); err != nil {
			return fmt.Errorf("replaying the ledger: %w", err)
		}
		if len(low) == 2 {
			s.low, s.lowAt, s.withdrawn = low[0], low[1], true
		}
		segs[id] = append(segs[id], s)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("replaying the ledger: %w", err)
	}
	for _, id := range ids {
		ss := segs[id]
		sort.Slice(ss, func(i, j int) bool { return ss[i].seg < ss[j].seg })
		var ws []staleWrite
		for _, s := range ss {
			if s.seg > 0 {
				ws = append(ws, s.w)
			}
		}
		offs, acc := offsets(ws), stale[id]
		o := offs[len(offs)-1]
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
		// The balance of version v is initial + p(v) + o(v), o being
		// that of v's segment.
		var worst *overdraft
		for _, s := range ss {
			if bal := a.initial + s.low + offs[min(int(s.seg), len(offs)-1)]; s.withdrawn && bal < 0 && (worst == nil || bal < worst.balance) {
				worst = &overdraft{id: id, version: s.lowAt, balance: bal}
			}
		}
		if worst != nil {
			a.overdraw(*worst)
		}
	}
	return nil
}

// segment is one row of replaySQL: the stale write that opens segment seg
// (none for segment 0), and the lowest running sum at a withdrawal that
// refuses to overdraw in it, with its version.
type segment struct {
	seg        int64
	w          staleWrite
	low, lowAt int64
	withdrawn  bool
}

// overdrafts replays the blocks that may hold an overdraft.
func (a *audit) overdrafts(ctx context.Context, tx pgx.Tx, blocks []block) error {
	if len(blocks) == 0 {
		return nil
	}
	var ids, blks, befores []int64
	for _, b := range blocks {
		ids, blks, befores = append(ids, b.id), append(blks, b.blk), append(befores, b.before)
	}
	rows, err := tx.Query(ctx, overdraftSQL, ids, blks, befores, a.initial)
	if err != nil {
		return fmt.Errorf("replaying the withdrawals: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var low []int64
		if err := rows.Scan(&id, &low); err != nil {
			return fmt.Errorf("replaying the withdrawals: %w", err)
		}
		a.overdraw(overdraft{id: id, version: low[1], balance: low[0]})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("replaying the withdrawals: %w", err)
	}
	return nil
}

// overdraw notes an account overdrawn: the violation names the first.
func (a *audit) overdraw(o overdraft) {
	a.overdrawn++
	if a.firstOver.id == 0 || o.id < a.firstOver.id {
		a.firstOver = o
	}
}

// off notes an account off its replay: the violation names the first.
func (a *audit) off(id, balance, replayed int64) {
	if a.firstOff.id == 0 || id < a.firstOff.id {
		a.firstOff = offAccount{id: id, balance: balance, replayed: replayed}
	}
}

// offsets finishes an account's replay from its stale writes, in version
// order: the balance of version v is initial + p(v) + o(v), where p is the
// running sum of deltas and o is 0 until the first stale write; a write of
// v computed from version r sets o to o(r) - x (x = p(v-1) - p(r)) for
// the versions from v on. It returns o of each segment: offs[0] = 0 before
// the first stale write, offs[i] from the i-th on.
func offsets(ws []staleWrite) []int64 {
	sort.Slice(ws, func(i, j int) bool { return ws[i].v < ws[j].v })
	starts := []int64{0} // versions where o changes, and o from there on
	offs := []int64{0}
	for _, w := range ws {
		k := sort.Search(len(starts), func(i int) bool { return starts[i] > w.r }) - 1
		starts = append(starts, w.v)
		offs = append(offs, offs[k]-w.x)
	}
	return offs
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
	if a.beyond64 != "" {
		v = append(v, a.beyond64)
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
	if a.overdrawn > 0 {
		f := a.firstOver
		v = append(v, fmt.Sprintf("%s whose ledger replays to a negative balance written by a read-modify-write or for-update withdrawal, which refuses to overdraw (first: account %d, version %d: %d)",
			metrics.Count(a.overdrawn, "account"), f.id, f.version, f.balance))
	}
	add(a.nullRows, "row", "of bank_account with a NULL balance or version")
	add(a.badAmount, "ledger row", "with an amount below 1 (a transfer moves --amount, at least 1)")
	add(a.selfTransfers, "ledger row", "of a transfer from an account to itself (a transfer picks two accounts)")
	add(a.nullLedger, "ledger row", "with a NULL where every transfer writes a value")
	add(a.badCodes, "ledger row", "with an isolation level or transfer mode that is none of 0, 1, 2")
	add(a.badReadCols, "ledger row", "whose versions read do not fit its mode (a delta transfer reads none, the others both)")
	add(a.uncovered, "ledger row", "whose id no run recorded in bank_run covers (written by no run, or the run's record deleted)")
	add(a.misfits, "ledger row", "that no run recorded in bank_run could have written: the runs whose ids cover it ran another level, transfer mode, amount or selection (first: %s)", a.firstMisfit)
	add(a.moreRows, "range", "of ledger ids recorded in bank_run with more rows than its runs saw commit or end of unknown outcome (a transfer added or a row duplicated beside them; first: %s)", a.firstMore)
	add(a.fewerRows, "range", "of ledger ids recorded in bank_run with fewer rows than its runs saw commit (a row deleted, or its id moved; first: %s)", a.firstFewer)
	return append(a.meta, v...)
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
			"accounts_overdrawn": a.overdrawn,
		},
	}
}

// check audits ledger, versions and balances; it may run at any time.
func (g *gen) check(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
	if res, err := workload.CheckColumns(ctx, t, workload.ColumnsOf(schema)); res != nil || err != nil {
		return res, err
	}
	a, err := runAudit(ctx, t)
	if err != nil {
		return nil, err
	}
	return a.result(append(append(a.totals(), a.anomalies()...), workload.AfterTheFact("ledger rows"))), nil
}

// runReport is iso-load's four lines, the run's own counts, then what the
// audit found. before is the ledger's size before the run: the transfers the
// ledger gained beyond those txload saw commit are ambiguous commits that did
// commit.
func (g *gen) runReport(ctx context.Context, t *pg.Target, total *metrics.Snapshot, before int64, obs *observed) (*workload.CheckResult, workload.Reconciliation, error) {
	a, err := runAudit(ctx, t)
	if err != nil {
		return nil, workload.Reconciliation{}, err
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
	rec := reconcile(total, a.transfers-before, obs)
	lines = append(lines, rec.Lines("ledger")...)
	lines = append(lines, a.anomalies()...)
	res := a.result(append(lines, obs.Notes(g.cfg.isolation)...))
	rec.Into(res)
	return res, rec, nil
}

// reconcile is what the run saw of its transfers (committed, of unknown
// outcome) against server, the rows the ledger gained.
func reconcile(total *metrics.Snapshot, server int64, obs *observed) workload.Reconciliation {
	rec := workload.Reconcile(total.Ops[0], server)
	rec.Committed -= obs.declined.Load() // rolled back: no ledger row
	return rec
}

// numericText is n as the server printed it.
func numericText(n pgtype.Numeric) string {
	b, err := n.MarshalJSON()
	if err != nil {
		return "?"
	}
	return string(b)
}
