package pgbench

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/pg"
)

// txload records which scripts it ran on pgbench's tables since `txload
// init tpcb` made them, as vote records its variants: check simple-update
// (holdsRecord) holds the tellers and branches to their init balance (0)
// while only select-only and simple-update ran. pgbench's own runs are not
// recorded, so no other check reads it. Each row names the tables by pgbench_tellers'
// oid: tables pgbench -i (or anyone) made again have another, and no
// 'init' row of theirs, so nothing is held to the record.
const recordTable = "txload_pgbench_builtin"

const recordDDL = `CREATE TABLE IF NOT EXISTS txload_pgbench_builtin (builtin TEXT NOT NULL, tables OID NOT NULL, PRIMARY KEY (builtin, tables))`

// recordInit starts the record of freshly made tables. emptied says the
// init emptied pgbench_history (steps t, g or G): its row
// ('history-emptied') lets the checks hold the history's mtime to the
// init marker's time (an init of other steps, v alone, keeps older rows).
func recordInit(ctx context.Context, conn *pgx.Conn, emptied bool) error {
	sqls := []string{recordDDL, `DELETE FROM txload_pgbench_builtin`,
		`INSERT INTO txload_pgbench_builtin SELECT 'init', to_regclass('pgbench_tellers')::oid WHERE to_regclass('pgbench_tellers') IS NOT NULL`}
	if emptied {
		sqls = append(sqls, `INSERT INTO txload_pgbench_builtin SELECT 'history-emptied', to_regclass('pgbench_tellers')::oid WHERE to_regclass('pgbench_tellers') IS NOT NULL`)
	}
	for _, sql := range sqls {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("recording the init in %s: %w", recordTable, err)
		}
	}
	return nil
}

// recordName is how a script is recorded: a builtin by its name, any
// other script as "script" (its effect on the tables is its author's).
func (g *runGen) recordNames() []string {
	var out []string
	for _, s := range g.scripts {
		name := "script"
		if strings.HasPrefix(s.Title, "<builtin:") {
			name = s.Name
		}
		out = append(out, name)
	}
	return out
}

// recordRun records the scripts of a run on tables txload's init made;
// nothing on others (no record to hold them to).
func recordRun(ctx context.Context, t *pg.Target, names []string) error {
	conn, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('txload_pgbench_builtin') IS NOT NULL AND to_regclass('pgbench_tellers') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return nil // another dialect, or no record: nothing is held to one
	}
	if _, err := conn.Exec(ctx, `INSERT INTO txload_pgbench_builtin SELECT unnest($1::text[]), 'pgbench_tellers'::regclass::oid
		WHERE EXISTS (SELECT FROM txload_pgbench_builtin WHERE builtin = 'init' AND tables = 'pgbench_tellers'::regclass::oid)
		ON CONFLICT DO NOTHING`, names); err != nil {
		return fmt.Errorf("recording the run's scripts in %s: %w", recordTable, err)
	}
	return nil
}

// recordedSQL reads the record of the current tables: whether there is
// one, whether a script that moves tellers and branches (tpcb-like, a
// script of its own) ran, whether simple-update ran, and whether the init
// emptied the history.
const recordedSQL = `SELECT COALESCE(bool_or(builtin = 'init'), false), COALESCE(bool_or(builtin NOT IN ('init', 'history-emptied', 'simple-update', 'select-only')), false),
	COALESCE(bool_or(builtin = 'simple-update'), false), COALESCE(bool_or(builtin = 'history-emptied'), false)
	FROM txload_pgbench_builtin WHERE tables = 'pgbench_tellers'::regclass::oid`
