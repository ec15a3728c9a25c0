//go:build !unix

package pgtest

import "testing"

// Pgbouncer skips: the tests run PgBouncer only on Unix.
func Pgbouncer(t testing.TB, dsn, mode string) string {
	t.Skip("pgbouncer tests run on Unix only")
	return ""
}
