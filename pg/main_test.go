package pg

import (
	"context"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// srv is the real PostgreSQL server the tests of this package run against.
var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// testCtx bounds everything a test does against the server, so that a stuck
// lock or a lost wake-up fails the test instead of hanging the run.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
