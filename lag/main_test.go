package lag

import (
	"context"
	"testing"

	"github.com/txload/txload/internal/pgtest"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// exec runs statements on url, failing the test on an error.
func exec(t *testing.T, url string, sqls ...string) {
	t.Helper()
	conn := pgtest.Conn(t, url)
	for _, q := range sqls {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
