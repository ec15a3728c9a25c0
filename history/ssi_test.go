package history_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/history"
	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/pgtest"
)

// TestSSISummarization replays, step by step, the G2-item cycle of
// testdata/pg-12.22.0-serializable.jsonl.gz (a read-only transaction
// anomaly) on one server, with and without what happened during it: T3
// reads key 87 (absent), T1 inserts it and commits, read-only T2 reads 87
// (T1's value) and 86 and commits, then T3 appends to 86 and commits.
// Serializable must refuse T3 (it is a pivot: T2 →rw T3 →rw T1, T1
// committed before T2's snapshot). In the recorded history T3 waited a
// second on a row lock while 3,530 other transactions committed, more than
// the server's pool of serializable transaction records ((max_connections
// + other backends) × 10): the oldest committed ones, T2 among them, are
// then summarized, and the conflict of T2's summarized read with T3's
// write is missed. The subtest "filled" commits 4,000 transactions while
// T3 is open. A long suite (pgtest.Long): two servers of their own.
func TestSSISummarization(t *testing.T) {
	pgtest.Long(t, "starts PostgreSQL 12.22.0 and 18.3.0")
	for _, version := range []string{"12.22.0", "18.3.0"} {
		t.Run(version, func(t *testing.T) {
			s, err := embedded.Start(t.Context(), embedded.Options{Major: version, CacheDir: os.Getenv("TXLOAD_CACHE_DIR")})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			for _, filler := range []int{0, 4000} {
				attempts := replay(t, s.URL(), filler)
				r, err := history.Check(attempts)
				if err != nil {
					t.Fatal(err)
				}
				committed := attempts[2].Outcome == history.Committed
				t.Logf("PostgreSQL %s, %d transactions committed while T3 was open: T3 %s, G2-item %d", version, filler, attempts[2].Outcome, r.Count(history.G2Item))
				if committed != (r.Count(history.G2Item) == 1) || len(r.Findings) > 1 {
					t.Errorf("T3 %s, but the checker found %v", attempts[2].Outcome, r.Findings)
				}
				switch {
				case filler == 0 && committed:
					t.Errorf("T3 committed without the filler: serializable should have refused it")
				case filler > 0 && !committed:
					t.Errorf("T3 was refused after %d transactions: this release no longer misses the summarized conflict (update docs/histories.md)", filler)
				}
			}
		})
	}
}

// replay runs the cycle with filler transactions committed while T3 is
// open, and returns the history of T1, T2, T3 and a final read T4.
func replay(t *testing.T, url string, filler int) []history.Attempt {
	ctx := context.Background()
	conns := make([]*pgx.Conn, 4)
	for i := range conns {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		conns[i] = c
	}
	c1, c2, c3, cf := conns[0], conns[1], conns[2], conns[3]
	must := func(c *pgx.Conn, sql string, args ...any) {
		t.Helper()
		if _, err := c.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	must(c1, "DROP TABLE IF EXISTS ssi, ssi_filler; CREATE TABLE ssi (id int PRIMARY KEY, val text); CREATE TABLE ssi_filler (n int); INSERT INTO ssi VALUES (86, '1')")
	read := func(c *pgx.Conn, k int) string {
		var v string
		if err := c.QueryRow(ctx, "SELECT val FROM ssi WHERE id = $1", k).Scan(&v); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return v
	}
	must(c3, "BEGIN ISOLATION LEVEL SERIALIZABLE")
	if v := read(c3, 87); v != "" {
		t.Fatalf("T3 read 87 = %q", v)
	}
	must(c1, "BEGIN ISOLATION LEVEL SERIALIZABLE")
	must(c1, "INSERT INTO ssi VALUES (87, '4')")
	must(c1, "COMMIT")
	must(c2, "BEGIN ISOLATION LEVEL SERIALIZABLE")
	if a, b := read(c2, 87), read(c2, 86); a != "4" || b != "1" {
		t.Fatalf("T2 read %q, %q", a, b)
	}
	must(c2, "COMMIT")
	for i := range filler {
		must(cf, "BEGIN ISOLATION LEVEL SERIALIZABLE")
		must(cf, "INSERT INTO ssi_filler VALUES ($1)", i)
		must(cf, "COMMIT")
	}
	_, err := c3.Exec(ctx, "UPDATE ssi SET val = val || ',6' WHERE id = 86")
	if err == nil {
		_, err = c3.Exec(ctx, "COMMIT")
	}
	t3 := history.Attempt{Client: 3, Invoke: 3, Complete: 8, Ops: []history.Op{history.R(87), history.A(86, 6)}, Outcome: history.Committed}
	var pe *pgconn.PgError
	switch {
	case err == nil:
	case errors.As(err, &pe) && pe.Code == "40001":
		_, _ = c3.Exec(ctx, "ROLLBACK")
		t3.Outcome, t3.SQLState = history.Failed, pe.Code
	default:
		t.Fatal(err)
	}
	t4 := history.Attempt{Client: 1, Invoke: 9, Complete: 10, Outcome: history.Committed,
		Ops: []history.Op{history.R(86, list(read(c1, 86))...), history.R(87, list(read(c1, 87))...)}}
	return []history.Attempt{
		{Client: 1, Invoke: 4, Complete: 5, Ops: []history.Op{history.A(87, 4)}, Outcome: history.Committed},
		{Client: 2, Invoke: 6, Complete: 7, Ops: []history.Op{history.R(87, 4), history.R(86, 1)}, Outcome: history.Committed},
		t3, t4,
		// The table's first row, written before the others began: the
		// value T2 and T4 read at 86 (without it, a garbage read).
		{Client: 4, Invoke: 1, Complete: 2, Ops: []history.Op{history.A(86, 1)}, Outcome: history.Committed},
	}
}

// list reads "1,6".
func list(val string) []int64 {
	l, err := parseList(val)
	if err != nil {
		panic(err)
	}
	return l
}
