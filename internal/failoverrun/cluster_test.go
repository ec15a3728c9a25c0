package failoverrun

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/pg/replica"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/lag"
	"github.com/txload/txload/pg"
)

// startPair starts an embedded primary and standby for a test that treats
// them as a cluster of its own (--url).
func startPair(t *testing.T, r replica.Replication) *replica.Pair {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an embedded primary and standby")
	}
	p, err := replica.StartPair(t.Context(), replica.PairOptions{Replication: r,
		Server: embedded.Options{CacheDir: os.Getenv("TXLOAD_CACHE_DIR")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return p
}

// clusterOptions is `txload failover bank --url URL --init fresh`.
func clusterOptions(t *testing.T, url string) (Options, *buffer) {
	o, out := options(t, "bank")
	o.URL, o.Replications = url, nil
	o.Run.InitSet = true
	return o, out
}

// A cluster's failover by --failover-command (a shell command: the
// primary's postmaster gets SIGQUIT, the standby is promoted with psql),
// and one txload only waits for, made by the test during the run (the
// target in libpq's keyword form): both are seen, the unavailability
// measured, nothing lost (sync), the check clean.
func TestCluster(t *testing.T) {
	t.Parallel() // a pair of its own; the failover waits more than it computes
	for _, mode := range []string{"command", "wait", "late"} {
		t.Run(mode, func(t *testing.T) {
			p := startPair(t, replica.Sync)
			url := p.URL()
			if mode == "wait" {
				url = p.ConnString() // libpq's keyword form: host=a,b port=p,q
			}
			o, out := clusterOptions(t, url)
			pid := filepath.Join(p.Primary.DataDir(), "postmaster.pid")
			switch mode {
			case "command":
				o.FailoverCommand = fmt.Sprintf(`kill -QUIT "$(head -1 %s)" && sleep 0.3 && psql -XAtq %q -c "SELECT pg_promote()"`, pid, p.Standby.URL())
			case "late":
				// The promotion comes after the load's end: the audit
				// waits for it, and the report says so.
				o.Run.Engine.Duration, o.At = 3*time.Second, 2*time.Second
				o.FailoverCommand = fmt.Sprintf(`kill -QUIT "$(head -1 %s)" && sleep 2 && psql -XAtq %q -c "SELECT pg_promote()"`, pid, p.Standby.URL())
			default:
				go func() {
					time.Sleep(3 * time.Second) // the load starts after the init, about 1 s in
					if _, err := p.Fail(context.Background(), replica.Immediate); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(300 * time.Millisecond)
					if _, err := p.Promote(context.Background()); err != nil {
						t.Error(err)
					}
				}()
			}
			r, err := runFailover(t, o)
			t.Logf("\n%s", section(out.String()))
			if err != nil {
				t.Fatal(err)
			}
			if r.FaultSent.IsZero() || r.NewPrimary.IsZero() || r.FirstNew.IsZero() || r.Timeline != 2 {
				t.Fatalf("fault %s, new primary %s (timeline %d), first commit there %s: want all seen", clock(r.FaultSent), clock(r.NewPrimary), r.Timeline, clock(r.FirstNew))
			}
			if r.Unavailable <= 0 || r.Tally.Lost != 0 || r.Tally.Acked < 100 {
				t.Fatalf("unavailable %s, lost %d of %d", r.Unavailable, r.Tally.Lost, r.Tally.Acked)
			}
			if r.Outcome == nil || r.Outcome.Check == nil || len(r.Outcome.Check.Violations) > 0 {
				t.Fatalf("bank's check after the failover: %+v", r.Outcome)
			}
			if late := strings.Contains(out.String(), "after the load's end"); late != (mode == "late") {
				t.Fatalf("mode %s: the report says the new primary came after the load's end: %v", mode, late)
			}
		})
	}
}

// What is found only at run time ends the run with an error (exit 1), in
// one line: a failover command that fails, one that never completes, a
// cluster whose standby does not replicate (found before the load: no
// marker is written), no failover while txload waits for one.
func TestClusterFailures(t *testing.T) {
	t.Parallel() // a pair of its own; the failover waits more than it computes
	p := startPair(t, replica.Async)
	for _, tc := range []struct {
		name     string
		set      func(o *Options)
		want     string
		nothing  bool // nothing was run
		settings bool // a *workload.SettingsError: exit 2, as run
	}{
		{"command fails", func(o *Options) { o.FailoverCommand = "echo trying; echo no such formation >&2; exit 3" }, "--failover-command failed (exit status 3): no such formation", false, false},
		{"command hangs", func(o *Options) { o.FailoverCommand, o.FailoverTimeout = "sleep 60", time.Second }, "--failover-command did not complete within --failover-timeout 1s", false, false},
		{"no failover", func(o *Options) { o.Run.Engine.Duration = 2 * time.Second; o.At = time.Second }, "no failover happened during the load (--duration 2s)", false, false},
		{"tables of other settings", func(o *Options) {
			// --init keep on bank tables init made with 77 accounts.
			other, _ := options(t, "bank", "--accounts", "77")
			if err := runner.Init(t.Context(), other.Generator, runner.TargetOptions{URLs: []string{p.URL()}, Quiet: true}, true, io.Discard); err != nil {
				t.Fatal(err)
			}
			o.Run.Init = "keep"
		}, "the bank schema exists with other settings (accounts=77", true, true},
		{"standby down", func(o *Options) {
			if err := p.Standby.Stop(); err != nil {
				t.Fatal(err)
			}
		}, "no standby streams from the primary", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, out := clusterOptions(t, p.URL())
			o.Run.Engine.Duration, o.At = 3*time.Second, time.Second
			tc.set(&o)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			rs, err := Run(ctx, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want one line with %q\n%s", err, tc.want, out)
			}
			t.Logf("%v", err)
			if tc.settings != (runner.SettingsErr(err) != nil) {
				t.Fatalf("a settings error (exit 2): %v, want %v", runner.SettingsErr(err) != nil, tc.settings)
			}
			if tc.nothing && strings.Contains(out.String(), "bank on") {
				t.Fatalf("the load ran:\n%s", out)
			}
			if tc.nothing && !tc.settings && len(rs) > 0 {
				t.Fatalf("the load ran:\n%s", out)
			}
		})
	}
}

// A split brain: the --failover-command stops the primary, promotes the
// standby, then starts the old primary again, writable (the pair's
// multi-host URL, target_session_attrs=read-write, names it first). The
// report names the standby as the new primary: the markers are counted
// there and bank's check runs there, never on the first writable host;
// the report says in one line that two nodes took writes (exit 1); the
// commits the old primary took are lost commits it holds, and bank's check
// finds exactly those of the clients missing, by their markers.
func TestClusterSplitBrain(t *testing.T) {
	t.Parallel() // a pair of its own; the failover waits more than it computes
	p := startPair(t, replica.Async)
	o, out := clusterOptions(t, p.URL())
	o.Run.Engine.Duration, o.At = 10*time.Second, 2*time.Second
	dir := t.TempDir()
	// The command asks the test to do it (the servers run as the test's
	// processes) and waits until it is done.
	o.FailoverCommand = fmt.Sprintf(`touch %[1]s/go && while [ ! -e %[1]s/done ]; do sleep 0.05; done`, dir)
	newAddr := fmt.Sprintf("127.0.0.1:%d", p.Standby.Port())
	oldAddr := fmt.Sprintf("127.0.0.1:%d", p.Primary.Port())
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		ctx := context.Background()
		if _, err := p.Fail(ctx, replica.Immediate); err != nil {
			t.Error(err)
		}
		if _, err := p.Promote(ctx); err != nil {
			t.Error(err)
		}
		// The old primary back, writable: clients that reconnect now
		// land on it, the first host of the URL. Those on the new
		// primary are made to reconnect.
		if err := p.Primary.Restart(ctx); err != nil {
			t.Error(err)
		}
		conn, err := pg.Connect(ctx, p.Standby.URL())
		if err != nil {
			t.Error(err)
		} else {
			if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'txload' AND pid <> pg_backend_pid()"); err != nil {
				t.Error(err)
			}
			conn.Close(ctx)
		}
		if err := os.WriteFile(filepath.Join(dir, "done"), nil, 0o644); err != nil {
			t.Error(err)
		}
	}()
	r, err := runFailover(t, o)
	t.Logf("\n%s", section(out.String()))
	if err == nil || !strings.Contains(err.Error(), "SPLIT BRAIN: two nodes took writes after the failover: the new primary "+newAddr+" (timeline 2) and "+oldAddr+" (timeline 1), which took ") {
		t.Fatalf("the run's error %v: want the split brain in one line, the new primary %s and the old %s", err, newAddr, oldAddr)
	}
	if !strings.Contains(out.String(), "not on the new primary "+newAddr) {
		t.Errorf("the report does not name the node counted on, %s", newAddr)
	}
	// Counted on the new primary: it holds the acknowledged markers less
	// the lost, and the ambiguous and unresolved ones found; the old
	// primary holds every lost one.
	tl := r.Tally
	newMarkers, newLedger := markers(t, p.Standby.URL())
	oldMarkers, _ := markers(t, p.Primary.URL())
	if n := int64(len(newMarkers)); n != tl.Acked-tl.Lost+tl.Survived+tl.Found+tl.Phantom {
		t.Errorf("the new primary holds %d markers; txload counts %d acknowledged − %d lost + %d ambiguous + %d unresolved + %d phantoms there",
			n, tl.Acked, tl.Lost, tl.Survived, tl.Found, tl.Phantom)
	}
	for _, c := range tl.LostIDs {
		m := lag.Marker{Writer: c.Writer, Seq: c.Seq}
		if _, ok := oldMarkers[m]; !ok {
			t.Errorf("lost commit %d/%d is not on the old primary", c.Writer, c.Seq)
		}
	}
	// bank's check ran on the new primary, and reconciled by identity:
	// the client commits it lacks are exactly the missing transfers, one
	// ledger row per transfer marker there.
	chk := r.Outcome.Check
	if chk == nil {
		t.Fatal("no check")
	}
	if lost := tl.Lost - tl.LostProbe; chk.Values["committed_missing"] != lost || (lost > 0) != (len(chk.Violations) > 0) {
		t.Errorf("bank's check: %d committed missing (violations %q); the markers say %d client commits lost", chk.Values["committed_missing"], chk.Violations, lost)
	}
	transfers, rows := 0, 0
	for m := range newMarkers {
		if m.Writer != 1 { // the probe's write no ledger row
			transfers++
		}
	}
	for _, n := range newLedger {
		rows += n
	}
	if transfers != rows {
		t.Errorf("the new primary holds %d ledger rows and %d transfer markers", rows, transfers)
	}
	if tl.Lost-tl.LostProbe == 0 {
		t.Errorf("no client commit landed on the old primary: the split brain took no workload writes")
	}
	t.Logf("lost %d (%d of the probe's), all on the old primary; bank: %v", tl.Lost, tl.LostProbe, chk.Violations)
}
