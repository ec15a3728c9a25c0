package executor

import (
	"context"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/txload/txload/pg"
)

// fate is what the server says of the transaction of an exchange still
// unanswered at the end of a run's settle: its backend was terminated
// (reap), which rolls back a transaction that had not committed, and once
// the backend had exited its commit log said.
type fate int8

const (
	fateUnknown      fate = iota // not reaped, or the server could not say
	fateNotCommitted             // terminated before it committed, or it wrote nothing
	fateCommitted                // committed before the termination took
	fateAnswered                 // idle, not terminated: it answered, and its answer is on its way
)

// stuck is an exchange still unanswered when the settle gave up: its
// backend, and where its connection went.
type stuck struct {
	pid  uint32
	addr net.Addr
}

// reapTimeout bounds a reap: its connection, the termination, the wait for
// the backends to exit, and the commit log's answer; reachTimeout its
// connection and the termination.
const (
	reapTimeout  = SettleTimeout
	reachTimeout = 2 * time.Second
)

// reap terminates the backends of exchanges a run's end cancelled and
// SettleTimeout did not see answered (a statement that ignores its cancel
// request: a trigger that catches query_canceled, a COMMIT whose deferred
// trigger waits on someone else's lock), and says each one's fate: without
// it, each would be an operation of unknown outcome, and enough of them
// leave an audit unable to tell which rows a run wrote (a second writer
// could hold as many as there are clients).
//
// A backend found idle (idle, or idle in a transaction) had answered what
// it was sent, after the settle stopped waiting (a cancel the server took
// late, under load: the statement then failed near SettleTimeout): it is
// not terminated, and its fate is fateAnswered, for the settle to read
// that answer a little longer (answeredTimeout). It was not found before,
// and its exchange was left of unknown outcome.
//
// A backend is found by its process id in pg_stat_activity, only where
// those ids are the backends' own (t.Direct: no pooler made them up) and
// the connection went where this one goes (the same server address);
// others stay unknown. The one statement that terminates a backend reads
// its transaction id (backend_xid) as it signals it; after the backend has
// exited, txid_status says whether that transaction committed. A backend
// with no transaction id had written nothing, so nothing of it committed:
// the statement reads the id and sends the signal microseconds apart, and
// a transaction held past the settle is not one that commits in between
// unless it was let go in that instant.
func reap(t *pg.Target, conns []stuck) map[uint32]fate {
	if len(conns) == 0 || !t.Direct() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), reapTimeout)
	defer cancel()
	// A server that does not take a new session and answer within
	// reachTimeout (one frozen, say) is not asked: the run's end waits
	// no longer for it.
	reach, cancelReach := context.WithTimeout(ctx, reachTimeout)
	defer cancelReach()
	side, err := t.ConnectNode(reach, 0)
	if err != nil {
		return nil
	}
	defer side.Close(context.WithoutCancel(ctx))
	if pg.AsLoginRole(reach, side) != nil {
		return nil
	}
	here := side.PgConn().Conn().RemoteAddr()
	var pids []int64
	for _, c := range conns {
		if c.addr != nil && c.addr.Network() == here.Network() && c.addr.String() == here.String() {
			pids = append(pids, int64(c.pid))
		}
	}
	if len(pids) == 0 {
		return nil
	}
	// A snapshot's xmax, with its epoch, places a backend's 32-bit id in
	// its epoch (txid_current_snapshot is in PostgreSQL 12).
	// CASE, not AND: only it promises that an idle backend is not
	// terminated.
	rows, err := side.Query(reach, `SELECT pid, state LIKE 'idle%', backend_xid::text, txid_snapshot_xmax(txid_current_snapshot())::text,
			CASE WHEN state = 'active' THEN pg_terminate_backend(pid) ELSE false END
		FROM pg_stat_activity
		WHERE pid = ANY($1::int8[]) AND datname = current_database() AND usename = session_user`, pids)
	if err != nil {
		return nil
	}
	out := map[uint32]fate{}
	xids := map[uint32]uint64{} // 0: no transaction id
	var gone []int64
	for rows.Next() {
		var pid int64
		var idle *bool
		var xid *string
		var next string
		var signalled bool
		if err := rows.Scan(&pid, &idle, &xid, &next, &signalled); err != nil {
			continue
		}
		if idle != nil && *idle {
			out[uint32(pid)] = fateAnswered
			continue
		}
		if !signalled {
			continue
		}
		x := uint64(0)
		if xid != nil {
			if x, err = fullXID(*xid, next); err != nil {
				continue
			}
		}
		xids[uint32(pid)] = x
		gone = append(gone, pid)
	}
	if rows.Err() != nil {
		return nil
	}
	if len(gone) == 0 {
		return out
	}
	for {
		var alive int
		if err := side.QueryRow(ctx, `SELECT count(*)::int FROM pg_stat_activity WHERE pid = ANY($1::int8[])`, gone).Scan(&alive); err != nil {
			return out
		}
		if alive == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return out
		case <-time.After(5 * time.Millisecond):
		}
	}
	var ask []int64
	for pid, x := range xids {
		if x == 0 {
			out[pid] = fateNotCommitted
		} else {
			ask = append(ask, int64(x))
		}
	}
	if len(ask) == 0 {
		return out
	}
	status := map[uint64]string{}
	rows, err = side.Query(ctx, `SELECT x, COALESCE(txid_status(x), '') FROM unnest($1::int8[]) x`, ask)
	if err != nil {
		return out
	}
	for rows.Next() {
		var x int64
		var s string
		if rows.Scan(&x, &s) == nil {
			status[uint64(x)] = s
		}
	}
	if rows.Err() != nil {
		return out
	}
	for pid, x := range xids {
		switch status[x] {
		case "aborted":
			out[pid] = fateNotCommitted
		case "committed":
			out[pid] = fateCommitted
		}
	}
	return out
}

// fullXID places a 32-bit transaction id in its epoch, given a nearby
// transaction id with its epoch (a snapshot's xmax, which transactions
// still running may be past): of the ids with those 32 bits, the one
// nearest to near. The ids in use span less than 2^31 (the server stops
// assigning them before they wrap), so that one is the id.
func fullXID(xid, near string) (uint64, error) {
	x, err := strconv.ParseUint(strings.TrimSpace(xid), 10, 32)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(near), 10, 64)
	if err != nil || n > math.MaxInt64 {
		return 0, fmt.Errorf("transaction id %q: %v", near, err)
	}
	full := int64(n) + int64(int32(uint32(x)-uint32(n)))
	if full < 3 {
		return 0, fmt.Errorf("transaction id %d is not a normal one near %d", x, n)
	}
	return uint64(full), nil
}

// decidedByFate says whether the fate of the backend's transaction is the
// outcome of the whole exchange in flight: what it has not answered is
// one Sync segment (or one simple Query) of single statements, with no
// transaction boundary but a BEGIN first or a COMMIT last, so that
// everything it may have committed is that one transaction (an explicit
// block, or the implicit one of a segment or a statement).
func (c *Conn) decidedByFate() bool {
	if c.syncs != 1 {
		return false
	}
	first, last := true, -1
	for i := range c.reqs {
		if c.reqs[i].seg == c.synced {
			last = i
		}
	}
	for i := range c.reqs {
		r := c.reqs[i]
		if r.seg != c.synced {
			continue
		}
		s := c.results[i].stmt
		if s == nil {
			return false
		}
		if compound(r, s) {
			return false // a \; compound may hold several transactions
		}
		if s.Begins && !first || s.Commits && i != last {
			return false
		}
		first = false
	}
	return !first
}

// settle takes f, the fate reap found for c's exchange, where it decides
// the exchange; an exchange whose backend may still run is noted on t, for
// an audit to wait for (pg.Target.NoteOrphan).
func (c *Conn) settle(f fate, t *pg.Target) {
	switch {
	case f == fateUnknown || f == fateAnswered:
		t.NoteOrphan(c.pid)
	case c.decidedByFate():
		c.fate = f
	}
}

// answeredTimeout is how long the settle reads, after the reap, the
// answers of exchanges whose backends the reap found idle: answers the
// server had sent, on their way.
const answeredTimeout = time.Second
