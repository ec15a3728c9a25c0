package tpcc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/workload"
)

// keyFinding is the primary-key audit: the tables' keys the schema makes
// (primary keys: each row's key unique) that no PRIMARY KEY or UNIQUE
// constraint holds any more, and the rows of those whose key another row
// has.
type keyFinding struct {
	keys    int              // the tables with a primary key
	dropped []string         // those no constraint holds: "order_line"
	twice   map[string]int64 // of dropped, those with a key twice: the rows beyond the first
}

// checkKeys fills k: a table whose key no constraint holds (one on its
// key's columns, or on some of them, makes it unique) is read for keys
// twice (while every one holds, the server has refused them).
func checkKeys(ctx context.Context, tx pgx.Tx, k *keyFinding) error {
	rows, err := tx.Query(ctx, `SELECT tc.table_name::text, array_agg(ku.column_name::text)
		FROM information_schema.table_constraints tc JOIN information_schema.key_column_usage ku
			ON (ku.constraint_schema, ku.constraint_name, ku.table_name) = (tc.constraint_schema, tc.constraint_name, tc.table_name)
		WHERE tc.table_schema = `+workload.SchemaSQL+` AND tc.constraint_type IN ('PRIMARY KEY', 'UNIQUE')
		GROUP BY tc.constraint_name, tc.table_name`)
	if err != nil {
		return fmt.Errorf("reading the tables' keys: %w", err)
	}
	held := map[string][][]string{}
	var table string
	var cols []string
	if _, err := pgx.ForEachRow(rows, []any{&table, &cols}, func() error {
		held[table] = append(held[table], slices.Clone(cols))
		return nil
	}); err != nil {
		return fmt.Errorf("reading the tables' keys: %w", err)
	}
	byName := map[string]string{}
	for _, t := range tables {
		if t.key == "" {
			continue
		}
		k.keys++
		key := strings.Split(t.key, ", ")
		if slices.ContainsFunc(held[t.name], func(cols []string) bool {
			return !slices.ContainsFunc(cols, func(c string) bool { return !slices.Contains(key, c) })
		}) {
			continue
		}
		k.dropped = append(k.dropped, t.name)
		byName[t.name] = t.key
	}
	k.twice, err = countEach(ctx, tx, k.dropped, "the keys twice", func(table string) string {
		return fmt.Sprintf("SELECT COALESCE(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM %s GROUP BY %s HAVING count(*) > 1) x", table, byName[table])
	})
	return err
}

// countEach counts, for each of names (a table, a column) whose
// constraint was dropped, the rows that break it, by the query of its
// name: the counts above 0, by name.
func countEach(ctx context.Context, tx pgx.Tx, names []string, what string, query func(name string) string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, name := range names {
		var n int64
		if err := tx.QueryRow(ctx, query(name)).Scan(&n); err != nil {
			return nil, fmt.Errorf("counting %s of %s: %w", what, name, err)
		}
		if n > 0 {
			out[name] = n
		}
	}
	return out, nil
}

// total is the rows of counts.
func total(counts map[string]int64) int64 {
	var s int64
	for _, n := range counts {
		s += n
	}
	return s
}

func (k *keyFinding) violated() bool { return len(k.twice) > 0 }

// rows is the rows whose key a row before them has.
func (k *keyFinding) rows() int64 { return total(k.twice) }

// describe says which tables hold a key twice, or that none does.
func (k *keyFinding) describe() string {
	if !k.violated() {
		s := fmt.Sprintf("no key twice in the %d tables with a primary key", k.keys)
		if len(k.dropped) > 0 {
			s += fmt.Sprintf("; key constraint dropped from %s", strings.Join(k.dropped, ", "))
		}
		return s
	}
	var out []string
	for _, t := range tables {
		if n := k.twice[t.name]; n > 0 {
			out = append(out, fmt.Sprintf("%s of %s whose key (%s) a row before it has", plural(int(n), "row"), t.name, t.key))
		}
	}
	return strings.Join(out, ", ") + " (its primary key's constraint dropped)"
}
