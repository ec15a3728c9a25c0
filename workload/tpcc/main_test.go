package tpcc

import (
	"bytes"
	"context"
	"net/url"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

var srv *pgtest.Server

func TestMain(m *testing.M) {
	pgtest.Main(m, &srv, func() {
		if loaded.url != "" {
			_ = exec(srv.URL(), "DROP DATABASE IF EXISTS "+sharedDB+" WITH (FORCE)")
		}
	})
}

const sharedDB = "txload_test_tpcc_shared"

// exec runs sql on the database of url.
func exec(url, sql string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// loaded is a database holding one warehouse, loaded once for the tests
// that only read it or undo what they change.
var loaded struct {
	once sync.Once
	url  string
	log  string
	err  error
}

// loadedDB returns the URL of the shared one-warehouse database.
func loadedDB(t *testing.T) string {
	t.Helper()
	loaded.once.Do(func() {
		// Not t's: the database outlives the test that made it, and is
		// dropped when the package's tests end.
		if loaded.err = exec(srv.URL(), "DROP DATABASE IF EXISTS "+sharedDB+" WITH (FORCE)"); loaded.err != nil {
			return
		}
		if loaded.err = exec(srv.URL(), "CREATE DATABASE "+sharedDB); loaded.err != nil {
			return
		}
		u, err := url.Parse(srv.URL())
		if err != nil {
			loaded.err = err
			return
		}
		u.Path = "/" + sharedDB
		loaded.url = u.String()
		loaded.log, loaded.err = initDB(t, loaded.url)
	})
	if loaded.err != nil {
		t.Fatalf("loading the shared database: %v\n%s", loaded.err, loaded.log)
	}
	return loaded.url
}

// initDB runs init tpcc with args on url and returns its log.
func initDB(t *testing.T, url string, args ...string) (string, error) {
	t.Helper()
	g := newGenerator()
	if err := g.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := g.validate(); err != nil {
		t.Fatal(err)
	}
	tg, err := pg.NewTarget([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	err = g.initTPCC(t.Context(), tg, workload.InitOptions{Log: &log})
	return log.String(), err
}

func target(t *testing.T, url string) *pg.Target {
	t.Helper()
	tg, err := pg.NewTarget([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}
