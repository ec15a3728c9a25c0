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
		// Names the database chose, printed in violations: quoted.
		c.Name, c.Type, c.Collation = pg.OneLine(c.Name), pg.OneLine(c.Type), pg.OneLine(c.Collation)
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
		var err error
		if kinds, err = placeViolations(ctx, tx, tables); err != nil {
			return err
		}
		found, err := ReadColumns(ctx, tx, tables)
		if err != nil {
			return err
		}
		v = ColumnViolations(want, found)
		rel, err := relationViolations(ctx, tx, tables)
		if err != nil {
			return err
		}
		kinds = append(kinds, rel...)
		cat, err := catalogViolations(ctx, tx)
		if err != nil {
			return err
		}
		kinds = append(kinds, cat...)
		over, err := overloadViolations(ctx, tx)
		kinds = append(kinds, over...)
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
		findings := "findings"
		if len(kinds) == 1 {
			findings = "finding"
		}
		line = fmt.Sprintf("VIOLATED: %d of the columns are not what init makes, and %d %s of where the tables are, what they are or what the audit computes through; nothing else was read", len(v), len(kinds), findings)
	}
	return &CheckResult{Lines: []Line{{Label: "columns", Value: line}}, Violations: append(v, kinds...)}, nil
}

// placeViolations names the tables an audit's transaction (CatalogFirst)
// would read elsewhere than in the workload's schema, where init makes
// them all: one of the same name in pg_catalog (which the audit's path
// puts first), a temporary one of the session (first on any other
// session's path: through a pooler, the seventh outside retest left one
// on a server session for the check to read), or one in another schema
// of the path while others are in the workload's. It returns an error,
// not a violation, when no table is in the workload's schema but some are
// in a later one: the path names a schema first (one made after init, a
// role's own) that the tables are not in, and the check cannot tell which
// the applications read.
func placeViolations(ctx context.Context, q querier, tables []string) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT c.relname::text, n.nspname::text,
			CASE WHEN n.nspname = 'pg_catalog' THEN 'catalog' WHEN n.oid = pg_my_temp_schema() THEN 'temp'
				WHEN n.nspname = `+SchemaSQL+` THEN 'own' ELSE 'other' END
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relname::text = ANY($1::text[]) AND (n.nspname = ANY(current_schemas(true)) OR n.oid = pg_my_temp_schema())
			AND c.relkind NOT IN ('i', 'I', 'S', 'c', 't')
		ORDER BY array_position(current_schemas(true), n.nspname::name), 1`, tables)
	if err != nil {
		return nil, fmt.Errorf("reading where the tables are: %w", err)
	}
	var out []string
	own, other := map[string]bool{}, map[string]string{}
	var name, schema, where string
	_, err = pgx.ForEachRow(rows, []any{&name, &schema, &where}, func() error {
		schema = pg.OneLine(schema)
		switch where {
		case "catalog":
			out = append(out, fmt.Sprintf("%s is also a relation in pg_catalog, where init makes none: an audit, whose search path begins with pg_catalog, would read it in the table's place", name))
		case "temp":
			out = append(out, fmt.Sprintf("%s is also a temporary table of the check's session (%s), where init makes none: every statement of that session, through a pooler another client's too, reads it in the table's place", name, schema))
		case "own":
			own[name] = true
		default:
			if _, ok := other[name]; !ok {
				other[name] = schema
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading where the tables are: %w", err)
	}
	if len(own) == 0 && len(other) > 0 {
		var first, in string
		for _, t := range tables {
			if s, ok := other[t]; ok {
				first, in = t, s
				break
			}
		}
		return nil, fmt.Errorf("the workload's tables are not in the first schema of the search path, where init makes them and the audits read them: %s is in %s; put %s first on the path (in the URL: options=-c%%20search_path%%3D%s)", first, in, in, in)
	}
	for _, t := range tables {
		if s, ok := other[t]; ok && !own[t] {
			out = append(out, fmt.Sprintf("%s is in the schema %s, where init makes every table of the workload in one schema and the others are in the first of the search path", t, s))
		}
	}
	return out, nil
}

// catalogViolations names the functions and operators of pg_catalog, and
// the casts between its types, made since initdb (an oid of the normal
// range, from 16384) by no extension: the audits compute through
// pg_catalog's functions (md5, sum, left, the casts), and a superuser can
// put one in place of the server's own (the seventh outside retest renamed
// md5 and made one that gave a forged row the hash of the row it
// replaced). PostgreSQL and YugabyteDB only: CockroachDB's oids are its
// own.
func catalogViolations(ctx context.Context, q querier) ([]string, error) {
	return addedObjects(ctx, q, "what was added to pg_catalog", `SELECT 'function ' || p.oid::regprocedure::text AS what, p.oid, 'pg_proc'::regclass AS cls, p.proowner AS owner
				FROM pg_proc p WHERE p.pronamespace = 'pg_catalog'::regnamespace
			UNION ALL SELECT 'operator ' || o.oid::regoperator::text, o.oid, 'pg_operator'::regclass, o.oprowner
				FROM pg_operator o WHERE o.oprnamespace = 'pg_catalog'::regnamespace
			UNION ALL SELECT 'cast ' || format_type(c.castsource, NULL) || ' AS ' || format_type(c.casttarget, NULL), c.oid, 'pg_cast'::regclass, d.typowner
				FROM pg_cast c JOIN pg_type s ON s.oid = c.castsource JOIN pg_type d ON d.oid = c.casttarget
				WHERE s.typnamespace = 'pg_catalog'::regnamespace AND d.typnamespace = 'pg_catalog'::regnamespace AND c.oid >= 16384`,
		"pg_catalog holds %s, made since initdb by no extension: the audits compute through pg_catalog's functions and cannot vouch for one put in place of the server's own (a superuser's doing)")
}

// overloadViolations names the functions and operators, in the schemas of
// an audit's path after pg_catalog, that share a name with one of
// pg_catalog's, take only pg_catalog's types (or domains over them) in
// the arguments a call must give (those with defaults may be of any
// type: length(varchar, ev DEFAULT NULL) is a call of length(varchar)),
// and are no exact twin of one there; and the casts since initdb from a
// pg_catalog type that apply implicitly or in assignment. pg_catalog first
// on the path wins only over a twin: among functions or operators of other
// argument types the server takes the best match, wherever it is
// (CVE-2018-1058's pattern). The eighth outside retest made
// public.||(text, bigint), a better match for the audits' "seed || ':' ||
// article_id" than pg_catalog's textanycat, and gave forged rows the hash
// of those they replaced in four workloads, with nothing but CREATE on
// public.
func overloadViolations(ctx context.Context, q querier) ([]string, error) {
	return addedObjects(ctx, q, "the functions and operators on the audit's path", `WITH RECURSIVE path AS (
			SELECT n.oid, n.nspname FROM pg_namespace n
			WHERE n.nspname = ANY(current_schemas(false)) AND n.nspname <> 'pg_catalog'
		), builtin AS (
			SELECT t.oid FROM pg_type t WHERE t.typnamespace = 'pg_catalog'::regnamespace
		), usable(oid) AS (
			SELECT oid FROM builtin
			UNION SELECT t.oid FROM pg_type t JOIN usable u ON (t.typtype = 'd' AND t.typbasetype = u.oid) OR (t.typelem = u.oid AND t.typcategory = 'A')
		)
		SELECT 'function ' || p.oid::regprocedure::text || ' in ' || quote_ident(path.nspname) AS what, p.oid, 'pg_proc'::regclass AS cls, p.proowner AS owner
			FROM pg_proc p JOIN path ON path.oid = p.pronamespace
			WHERE EXISTS (SELECT 1 FROM pg_proc c WHERE c.pronamespace = 'pg_catalog'::regnamespace AND c.proname = p.proname)
				AND NOT EXISTS (SELECT 1 FROM pg_proc c WHERE c.pronamespace = 'pg_catalog'::regnamespace AND c.proname = p.proname AND c.proargtypes = p.proargtypes)
				AND NOT EXISTS (SELECT 1 FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY a(t, n)
					WHERE a.n <= p.pronargs - p.pronargdefaults AND a.t NOT IN (SELECT oid FROM usable))
		UNION ALL
		SELECT 'operator ' || o.oprname || '(' || format_type(NULLIF(o.oprleft, 0), NULL) || ', ' || format_type(NULLIF(o.oprright, 0), NULL) || ') in ' || quote_ident(path.nspname), o.oid, 'pg_operator'::regclass, o.oprowner
			FROM pg_operator o JOIN path ON path.oid = o.oprnamespace
			WHERE EXISTS (SELECT 1 FROM pg_operator c WHERE c.oprnamespace = 'pg_catalog'::regnamespace AND c.oprname = o.oprname)
				AND NOT EXISTS (SELECT 1 FROM pg_operator c WHERE c.oprnamespace = 'pg_catalog'::regnamespace AND c.oprname = o.oprname AND c.oprleft = o.oprleft AND c.oprright = o.oprright)
				AND (o.oprleft = 0 OR o.oprleft IN (SELECT oid FROM usable)) AND (o.oprright = 0 OR o.oprright IN (SELECT oid FROM usable))
		UNION ALL
		SELECT 'cast ' || format_type(c.castsource, NULL) || ' AS ' || format_type(c.casttarget, NULL) || CASE c.castcontext WHEN 'i' THEN ' (implicit)' ELSE ' (in assignment)' END, c.oid, 'pg_cast'::regclass, d.typowner
			FROM pg_cast c JOIN pg_type d ON d.oid = c.casttarget
			WHERE c.oid >= 16384 AND c.castcontext IN ('i', 'a') AND c.castsource IN (SELECT oid FROM builtin)
				AND NOT c.casttarget IN (SELECT oid FROM builtin)`,
		"%s: of a name of pg_catalog's, called with pg_catalog's types, but no twin of one there, an audit's expression can resolve to it in place of the server's own (pg_catalog first on the path wins only over a twin), and init makes none")
}

// addedObjects runs found, a query of (what, oid, cls, owner) rows of
// functions, operators or casts, and returns one violation (format's %s
// the first three named, and how many more) for those made since initdb
// that are no member of an extension owned by a superuser: an
// extension's own members are not named (intarray's operators on int4[],
// say), as its script runs as a superuser, even a trusted extension's; an
// object its owner added to an extension (ALTER EXTENSION ... ADD, open
// to a trusted extension's owner) keeps that owner and is named.
// PostgreSQL and YugabyteDB only: CockroachDB's oids are its own.
func addedObjects(ctx context.Context, q querier, doing, found, format string) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT x.what FROM (`+found+`) x
		WHERE x.oid >= 16384 AND version() LIKE 'PostgreSQL %'
			AND NOT (EXISTS (SELECT 1 FROM pg_depend e WHERE e.classid = x.cls AND e.objid = x.oid AND e.deptype = 'e')
				AND COALESCE((SELECT r.rolsuper FROM pg_roles r WHERE r.oid = x.owner), false))
		ORDER BY x.oid`)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", doing, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", doing, err)
	}
	if len(names) == 0 {
		return nil, nil
	}
	for i, n := range names {
		names[i] = pg.OneLine(n)
	}
	more := ""
	if len(names) > 3 {
		more = fmt.Sprintf(" and %d more", len(names)-3)
		names = names[:3]
	}
	return []string{fmt.Sprintf(format, strings.Join(names, ", ")+more)}, nil
}

// relationViolations names the tables (in the workload's schema) that are
// not plain or partitioned tables, or that have row-level security, and
// the same of their partitions and inheritance children, which a scan of
// the table reads too: a view in a table's place, a policy, or a foreign
// table as a partition can show the check's read-only session other rows
// than everyone else reads (the sixth outside retest hid a forged balance
// from it with a view; the seventh with a foreign partition). Init makes
// plain tables, without policies (pgbench's accounts may be partitioned).
func relationViolations(ctx context.Context, q querier, tables []string) ([]string, error) {
	rows, err := q.Query(ctx, `WITH RECURSIVE tree(name, oid, parent) AS (
			SELECT c.relname::text, c.oid, NULL::text COLLATE "C" FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = `+SchemaSQL+` AND c.relname::text = ANY($1::text[])
			UNION
			SELECT i.inhrelid::regclass::text, i.inhrelid, COALESCE(tree.parent, tree.name) FROM pg_inherits i JOIN tree ON i.inhparent = tree.oid)
		SELECT tree.name, COALESCE(tree.parent, ''), c.relkind::text, c.relrowsecurity
		FROM tree JOIN pg_class c ON c.oid = tree.oid
		WHERE c.relkind NOT IN ('r', 'p') OR c.relrowsecurity
		ORDER BY 2, 1`, tables)
	if err != nil {
		return nil, fmt.Errorf("reading the tables' kinds: %w", err)
	}
	var out []string
	var name, parent, kind string
	var rls bool
	_, err = pgx.ForEachRow(rows, []any{&name, &parent, &kind, &rls}, func() error {
		name, parent = pg.OneLine(name), pg.OneLine(parent)
		if parent != "" {
			name = fmt.Sprintf("%s, a partition or child of %s (a scan of %s reads it),", name, parent, parent)
		}
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
