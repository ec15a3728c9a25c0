package cli

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// The server stops before the end of the run and stays down: the run still
// ends at its duration plus the drain timeout, says the server was
// unreachable, and exits 1 (its audit could not run). Ctrl-C while the
// server is down exits 130.
func TestRunEndsWithServerDown(t *testing.T) {
	s := pgtest.OwnServer(t) // stopped and restarted: a server of its own
	for _, interrupt := range []bool{false, true} {
		t.Run(map[bool]string{false: "to the end", true: "ctrl-c"}[interrupt], func(t *testing.T) {
			if interrupt {
				if err := s.Restart(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			errb, done := txloadAsync(ctx, "run", "bank", "--url", s.URL(), "--duration", "3s", "--drain-timeout", "1s", "--progress", "500ms")
			// The load has run 0.5 s (init takes a while on a busy machine).
			waitForOutput(t, errb, "0.5s ", done)
			start := time.Now().Add(-500 * time.Millisecond)
			time.Sleep(time.Second)
			if err := s.Halt(false); err != nil {
				t.Fatal(err)
			}
			if interrupt {
				time.Sleep(time.Second)
				cancel()
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the run did not end 30 s after the server went away")
			}
			took := time.Since(start)
			want := 1
			if interrupt {
				want = ExitInterrupted
			}
			if r.code != want {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, want, r.stdout, r.stderr)
			}
			if !interrupt && took > 3*time.Second+time.Second+2*time.Second {
				t.Errorf("the run took %s: want its 3 s and the 1 s drain timeout (and the 1 s reconnect backoff)", took)
			}
			mustContain(t, r.stderr, "server unreachable: ")
			mustContain(t, r.stdout, "UNREACHABLE: the server could not be reached")
		})
	}
}

var ambiguousLine = regexp.MustCompile(`ambiguous:\s+(\d+) \((\d+) of them committed, per the ledger: (\d+) rows? = (\d+) committed \+ (\d+)\)`)

// The server crashes and comes back mid-run: the outage is reported with its
// length, failed reconnects are counted, and the transfers whose COMMIT was
// in flight are reconciled with the ledger: committed + committed-ambiguous
// = the ledger's rows, and no more came from ambiguous ones than there were.
func TestOutageReconciled(t *testing.T) {
	t.Parallel()
	s := pgtest.OwnServer(t) // stopped and restarted: a server of its own
	js := jsonPath(t)
	// The embedded server acknowledges commits before their WAL is written
	// (synchronous_commit=off): a crash loses some, and the reconciliation
	// says so (a violation). This run asks for durable commits.
	url := s.URL() + "&options=-c%20synchronous_commit%3Don"
	errb, done := txloadAsync(t.Context(), "run", "bank", "--url", url, "--isolation", "rc", "--transfer", "delta",
		"--selection", "100000", "--concurrency", "8", "--duration", "6s", "--progress", "500ms", "--json", js)
	waitForOutput(t, errb, "1.0s ", done) // init is done and the load has run 1 s
	if err := s.Halt(true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := s.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stderr, "server unreachable: ", "server reachable again after ")
	mustContain(t, r.stdout, "UNREACHABLE: the server could not be reached 1 time,", "check: ok")
	if !regexp.MustCompile(`reconnects \d+`).MatchString(r.stderr) {
		t.Errorf("no progress line counts reconnects:\n%s", r.stderr)
	}
	m := ambiguousLine.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no reconciliation line:\n%s", r.stdout)
	}
	n := make([]int64, len(m))
	for i := 1; i < len(m); i++ {
		n[i], _ = strconv.ParseInt(m[i], 10, 64)
	}
	ambiguous, committedAmbiguous, rows, committed := n[1], n[2], n[3], n[4]
	run := readDoc(t, js).Runs[0]
	ledger := run.Check.Values["ledger_transfers"]
	if rows != ledger || committed != allOf(t, run).Ops[0].OK || committed+committedAmbiguous != ledger ||
		committedAmbiguous < 0 || committedAmbiguous > ambiguous {
		t.Fatalf("ledger %d, committed %d, ambiguous %d of which %d committed:\n%s", ledger, committed, ambiguous, committedAmbiguous, r.stdout)
	}
	t.Logf("ledger %d = committed %d + %d of %d ambiguous", ledger, committed, committedAmbiguous, ambiguous)
}
