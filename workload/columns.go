package workload

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/pg"
)

// Column is a column a workload's init makes: its table, its name, and its
// type as the catalogue names it ("integer", "numeric(12, 2)",
// "character varying(16)"). A name ending in "*" stands for every column
// of that prefix and a number (ycsb's field0, field1, ...).
type Column struct {
	Table, Name, Type string
}

// ColumnsOf reads the columns of every CREATE TABLE in ddl, a workload's
// own DDL: each column's name and type, up to its constraints.
func ColumnsOf(ddl string) []Column {
	ddl = comment.ReplaceAllString(ddl, "")
	var out []Column
	for _, m := range createTable.FindAllStringSubmatchIndex(ddl, -1) {
		table := strings.ToLower(ddl[m[2]:m[3]])
		for _, def := range splitTop(ddl[m[1]:]) {
			f := strings.Fields(def)
			if len(f) < 2 || slices.Contains(tableConstraints, strings.ToUpper(f[0])) {
				continue
			}
			typ := f[1:]
			if i := slices.IndexFunc(typ, func(w string) bool { return slices.Contains(columnConstraints, strings.ToUpper(w)) }); i >= 0 {
				typ = typ[:i]
			}
			out = append(out, Column{Table: table, Name: strings.ToLower(f[0]), Type: canonicalType(strings.Join(typ, " "))})
		}
	}
	return out
}

var (
	comment           = regexp.MustCompile(`--[^\n]*`)
	createTable       = regexp.MustCompile(`(?i)create\s+(?:unlogged\s+)?table\s+(?:if\s+not\s+exists\s+)?([a-z_][a-z0-9_]*)\s*\(`)
	tableConstraints  = []string{"PRIMARY", "UNIQUE", "CONSTRAINT", "FOREIGN", "CHECK", "EXCLUDE"}
	columnConstraints = []string{"NOT", "NULL", "PRIMARY", "DEFAULT", "REFERENCES", "UNIQUE", "CHECK", "CONSTRAINT", "GENERATED", "COLLATE"}
)

// splitTop splits the column list s begins with at the commas outside
// parentheses, up to the parenthesis that closes it.
func splitTop(s string) []string {
	var out []string
	depth, from := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return append(out, s[from:i])
			}
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[from:i])
				from = i + 1
			}
		}
	}
	return append(out, s[from:])
}

// canonicalType names a DDL type as information_schema does, with its
// length or precision: "VARCHAR(16)" is "character varying(16)".
func canonicalType(t string) string {
	base, args, _ := strings.Cut(strings.ToUpper(strings.Join(strings.Fields(t), " ")), "(")
	args = strings.ReplaceAll(strings.TrimSuffix(strings.TrimSpace(args), ")"), " ", "")
	base = strings.TrimSpace(base)
	names := map[string]string{"INT": "integer", "INTEGER": "integer", "INT4": "integer", "SERIAL": "integer",
		"BIGINT": "bigint", "INT8": "bigint", "BIGSERIAL": "bigint", "SMALLINT": "smallint", "INT2": "smallint",
		"NUMERIC": "numeric", "DECIMAL": "numeric", "VARCHAR": "character varying", "CHARACTER VARYING": "character varying",
		"CHAR": "character", "CHARACTER": "character", "TEXT": "text", "TIMESTAMP": "timestamp without time zone",
		"TIMESTAMPTZ": "timestamp with time zone", "DOUBLE PRECISION": "double precision", "FLOAT8": "double precision",
		"FLOAT": "double precision", "REAL": "real", "BOOL": "boolean", "BOOLEAN": "boolean", "OID": "oid", "BYTEA": "bytea"}
	name, ok := names[base]
	if !ok {
		name = strings.ToLower(base)
	}
	switch {
	case name == "character" && args == "":
		args = "1"
	case args == "":
		return name
	}
	return name + "(" + strings.ReplaceAll(args, ",", ", ") + ")"
}

// typeFamily is what a type must keep: the integer types are one family
// (CockroachDB's INT is a bigint, pgbench's aid one from scale 20000); any
// other type is held to itself, length and precision included.
func typeFamily(t string) string {
	switch t {
	case "smallint", "integer", "bigint":
		return "integer"
	}
	return t
}

// querier is a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// FoundColumn is a column of the catalogue: its type named as Column's,
// whether it may hold NULLs, and its collation when it is not its type's
// default ("" when it is: no init names one).
type FoundColumn struct {
	Column
	Nullable  bool
	Collation string
}

// ReadColumns reads the columns of tables in the current schema from
// information_schema (in the order of each table's columns).
func ReadColumns(ctx context.Context, q querier, tables []string) ([]FoundColumn, error) {
	rows, err := q.Query(ctx, `SELECT table_name::text, column_name::text, data_type::text, is_nullable = 'YES',
		character_maximum_length, numeric_precision, numeric_scale, COALESCE(collation_name::text, '')
		FROM information_schema.columns WHERE table_schema = `+SchemaSQL+` AND table_name::text = ANY($1::text[])
		ORDER BY table_name, ordinal_position`, tables)
	if err != nil {
		return nil, fmt.Errorf("reading the tables' columns: %w", err)
	}
	var out []FoundColumn
	var c FoundColumn
	var length, precision, scale *int64
	_, err = pgx.ForEachRow(rows, []any{&c.Table, &c.Name, &c.Type, &c.Nullable, &length, &precision, &scale, &c.Collation}, func() error {
		switch {
		case length != nil:
			c.Type += "(" + strconv.FormatInt(*length, 10) + ")"
		case c.Type == "numeric" && precision != nil && scale != nil:
			c.Type += fmt.Sprintf("(%d, %d)", *precision, *scale)
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the tables' columns: %w", err)
	}
	return out, nil
}

// ColumnViolations holds the columns found to those init makes (want), in
// the tables that exist (a table missing is its check's to report): a
// column of another type, one missing, one init does not make.
func ColumnViolations(want []Column, found []FoundColumn) []string {
	exists := map[string]bool{}
	for _, c := range found {
		exists[c.Table] = true
	}
	match := func(w Column, c FoundColumn) bool {
		if w.Table != c.Table {
			return false
		}
		if prefix, ok := strings.CutSuffix(w.Name, "*"); ok {
			n, isPrefix := strings.CutPrefix(c.Name, prefix)
			_, err := strconv.ParseUint(n, 10, 32)
			return isPrefix && err == nil
		}
		return w.Name == c.Name
	}
	var out []string
	for _, w := range want {
		i := slices.IndexFunc(found, func(c FoundColumn) bool { return match(w, c) })
		if i < 0 && exists[w.Table] && !strings.HasSuffix(w.Name, "*") {
			out = append(out, fmt.Sprintf("column %s.%s is missing, where init makes it %s", w.Table, w.Name, w.Type))
		}
	}
	for _, c := range found {
		i := slices.IndexFunc(want, func(w Column) bool { return match(w, c) })
		switch {
		case i < 0:
			out = append(out, fmt.Sprintf("column %s.%s (%s) is one init does not make", c.Table, c.Name, c.Type))
		case typeFamily(c.Type) != typeFamily(want[i].Type):
			out = append(out, fmt.Sprintf("column %s.%s is %s, where init makes it %s", c.Table, c.Name, c.Type, want[i].Type))
		case c.Collation != "":
			// A collation that compares 'gc' equal to 'GC' would pass
			// every test of a value the checks make with = or IN.
			out = append(out, fmt.Sprintf("column %s.%s has the collation %s, where init makes it with its type's default", c.Table, c.Name, c.Collation))
		}
	}
	return out
}

// CheckColumns is the first step of a check or a run's audit: the columns
// of want's tables held to want, on a connection of its own, before any
// scan reads them (a type changed under a check would otherwise be a scan
// error, or values of a type the check does not hold). It returns nil
// when every column is what init makes, else a result whose violations
// name each column, the type found and the type init makes.
func CheckColumns(ctx context.Context, t *pg.Target, want []Column) (*CheckResult, error) {
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var tables []string
	for _, c := range want {
		if !slices.Contains(tables, c.Table) {
			tables = append(tables, c.Table)
		}
	}
	// In an audit's transaction: read-only, one snapshot, pg_catalog first.
	var v, kinds []string
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := CatalogFirst(ctx, tx); err != nil {
			return err
		}
		found, err := ReadColumns(ctx, tx, tables)
		if err != nil {
			return err
		}
		v = ColumnViolations(want, found)
		kinds, err = relationViolations(ctx, tx, tables)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(v)+len(kinds) == 0 {
		return nil, nil
	}
	line := fmt.Sprintf("VIOLATED: %d of the columns are not what init makes; nothing else was read", len(v))
	if len(kinds) > 0 {
		line = fmt.Sprintf("VIOLATED: %d of the columns and %d of the tables are not what init makes; nothing else was read", len(v), len(kinds))
	}
	return &CheckResult{Lines: []Line{{Label: "columns", Value: line}}, Violations: append(v, kinds...)}, nil
}

// relationViolations names the tables (in the current schema) that are
// not plain tables, or that have row-level security: a view in a table's
// place, or a policy, can show the check's read-only session other rows
// than everyone else reads (the sixth outside retest hid a forged
// balance from it so). Init makes plain tables, without policies.
func relationViolations(ctx context.Context, q querier, tables []string) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT c.relname::text, c.relkind::text, c.relrowsecurity
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = `+SchemaSQL+` AND c.relname::text = ANY($1::text[]) AND (c.relkind NOT IN ('r', 'p') OR c.relrowsecurity)
		ORDER BY 1`, tables)
	if err != nil {
		return nil, fmt.Errorf("reading the tables' kinds: %w", err)
	}
	var out []string
	var name, kind string
	var rls bool
	_, err = pgx.ForEachRow(rows, []any{&name, &kind, &rls}, func() error {
		switch what := map[string]string{"v": "a view", "m": "a materialized view", "f": "a foreign table"}[kind]; {
		case kind != "r" && kind != "p" && what != "":
			out = append(out, fmt.Sprintf("%s is %s, where init makes a table: what a check reads of it is what its definition says, not the rows written", name, what))
		case kind != "r" && kind != "p":
			out = append(out, fmt.Sprintf("%s is a relation of kind %q, where init makes a table", name, kind))
		}
		if rls {
			out = append(out, fmt.Sprintf("%s has row-level security enabled, where init makes none: a policy can hide rows from the check's session", name))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the tables' kinds: %w", err)
	}
	return out, nil
}
