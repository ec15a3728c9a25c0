package pgbench

import (
	"context"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/workload"
)

// The client's hash of a history row is the server's (identitySQL), and
// the audit finds the subset of in-doubt transactions that committed.
func TestIdentitySum(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	conn := pgtest.Conn(t, url)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `CREATE TABLE pgbench_history (tid int, bid int, aid int, delta int, mtime timestamp, filler char(22));
		INSERT INTO pgbench_history (tid, bid, aid, delta) VALUES (1, 1, 1, -5000), (10, 1, 100000, 5000), (3, 1, 7, 0), (4, 1, 8, NULL)`); err != nil {
		t.Fatal(err)
	}
	const seed = 18446744073709551615
	var buf []byte
	var want, h uint64
	for _, r := range [][4]int64{{1, 1, 1, -5000}, {100000, 10, 1, 5000}, {7, 3, 1, 0}} {
		buf, h = rowHash(buf, seed, r[0], r[1], r[2], r[3])
		want += h
	}
	var s, dated string
	if err := conn.QueryRow(ctx, identitySQL, "18446744073709551615", time.Now()).Scan(&s, &dated); err != nil {
		t.Fatal(err)
	}
	if got, err := workload.HashSum(s, "the history"); err != nil || got != want {
		t.Fatalf("server's sum %s = %d, client's %d (%v)", s, got, want, err)
	}
	// The sum before a run is taken in the client, from the rows COPY
	// sends: the same sum, the row with a NULL adding nothing to either.
	if got, rows, err := workload.CopyHashSum(ctx, conn.PgConn(), seed, identityCopy, nil); err != nil || got != want || rows != 4 {
		t.Fatalf("the copy's sum = %d over %d rows, want %d over 4 (%v)", got, rows, want, err)
	}
	// The rows dated from a time on, summed by both: the literal the
	// copy is given is the parameter the server is, to the microsecond.
	var from time.Time
	if _, err := conn.Exec(ctx, `UPDATE pgbench_history SET mtime = localtimestamp + CASE aid WHEN 1 THEN interval '-1 microsecond' ELSE interval '0' END WHERE aid IN (1, 100000)`); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT max(mtime) FROM pgbench_history`).Scan(&from); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, identitySQL, "18446744073709551615", from).Scan(&s, &dated); err != nil {
		t.Fatal(err)
	}
	_, h = rowHash(buf, seed, 100000, 10, 1, 5000)
	if got, err := workload.HashSum(dated, "the dated rows"); err != nil || got != h {
		t.Fatalf("server's sum of the rows dated from %s = %d, want %d (%v)", from, got, h, err)
	}
	if got, rows, err := workload.CopyHashSum(ctx, conn.PgConn(), seed, datedCopy(from), nil); err != nil || got != h || rows != 1 {
		t.Fatalf("the copy's sum of the rows dated from %s = %d over %d rows, want %d over 1 (%v)", from, got, rows, h, err)
	}

	for _, c := range []struct {
		name             string
		committed, doubt []uint64
		diff             uint64
		unknown          int64
		ok, tried        bool
	}{
		{"all committed", []uint64{5, 1 << 63}, nil, 5 + 1<<63, 0, true, true},
		{"a row missing", []uint64{5, 7}, nil, 5, 0, false, true},
		{"one in doubt committed", []uint64{5}, []uint64{7, 11}, 16, 2, true, true},
		{"none in doubt committed", []uint64{5}, []uint64{7, 11}, 5, 2, true, true},
		{"not a subset", []uint64{5}, []uint64{7, 11}, 6, 2, false, true},
		{"more unknown than known", []uint64{5}, []uint64{7}, 5, 2, false, false},
	} {
		id := &identity{}
		for _, h := range c.committed {
			id.Ended(h, nil)
		}
		for _, h := range c.doubt {
			id.Doubt(h)
		}
		if ok, tried, _ := id.explains(c.diff, c.unknown, nil); ok != c.ok || tried != c.tried {
			t.Errorf("%s: explains = %t, %t; want %t, %t", c.name, ok, tried, c.ok, c.tried)
		}
	}
}
