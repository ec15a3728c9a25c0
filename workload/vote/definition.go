package vote

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// A materialized view's rows are what its definition makes of the vote
// rows at each REFRESH: article_votes redefined (an article's count plus
// 1000: the sixth outside retest), still a materialized view of the same
// columns, passes every count the audit takes, and a matview run's
// REFRESH keeps the forged definition. The audit holds the definition to
// init's, both as the server prints them (pg_get_viewdef), in one
// transaction under the audit's search path (pg_catalog first): init's
// query makes a scratch temporary view there, and the transaction is
// rolled back. No read-only transaction may create one, so this is not the
// audit's snapshot; it leaves nothing behind. The audit reads none of the
// view's rows, so it does not hold the view's index.
//
// The comparison is skipped only where the role truly lacks TEMP on the
// database, asked before the view is tried: any other refusal of the
// scratch view (an event trigger refusing it passed a rigged view: the
// eighth outside retest) is an error of the check. A server in recovery
// (a hot standby) makes no scratch view and opens no read-write
// transaction: the check fails there with one line saying so, as the
// standby's view is the primary's, which a check there compares.

// scratchView is the name of the scratch view, in the session's own
// temporary schema.
const scratchView = "pg_temp.txload_article_votes"

// viewDefinition compares article_votes' definition with init's. differs
// is the view's definition where it is not init's ("" when it is, or when
// article_votes is no materialized view: the audit names that); skipped
// says why they were not compared: the role has no TEMP privilege on the
// database.
func viewDefinition(ctx context.Context, t *pg.Target) (differs, skipped string, err error) {
	conn, err := t.Connect(ctx)
	if err != nil {
		return "", "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	err = func() error {
		var recovery, temp bool
		if err := conn.QueryRow(ctx, `SELECT pg_catalog.pg_is_in_recovery(),
			pg_catalog.has_database_privilege(pg_catalog.current_database(), 'TEMP')`).Scan(&recovery, &temp); err != nil {
			return fmt.Errorf("asking whether the server is in recovery and the role may create temporary tables: %w", err)
		}
		if recovery {
			return errors.New("the server is in recovery (a hot standby), where no scratch view can be made to print init's: run the check on the primary, whose article_votes the standby replays")
		}
		if !temp {
			skipped = "the role has no TEMP privilege on the database"
			return nil
		}
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadWrite})
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		if err := workload.CatalogFirst(ctx, tx); err != nil {
			return err
		}
		var got *string
		if err := tx.QueryRow(ctx, `SELECT pg_get_viewdef(c.oid) FROM pg_class c WHERE c.oid = to_regclass('article_votes') AND c.relkind = 'm'`).Scan(&got); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("reading article_votes' definition: %w", err)
		}
		if got == nil {
			return nil
		}
		if _, err := tx.Exec(ctx, `CREATE TEMP VIEW `+scratchView+` AS`+viewSQL); err != nil {
			return fmt.Errorf("making a scratch view of init's definition: %w", err)
		}
		var want string
		if err := tx.QueryRow(ctx, `SELECT pg_get_viewdef($1::regclass)`, scratchView).Scan(&want); err != nil {
			return fmt.Errorf("reading init's definition: %w", err)
		}
		if *got != want {
			differs = strings.Join(strings.Fields(*got), " ")
		}
		return nil
	}()
	if err != nil {
		return "", "", fmt.Errorf("comparing article_votes' definition with init's: %w", err)
	}
	return differs, skipped, nil
}
