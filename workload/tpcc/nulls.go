package tpcc

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/workload"
)

// nullFinding is the NULL audit: the columns the schema makes NOT NULL
// (every one the workload always writes a value in) that are no longer
// so, and the rows of those that hold a NULL.
type nullFinding struct {
	columns  int              // the columns the schema makes NOT NULL
	dropped  []string         // those whose NOT NULL is gone: "customer.c_balance"
	nullRows map[string]int64 // of dropped, those holding NULLs: the rows
}

// notNullColumns are table t's columns that its DDL makes NOT NULL.
func notNullColumns(t table) []string {
	var out []string
	for _, l := range strings.Split(t.columns, ",\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasSuffix(strings.TrimSpace(l), "NOT NULL") {
			out = append(out, f[0])
		}
	}
	return out
}

// checkNulls fills n: a column that lost its NOT NULL is read for NULLs
// (while every one keeps it, the server has refused them: nothing to read).
func checkNulls(ctx context.Context, tx pgx.Tx, n *nullFinding) error {
	var names []string
	notNull := map[string]bool{}
	for _, t := range tables {
		names = append(names, t.name)
		for _, c := range notNullColumns(t) {
			notNull[t.name+"."+c] = true
			n.columns++
		}
	}
	found, err := workload.ReadColumns(ctx, tx, names)
	if err != nil {
		return fmt.Errorf("reading the columns' NOT NULL: %w", err)
	}
	for _, c := range found {
		if name := c.Table + "." + c.Name; c.Nullable && notNull[name] {
			n.dropped = append(n.dropped, name)
		}
	}
	n.nullRows, err = countEach(ctx, tx, n.dropped, "the NULLs", func(c string) string {
		table, col, _ := strings.Cut(c, ".")
		return fmt.Sprintf("SELECT count(*) FROM %s WHERE %s IS NULL", table, col)
	})
	return err
}

func (n *nullFinding) violated() bool { return len(n.nullRows) > 0 }

// rows is the NULLs found, one a column and row.
func (n *nullFinding) rows() int64 { return total(n.nullRows) }

// describe says where the NULLs are, or that there are none.
func (n *nullFinding) describe() string {
	if !n.violated() {
		s := fmt.Sprintf("no NULL in the %d columns the workload always writes", n.columns)
		if len(n.dropped) > 0 {
			s += fmt.Sprintf("; NOT NULL dropped from %s", strings.Join(n.dropped, ", "))
		}
		return s
	}
	var out []string
	for _, c := range n.dropped {
		if k := n.nullRows[c]; k > 0 {
			table, col, _ := strings.Cut(c, ".")
			out = append(out, fmt.Sprintf("%s of %s with %s NULL", plural(int(k), "row"), table, col))
		}
	}
	return strings.Join(out, ", ") + " (a column the workload always writes a value in)"
}
