package append

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/pg"
)

// guardClass is the first key of the advisory lock a run or an init holds
// ("txap"); the second is the oid of the schema the tables are made in.
const guardClass = 0x74786170

// guardSQL takes the lock, and names the server processes holding it when
// it is not taken.
const guardSQL = `WITH s AS (SELECT COALESCE((SELECT oid::int FROM pg_catalog.pg_namespace WHERE nspname = pg_catalog.current_schema()), 0) AS ns)
SELECT pg_catalog.pg_try_advisory_xact_lock($1::int, s.ns),
	COALESCE((SELECT pg_catalog.string_agg(l.pid::text, ', ') FROM pg_catalog.pg_locks l
		WHERE l.locktype = 'advisory' AND l.classid::bigint = $1 AND l.objid::bigint = s.ns::bigint & 4294967295
		AND l.objsubid = 2 AND l.granted AND l.pid <> pg_catalog.pg_backend_pid()), '')
FROM s`

// guard is held while a run (or an init) of append goes, so that a second
// one on the same tables is refused: two runs would both start above the
// keys the tables hold, draw the same keys, append the same values, and
// each would find the other's appends in its lists (G0, G1a, garbage
// reads), and an init would drop the tables under a run.
//
// It is a transaction-scoped advisory lock, in a read-committed
// transaction of its own on a connection of its own, held open until the
// run's final read is done: a transaction pooler (PgBouncer in transaction
// mode) keeps one server connection for the client while its transaction
// is open, where a session lock would stay with a server connection the
// pooler hands to other clients. The transaction writes nothing and holds
// no snapshot between its statements: it holds back no vacuum.
type guard struct {
	conn *pgx.Conn
}

// errBusy is the error of a run or init refused while another holds the
// guard.
var errBusy = errors.New("another txload run or init of append is using the append tables of this schema")

// takeGuard takes the guard for the schema t's sessions make tables in,
// or refuses, naming the server processes holding it. A server without
// advisory locks (no such function) runs unguarded: nil.
func takeGuard(ctx context.Context, t *pg.Target) (*guard, error) {
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ok, holders, err := lockGuard(ctx, conn)
	if err != nil || !ok {
		conn.Close(context.WithoutCancel(ctx))
	}
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && (pe.Code == "42883" || pe.Code == "0A000"):
		return nil, nil // undefined function, feature not supported
	case err != nil:
		return nil, fmt.Errorf("taking the lock that keeps a second append run off the tables: %w", err)
	case !ok:
		by := ""
		if holders != "" {
			by = " (server process " + holders + ")"
		}
		return nil, fmt.Errorf("append: %w%s: two at once draw the same keys and values, and each would find the other's appends in its lists; wait for it to end", errBusy, by)
	}
	return &guard{conn: conn}, nil
}

// lockGuard begins the guard's transaction and takes the lock in it: the
// transaction stays open, idle between the run's start and its end,
// whatever idle_in_transaction_session_timeout the server sets.
func lockGuard(ctx context.Context, conn *pgx.Conn) (bool, string, error) {
	if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL READ COMMITTED"); err != nil {
		return false, "", err
	}
	if _, err := conn.Exec(ctx, "SELECT pg_catalog.set_config('idle_in_transaction_session_timeout', '0', true)"); err != nil {
		return false, "", err
	}
	var ok bool
	var holders string
	err := conn.QueryRow(ctx, guardSQL, int64(guardClass)).Scan(&ok, &holders)
	return ok, holders, err
}

// release ends the guard's transaction and its connection. An error says
// the guard was lost before (its session ended): a run or init started
// since was not refused.
func (g *guard) release(ctx context.Context) error {
	if g == nil {
		return nil
	}
	conn := g.conn
	g.conn = nil
	if conn == nil {
		return nil
	}
	ctx = context.WithoutCancel(ctx) // an interrupted run releases it too
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("the session that kept a second append run off the tables ended during the run (a run or init started since was not refused): %w", err)
	}
	return nil
}
