package lagrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/lag"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// loadTPCB loads tpcb-like's tables, scale 1, on url.
func loadTPCB(t *testing.T, o Options, url string) {
	t.Helper()
	target, err := pg.NewTarget([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Generator.Hooks().Init(t.Context(), target, workload.InitOptions{Drop: true, Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
}

// count runs a count query on url.
func count(t *testing.T, url, q string) int64 {
	t.Helper()
	var n int64
	if err := pgtest.Conn(t, url).QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// A run whose destination is the source, with a marker inside every
// transaction: what Run returns agrees with what the server holds (a
// stream marker row per acknowledged stream marker, a transaction marker
// and a pgbench_history row per committed transaction), every marker is
// measured, the report and --json say the same.
func TestRunSameDatabase(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	o := options(t, "tpcb-like")
	loadTPCB(t, o, db)
	var out, errb bytes.Buffer
	js := filepath.Join(t.TempDir(), "lag.json")
	o.Source, o.Dest, o.MarkTransactions = db, db, true
	// 20 ops/s over 4 clients: a rate a loaded machine sustains under the
	// race detector (50 over 2 fell behind there, 32 of 100 never started).
	o.Run.Engine.Rate, o.Run.Engine.Duration, o.Run.Engine.Concurrency = 20, 2*time.Second, 4
	o.Run.JSON, o.Run.Stdout, o.Run.Stderr = js, &out, &errb
	res, err := Run(t.Context(), o)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, errb.String(), out.String())
	}
	if res.Mode != "external" || !res.Same || !res.CaughtUp || res.Pending != 0 || res.Interrupted {
		t.Errorf("mode %s, same %v, caught up %v, %d pending, interrupted %v", res.Mode, res.Same, res.CaughtUp, res.Pending, res.Interrupted)
	}
	// A fresh database: the stream is writer 1, the clients 2 to 5.
	stream, marked := count(t, db, "SELECT count(*) FROM "+lag.Table+" WHERE writer = 1"), count(t, db, "SELECT count(*) FROM "+lag.Table+" WHERE writer > 1")
	history := count(t, db, "SELECT count(*) FROM pgbench_history")
	if s := res.Stream; stream < 150 || s.Acked != stream || s.Measured != stream || s.Sent != stream || res.StreamLag.TotalCount() != stream {
		t.Errorf("%d stream markers on the server; the stream's counts %+v", stream, s)
	}
	if x := res.Tx; history < 20 || marked != history || x.Acked != history || x.Measured != history || res.TxLag.TotalCount() != history {
		t.Errorf("%d history rows and %d transaction markers on the server; the transactions' counts %+v", history, marked, x)
	}
	if res.Lag.TotalCount() != stream+history {
		t.Errorf("%d lags in all, want %d", res.Lag.TotalCount(), stream+history)
	}
	all, err := res.Outcome.Result.All()
	if err != nil {
		t.Fatal(err)
	}
	if ok := all.Ops[0].OK; ok != history {
		t.Errorf("the load committed %d transactions, the server holds %d history rows", ok, history)
	}
	c := res.Convergence
	if c == nil || len(c.Failures()) != 0 || len(c.Tables) != 4 || c.Markers.Source != stream+history || c.Markers.Dest != c.Markers.Source {
		t.Errorf("convergence %+v", c)
	}
	for _, s := range []string{"replication lag (the source itself): ", "\n  and a marker inside every transaction: ", "\n  lag per transaction ", "\nconvergence: ok"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("no %q in the report:\n%s", s, out.String())
		}
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var doc Document
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Lag.Markers.Acked != stream || doc.Lag.TxMarkers.Acked != history || !doc.Lag.SameDatabase || len(doc.Runs) != 1 || len(doc.Series) != 1 {
		t.Errorf("--json: %+v", doc.Lag)
	}
}

// Interrupted mid-run: the load stops, the report covers what ran and
// says the convergence was not checked, and Run says it was interrupted.
func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	o := options(t, "tpcb-like")
	loadTPCB(t, o, db)
	var out bytes.Buffer
	var errb syncBuffer
	o.Source, o.Dest = db, db
	o.Run.Engine.Rate, o.Run.Engine.Duration, o.Run.Engine.Concurrency = 50, time.Minute, 2
	o.Run.Stdout, o.Run.Stderr = &out, &errb
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	watch := pgtest.Conn(t, db)
	go func() {
		// The load has started once one of its transactions committed
		// (under the race detector on a loaded machine, a second after
		// the instrument's first line was not always enough: the load had
		// not begun, and the run had no outcome to report).
		for ctx.Err() == nil {
			var n int64
			if err := watch.QueryRow(ctx, "SELECT count(*) FROM pgbench_history").Scan(&n); err != nil || n > 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
		cancel()
	}()
	res, err := Run(ctx, o)
	if !errors.Is(err, runner.ErrInterrupted) {
		t.Fatalf("got %v, want %v\n%s", err, runner.ErrInterrupted, out.String())
	}
	if res == nil || !res.Interrupted || res.Convergence != nil || res.Outcome == nil || !res.Outcome.Result.Interrupted {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(out.String(), "INTERRUPTED: ") || strings.Contains(out.String(), "convergence:") {
		t.Errorf("report:\n%s", out.String())
	}
}

// syncBuffer is a buffer read while Run writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A destination without the workload's tables is refused as bad input,
// before anything is written on either side.
func TestRunRefusesDestWithoutTables(t *testing.T) {
	t.Parallel()
	src, dst := srv.NewDatabase(t), srv.NewDatabase(t)
	o := options(t, "tpcb-like")
	loadTPCB(t, o, src)
	o.Source, o.Dest = src, dst
	o.Run.Stdout, o.Run.Stderr = io.Discard, io.Discard
	_, err := Run(t.Context(), o)
	var ue *runner.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "lacks the tables of tpcb-like: pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history; create them there") {
		t.Fatalf("got %v", err)
	}
	for _, db := range []string{src, dst} {
		if missing, err := lag.MissingTables(t.Context(), pgtest.Conn(t, db), []string{lag.Table}); err != nil || len(missing) == 0 {
			t.Errorf("%s created (%v)", lag.Table, err)
		}
	}
}

// A rate the source does not sustain: lag measured under less load than
// asked is a failed run, as `txload run` is (BEHIND, exit 1), though the
// destination converged. The code before it ended such a run with nil.
func TestRunBehindFails(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	o := options(t, "tpcb-like")
	loadTPCB(t, o, db)
	var out, errb bytes.Buffer
	o.Source, o.Dest = db, db
	// One client cannot start 100,000 transactions a second: almost all
	// of them are never started.
	o.Run.Engine.Rate, o.Run.Engine.Duration, o.Run.Engine.Concurrency = 100000, time.Second, 1
	o.Run.Stdout, o.Run.Stderr = &out, &errb
	res, err := Run(t.Context(), o)
	if err == nil || !strings.HasPrefix(err.Error(), "behind: the database did not sustain 100000 ops/s: ") {
		t.Fatalf("Run: %v, want the BEHIND error\n%s\n%s", err, errb.String(), out.String())
	}
	if res == nil || res.Convergence == nil || len(res.Convergence.Failures()) != 0 {
		t.Errorf("the destination is the source: it converged, whatever the rate (%+v)", res)
	}
	if !strings.Contains(out.String(), "BEHIND: ") {
		t.Errorf("no BEHIND line in the report:\n%s", out.String())
	}
}
