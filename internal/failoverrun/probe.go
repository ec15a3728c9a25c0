package failoverrun

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/lag"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
)

// probeTimeout bounds one connection attempt or one commit of the probe:
// a node that hangs is given up on, and tried again at the next tick.
const probeTimeout = 2 * time.Second

// probe commits a marker every interval on a connection of its own, and
// notes which node took each: where the workload's clients back off
// between reconnections (up to a second), it tries again every interval,
// so its commits bound the write unavailability to one interval.
type probe struct {
	target   *pg.Target
	w        *writer
	interval time.Duration

	mu sync.Mutex
	// nodes are the nodes the probe committed on, in order (host:port
	// and timeline); connected[i] when its first connection to nodes[i]
	// was asked for.
	nodes     []string
	connected []time.Time
	errors    int64
	firstErr  error
}

// run commits markers until stop is closed (a commit under way is
// waited for) or ctx ends.
func (p *probe) run(ctx context.Context, stop <-chan struct{}) {
	var conn *pgx.Conn
	node := uint8(0)
	defer func() {
		if conn != nil {
			conn.Close(context.WithoutCancel(ctx))
		}
	}()
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	for {
		if conn == nil {
			asked := time.Now()
			c, err := p.connect(ctx)
			if err == nil {
				conn, node = c, p.nodeOf(ctx, c, asked)
			} else if ctx.Err() == nil {
				p.fail(err)
			}
		}
		if conn != nil {
			if err := p.commit(ctx, conn, node); err != nil {
				if ctx.Err() != nil {
					return
				}
				p.fail(err)
				conn.Close(context.WithoutCancel(ctx))
				conn = nil
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

func (p *probe) connect(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return p.target.Connect(cctx)
}

// nodeOf names the node conn reached: its address, and its WAL's
// timeline (a promotion behind one address changes it).
func (p *probe) nodeOf(ctx context.Context, conn *pgx.Conn, asked time.Time) uint8 {
	name := conn.PgConn().Conn().RemoteAddr().String()
	cctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var tl int64
	if err := conn.QueryRow(cctx, timelineSQL).Scan(&tl); err == nil {
		name += " timeline " + strconv.FormatInt(tl, 10)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, n := range p.nodes {
		if n == name {
			return uint8(i)
		}
	}
	p.nodes = append(p.nodes, name)
	p.connected = append(p.connected, asked)
	return uint8(len(p.nodes) - 1)
}

// timelineSQL is a primary's current timeline.
const timelineSQL = `SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint`

// commit writes one marker in its own transaction. Any error but a
// rolled-back insert drops the connection.
func (p *probe) commit(ctx context.Context, conn *pgx.Conn, node uint8) error {
	seq := p.w.begin(node)
	cctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	_, err := conn.Exec(cctx, lag.InsertSQL, lag.Marker{Writer: p.w.id, Seq: seq}.Args()...)
	now := time.Now()
	if err == nil {
		p.w.decide(committed, now)
		return nil
	}
	// One statement in autocommit is its own COMMIT: a lost connection
	// (or a timeout) leaves it ambiguous.
	class, _ := pg.Classify(pg.DuringCommit(err))
	if class == metrics.AmbiguousCommit || cctx.Err() != nil {
		p.w.decide(ambiguous, now)
	} else {
		p.w.decide(rolledBack, now)
	}
	return err
}

func (p *probe) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errors++
	if p.firstErr == nil {
		p.firstErr = err
	}
}
