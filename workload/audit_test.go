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

// An audit's connection puts pg_catalog first on its search path: an md5
// of the same name placed before it on the database's path (the sixth
// outside retest's) does not stand in for the server's, and the
// workload's schema is still found.
func TestConnectAuditCatalogFirst(t *testing.T) {
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
	audit, err := workload.ConnectAudit(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	defer audit.Close(context.WithoutCancel(ctx))
	var forged, real string
	if err := plain.QueryRow(ctx, `SELECT md5('x')`).Scan(&forged); err != nil || forged != "forged" {
		t.Fatalf("the shadowing md5 is not in effect on a plain connection: %q, %v", forged, err)
	}
	var n int
	if err := audit.QueryRow(ctx, `SELECT md5('x'), (SELECT count(*) FROM shadowed_demo)`).Scan(&real, &n); err != nil || real != "9dd4e461268c8034f5c8564e155c67a6" {
		t.Fatalf("the audit's md5('x') = %q (%v), want the server's", real, err)
	}
}
