package pgbench

import (
	"context"
	"fmt"
	"io"
	"slices"
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
		`INSERT INTO txload_pgbench_builtin SELECT 'init', to_regclass('pgbench_tellers')::oid WHERE to_regclass('pgbench_tellers') IS NOT NULL`,
		// The other tables init made, each by its own oid (initTableRow):
		// whether pgbench_tellers alone was made again since.
		`INSERT INTO txload_pgbench_builtin SELECT 'init:' || n, to_regclass(n)::oid FROM unnest(ARRAY['pgbench_accounts', 'pgbench_branches', 'pgbench_history']) n
			WHERE to_regclass(n) IS NOT NULL AND to_regclass('pgbench_tellers') IS NOT NULL`}
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
// nothing on others (no record to hold them to). A run that writes
// nothing needs no record and is not made to write one, as pgbench runs
// there (the eighth outside retest: a hot standby, a read-only role): a
// run of select-only alone (whose row no check reads: recordedSQL), and
// any run on a server in recovery, where no statement of the run can
// write; the latter says so in one line on log.
func recordRun(ctx context.Context, t *pg.Target, names []string, log io.Writer) error {
	if !slices.ContainsFunc(names, func(n string) bool { return n != "select-only" }) {
		return nil
	}
	conn, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists, recovery bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('txload_pgbench_builtin') IS NOT NULL AND to_regclass('pgbench_tellers') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return nil // another dialect, or no record: nothing is held to one
	}
	// A server without the function is taken as not in recovery.
	if err := conn.QueryRow(ctx, `SELECT pg_catalog.pg_is_in_recovery()`).Scan(&recovery); err == nil && recovery {
		if log != nil {
			fmt.Fprintf(log, "the server is in recovery (a hot standby), where no statement of the run can write: its scripts are not recorded in %s\n", recordTable)
		}
		return nil
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

// initTableRow is how recordInit records another table it made: 'init:'
// and its name, by its own oid. recordedSQL reads the tellers' rows only,
// and no other table has the tellers' oid.
const initTableRow = "init:"

// readRecord reads the record of the current tables into a, in the
// audit's transaction, and says whether the init emptied the history.
// marked says txload's init marker is there: txload made the tables, and
// recorded them (recordInit). Then a record gone, or one that names
// other tables while some init made are still there (pgbench_tellers
// alone made again), is a violation (a.recordLost); one that names only
// tables made again since (pgbench -i remakes all four, a dump and
// restore gives every table a new oid) is said (a.recordOther), and the
// rules that read it are not applied.
func (a *tpcbAudit) readRecord(ctx context.Context, tx pgx.Tx, marked bool) (emptied bool, err error) {
	var rec bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('txload_pgbench_builtin') IS NOT NULL`).Scan(&rec); err != nil {
		return false, nil // another dialect: nothing is held to a record
	}
	const lost = "txload's init made pgbench's tables (txload_init's tpcb row says so) and recorded them in " + recordTable + ", "
	const unheld = "check simple-update's hold on the tellers and branches, the history's date bound and init's scale cannot be applied"
	if !rec {
		if marked {
			a.recordLost = lost + "which is gone (dropped): " + unheld
		}
		return false, nil
	}
	if err := tx.QueryRow(ctx, recordedSQL).Scan(&a.recorded, &a.moved, &a.mixed, &emptied); err != nil {
		return false, fmt.Errorf("reading %s: %w", recordTable, err)
	}
	if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM pgbench_tellers WHERE tbalance <> 0), (SELECT count(*) FROM pgbench_branches WHERE bbalance <> 0)`).
		Scan(&a.untouched[0], &a.untouched[1]); err != nil {
		return false, fmt.Errorf("auditing the tellers' and branches' balances: %w", err)
	}
	if !marked || a.recorded {
		return emptied, nil
	}
	var inits int64
	var kept string
	if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE builtin = 'init'),
		COALESCE(string_agg(substr(builtin, length($1) + 1), ', ' ORDER BY builtin) FILTER (WHERE builtin LIKE $1 || '%' AND tables = to_regclass(substr(builtin, length($1) + 1))::oid), '')
		FROM txload_pgbench_builtin`, initTableRow).Scan(&inits, &kept); err != nil {
		return false, fmt.Errorf("reading %s: %w", recordTable, err)
	}
	switch {
	case inits == 0:
		a.recordLost = lost + "which no longer holds init's row (emptied): " + unheld
	case kept != "":
		a.recordLost = fmt.Sprintf("pgbench_tellers is not the table txload's init made and recorded in %s (init's %s still there): made again behind the record, so %s",
			recordTable, kept, unheld)
	default:
		a.recordOther = "names other tables than these (made again since txload's init: by pgbench -i, or a dump and restore, which give them new oids): " + strings.Replace(unheld, "cannot be", "are not", 1)
	}
	return emptied, nil
}
