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
