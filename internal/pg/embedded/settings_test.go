package embedded

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Extra settings reach the server, override txload's own, and survive a
// restart; a malformed one is refused before anything starts.
func TestSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	if _, err := Start(t.Context(), Options{Settings: []string{"wal_level"}}); err == nil || !strings.Contains(err.Error(), `"wal_level": want name=value`) {
		t.Fatalf("a setting without a value: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{Log: testLog{t}, Settings: []string{"wal_level=logical", "synchronous_commit=on"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	check := func() {
		t.Helper()
		conn, err := pgx.Connect(ctx, s.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var wal, sync, fsync string
		if err := conn.QueryRow(ctx, "SELECT current_setting('wal_level'), current_setting('synchronous_commit'), current_setting('fsync')").Scan(&wal, &sync, &fsync); err != nil {
			t.Fatal(err)
		}
		if wal != "logical" || sync != "on" || fsync != "off" {
			t.Errorf("wal_level %s, synchronous_commit %s, fsync %s; want logical, on (overriding txload's off), off (txload's)", wal, sync, fsync)
		}
	}
	check()
	if err := s.Halt(false); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	check()
}
