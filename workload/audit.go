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
	conn, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := CatalogFirst(ctx, tx); err != nil {
			return err
		}
		return read(tx)
	})
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

// CatalogFirst puts pg_catalog first on the search path of tx, an
// audit's transaction, until it ends: a function or operator of the same
// name in another schema placed before it (a public.md5 that hashes a
// forged row as the one it replaced, a public.>= that hides a value out
// of range: the sixth outside retest) cannot stand in for the server's in
// the audit's SQL. The workload's schema stays on the path, and
// SchemaSQL names it. The settings are the transaction's: through a
// transaction pooler, a session's would pass to other clients.
func CatalogFirst(ctx context.Context, tx pgx.Tx) error {
	for _, sql := range []string{
		`SELECT pg_catalog.set_config('txload.schema', COALESCE(pg_catalog.current_schema(), ''), true)`,
		`SELECT pg_catalog.set_config('search_path', 'pg_catalog, ' OPERATOR(pg_catalog.||) pg_catalog.current_setting('search_path'), true)`,
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("putting pg_catalog first on the audit's search path: %w", err)
		}
	}
	return nil
}

// SchemaSQL is the workload's schema in SQL: current_schema(), or on an
// audit's transaction (CatalogFirst), whose search path begins with
// pg_catalog, the current schema before it did.
const SchemaSQL = `COALESCE(NULLIF(current_setting('txload.schema', true), ''), current_schema())`
