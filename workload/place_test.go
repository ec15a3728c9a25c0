package workload_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// CheckColumns holds where the workload's tables are, as an audit's
// transaction reads them: the seventh outside retest's tamperings, each on
// a database of its own over init's two tables. A relation of a table's
// name in pg_catalog (which the audit's path puts first), a temporary one
// of the check's session (made by a login trigger, as a pooled session
// can keep another client's), a table in another schema than the others,
// a foreign table or a policy among a table's children are violations; a
// schema placed first on the path that holds none of the tables is an
// error naming where they are; a path that names pg_catalog first, or a
// txload.schema set for the database, changes nothing.
func TestCheckColumnsPlace(t *testing.T) {
	atDB := func(setting string) string {
		return `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET ` + setting + `', current_database()); END $$`
	}
	want := workload.ColumnsOf("CREATE TABLE demo_a (id INT PRIMARY KEY); CREATE TABLE demo_b (id INT)")
	for _, c := range []struct {
		name, sql string
		min       int // the server's major version it needs
		violation string
		err       string
	}{
		{name: "clean"},
		{name: "catalog first on the path", sql: atDB(`search_path = pg_catalog, public`)},
		{name: "txload.schema set for the database", sql: atDB(`txload.schema = ''nowhere''`)},
		{name: "a copy in pg_catalog", sql: `SET allow_system_table_mods = on; CREATE TABLE pg_catalog.demo_a (id INT); RESET allow_system_table_mods; ` +
			atDB(`search_path = "$user", public, pg_catalog`), violation: "demo_a is also a relation in pg_catalog"},
		{name: "a temporary table made at login", min: 17, sql: `CREATE FUNCTION shadow() RETURNS event_trigger LANGUAGE plpgsql AS
			$$ BEGIN CREATE TEMP TABLE IF NOT EXISTS demo_b (id INT); END $$; CREATE EVENT TRIGGER shadow ON login EXECUTE FUNCTION shadow()`,
			violation: "demo_b is also a temporary table of the check's session"},
		{name: "an empty schema first", sql: `CREATE SCHEMA attic; ` + atDB(`search_path = attic, public`),
			err: "the workload's tables are not in the first schema of the search path, where init makes them and the audits read them: demo_a is in public"},
		{name: "one table in another schema", sql: `CREATE SCHEMA attic; CREATE TABLE attic.demo_a (id INT PRIMARY KEY); ` + atDB(`search_path = attic, public`),
			violation: "demo_b is in the schema public, where init makes every table of the workload in one schema"},
		{name: "a foreign child", sql: `CREATE FOREIGN DATA WRAPPER nowhere; CREATE SERVER nowhere FOREIGN DATA WRAPPER nowhere;
			CREATE FOREIGN TABLE demo_f () INHERITS (demo_b) SERVER nowhere`,
			violation: "demo_f, a partition or child of demo_b (a scan of demo_b reads it), is a foreign table"},
		{name: "md5 replaced in pg_catalog", sql: `SET allow_system_table_mods = on; ALTER FUNCTION pg_catalog.md5(text) RENAME TO md5_orig;
			CREATE FUNCTION pg_catalog.md5(t text) RETURNS text LANGUAGE sql STABLE AS $$ SELECT pg_catalog.md5_orig(t) $$`,
			violation: "pg_catalog holds function md5(text), made since initdb by no extension"},
		{name: "an operator added to pg_catalog", sql: `CREATE FUNCTION pg_catalog.same(int, int) RETURNS bool LANGUAGE sql AS $$ SELECT true $$;
			CREATE OPERATOR pg_catalog.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = pg_catalog.same)`,
			violation: "pg_catalog holds function same(integer,integer), operator ===(integer,integer)"},
		{name: "functions of the database's own", sql: `CREATE FUNCTION md5(t text) RETURNS text LANGUAGE sql AS $$ SELECT 'x' $$;
			CREATE FUNCTION my_sum(int) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
			CREATE FUNCTION length(demo_a) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
			CREATE CAST (demo_a AS int) WITH INOUT`},
		{name: "an operator in public, a better match than pg_catalog's", sql: `CREATE FUNCTION hcat(t text, v bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT t $$;
			CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = bigint, FUNCTION = hcat)`,
			violation: "operator ||(text, bigint) in public: of a name of pg_catalog's, called with pg_catalog's types, but no twin of one there"},
		{name: "a function in public of other types", sql: `CREATE FUNCTION md5(t varchar) RETURNS text LANGUAGE sql AS $$ SELECT 'x' $$`,
			violation: "function md5(character varying) in public"},
		{name: "a function whose argument of its own type has a default", sql: `CREATE TYPE ev AS (t text);
			CREATE FUNCTION public.length(a varchar, b ev DEFAULT NULL) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 400 $$`,
			violation: "function length(character varying,ev) in public"},
		{name: "an implicit cast to a type of the database's own", sql: `CREATE TYPE ev AS (t text);
			CREATE FUNCTION toev(text) RETURNS ev LANGUAGE sql AS $$ SELECT ROW($1)::ev $$;
			CREATE CAST (text AS ev) WITH FUNCTION toev(text) AS IMPLICIT`,
			violation: "cast text AS ev (implicit)"},
		{name: "an operator of a domain over text", sql: `CREATE DOMAIN dtext AS text; CREATE DOMAIN dnum AS dtext;
			CREATE FUNCTION dcat(t text, v dnum) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT t $$;
			CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = dnum, FUNCTION = dcat)`,
			violation: "operator ||(text, dnum) in public"},
		{name: "extensions' members, a superuser's", sql: `CREATE EXTENSION intarray; CREATE EXTENSION citext`},
		{name: "an operator its owner added to a trusted extension", min: 13, sql: `DO $$ BEGIN
				EXECUTE format('CREATE ROLE %I', current_database() || '_ext');
				EXECUTE format('GRANT CREATE ON DATABASE %I TO %I', current_database(), current_database() || '_ext');
				EXECUTE format('GRANT CREATE ON SCHEMA public TO %I', current_database() || '_ext');
				EXECUTE format('SET ROLE %I', current_database() || '_ext');
			END $$;
			CREATE EXTENSION citext;
			CREATE FUNCTION hcat(t text, v bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT t $$;
			CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = bigint, FUNCTION = hcat);
			ALTER EXTENSION citext ADD OPERATOR public.|| (text, bigint);
			ALTER EXTENSION citext ADD FUNCTION hcat(text, bigint);
			RESET ROLE`,
			violation: "operator ||(text, bigint) in public"},
		{name: "a column named to rewrite the terminal", sql: `DO $$ BEGIN EXECUTE format('ALTER TABLE demo_a ADD COLUMN %I int', E'\x1b[2K\r\ncheck: ok\x1b[8m'); END $$`,
			violation: `column demo_a.\x1b[2K\x0d\x0acheck: ok\x1b[8m (integer) is one init does not make`},
		{name: "an operator in a schema named to hide lines", sql: `DO $$ BEGIN EXECUTE format('CREATE SCHEMA %I', E's\x1b[8m');
				EXECUTE format('CREATE FUNCTION %I.hcat(t text, v bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $f$ SELECT t $f$', E's\x1b[8m');
				EXECUTE format('CREATE OPERATOR %I.|| (LEFTARG = text, RIGHTARG = bigint, FUNCTION = %I.hcat)', E's\x1b[8m', E's\x1b[8m');
				EXECUTE format('ALTER DATABASE %I SET search_path = "$user", public, %I', current_database(), E's\x1b[8m'); END $$`,
			violation: `operator ||(text, bigint) in "s\x1b[8m"`},
		{name: "a policy on a child", sql: `CREATE TABLE demo_c () INHERITS (demo_a); ALTER TABLE demo_c ENABLE ROW LEVEL SECURITY`,
			violation: "demo_c, a partition or child of demo_a (a scan of demo_a reads it), has row-level security enabled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := srv.NewDatabase(t)
			conn := pgtest.Conn(t, url)
			var version int
			if err := conn.QueryRow(t.Context(), "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
				t.Fatal(err)
			}
			if version < c.min*10000 {
				t.Skipf("needs PostgreSQL %d", c.min)
			}
			if _, err := conn.Exec(t.Context(), "CREATE TABLE demo_a (id INT PRIMARY KEY); CREATE TABLE demo_b (id INT)"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { // the role a case makes, named after its database
				_, _ = conn.Exec(context.Background(), `DO $$ DECLARE r text := current_database() || '_ext'; BEGIN
					IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN EXECUTE format('DROP OWNED BY %I; DROP ROLE %I', r, r); END IF; END $$`)
			})
			if c.sql != "" {
				if _, err := conn.Exec(t.Context(), c.sql); err != nil {
					t.Fatalf("%s: %v", c.sql, err)
				}
			}
			tg, err := pg.NewTarget([]string{url})
			if err != nil {
				t.Fatal(err)
			}
			res, err := workload.CheckColumns(t.Context(), tg, want)
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, %+v; want the error %q", err, res, c.err)
				}
			case err != nil:
				t.Fatal(err)
			case c.violation == "" && res != nil:
				t.Fatalf("violations on clean tables: %q", res.Violations)
			case c.violation != "" && (res == nil || !slices.ContainsFunc(res.Violations, func(v string) bool { return strings.HasPrefix(v, c.violation) })):
				t.Fatalf("got %+v, want a violation %q", res, c.violation)
			}
		})
	}
}
