package failover

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/pg/replica"
	"github.com/txload/txload/pg"
)

func TestNewProber(t *testing.T) {
	for _, tc := range []struct {
		name  string
		urls  []string
		addrs []string // nil: an error
		err   string
	}{
		{"one URL", []string{"postgres://u@db1:5433/x"}, []string{"db1:5433"}, ""},
		{"multi-host URL", []string{"postgres://u@h1:5432,h2:5433/x?target_session_attrs=read-write"}, []string{"h1:5432", "h2:5433"}, ""},
		{"keyword form", []string{"host=h1,h2 port=5432,5433 user=u dbname=x target_session_attrs=read-write"}, []string{"h1:5432", "h2:5433"}, ""},
		{"a host in several URLs, probed once", []string{"postgres://u@h1,h2/x", "postgres://u@h2:5432,h3/x"}, []string{"h1:5432", "h2:5432", "h3:5432"}, ""},
		{"sslmode=prefer tries each host twice: one node each", []string{"postgres://u@h1:1,h2:2/x?sslmode=prefer"}, []string{"h1:1", "h2:2"}, ""},
		{"IPv6", []string{"postgres://u@[::1]:5432,[::1]:5433/x"}, []string{"[::1]:5432", "[::1]:5433"}, ""},
		{"no URL", nil, nil, "--url is empty"},
		{"an empty URL", []string{" "}, nil, "--url is empty"},
		{"a bad URL, its password hidden", []string{"postgres://u:s3cret@h1:notaport/x"}, nil, "parsing postgres://u:xxxxx@h1:notaport/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewProber(tc.urls)
			if tc.addrs == nil {
				if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("NewProber(%q): %v, want an error with %q and no password", tc.urls, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Addrs(); !slices.Equal(got, tc.addrs) {
				t.Errorf("Addrs() = %q, want %q", got, tc.addrs)
			}
			for _, n := range p.nodes {
				if n.cfg.ValidateConnect != nil {
					t.Errorf("%s: the probe keeps target_session_attrs, and would pass over standbys", n.addr)
				}
				if n.cfg.ConnectTimeout != DefaultProbeTimeout {
					t.Errorf("%s: connect timeout %s, want %s", n.addr, n.cfg.ConnectTimeout, DefaultProbeTimeout)
				}
				for _, f := range n.cfg.Fallbacks {
					if pg.Address(f.Host, f.Port) != n.addr {
						t.Errorf("%s: falls back to %s:%d", n.addr, f.Host, f.Port)
					}
				}
			}
		})
	}
}

func TestChanged(t *testing.T) {
	primary := func(addr string, timeline uint32) Node {
		return Node{Addr: addr, SystemID: 7, Timeline: timeline}
	}
	standby := func(addr string) Node { return Node{Addr: addr, SystemID: 7, Timeline: 1, Recovery: true} }
	down := func(addr string) Node { return Node{Addr: addr, Err: errors.New("connection refused")} }
	state := func(nodes ...Node) State { return State{Nodes: nodes} }
	healthy := state(primary("a:1", 1), standby("b:1"))
	for _, tc := range []struct {
		name    string
		before  State
		now     State
		changed bool
	}{
		{"nothing happened", healthy, healthy, false},
		{"the primary is down, no new one yet", healthy, state(down("a:1"), standby("b:1")), false},
		{"the standby took over", healthy, state(down("a:1"), primary("b:1", 2)), true},
		{"roles swapped (the old primary follows)", healthy, state(standby("a:1"), primary("b:1", 2)), true},
		{"the old primary back read-only beside the new", healthy, state(Node{Addr: "a:1", SystemID: 7, Timeline: 1, ReadOnly: true}, primary("b:1", 2)), true},
		{"one address (a proxy, a VIP): a new timeline", state(primary("vip:1", 1)), state(primary("vip:1", 2)), true},
		{"one address, restarted in place", state(primary("vip:1", 1)), state(Node{Addr: "vip:1", SystemID: 7, Timeline: 1, Started: time.Now()}), false},
		{"another cluster behind the address", state(primary("vip:1", 1)), state(Node{Addr: "vip:1", SystemID: 8, Timeline: 1}), true},
		{"split brain: the old primary writable again beside the new", healthy, state(primary("a:1", 1), primary("b:1", 2)), true},
		{"two new primaries", healthy, state(down("a:1"), primary("b:1", 2), primary("c:1", 2)), false},
		{"no primary before, one now", state(down("a:1"), standby("b:1")), healthy, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Changed(tc.before, tc.now); got != tc.changed {
				t.Errorf("Changed = %v, want %v (before %s; now %s)", got, tc.changed, tc.before, tc.now)
			}
		})
	}
}

// landsOn connects through t (Connect, then ConnectRaw, the driver's way)
// and returns the ports each reached.
func landsOn(t *testing.T, ctx context.Context, target *pg.Target) (pgxPort, rawPort int) {
	t.Helper()
	conn, err := target.Connect(ctx)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, "SELECT inet_server_port()").Scan(&pgxPort); err != nil {
		t.Fatal(err)
	}
	raw, err := target.ConnectRaw(ctx)
	if err != nil {
		t.Fatalf("ConnectRaw: %v", err)
	}
	defer raw.Close(ctx)
	res := raw.ExecParams(ctx, "SELECT inet_server_port()", nil, nil, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 {
		t.Fatalf("raw query: %v", res.Err)
	}
	for _, c := range res.Rows[0][0] {
		rawPort = rawPort*10 + int(c-'0')
	}
	return pgxPort, rawPort
}

// A failover seen from the client side: before it, the prober sees the
// primary and its standby of the same cluster, and txload's target (pgx
// and raw connections) lands on the primary through the multi-host URLs;
// with the primary down there is no primary and no connection; once the
// standby is promoted, Wait sees a new primary on a new timeline, and the
// target lands on it, also once the old primary is back (read-only).
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two servers")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	p, err := replica.StartPair(ctx, replica.PairOptions{Server: embedded.Options{CacheDir: os.Getenv("TXLOAD_CACHE_DIR")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	primary, standby := p.Primary.Port(), p.Standby.Port()
	prober, err := NewProber([]string{p.URL()})
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]*pg.Target{}
	for _, u := range []string{p.URL(), p.ConnString()} {
		if targets[u], err = pg.NewTarget([]string{u}); err != nil {
			t.Fatal(err)
		}
	}

	before := prober.Probe(ctx)
	t.Logf("before: %s", before)
	if len(before.Nodes) != 2 {
		t.Fatalf("%d nodes probed, want 2", len(before.Nodes))
	}
	first, second := before.Nodes[0], before.Nodes[1]
	if !first.Writable() || first.Timeline != 1 || !second.Recovery || !second.ReadOnly || second.Err != nil {
		t.Fatalf("before the failover: %s, want a primary on timeline 1 then a standby", before)
	}
	if first.SystemID == 0 || first.SystemID != second.SystemID {
		t.Errorf("system identifiers %d and %d: want the same cluster's", first.SystemID, second.SystemID)
	}
	if first.Started.IsZero() || time.Since(first.Started) > time.Hour {
		t.Errorf("primary started at %s", first.Started)
	}
	if got, ok := before.Primary(); !ok || got.Addr != first.Addr {
		t.Errorf("Primary() = %s, %v", got, ok)
	}
	for u, target := range targets {
		if a, b := landsOn(t, ctx, target); a != primary || b != primary {
			t.Errorf("before the failover %s landed on ports %d (pgx) and %d (raw), want the primary's %d", u, a, b, primary)
		}
	}

	type waited struct {
		s   State
		err error
	}
	seen := make(chan waited, 1)
	const interval = 50 * time.Millisecond
	go func() {
		s, err := prober.Wait(ctx, before, interval)
		seen <- waited{s, err}
	}()
	fault, err := p.Fail(ctx, replica.Immediate)
	if err != nil {
		t.Fatal(err)
	}
	during := prober.Probe(ctx)
	t.Logf("during: %s", during)
	if _, ok := during.Primary(); ok || Changed(before, during) || during.Nodes[0].Err == nil {
		t.Errorf("with the primary down: %s", during)
	}
	for u, target := range targets {
		_, err := target.Connect(ctx)
		if err == nil {
			t.Errorf("%s connected with the primary down", u)
			continue
		}
		t.Logf("connecting with the primary down: %v", err)
	}
	select {
	case w := <-seen:
		t.Fatalf("Wait returned before the promotion: %s, %v", w.s, w.err)
	case <-time.After(200 * time.Millisecond):
	}
	promo, err := p.Promote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := <-seen
	if w.err != nil {
		t.Fatal(w.err)
	}
	t.Logf("after: %s", w.s)
	got, ok := w.s.Primary()
	if !ok || got.Addr != second.Addr || got.Timeline != promo.Timeline || got.SystemID != first.SystemID {
		t.Errorf("after the promotion: %s, want %s primary on timeline %d", w.s, second.Addr, promo.Timeline)
	}
	t.Logf("fault sent %s; promotion requested %s, ready %s (%s after the fault); new primary seen %s, %s after the log's ready (probing every %s)",
		fault.Sent.Format("15:04:05.000"), promo.Requested.Format("15:04:05.000"), promo.Ready.Format("15:04:05.000"),
		promo.Ready.Sub(fault.Sent).Round(time.Millisecond), w.s.At.Format("15:04:05.000"),
		w.s.At.Sub(promo.Ready).Round(time.Millisecond), interval)
	// The startup process ends recovery (pg_is_in_recovery() turns false)
	// before the postmaster logs "ready to accept connections": a probe
	// can see the new primary a moment before that line (1 ms was seen),
	// never before the promotion was asked for.
	if w.s.At.Before(promo.Requested.Truncate(time.Millisecond)) {
		t.Errorf("new primary seen at %s, before the promotion was requested at %s", w.s.At, promo.Requested)
	}
	if early := promo.Ready.Sub(w.s.At); early > 50*time.Millisecond {
		t.Errorf("new primary seen at %s, %s before the log says the promotion ended (%s)", w.s.At, early, promo.Ready)
	}
	for u, target := range targets {
		if a, b := landsOn(t, ctx, target); a != standby || b != standby {
			t.Errorf("after the failover %s landed on ports %d (pgx) and %d (raw), want the new primary's %d", u, a, b, standby)
		}
	}
	if err := p.RestartOld(ctx); err != nil {
		t.Fatal(err)
	}
	after := prober.Probe(ctx)
	if n := after.Nodes[0]; n.Err != nil || n.Recovery || !n.ReadOnly || n.Timeline != 1 || n.Writable() {
		t.Errorf("the old primary back: %s, want read-only on timeline 1", n)
	}
	if got, ok := after.Primary(); !ok || got.Addr != second.Addr {
		t.Errorf("with the old primary back: %s", after)
	}
	for u, target := range targets {
		if a, b := landsOn(t, ctx, target); a != standby || b != standby {
			t.Errorf("with the old primary back %s landed on ports %d (pgx) and %d (raw), want the new primary's %d", u, a, b, standby)
		}
	}
}

// Wait gives up with ctx, saying what it saw last.
func TestWaitTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("")
	}
	p, err := NewProber([]string{"postgres://u@127.0.0.1:1/x?connect_timeout=1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	s, err := p.Wait(ctx, State{}, 50*time.Millisecond)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "127.0.0.1:1: connecting") {
		t.Errorf("Wait: %v", err)
	}
	if len(s.Nodes) != 1 || s.Nodes[0].Err == nil || strings.Contains(s.Nodes[0].Err.Error(), "failed to connect to") {
		t.Errorf("last state %s", s)
	}
	if _, err := p.Wait(t.Context(), State{}, 0); err == nil {
		t.Error("Wait with interval 0: no error")
	}
}
