package failover

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/pg"
)

// A failover made by a real HA manager, pg_auto_failover (the test of
// pgtest.StartAutoFailover too): a formation comes up with the first node
// primary; rows are committed through its multi-host URL; `pg_autoctl
// perform failover` makes the second node primary; the prober, waiting
// meanwhile, sees the new primary on a new timeline; the URL (pgx and raw
// connections of a pg.Target) then reaches it, and every row committed
// before is there.
func TestAutoFailover(t *testing.T) {
	f := pgtest.StartAutoFailover(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	t.Logf("formation: %s (monitor %s)", f.URL, f.Monitor)
	port := func(url string) int {
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		return int(cfg.Port)
	}
	first, second := port(f.Nodes[0]), port(f.Nodes[1])
	primary, err := f.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if primary != net.JoinHostPort("127.0.0.1", strconv.Itoa(first)) {
		t.Fatalf("the monitor's primary is %s, want the first node (port %d)", primary, first)
	}
	target, err := pg.NewTarget([]string{f.URL})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := landsOn(t, ctx, target); a != first || b != first {
		t.Fatalf("before the failover the URL reached ports %d (pgx) and %d (raw), want the first node's %d", a, b, first)
	}
	conn, err := target.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const rows = 1000
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE k (id int PRIMARY KEY); INSERT INTO k SELECT generate_series(1, %d)", rows)); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	prober, err := NewProber([]string{f.URL})
	if err != nil {
		t.Fatal(err)
	}
	before := prober.Probe(ctx)
	t.Logf("before: %s", before)
	if p, ok := before.Primary(); !ok || p.Addr != primary {
		t.Fatalf("the prober sees %s, want %s primary", before, primary)
	}
	type waited struct {
		s   State
		err error
	}
	seen := make(chan waited, 1)
	go func() {
		s, err := prober.Wait(ctx, before, 100*time.Millisecond)
		seen <- waited{s, err}
	}()
	t.Logf("failover command: %q", f.FailoverCommand())
	t0 := time.Now()
	now, err := f.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(t0)
	if now != net.JoinHostPort("127.0.0.1", strconv.Itoa(second)) {
		t.Fatalf("after the failover the monitor's primary is %s, want the second node (port %d)", now, second)
	}
	w := <-seen
	if w.err != nil {
		t.Fatal(w.err)
	}
	t.Logf("after: %s", w.s)
	t.Logf("pg_autoctl perform failover took %s; the prober saw the new primary %s after it began",
		took.Round(time.Millisecond), w.s.At.Sub(t0).Round(time.Millisecond))
	p, ok := w.s.Primary()
	if !ok || p.Addr != now || p.Timeline <= before.Nodes[0].Timeline || p.SystemID != before.Nodes[0].SystemID {
		t.Errorf("the prober saw %s, want %s primary on a timeline after %d, same system", w.s, now, before.Nodes[0].Timeline)
	}
	if a, b := landsOn(t, ctx, target); a != second || b != second {
		t.Errorf("after the failover the URL reached ports %d (pgx) and %d (raw), want the second node's %d", a, b, second)
	}
	conn, err = target.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	var recovery bool
	if err := conn.QueryRow(ctx, "SELECT count(*), pg_is_in_recovery() FROM k").Scan(&n, &recovery); err != nil {
		t.Fatal(err)
	}
	if n != rows || recovery {
		t.Errorf("the new primary has %d rows (in recovery: %v), want %d committed before the failover", n, recovery, rows)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO k VALUES (0)"); err != nil {
		t.Errorf("a write on the new primary: %v", err)
	}
	// The old primary follows as a standby.
	old := pgtest.Conn(t, f.Nodes[0])
	if err := old.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovery); err != nil || !recovery {
		t.Errorf("the old primary: in recovery %v (%v), want a standby", recovery, err)
	}
}
