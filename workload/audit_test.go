package workload_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// ReadSnapshot reads in one read-only repeatable-read transaction: both
// queries see one snapshot though another session commits between them; a
// write is refused; a missing table is the workload's own line; another
// error is wrapped with what was done. InitSchema is Init of the schema
// the flags give when init runs.
func TestReadSnapshot(t *testing.T) {
	url := srv.NewDatabase(t)
	tg, err := pg.NewTarget([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	rows := 3
	initHook := workload.InitSchema(func() workload.Schema { return testSchema(rows, false) })
	rows = 5 // read when init runs, not when the hook was made
	if err := initHook(ctx, tg, workload.InitOptions{Log: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.WithoutCancel(ctx))
	noSchema := errors.New("no demo schema")
	var before, after int
	err = workload.ReadSnapshot(ctx, tg, "check demo", noSchema, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM demo_a").Scan(&before); err != nil {
			return err
		}
		if _, err := other.Exec(ctx, "INSERT INTO demo_a VALUES (100)"); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT count(*) FROM demo_a").Scan(&after)
	})
	if err != nil || before != 5 || after != 5 {
		t.Fatalf("ReadSnapshot: %v; counts %d then %d, want 5 and 5 (one snapshot)", err, before, after)
	}
	err = workload.ReadSnapshot(ctx, tg, "check demo", noSchema, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO demo_a VALUES (101)")
		return err
	})
	if err == nil || !strings.HasPrefix(err.Error(), "check demo: ") || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a write in the snapshot: %v, want check demo: … read-only transaction", err)
	}
	err = workload.ReadSnapshot(ctx, tg, "check demo", noSchema, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "SELECT * FROM no_such_table")
		return err
	})
	if err != noSchema {
		t.Errorf("a missing table: %v, want %v", err, noSchema)
	}
}

// An audit's transaction puts pg_catalog first on its search path: an md5
// of the same name placed before it on the database's path (the sixth
// outside retest's) does not stand in for the server's, the workload's
// schema is still found, and the connection's session keeps its own path
// (through a transaction pooler, a session's setting would pass to other
// clients).
func TestReadSnapshotCatalogFirst(t *testing.T) {
	url := srv.NewDatabase(t)
	tg, err := pg.NewTarget([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	setup, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{`CREATE FUNCTION public.md5(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT 'forged' $$`,
		`CREATE TABLE shadowed_demo (id int)`,
		`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET search_path = public, pg_catalog', current_database()); END $$`} {
		if _, err := setup.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	setup.Close(ctx)
	plain, err := tg.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(context.WithoutCancel(ctx))
	md5 := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) (string, string) {
		var h, schema string
		if err := q.QueryRow(ctx, `SELECT md5('x'), `+workload.SchemaSQL+` FROM (SELECT count(*) FROM shadowed_demo) d`).Scan(&h, &schema); err != nil {
			t.Fatal(err)
		}
		return h, schema
	}
	if h, _ := md5(plain); h != "forged" {
		t.Fatalf("the shadowing md5 is not in effect on a plain connection: %q", h)
	}
	if err := workload.ReadSnapshot(ctx, tg, "reading", errors.New("no schema"), func(tx pgx.Tx) error {
		if h, schema := md5(tx); h != "9dd4e461268c8034f5c8564e155c67a6" || schema != "public" {
			t.Errorf("in the audit's transaction md5('x') = %q, the schema %q; want the server's md5 and public", h, schema)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(ctx, plain, func(tx pgx.Tx) error {
		if err := workload.CatalogFirst(ctx, tx); err != nil {
			return err
		}
		if h, _ := md5(tx); h == "forged" {
			t.Errorf("CatalogFirst left the shadowing md5 in effect")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if h, schema := md5(plain); h != "forged" || schema != "public" {
		t.Errorf("after the audit's transaction, the session's md5('x') = %q, the schema %q: its setting outlived the transaction", h, schema)
	}
}
