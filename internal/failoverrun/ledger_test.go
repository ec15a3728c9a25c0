package failoverrun

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/lag"
)

// liveHeap is the process's live heap after a full collection: the least
// of five (internal/cli's longrun_test.go samples it the same way).
func liveHeap() uint64 {
	var least uint64
	for i := range 5 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		if v := s[0].Value.Uint64(); i == 0 || v < least {
			least = v
		}
	}
	return least
}

// The ledger holds nothing per marker: fed millions of markers by 16
// clients and the probe (committed, rolled back, ambiguous, left open),
// its live heap (after a collection, every 500,000 markers from the
// millionth) grows by less than 1 byte a marker (from the first sample to
// the last; +0.003 B measured). When it kept a 16-byte record
// per marker in memory (before the spool) it grew by 20.1 bytes a marker
// here (16.5 MB at a million markers, 79.2 MB at four). Every marker is
// read back from the spool, with its fate.
func TestLedgerHeapBounded(t *testing.T) {
	const clients, total = 16, 4_000_000
	l, err := newLedger(1, t.TempDir(), func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	marks := make([]*txMark, clients)
	for c := range marks {
		marks[c] = l.marks(c).(*txMark)
	}
	probe := l.writer(l.probeWriter())
	at := time.Unix(1_700_000_000, 0)
	var want [4]int64 // markers by fate
	var xs, ys []float64
	for n := 1; n <= total; n++ {
		at = at.Add(time.Microsecond)
		if n%17 == 0 {
			probe.begin(uint8(n / 1_000_000))
			probe.decide(committed, at)
			want[committed]++
		} else {
			m := marks[n%clients]
			m.Begin()
			switch n % 101 {
			case 1:
				m.RolledBack(false, at)
				want[rolledBack]++
			case 2:
				m.RolledBack(true, at)
				want[ambiguous]++
			case 3: // the next Begin leaves it open
				want[open]++
			default:
				m.Committed(at)
				want[committed]++
			}
		}
		if n >= 1_000_000 && n%500_000 == 0 {
			xs, ys = append(xs, float64(n)), append(ys, float64(liveHeap()))
		}
	}
	per := (ys[len(ys)-1] - ys[0]) / (xs[len(xs)-1] - xs[0])
	t.Logf("live heap %.0f B at %.0f markers ... %.0f B at %.0f: %+.3f B a marker", ys[0], xs[0], ys[len(ys)-1], xs[len(xs)-1], per)
	if per > 1 {
		t.Errorf("the live heap grows by %.2f B a marker, want under 1", per)
	}
	ws, err := l.finish()
	if err != nil {
		t.Fatal(err)
	}
	var got [4]int64
	for _, w := range ws {
		want := w.n
		if err := w.backward(func(seq int64, r rec) error {
			if seq != want {
				return errors.New("out of order")
			}
			want--
			got[r.state]++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got != want {
		t.Fatalf("read back %v markers by fate (open, committed, rolled back, ambiguous), fed %v", got, want)
	}
	t.Logf("spool: %d bytes, %.2f a marker", l.sp.end, float64(l.sp.end)/total)
}

// oldLedger is the ledger as it was before the spool: every marker in
// memory, the markers of the new primary in a map. The tests compare the
// spooled ledger's answers with its own.
type oldLedger struct {
	first int
	ws    map[int][]rec
}

func (o *oldLedger) tally(present map[lag.Marker]bool) Tally {
	var t Tally
	for id, recs := range o.ws {
		for i, r := range recs {
			m := lag.Marker{Writer: id, Seq: int64(i + 1)}
			t.add(Commit{Writer: id, Seq: m.Seq, Client: id - o.first - 1, At: time.Unix(0, r.at)}, r.state, present[m])
		}
	}
	t.sortIDs()
	return t
}

func (o *oldLedger) acks() []int64 {
	var out []int64
	for _, recs := range o.ws {
		for _, r := range recs {
			if r.state == committed {
				out = append(out, r.at)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// gap is analyse's loop before the spool.
func oldGap(acks []int64, lo, hi int64) (from, to int64) {
	i, _ := slices.BinarySearch(acks, lo)
	best := int64(-1)
	for ; i+1 < len(acks) && acks[i] < hi; i++ {
		if g := acks[i+1] - acks[i]; g > best {
			best, from, to = g, acks[i], acks[i+1]
		}
	}
	return from, to
}

// oldProbeSpan is analyse's reading of the probe's markers before the
// spool.
func oldProbeSpan(recs []rec) (oldNode, newNode int, lastOld, firstNew int64) {
	oldNode, newNode = -1, -1
	for _, r := range recs {
		if r.state != committed {
			continue
		}
		switch {
		case oldNode < 0:
			oldNode, lastOld = int(r.node), r.at
		case int(r.node) == oldNode && newNode < 0:
			lastOld = r.at
		case int(r.node) != oldNode && newNode < 0:
			newNode, firstNew = int(r.node), r.at
		}
	}
	return oldNode, newNode, lastOld, firstNew
}

// record feeds both ledgers the same random markers: n per writer (the
// probe's on nodes 0, then 1, then 0 again), with times that tie and
// fates of every kind, and returns the ids of the writers.
func record(t *testing.T, l *ledger, o *oldLedger, clients int, n int64, rng *rand.Rand) {
	t.Helper()
	fates := []uint8{committed, committed, committed, committed, rolledBack, ambiguous, open}
	for id := l.first; id <= l.first+clients; id++ {
		w := l.writer(id)
		at := int64(1_700_000_000_000_000_000) + rng.Int64N(1000)
		for i := range n {
			node := uint8(0)
			if id == l.first && i > n/3 {
				node = uint8(1 - i*3/n/2) // 1 in the middle third, then 0
			}
			w.begin(node)
			r := rec{node: node}
			at += rng.Int64N(3) * 1000 // 0: ties
			if i > n/3 && i < n/3+20 {
				at += int64(time.Millisecond) // a failover-like gap
			}
			if f := fates[rng.IntN(len(fates))]; f != open {
				w.decide(f, time.Unix(0, at))
				r.state, r.at = f, at
			}
			o.ws[id] = append(o.ws[id], r)
		}
	}
}

// The probe's reading and the largest gap between acknowledgements,
// computed from the spool read back from the last marker, are those the
// in-memory ledger computed reading forward.
func TestLedgerGapIsTheInMemoryOne(t *testing.T) {
	spans, gaps := 0, 0
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		l, err := newLedger(3, t.TempDir(), func(err error) { t.Error(err) })
		if err != nil {
			t.Fatal(err)
		}
		o := &oldLedger{first: 3, ws: map[int][]rec{}}
		record(t, l, o, 1+rng.IntN(4), 1+rng.Int64N(3*chunkLen), rng)
		oldNode, newNode, lastOld, firstNew, err := l.probeSpan()
		if err != nil {
			t.Fatal(err)
		}
		o1, n1, lo1, fn1 := oldProbeSpan(o.ws[3])
		if oldNode != o1 || newNode != n1 || lastOld != lo1 || firstNew != fn1 {
			t.Fatalf("seed %d: probe span %d %d %d %d, in memory %d %d %d %d", seed, oldNode, newNode, lastOld, firstNew, o1, n1, lo1, fn1)
		}
		acks := o.acks()
		for range 20 {
			lo, hi := acks[rng.IntN(len(acks))], acks[rng.IntN(len(acks))]
			if rng.IntN(4) == 0 {
				lo, hi = lastOld, firstNew
			}
			from, to, err := l.largestGap(lo, hi)
			if err != nil {
				t.Fatal(err)
			}
			if f, tt := oldGap(acks, lo, hi); from != f || to != tt {
				t.Fatalf("seed %d: largest gap in [%d, %d): %d..%d, in memory %d..%d", seed, lo, hi, from, to, f, tt)
			}
			if to > from {
				gaps++
			}
		}
		if newNode >= 0 {
			spans++
		}
		_ = l.close()
	}
	if spans < 10 || gaps < 100 {
		t.Fatalf("%d probes moved to a new node, %d gaps found: the test's markers lack the cases", spans, gaps)
	}
	t.Logf("%d probes moved to a new node, %d gaps found", spans, gaps)
}

// The tally's merge join against a real server's marker table gives the
// in-memory tally's result: 3 clients and the probe, 25,000 markers each
// (chunks and pages of seqs crossed), of every fate; the table lacks
// acknowledged ones (lost), holds rolled-back ones (phantoms), half the
// ambiguous and open ones, seqs the ledger never sent, and other
// writers' markers.
func TestTallyIsTheInMemoryOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	t.Parallel()
	srv := pgtest.OwnServer(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := lag.CreateSource(ctx, conn); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	const first, clients, n = 5, 3, 25_000
	l, err := newLedger(first, t.TempDir(), func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	o := &oldLedger{first: first, ws: map[int][]rec{}}
	record(t, l, o, clients, n, rng)
	present := map[lag.Marker]bool{}
	var rows [][]any
	add := func(m lag.Marker) {
		present[m] = true
		rows = append(rows, []any{int32(m.Writer), m.Seq, time.Now()})
	}
	for id := first; id <= first+clients; id++ {
		for i, r := range o.ws[id] {
			m := lag.Marker{Writer: id, Seq: int64(i + 1)}
			keep := false
			switch r.state {
			case committed:
				keep = rng.IntN(50) != 0 // lost: 1 in 50
			case rolledBack:
				keep = rng.IntN(200) == 0 // phantom: 1 in 200
			default:
				keep = rng.IntN(2) == 0
			}
			if keep {
				add(m)
			}
		}
		for s := range int64(30) { // seqs the ledger never sent
			add(lag.Marker{Writer: id, Seq: n + 1 + s})
		}
	}
	for s := range int64(100) { // writers not the run's
		add(lag.Marker{Writer: first - 1, Seq: s + 1})
		add(lag.Marker{Writer: first + clients + 1, Seq: s + 1})
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{lag.Table}, []string{"writer", "seq", "committed_at"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
	got, err := l.tally(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	want := o.tally(present)
	if got.Lost == 0 || got.Phantom == 0 || got.Survived == 0 || got.Ambiguous == got.Survived || got.Found == 0 {
		t.Fatalf("the test's table lacks a case: %+v", counts(got))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merge join: %+v\nin memory: %+v", counts(got), counts(want))
	}
	t.Logf("%+v", counts(got))
}

// counts is a tally's counts, and its lists' lengths.
func counts(t Tally) string {
	n := []int{len(t.LostIDs), len(t.AmbiguousIDs), len(t.PhantomIDs)}
	t.LostIDs, t.AmbiguousIDs, t.PhantomIDs = nil, nil, nil
	return fmt.Sprintf("%+v, listed %v", t, n)
}

// A spool that cannot be written (here, its file closed under it; a full
// $TMPDIR alike) is said once, when it happens, and the tally fails with
// it.
func TestSpoolErrorSticks(t *testing.T) {
	var said []error
	l, err := newLedger(1, t.TempDir(), func(err error) { said = append(said, err) })
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	_ = l.sp.f.Close()
	m := l.marks(0)
	for range 3 * chunkLen {
		m.Begin()
		m.Committed(time.Now())
	}
	_, err = l.finish()
	if len(said) != 1 || err == nil || err != said[0] || !strings.Contains(err.Error(), "spooling the run's markers in ") || !strings.Contains(err.Error(), "set TMPDIR to a directory with room") {
		t.Fatalf("said %v, finish: %v", said, err)
	}
	if _, err := l.tally(t.Context(), nil); err != said[0] {
		t.Fatalf("tally: %v", err)
	}
}
