package replica

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/pg"
)

func TestParse(t *testing.T) {
	parse := map[string]func(string) (fmt.Stringer, error){
		"replication": func(s string) (fmt.Stringer, error) { return ParseReplication(s) },
		"fault":       func(s string) (fmt.Stringer, error) { return ParseFault(s) },
	}
	for _, tc := range []struct {
		kind, in string
		err      string // "" = parses back to in
	}{
		{"replication", "async", ""}, {"replication", "sync", ""},
		{"replication", "Sync", "want async or sync"}, {"replication", "", "want async or sync"}, {"replication", "remote_apply", "want async or sync"},
		{"fault", "immediate", ""}, {"fault", "kill", ""}, {"fault", "fast", ""},
		{"fault", "smart", "want immediate, kill or fast"}, {"fault", "KILL", "want immediate, kill or fast"}, {"fault", "", "want immediate, kill or fast"},
	} {
		v, err := parse[tc.kind](tc.in)
		if tc.err == "" {
			if err != nil || v.String() != tc.in {
				t.Errorf("%s %q: %v, %v", tc.kind, tc.in, v, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.in)) {
			t.Errorf("%s %q: %v, %v; want an error with %q", tc.kind, tc.in, v, err, tc.err)
		}
	}
	if s := Fault(9).String(); s != "fault(9)" {
		t.Errorf("Fault(9) = %s", s)
	}
}

func TestParseLog(t *testing.T) {
	log := parseLog([]byte(`2025-03-01 10:00:00.123 UTC [42] LOG:  received immediate shutdown request
2025-03-01 10:00:00.130 UTC [42] LOG:  database system is shut down
not a log line
2025-03-01 10:00:01.001 UTC [43] FATAL:  could not receive data from WAL stream: server closed the connection unexpectedly
		This probably means the server terminated abnormally
2025-03-01 10:00:02.500 UTC [44] LOG:  selected new timeline ID: 2
`))
	if len(log) != 4 {
		t.Fatalf("%d lines parsed, want 4:\n%s", len(log), log.text())
	}
	l, ok := log.find("selected new timeline ID: ")
	if !ok || l.pid != 44 || l.level != "LOG" || !l.at.Equal(time.Date(2025, 3, 1, 10, 0, 2, 500e6, time.UTC)) {
		t.Errorf("find: %+v, %v", l, ok)
	}
	if l, ok := log.find("could not receive data"); !ok || l.level != "FATAL" {
		t.Errorf("find FATAL: %+v, %v", l, ok)
	}
	if _, ok := log.find("database system is ready"); ok {
		t.Error("found a line the log does not have")
	}
}

// writer inserts ids 1, 2, ... one commit at a time into t on url until
// stopped, and records which commits were acknowledged and which failed
// (ambiguous: the commit may have happened).
type writer struct {
	mu        sync.Mutex
	acked     []int64
	ambiguous []int64
	err       error
	stop      chan struct{}
	done      chan struct{}
}

func write(ctx context.Context, url string) *writer {
	w := &writer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			w.err = err
			return
		}
		defer conn.Close(context.Background())
		for id := int64(1); ; id++ {
			select {
			case <-w.stop:
				return
			default:
			}
			_, err := conn.Exec(ctx, "INSERT INTO t VALUES ($1)", id)
			w.mu.Lock()
			if err != nil {
				w.ambiguous = append(w.ambiguous, id)
				w.err = err
				w.mu.Unlock()
				return // the primary is gone
			}
			w.acked = append(w.acked, id)
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *writer) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func ids(t *testing.T, ctx context.Context, url string) []int64 {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT id FROM t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// minus is a's ids that b lacks.
func minus(a, b []int64) []int64 {
	var out []int64
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); !found {
			out = append(out, x)
		}
	}
	return out
}

// brief shows a list of ids in a line.
func brief(ids []int64) string {
	if len(ids) <= 10 {
		return fmt.Sprint(ids)
	}
	return fmt.Sprintf("%v ... %v (%d)", ids[:5], ids[len(ids)-5:], len(ids))
}

// lands says which server a connection through url reaches, and checks
// that it takes writes.
func lands(t *testing.T, ctx context.Context, url string) int {
	t.Helper()
	conn, err := pg.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connecting with %s: %v", url, err)
	}
	defer conn.Close(ctx)
	var port int
	var recovery bool
	if err := conn.QueryRow(ctx, "SELECT inet_server_port(), pg_is_in_recovery()").Scan(&port, &recovery); err != nil {
		t.Fatal(err)
	}
	if recovery {
		t.Errorf("%s reached port %d, a standby", url, port)
	}
	if _, err := conn.Exec(ctx, "CREATE TEMP TABLE w (x int)"); err != nil {
		t.Errorf("%s reached port %d, which refuses a write: %v", url, port, err)
	}
	return port
}

// notBefore checks that b is not earlier than a, given the logs' whole
// milliseconds.
func notBefore(t *testing.T, aName string, a time.Time, bName string, b time.Time) {
	t.Helper()
	if b.Before(a.Truncate(time.Millisecond)) {
		t.Errorf("%s %s is before %s %s", bName, b.Format("15:04:05.000000"), aName, a.Format("15:04:05.000000"))
	}
}

// A failover of a pair: writes go on while the standby is held back (or
// not), the primary fails, the standby is promoted and takes the writes
// of clients of the pair's multi-host URL; the old primary, restarted on
// its own, holds every commit it acknowledged. With async replication and
// the standby held back, the commits acknowledged during the hold are on
// the old primary and not on the new one: lost, the same ids both ways.
// With sync replication, or a fast shutdown (which sends all the WAL),
// none is lost.
func TestPairFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two servers per case")
	}
	t.Parallel() // servers of its own, which mostly wait
	for _, tc := range []struct {
		repl     Replication
		fault    Fault
		hold     time.Duration // the standby held back so long before the fault
		wantLoss bool
	}{
		{Async, Kill, time.Second, true},
		{Sync, Immediate, 500 * time.Millisecond, false},
		{Async, Fast, 0, false},
	} {
		t.Run(fmt.Sprintf("%s/%s/hold=%s", tc.repl, tc.fault, tc.hold), func(t *testing.T) {
			t.Parallel() // a pair of its own
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			t0 := time.Now()
			p, err := StartPair(ctx, PairOptions{Server: embedded.Options{Log: testLog{t}, CacheDir: os.Getenv("TXLOAD_CACHE_DIR")},
				Replication: tc.repl, Proxy: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Stop() })
			t.Logf("pair started in %s", time.Since(t0).Round(time.Millisecond))
			for _, url := range []string{p.URL(), p.ConnString()} {
				if port := lands(t, ctx, url); port != p.Primary.Port() {
					t.Errorf("before the failover %s reached port %d, want the primary's %d", url, port, p.Primary.Port())
				}
			}
			run(t, ctx, p.Primary.URL(), "CREATE TABLE t (id bigint PRIMARY KEY)")
			w := write(ctx, p.Primary.URL())
			for w.count() < 50 {
				time.Sleep(5 * time.Millisecond)
			}
			if tc.hold > 0 {
				p.Link.Pause()
				if tc.fault == Fast {
					t.Fatal("a fast shutdown waits for the held-back standby")
				}
				if _, err := p.Fail(ctx, Fast); err == nil || !strings.Contains(err.Error(), "held back") {
					t.Fatalf("a fast shutdown while held back: %v", err)
				}
				before := w.count()
				time.Sleep(tc.hold)
				t.Logf("%d commits acknowledged during the hold", w.count()-before)
			} else {
				time.Sleep(100 * time.Millisecond)
			}
			fe, err := p.Fail(ctx, tc.fault)
			if err != nil {
				t.Fatal(err)
			}
			<-w.done
			if w.err == nil {
				t.Error("the writer saw no error when the primary failed")
			}
			pr, err := p.Promote(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("fault %s sent %s, logged %s, down %s; promotion sent %s, requested %s, ready %s (timeline %d): promotion took %s",
				tc.fault, fe.Sent.Format("15:04:05.000"), fe.Logged.Format("15:04:05.000"), fe.Down.Format("15:04:05.000"),
				pr.Sent.Format("15:04:05.000"), pr.Requested.Format("15:04:05.000"), pr.Ready.Format("15:04:05.000"), pr.Timeline,
				pr.Ready.Sub(pr.Requested))
			if tc.fault == Kill {
				if !fe.Logged.IsZero() {
					t.Errorf("a kill logged at %s", fe.Logged)
				}
			} else {
				notBefore(t, "fault sent", fe.Sent, "logged", fe.Logged)
				notBefore(t, "logged", fe.Logged, "down", fe.Down)
			}
			notBefore(t, "fault sent", fe.Sent, "down", fe.Down)
			notBefore(t, "down", fe.Down, "promotion sent", pr.Sent)
			notBefore(t, "promotion sent", pr.Sent, "requested", pr.Requested)
			notBefore(t, "requested", pr.Requested, "ready", pr.Ready)
			if time.Since(pr.Ready) < 0 || time.Since(pr.Ready) > time.Minute {
				t.Errorf("promotion ready at %s, now is %s: the log's clock is not ours", pr.Ready, time.Now())
			}
			if pr.Timeline != 2 {
				t.Errorf("new timeline %d, want 2", pr.Timeline)
			}
			if _, err := p.Promote(ctx); err == nil {
				t.Error("a second promotion: no error")
			}

			// Clients of the multi-host URLs land on the new primary, which
			// takes writes (a sync pair's new primary waits for no standby).
			for _, url := range []string{p.URL(), p.ConnString()} {
				if port := lands(t, ctx, url); port != p.Standby.Port() {
					t.Errorf("after the failover %s reached port %d, want the new primary's %d", url, port, p.Standby.Port())
				}
			}
			run(t, ctx, p.Standby.URL(), "INSERT INTO t VALUES (-1)")
			newIDs := ids(t, ctx, p.Standby.URL())
			if err := p.RestartOld(ctx); err != nil {
				t.Fatal(err)
			}
			// Still the new primary: the old one is read-only.
			if port := lands(t, ctx, p.URL()); port != p.Standby.Port() {
				t.Errorf("with the old primary back, %s reached port %d", p.URL(), port)
			}
			oldIDs := ids(t, ctx, p.Primary.URL())
			if err := func() error {
				conn, err := pgx.Connect(ctx, p.Primary.URL())
				if err != nil {
					return err
				}
				defer conn.Close(ctx)
				_, err = conn.Exec(ctx, "INSERT INTO t VALUES (-2)")
				return err
			}(); err == nil || !strings.Contains(err.Error(), "read-only") {
				t.Errorf("a write on the restarted old primary: %v, want it refused", err)
			}

			acked := w.acked
			if lost := minus(acked, oldIDs); len(lost) > 0 {
				t.Errorf("the old primary lacks %d commits it acknowledged: %s", len(lost), brief(lost))
			}
			lost := minus(acked, newIDs)
			// What the old primary holds and the new one lacks: the lost
			// commits, and perhaps the commit whose acknowledgement the
			// fault cut off.
			diff := minus(oldIDs, newIDs)
			if got := minus(diff, w.ambiguous); !slices.Equal(got, lost) {
				t.Errorf("old minus new (less the ambiguous %v) = %s, lost acknowledged commits = %s", w.ambiguous, brief(got), brief(lost))
			}
			t.Logf("%d commits acknowledged, %d on the new primary, %d on the old; lost %d, ambiguous %v",
				len(acked), len(newIDs)-1, len(oldIDs), len(lost), w.ambiguous)
			if tc.wantLoss && len(lost) == 0 {
				t.Error("no commit lost with the standby held back under async replication")
			}
			if !tc.wantLoss && len(lost) > 0 {
				t.Errorf("%d acknowledged commits lost: %s", len(lost), brief(lost))
			}
		})
	}
}

// The refusals of a pair used out of order.
func TestPairMisuse(t *testing.T) {
	if _, err := StartPair(t.Context(), PairOptions{Replication: Replication(7)}); err == nil {
		t.Error("StartPair with an unknown replication: no error")
	}
	p := &Pair{}
	if err := p.RestartOld(t.Context()); err == nil || !strings.Contains(err.Error(), "has not failed") {
		t.Errorf("RestartOld before a fault: %v", err)
	}
	if _, err := p.Promote(t.Context()); err == nil || !strings.Contains(err.Error(), "two primaries") {
		t.Errorf("Promote before a fault: %v", err)
	}
	if _, err := (&Pair{failed: true}).Fail(t.Context(), Kill); err == nil || !strings.Contains(err.Error(), "down already") {
		t.Errorf("a second Fail: %v", err)
	}
}
