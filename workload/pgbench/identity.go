package pgbench

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/workload"
)

// A builtin run's audit checks WHICH history rows its transactions wrote,
// not only how many: each committed transaction adds the hash of its
// history row (seed, aid, tid, bid, delta) to a sum (mod 2^64), and the
// audit compares that sum with the same sum over pgbench_history after the
// run minus before it. The seed is drawn per run, so nobody can forge rows
// whose hashes add up to the ones they replace, and reaches the server
// only in the audit after the run (sumIdentity). A transaction whose COMMIT
// was in flight when its connection was lost may or may not be there: the
// difference must be the sum of a subset of theirs.

// identity is what a run's clients saw commit, by history row.
type identity struct {
	seed uint64
	workload.Outcomes
	// rowsBefore is the hashes of the history rows from before the run
	// (rows of the same content as a transaction in doubt, an earlier
	// run's, are not its: PresentPastMax).
	rowsBefore workload.Kept
	mu         sync.Mutex
	enders     []*identityEnder
}

// rowHash is the hash of one history row, as identitySQL computes it:
// md5 of "seed:aid:tid:bid:delta", its first 8 bytes big-endian. buf is
// reused, so that nothing is allocated per transaction.
func rowHash(buf []byte, seed uint64, aid, tid, bid, delta int64) ([]byte, uint64) {
	buf = strconv.AppendUint(buf[:0], seed, 10)
	for _, v := range [...]int64{aid, tid, bid, delta} {
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, v, 10)
	}
	sum := md5.Sum(buf)
	return buf, binary.BigEndian.Uint64(sum[:8])
}

// identitySQL sums the hashes of pgbench_history's rows (a numeric; taken
// mod 2^64 by parseHashSum), and those of the rows dated from $2 on (a
// run's window start: datedCopy). $1 is the seed, as text.
const identitySQL = `SELECT COALESCE(sum(h), 0)::text, COALESCE(sum(h) FILTER (WHERE mtime >= $2::timestamp), 0)::text
	FROM (SELECT ` + rowHashSQL + ` AS h, mtime FROM pgbench_history) r`

// rowHashSQL is a history row's hash; $1 is the seed, as text.
const rowHashSQL = `('x' || left(md5($1 || ':' || aid || ':' || tid || ':' || bid || ':' || delta), 16))::bit(64)::bigint`

// identityCopy sends the history rows whose hashes workload.CopyHashSum
// sums in the client as identitySQL does in the server.
const identityCopy = `COPY (SELECT aid, tid, bid, delta FROM pgbench_history) TO STDOUT`

// datedCopy is identityCopy of the rows dated from a run's window start
// on (a timestamp, which COPY takes only as a literal).
func datedCopy(from time.Time) string {
	return `COPY (SELECT aid, tid, bid, delta FROM pgbench_history WHERE mtime >= '` + from.Format("2006-01-02 15:04:05.999999") + `'::timestamp) TO STDOUT`
}

// sumIdentity sums the history's identity in tx, the audit's snapshot,
// with id's seed, and that of the rows dated from a.runFrom on (identDated;
// the rows before it are the run's to leave as they were: datedLine);
// without id, it does nothing. Before the run the client
// sums the rows (identityCopy), so that the seed reaches the server (a
// statement log shows it) only in the audit after the run, whose snapshot
// the queries before this one have fixed: a writer who reads it there is
// too late to forge rows whose hashes add up to those it replaces. A
// dialect without COPY, md5 or bit strings leaves identOK false.
func (a *tpcbAudit) sumIdentity(ctx context.Context, tx pgx.Tx, id *identity, before bool) {
	if id == nil {
		return
	}
	var err error
	if before {
		if a.ident, _, err = workload.CopyHashSum(ctx, tx.Conn().PgConn(), id.seed, identityCopy, &id.rowsBefore); err == nil {
			a.identDated, _, err = workload.CopyHashSum(ctx, tx.Conn().PgConn(), id.seed, datedCopy(a.runFrom), nil)
		}
	} else {
		var sum, dated string
		seed := strconv.FormatUint(id.seed, 10)
		if err = tx.QueryRow(ctx, identitySQL, seed, a.runFrom).Scan(&sum, &dated); err == nil {
			if a.ident, err = workload.HashSum(sum, "the history"); err == nil {
				a.identDated, err = workload.HashSum(dated, "the history's rows dated within the run")
			}
		}
		if err == nil {
			a.present, err = id.PresentPastMax(ctx, tx, `SELECT `+rowHashSQL+` FROM pgbench_history`, []any{seed}, id.open(), &id.rowsBefore)
		}
	}
	a.identOK = err == nil
}

// datedViolation holds the history rows dated before the run's window
// (those before a.runFrom, and those of no date) to the ones there before
// it, by their identity sum (the whole history's less that of the rows
// dated within the window): every row the run added is dated within its
// window, and no row before it moves. A count would pass two rows
// re-dated in opposite directions; a sum passes only rows swapped with
// ones of the same account, teller, branch and delta, which no reader can
// tell apart. "" when they are the same, or not summed.
func (a *tpcbAudit) datedViolation(b *tpcbAudit) string {
	if !a.identOK || !b.identOK || a.ident-a.identDated == b.ident-b.identDated {
		return ""
	}
	return fmt.Sprintf("the history rows dated before the run (before %s, in the run's time zone, %s, which every session of the run is pinned to and its CURRENT_TIMESTAMP is written in) are not the ones there before it (their identity sum differs): a row the run added re-dated before it, or one dated before it re-dated into it, changed, deleted or added beside the run",
		a.runFrom.Format(time.DateTime), a.zone)
}

// explains says whether diff, the history's sum after minus before, is
// what the committed transactions and a subset of the in-doubt ones
// wrote (those that ended in doubt, and those the run abandoned under way;
// call it once the run's clients are done). known is how many in-doubt
// transactions it knows: fewer than unknown, or more than
// workload.MaxInDoubt with a row (present: nil, all of them), and it does
// not try (tried false; the audit falls back to counts).
func (id *identity) explains(diff uint64, unknown int64, present workload.Present) (ok, tried bool, known int) {
	return id.ExplainsAny(diff, id.open(), unknown, present)
}

// open is the hashes of the transactions under way when the run stopped.
func (id *identity) open() []uint64 {
	var open []uint64
	id.mu.Lock()
	defer id.mu.Unlock()
	for _, e := range id.enders {
		if h, under := e.underWay(); under {
			open = append(open, h)
		}
	}
	return open
}

// ender returns a program's part of the identity.
func (id *identity) ender(p *program) *identityEnder {
	e := &identityEnder{id: id, p: p}
	id.mu.Lock()
	id.enders = append(id.enders, e)
	id.mu.Unlock()
	return e
}

// identityEnder is the part of a program that tells the run's identity how
// each builtin transaction ended.
type identityEnder struct {
	id   *identity
	p    *program
	buf  []byte
	open bool // an attempt is under way
}

// start: an attempt begins.
func (e *identityEnder) start() {
	if e != nil {
		e.open = true
	}
}

// hash is the history row of the attempt under way or just ended, from
// the script's variables; false before its first \set.
func (e *identityEnder) hash() (uint64, bool) {
	var v [4]int64
	for i, name := range [...]string{"aid", "tid", "bid", "delta"} {
		x, ok := e.p.lookup(name)
		if !ok {
			return 0, false
		}
		v[i] = x.I
	}
	var h uint64
	e.buf, h = rowHash(e.buf, e.id.seed, v[0], v[1], v[2], v[3])
	return h, true
}

// end records how the attempt ended. One that ended before its \set
// wrote nothing.
func (e *identityEnder) end(_ time.Time, err error) {
	if e == nil {
		return
	}
	e.open = false
	if h, ok := e.hash(); ok {
		e.id.Ended(h, err)
	}
}

// underWay is the hash of an attempt the run abandoned (its outcome
// unknown), once the run's clients are done.
func (e *identityEnder) underWay() (uint64, bool) {
	if !e.open {
		return 0, false
	}
	return e.hash()
}
