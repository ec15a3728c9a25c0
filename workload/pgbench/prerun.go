package pgbench

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/pg"
)

// PreRun is what pgbench does to its tables before a run, unless -n:
// VACUUM pgbench_branches and pgbench_tellers and TRUNCATE pgbench_history,
// printed "starting vacuum...end."; with vacuumAll (-v) also VACUUM ANALYZE
// pgbench_accounts, printed "starting vacuum pgbench_accounts...end.". A
// statement that fails is reported the way pgbench reports it (prog
// prefixes the lines: "pgbench: error: ERROR:  relation ... does not
// exist", "pgbench: detail: (ignoring this error and continuing anyway)")
// and the others still run; only a failed connection is an error.
func PreRun(ctx context.Context, t *pg.Target, vacuumAll bool, prog string, log io.Writer) error {
	conn, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	try := func(sql string) {
		if _, err := conn.Exec(ctx, sql); err != nil {
			fmt.Fprintf(log, "%s: error: %s%s: detail: (ignoring this error and continuing anyway)\n", prog, pg.LibpqMessage(err, sql, "UTF8"), prog)
		}
	}
	fmt.Fprint(log, "starting vacuum...")
	try("vacuum pgbench_branches")
	try("vacuum pgbench_tellers")
	try("truncate pgbench_history")
	fmt.Fprint(log, "end.\n")
	if vacuumAll {
		fmt.Fprint(log, "starting vacuum pgbench_accounts...")
		try("vacuum analyze pgbench_accounts")
		fmt.Fprint(log, "end.\n")
	}
	return ctx.Err()
}

// TableInfo is what pgbench reads of its tables before running a builtin
// script (its GetTableInfo): the scale, from the rows of pgbench_branches,
// and how the first pgbench_accounts of the search_path is partitioned.
type TableInfo struct {
	Scale      int
	Partitions int
	// PartitionMethod is "range", "hash", or "" when not partitioned.
	PartitionMethod string
	// Warning is pgbench's line when -s was given and the tables' scale
	// wins: "pgbench: warning: scale option ignored, using count from
	// pgbench_branches table (10)".
	Warning string
}

// ReadTableInfo is pgbench's GetTableInfo; scaleGiven says -s was given.
// Its error carries pgbench's lines, prog prefixing them:
//
//	pgbench: error: could not count number of branches: ERROR:  relation "pgbench_branches" does not exist
//	LINE 1: select count(*) from pgbench_branches
//	                             ^
//	pgbench: hint: Perhaps you need to do initialization ("pgbench -i") in database "bench".
func ReadTableInfo(ctx context.Context, conn *pgx.Conn, prog string, scaleGiven bool) (TableInfo, error) {
	var info TableInfo
	db := conn.Config().Database
	hint := fmt.Sprintf("%s: hint: Perhaps you need to do initialization (\"pgbench -i\") in database \"%s\".", prog, db)
	const count = "select count(*) from pgbench_branches"
	if err := conn.QueryRow(ctx, count, pgx.QueryExecModeSimpleProtocol).Scan(&info.Scale); err != nil {
		msg := fmt.Sprintf("%s: error: could not count number of branches: %s", prog, pg.LibpqMessage(err, count, "UTF8"))
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" {
			msg += hint + "\n"
		}
		return info, &TableInfoError{Msg: msg}
	}
	if scaleGiven {
		info.Warning = fmt.Sprintf("%s: warning: scale option ignored, using count from pgbench_branches table (%d)", prog, info.Scale)
	}
	var strat *string
	err := conn.QueryRow(ctx, `select o.n, p.partstrat, pg_catalog.count(i.inhparent)
		from pg_catalog.pg_class as c
		join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace)
		cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(true), n.nspname)) as o(n)
		left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid)
		left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent)
		where c.relname = 'pgbench_accounts' and o.n is not null
		group by 1, 2
		order by 1 asc
		limit 1`).Scan(new(int), &strat, &info.Partitions)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return info, &TableInfoError{Msg: fmt.Sprintf("%s: error: no pgbench_accounts table found in \"search_path\"\n%s\n", prog, hint)}
	case err != nil:
		// An old server or another dialect: no partitioning, as pgbench assumes.
		return TableInfo{Scale: info.Scale, Warning: info.Warning}, nil
	}
	if strat != nil {
		switch *strat {
		case "r":
			info.PartitionMethod = "range"
		case "h":
			info.PartitionMethod = "hash"
		default:
			return info, &TableInfoError{Msg: fmt.Sprintf("%s: error: unexpected partition method: \"%s\"\n", prog, *strat)}
		}
	}
	return info, nil
}

// TableInfoError is pgbench's failure to read its tables: its lines, each
// ending in a newline. pgbench exits with code 1.
type TableInfoError struct{ Msg string }

func (e *TableInfoError) Error() string { return e.Msg }
