package runner

import (
	"context"
	"time"

	"github.com/txload/txload/pg"
)

// settleTimeout bounds how long an audit waits for the transactions whose
// outcome txload could not know to end in the server.
const settleTimeout = 5 * time.Second

// settle waits, before an audit reconciles what committed with what the
// server holds, until the backends of the connections txload closed with
// an exchange in flight (at an interrupt, at the drain deadline) have
// ended: a statement sent just before, still in the backend's socket or
// running, may commit after the client has gone. It waits at most
// settleTimeout; then the audit runs on what the server holds. Where the
// server has no pg_stat_activity (CockroachDB), or the backends are a
// pooler's, it does not wait.
func (c *Conn) settle(ctx context.Context) {
	pids := c.Target.Orphans()
	if len(pids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	conn, err := c.Target.ConnectNode(ctx, 0)
	if err != nil {
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if pg.AsLoginRole(ctx, conn) != nil {
		return
	}
	ids := make([]int64, len(pids))
	for i, p := range pids {
		ids[i] = int64(p)
	}
	for {
		var alive int
		if err := conn.QueryRow(ctx, `SELECT count(*)::int FROM pg_stat_activity WHERE pid = ANY($1::int8[])`, ids).Scan(&alive); err != nil || alive == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}
