package workload

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/pg"
)

// ReadSnapshot runs read in one read-only repeatable-read transaction on a
// connection of its own, so that the queries of a check see one snapshot
// and a check during a run is consistent. A connection error is returned as
// it is; a missing table (42P01) is noSchema; any other error is wrapped
// with what.
func ReadSnapshot(ctx context.Context, t *pg.Target, what string, noSchema error, read func(pgx.Tx) error) error {
	conn, err := ConnectAudit(ctx, t)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, read)
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe) && pe.Code == "42P01":
		return noSchema
	}
	return fmt.Errorf("%s: %w", what, err)
}

// TakeSnapshot fixes a repeatable-read transaction's snapshot with a query
// that sends nothing. A run's audit takes it before the query that sends
// the run's seed: a writer who reads the seed in a statement log then
// writes too late for the snapshot the audit sums.
func TakeSnapshot(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
		return fmt.Errorf("taking the snapshot: %w", err)
	}
	return nil
}

// ConnectAudit connects for a check or a run's audit, with pg_catalog
// first on the connection's search path: a function or operator of the
// same name in another schema placed before it (a public.md5 that hashes
// a forged row as the one it replaced, a public.>= that hides a value out
// of range: the sixth outside retest) cannot stand in for the server's
// own in the audit's SQL. The workload's schema stays on the path.
func ConnectAudit(ctx context.Context, t *pg.Target) (*pgx.Conn, error) {
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	for _, sql := range []string{
		`SELECT pg_catalog.set_config('txload.schema', COALESCE(pg_catalog.current_schema(), ''), false)`,
		`SELECT pg_catalog.set_config('search_path', 'pg_catalog, ' OPERATOR(pg_catalog.||) pg_catalog.current_setting('search_path'), false)`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("putting pg_catalog first on the audit's search path: %w", err)
		}
	}
	return conn, nil
}

// SchemaSQL is the workload's schema in SQL: current_schema(), or on an
// audit's connection (ConnectAudit), whose search path begins with
// pg_catalog, the current schema before it did.
const SchemaSQL = `COALESCE(NULLIF(current_setting('txload.schema', true), ''), current_schema())`
