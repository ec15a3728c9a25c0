package failoverrun

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pg/replica"
	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/lag"
)

// runFailover runs o, failing t on a usage error.
func runFailover(t *testing.T, o Options) (*Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	rs, err := Run(ctx, o)
	if len(rs) != 1 {
		t.Fatalf("%d results (%v), want 1", len(rs), err)
	}
	return rs[0], err
}

// Sync replication loses no acknowledged commit, whatever kills the
// primary; the write unavailability agrees with the server logs: the last
// commit on the old primary came before it was down, the first on the new
// one after the promotion was requested, and their distance is the time
// from the fault to the log's "ready to accept connections" within the
// precision the report states (plus the log's millisecond).
func TestEmbeddedSync(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded primary and standby")
	}
	t.Parallel() // a pair of its own; the failover waits more than it computes
	for _, fault := range []string{"immediate", "kill", "fast"} {
		t.Run(fault, func(t *testing.T) {
			o, out := options(t, "bank")
			o.Replications, o.Fault = []string{"sync"}, fault
			r, err := runFailover(t, o)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Logf("\n%s", section(out.String()))
			tl := r.Tally
			if tl.Lost != 0 || tl.Phantom != 0 || tl.Acked < 100 {
				t.Fatalf("acknowledged %d, lost %d, phantoms %d: want 0 lost of many", tl.Acked, tl.Lost, tl.Phantom)
			}
			if r.Outcome == nil || r.Outcome.Check == nil || len(r.Outcome.Check.Violations) > 0 {
				t.Fatalf("bank's check after the failover: %+v", r.Outcome)
			}
			// Writes stop between the signal and the old primary's end (a
			// kill first stops the postmaster, then finds its children),
			// and resume between the promotion's request and its "ready"
			// (to the probe's precision): the unavailability lies within.
			lo, hi := r.PromoteRequested.Sub(r.FaultDown)-time.Millisecond, r.NewPrimary.Sub(r.FaultSent)+r.Precision+time.Millisecond
			if r.FirstNew.IsZero() || r.LastOld.After(r.FaultDown.Add(time.Millisecond)) || r.FirstNew.Before(r.PromoteRequested) ||
				r.Unavailable < lo || r.Unavailable > hi {
				t.Fatalf("write unavailability %s (last commit on the old primary %s, first on the new %s), the logs say %s..%s (fault sent %s, down %s; promotion requested %s, ready %s; precision ±%s)",
					r.Unavailable, clock(r.LastOld), clock(r.FirstNew), lo, hi, clock(r.FaultSent), clock(r.FaultDown), clock(r.PromoteRequested), clock(r.NewPrimary), r.Precision)
			}
			if r.Lag == nil || len(r.Lag.Standbys) != 1 || r.Lag.Standbys[0].SyncState != "sync" {
				t.Fatalf("replication before the fault: %+v", r.Lag)
			}
		})
	}
}

// section is the failover's block of a report.
func section(s string) string {
	if i := strings.Index(s, "failover: "); i >= 0 {
		return s[i:]
	}
	return s
}

// markers reads the markers (writer/seq -> xmin) and bank's ledger rows
// (xmin -> rows) on url.
func markers(t *testing.T, url string) (map[lag.Marker]string, map[string]int) {
	t.Helper()
	conn := pgtest.Conn(t, url)
	ctx := t.Context()
	ms := map[lag.Marker]string{}
	rows, err := conn.Query(ctx, "SELECT writer, seq, xmin::text FROM "+lag.Table)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var m lag.Marker
		var x string
		if err := rows.Scan(&m.Writer, &m.Seq, &x); err != nil {
			t.Fatal(err)
		}
		ms[m] = x
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	ledger := map[string]int{}
	rows, err = conn.Query(ctx, "SELECT xmin::text FROM bank_ledger")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var x string
		if err := rows.Scan(&x); err != nil {
			t.Fatal(err)
		}
		ledger[x]++
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return ms, ledger
}

// Async replication with the standby held back 2 s before a kill: txload
// reports N lost commits, N > 0, and they are exactly what the old primary
// holds (restarted on its own) and the new one lacks, by marker id, less
// the ambiguous commits; and the bank's own ledger rows the new primary
// lacks are those very transactions (the same xmin, which physical
// replication keeps).
func TestEmbeddedAsyncHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded primary and standby")
	}
	t.Parallel() // a pair of its own; the failover waits more than it computes
	o, out := options(t, "bank")
	o.Replications, o.Fault, o.HoldStandby, o.At = []string{"async"}, "kill", 2*time.Second, 3*time.Second
	o.Run.Engine.Duration = 5 * time.Second
	var oldMarkers, newMarkers map[lag.Marker]string
	var oldLedger, newLedger map[string]int
	o.inspect = func(p *replica.Pair, _ *Result) {
		if !p.Primary.Running() { // failover restarts it to read it
			if err := p.RestartOld(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		oldMarkers, oldLedger = markers(t, p.Primary.URL())
		newMarkers, newLedger = markers(t, p.Standby.URL())
	}
	r, err := runFailover(t, o)
	t.Logf("\n%s", section(out.String()))
	tl := r.Tally
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("async: %d acknowledged commits lost by the failover", tl.Lost)) {
		t.Fatalf("the run's error: %v, want the %d lost commits said", err, tl.Lost)
	}
	if tl.Lost == 0 || tl.Lost != int64(len(tl.LostIDs)) {
		t.Fatalf("lost %d (%d listed): want some, each listed", tl.Lost, len(tl.LostIDs))
	}
	var gone []lag.Marker // on the old primary, not on the new
	for m := range oldMarkers {
		if _, ok := newMarkers[m]; !ok {
			gone = append(gone, m)
		}
	}
	ambiguous := map[lag.Marker]bool{}
	for _, c := range tl.AmbiguousIDs {
		ambiguous[lag.Marker{Writer: c.Writer, Seq: c.Seq}] = true
	}
	var lost, goneAcked []lag.Marker
	for _, c := range tl.LostIDs {
		lost = append(lost, lag.Marker{Writer: c.Writer, Seq: c.Seq})
	}
	for _, m := range gone {
		if !ambiguous[m] {
			goneAcked = append(goneAcked, m)
		}
	}
	cmp := func(a, b lag.Marker) int {
		if a.Writer != b.Writer {
			return a.Writer - b.Writer
		}
		return int(a.Seq - b.Seq)
	}
	slices.SortFunc(lost, cmp)
	slices.SortFunc(goneAcked, cmp)
	if !slices.Equal(lost, goneAcked) {
		t.Fatalf("txload lost %d commits; the old primary holds %d markers the new lacks (%d of them ambiguous): not the same ids",
			len(lost), len(gone), len(gone)-len(goneAcked))
	}
	// The bank's own ledger agrees: on each server, one ledger row per
	// transfer's marker (the probe's, writer 1 on a fresh pair, write
	// none), and every lost transfer's marker on the old primary shares
	// its transaction (xmin) with a ledger row there. (Xids are not
	// compared across the servers: the new primary hands out again those
	// the old one used after the standby fell behind.)
	for _, side := range []struct {
		name    string
		markers map[lag.Marker]string
		ledger  map[string]int
	}{{"old", oldMarkers, oldLedger}, {"new", newMarkers, newLedger}} {
		n, rows := 0, 0
		for m := range side.markers {
			if m.Writer != 1 {
				n++
			}
		}
		for _, c := range side.ledger {
			rows += c
		}
		if n != rows {
			t.Fatalf("the %s primary holds %d ledger rows and %d transfer markers", side.name, rows, n)
		}
	}
	ledgerLost := 0
	for _, m := range goneAcked {
		if m.Writer == 1 {
			continue
		}
		if oldLedger[oldMarkers[m]] != 1 {
			t.Fatalf("lost commit %d/%d (xmin %s) has %d ledger rows on the old primary, want 1", m.Writer, m.Seq, oldMarkers[m], oldLedger[oldMarkers[m]])
		}
		ledgerLost++
	}
	if int64(ledgerLost) != tl.Lost-tl.LostProbe {
		t.Fatalf("%d lost transfers have a ledger row on the old primary, txload lost %d", ledgerLost, tl.Lost-tl.LostProbe)
	}
	got := ledgerLost
	// txload's own reading of the old primary says the same: it holds
	// every lost commit, and each lost transfer comes with its ledger row.
	if r.Old == nil || r.Old.Err != "" || r.Old.Holds != tl.Lost {
		t.Fatalf("txload's reading of the old primary: %+v, want all %d lost commits held", r.Old, tl.Lost)
	}
	withLedger := 0
	for _, c := range tl.LostIDs {
		n := 0
		for _, row := range c.Rows {
			if strings.HasPrefix(row, "bank_ledger {") {
				n++
			}
		}
		if c.Client >= 0 && n != 1 || c.Client < 0 && len(c.Rows) > 0 {
			t.Fatalf("lost commit %d/%d (client %d): rows %q", c.Writer, c.Seq, c.Client, c.Rows)
		}
		withLedger += n
	}
	if withLedger != ledgerLost {
		t.Fatalf("txload lists %d ledger rows of lost transfers, the test finds %d", withLedger, ledgerLost)
	}
	t.Logf("lost %d acknowledged commits (%d of the probe's), %d ledger rows; ambiguous %d, %d on the new primary",
		tl.Lost, tl.LostProbe, got, tl.Ambiguous, tl.Survived)
}

// Interrupted before the fault was due, the run says that no fault was
// caused and no failover happened, and counts the commits on the primary,
// still the primary: the text, the table rows and --json never speak of a
// new primary; the markers on the primary are exactly those txload counts
// there; the run ends as an interrupted run does.
func TestEmbeddedInterruptedBeforeFault(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded primary and standby")
	}
	t.Parallel() // a pair of its own; the failover waits more than it computes
	o, out := options(t, "bank")
	o.At, o.Run.Engine.Duration = 10*time.Minute, 20*time.Minute
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	o.started = func() { time.AfterFunc(time.Second, cancel) }
	var onPrimary map[lag.Marker]string
	o.inspect = func(p *replica.Pair, _ *Result) {
		if !p.Primary.Running() {
			t.Error("the primary is down after an interrupt before the fault")
			return
		}
		onPrimary, _ = markers(t, p.Primary.URL())
	}
	rs, err := Run(ctx, o)
	if !errors.Is(err, runner.ErrInterrupted) || len(rs) != 1 {
		t.Fatalf("%d results, error %v; want one, interrupted\n%s", len(rs), err, out)
	}
	r := rs[0]
	text := section(out.String())
	t.Logf("\n%s", text)
	if !r.Interrupted || !r.FaultSent.IsZero() || !r.PromoteRequested.IsZero() || r.uncounted != "" {
		t.Fatalf("interrupted %v, fault %s, promotion %s, uncounted %q", r.Interrupted, clock(r.FaultSent), clock(r.PromoteRequested), r.uncounted)
	}
	tl := r.Tally
	if tl.Acked == 0 || tl.Lost != 0 || tl.Phantom != 0 {
		t.Fatalf("acknowledged %d, lost %d, phantoms %d: want some acknowledged, all on the primary", tl.Acked, tl.Lost, tl.Phantom)
	}
	if n := int64(len(onPrimary)); n != tl.Acked+tl.Survived+tl.Found {
		t.Fatalf("the primary holds %d markers; txload counts %d acknowledged + %d ambiguous + %d unresolved there", n, tl.Acked, tl.Survived, tl.Found)
	}
	var rows strings.Builder
	for _, row := range resultRows(r) {
		rows.WriteString(row[0] + "  " + row[1] + "\n")
	}
	for _, s := range []string{text, rows.String()} {
		for _, want := range []string{`INTERRUPTED +the figures cover`, `fault +NONE: the run was interrupted before the fault was due: no fault was caused, no failover happened`,
			`write unavailability +none: no failover`, `lost +0 \(0 of them the probe's\): acknowledged, not on the primary \(still the primary: no failover\)`} {
			if !regexp.MustCompile(want).MatchString(s) {
				t.Errorf("the report lacks %q:\n%s", want, s)
			}
		}
		if strings.Contains(s, "new primary") {
			t.Errorf("the report speaks of a new primary:\n%s", s)
		}
	}
	d := docOf(r)
	if d.NoFault == "" || d.CountedOn != "primary" || d.FaultAt != nil || !d.Interrupted || d.UnavailableSec != nil {
		t.Errorf("--json's failover: no_fault %q, counted_on %q, fault_at %v, interrupted %v, unavailable %v", d.NoFault, d.CountedOn, d.FaultAt, d.Interrupted, d.UnavailableSec)
	}
}

// Interrupted (SIGTERM) 2 s after the promotion, with commits lost (async,
// the standby held back) and transactions in flight that commit on the new
// primary: bank's reconciliation counts by identity, by the markers, so a
// lost commit is never netted against an unknown outcome that committed.
// The check finds missing exactly the client commits the failover section
// lists as lost, and fails; the unknown outcomes that committed are those
// whose marker the new primary holds. By count, 4196 committed − 1 lost +
// 2 in flight that committed = 4197 rows passed as "1 of them committed".
func TestEmbeddedInterruptedAfterPromotion(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded primary and standby")
	}
	t.Parallel() // a pair of its own; the failover waits more than it computes
	o, out := options(t, "bank")
	o.Run.Engine.Concurrency = 32
	o.Replications, o.HoldStandby, o.At, o.Run.Engine.Duration = []string{"async"}, time.Second, 2*time.Second, time.Minute
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// SIGTERM's way: the context ends 2 s after the promotion.
	o.started = func() { time.AfterFunc(o.At+o.PromoteAfter+2*time.Second, cancel) }
	var newMarkers map[lag.Marker]string
	var newLedger map[string]int
	o.inspect = func(p *replica.Pair, _ *Result) { newMarkers, newLedger = markers(t, p.Standby.URL()) }
	rs, err := Run(ctx, o)
	if !errors.Is(err, runner.ErrInterrupted) || len(rs) != 1 {
		t.Fatalf("%d results, error %v; want one, interrupted\n%s", len(rs), err, out)
	}
	r := rs[0]
	t.Logf("\n%s", out.String())
	tl := r.Tally
	lost := tl.Lost - tl.LostProbe
	if !r.failedOver() || lost == 0 {
		t.Fatalf("failed over %v, %d client commits lost: want a failover that lost some", r.failedOver(), lost)
	}
	chk := r.Outcome.Check
	if chk == nil {
		t.Fatal("no check")
	}
	// The unknown outcomes that committed, by their markers on the new
	// primary: the clients' ambiguous and unresolved ones found there.
	found := int64(0)
	for _, c := range tl.AmbiguousIDs {
		if c.Client >= 0 && c.OnNew {
			found++
		}
	}
	unresolved := int64(0)
	for m := range newMarkers {
		if m.Writer != 1 {
			unresolved++
		}
	}
	acked := tl.Acked - tl.Probe
	unresolved -= acked - lost + found // the clients' markers there not acknowledged nor ambiguous
	found += unresolved
	if chk.Values["committed_missing"] != lost || chk.Values["ambiguous_committed"] != found || len(chk.Violations) == 0 {
		t.Errorf("bank's check: committed_missing %d, ambiguous_committed %d, violations %q; the markers say %d client commits lost and %d unknown outcomes committed",
			chk.Values["committed_missing"], chk.Values["ambiguous_committed"], chk.Violations, lost, found)
	}
	rows := 0
	for _, n := range newLedger {
		rows += n
	}
	if int64(rows) != acked-lost+found {
		t.Errorf("the new primary holds %d ledger rows; the markers say %d acknowledged − %d lost + %d unknown that committed", rows, acked, lost, found)
	}
	t.Logf("lost %d client commits; %d unknown outcomes committed; bank: %q", lost, found, chk.Violations)
}
