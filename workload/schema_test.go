package workload_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

func testSchema(rows int, fail bool) workload.Schema {
	return workload.Schema{
		Workload: "demo",
		Tables:   []string{"demo_b", "demo_a"},
		Settings: fmt.Sprintf("rows=%d", rows),
		Create:   "CREATE TABLE demo_a (id INT PRIMARY KEY); CREATE TABLE demo_b (id INT)",
		Load: func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO demo_a SELECT generate_series(1, $1::INT)", rows); err != nil {
				return err
			}
			if fail {
				return errors.New("load failed half-way")
			}
			return nil
		},
		Describe: "demo rows",
	}
}

// Init creates, keeps, refuses other settings, recreates with Drop, and an
// init that fails half-way leaves nothing that Require accepts.
func TestSchemaInit(t *testing.T) {
	url := srv.NewDatabase(t)
	tg, err := pg.NewTarget([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	conn := pgtest.Conn(t, url)
	count := func() int {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM demo_a").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Nothing yet.
	if err := testSchema(3, false).Require(ctx, conn); err == nil || !strings.Contains(err.Error(), "no demo schema in this database: run `txload init demo` first") {
		t.Fatalf("require on an empty database: %v", err)
	}
	// A load that fails leaves no table and no marker.
	if err := testSchema(3, true).Init(ctx, tg, workload.InitOptions{}); err == nil {
		t.Fatal("a failing load succeeded")
	}
	if err := testSchema(3, false).Require(ctx, conn); err == nil || !strings.Contains(err.Error(), "no demo schema") {
		t.Fatalf("require after a failed init: %v", err)
	}
	var log bytes.Buffer
	if err := testSchema(3, false).Init(ctx, tg, workload.InitOptions{Log: &log}); err != nil {
		t.Fatal(err)
	}
	if count() != 3 || testSchema(3, false).Require(ctx, conn) != nil {
		t.Fatalf("after init: %d rows", count())
	}
	if _, err := conn.Exec(ctx, "INSERT INTO demo_a VALUES (100)"); err != nil {
		t.Fatal(err)
	}
	// Same settings: kept.
	if err := testSchema(3, false).Init(ctx, tg, workload.InitOptions{Log: &log}); err != nil || count() != 4 {
		t.Fatalf("re-init: %v, %d rows", err, count())
	}
	if !strings.Contains(log.String(), "demo schema already holds demo rows; --drop recreates it") {
		t.Errorf("log: %s", log.String())
	}
	// Other settings: refused, untouched.
	if err := testSchema(5, false).Init(ctx, tg, workload.InitOptions{}); err == nil || !strings.Contains(err.Error(), "exists with other settings (rows=3; asked: rows=5); --drop recreates it") || count() != 4 {
		t.Fatalf("other settings: %v, %d rows", err, count())
	}
	// Drop: recreated.
	if err := testSchema(5, false).Init(ctx, tg, workload.InitOptions{Drop: true}); err != nil || count() != 5 {
		t.Fatalf("drop: %v, %d rows", err, count())
	}
	// A multi-step init marks itself loading until it ends.
	if err := workload.BeginLoad(ctx, conn, "demo", "rows=5"); err != nil {
		t.Fatal(err)
	}
	err = testSchema(5, false).Require(ctx, conn)
	var ie *workload.IncompleteError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "the demo schema is incomplete (an init was interrupted): run `txload init demo --drop`") {
		t.Fatalf("require while loading: %v", err)
	}
	// Tables someone else made are not taken over.
	if _, err := conn.Exec(ctx, "DELETE FROM txload_init"); err != nil {
		t.Fatal(err)
	}
	if err := testSchema(5, false).Init(ctx, tg, workload.InitOptions{}); err == nil || !strings.Contains(err.Error(), "were not made by txload init") {
		t.Fatalf("foreign tables: %v", err)
	}
	if err := workload.EndLoad(ctx, conn, "demo", "rows=5"); err != nil {
		t.Fatal(err)
	}
	if err := testSchema(5, false).Require(ctx, conn); err != nil {
		t.Fatal(err)
	}
}
