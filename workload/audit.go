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

// CatalogFirst sets the search path of tx, an audit's transaction, until
// it ends: pg_catalog first, then the schemas of the session's own path
// that exist, in its order, then pg_temp last.
//   - pg_catalog first: a function or operator of the same name in another
//     schema placed before it (a public.md5 that hashes a forged row as the
//     one it replaced, a public.>= that hides a value out of range: the
//     sixth outside retest) cannot stand in for the server's in the
//     audit's SQL;
//   - pg_temp last: a temporary table (one left on a pooled server session
//     by another client: the seventh) is not read in a workload table's
//     place; CheckColumns names one.
//
// The workload's schema is the first schema of the session's path that
// exists (where init makes its tables) and SchemaSQL names it;
// CheckColumns holds the tables to it. The settings are the
// transaction's: through a transaction pooler, a session's would pass to
// other clients.
func CatalogFirst(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `WITH own AS (
			SELECT s, n FROM pg_catalog.unnest(pg_catalog.current_schemas(false)) WITH ORDINALITY AS p(s, n)
			WHERE s OPERATOR(pg_catalog.<>) 'pg_catalog' AND s OPERATOR(pg_catalog.!~) '^pg_temp_')
		SELECT pg_catalog.set_config('txload.schema', COALESCE((SELECT s FROM own ORDER BY n LIMIT 1), ''), true),
			pg_catalog.set_config('txload.audit', `+auditToken+`, true),
			pg_catalog.set_config('search_path', pg_catalog.concat_ws(', ', 'pg_catalog',
				(SELECT pg_catalog.string_agg(pg_catalog.quote_ident(s), ', ' ORDER BY n) FROM own), 'pg_temp'), true)`)
	if err != nil {
		return fmt.Errorf("setting the audit's search path (pg_catalog first, pg_temp last): %w", err)
	}
	return nil
}

// auditToken names the transaction CatalogFirst set its settings in: a
// value of txload.audit set otherwise (for the database, the role, the
// session) cannot equal it, as it names the server process and the
// moment the transaction began.
const auditToken = `(pg_catalog.pg_backend_pid()::text OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) pg_catalog.date_part('epoch', pg_catalog.transaction_timestamp())::text)`

// SchemaSQL is the workload's schema in SQL: in an audit's transaction
// (CatalogFirst), the first schema of the session's path that exists;
// elsewhere current_schema(). A txload.schema set for the database or the
// session is not read (the seventh outside retest set one to hide a
// table).
const SchemaSQL = `(CASE WHEN pg_catalog.current_setting('txload.audit', true) OPERATOR(pg_catalog.=) ` + auditToken + `
	THEN pg_catalog.current_setting('txload.schema', true) ELSE pg_catalog.current_schema() END)`
