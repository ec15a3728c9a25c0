package lag

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/pg"
)

func target(t *testing.T, url string) *pg.Target {
	t.Helper()
	tg, err := pg.NewTarget([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// measure runs a marker stream on src and a reader on dst for d, then stops
// the stream and waits for the reader to see every marker.
func measure(t *testing.T, src, dst string, d time.Duration, during func()) (*Tracker, ReaderStats) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := pgtest.Conn(t, src)
	if err := CreateSource(ctx, conn); err != nil {
		t.Fatal(err)
	}
	first, err := FirstWriter(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTracker(time.Now(), 1, 10*time.Second)
	stream := &Stream{Target: target(t, src), Tracker: tr, Writer: first, Interval: 10 * time.Millisecond}
	ready := make(chan struct{})
	reader := &Reader{Target: target(t, dst), Tracker: tr, FirstWriter: first, Poll: time.Millisecond, Ready: func() { close(ready) }}
	rctx, stopReader := context.WithCancel(ctx)
	var rst ReaderStats
	var rerr error
	var wg sync.WaitGroup
	wg.Go(func() { rst, rerr = reader.Run(rctx) })
	select { // as txload lag: the markers start once the reader polls
	case <-ready:
	case <-ctx.Done():
		t.Fatal("the reader never polled")
	}
	stop := make(chan struct{})
	var sst StreamStats
	var serr error
	done := make(chan struct{})
	go func() { sst, serr = stream.Run(ctx, stop); close(done) }()
	if during != nil {
		during()
	}
	time.Sleep(d)
	close(stop)
	<-done
	for {
		if n, _ := tr.Pending(); n == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the reader never saw every marker")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopReader()
	wg.Wait()
	if serr != nil || rerr != nil || sst.Errors > 0 || rst.Errors > 0 {
		t.Fatalf("stream: %v, %+v; reader: %v, %d errors (%v)", serr, sst, rerr, rst.Errors, rst.FirstErr)
	}
	return tr, rst
}

// With the destination the source itself, the lag is the instrument's own
// floor: one poll period plus a round trip, a few milliseconds at most. The
// machine is shared: the best of three runs is judged, as in the CLI's
// TestLagSameDatabase.
func TestStreamSameDatabase(t *testing.T) {
	db := srv.NewDatabase(t)
	best, fastestRT, bestPeriod, bestP50 := int64(-1), int64(-1), int64(-1), int64(-1)
	var acked int64
	// The floor is judged on the best of three runs; under the race
	// detector, which slows the reader itself, one run checks the rest.
	attempts := 3
	if pgtest.RaceDetector {
		attempts = 1
	}
	for attempt := 1; attempt <= attempts; attempt++ {
		tr, rst := measure(t, db, db, 5*time.Second, nil)
		c := tr.Counts()
		acked += c.Acked
		h := tr.Total()
		t.Logf("run %d: markers %+v; lag p50 %dµs p99 %dµs max %dµs; poll period p50 %dµs p99 %dµs max %dµs, round trip p50 %dµs max %dµs", attempt,
			c, h.ValueAtQuantile(50), h.ValueAtQuantile(99), h.Max(), rst.Period.ValueAtQuantile(50), rst.Period.ValueAtQuantile(99), rst.Period.Max(),
			rst.RoundTrip.ValueAtQuantile(50), rst.RoundTrip.Max())
		// 5 s at 10 ms, and the last marker: 501 at most, fewer on a
		// loaded machine (398 at load 15), every one acknowledged and
		// measured.
		if c.Sent < 100 || c.Sent > 502 || c.Acked != c.Sent || c.Measured != c.Acked {
			t.Errorf("markers: %+v", c)
		}
		if p99 := h.ValueAtQuantile(99); best < 0 || p99 < best {
			best, bestPeriod = p99, rst.Period.ValueAtQuantile(99)
		}
		if p50 := h.ValueAtQuantile(50); bestP50 < 0 || p50 < bestP50 {
			bestP50 = p50
		}
		// Seen by the first poll that starts after it became visible: no
		// lag above the longest gap between polls plus the longest poll.
		// (Markers start once the reader has polled: those written while
		// it connected were seen a connection later, beyond this bound.)
		if bound := rst.Period.Max() + rst.RoundTrip.Max() + 1000; h.Max() > bound {
			t.Errorf("lag max %dµs beyond the stated precision (longest poll period + longest round trip + 1ms = %dµs)", h.Max(), bound)
		}
		if rt := rst.RoundTrip.ValueAtQuantile(99); fastestRT < 0 || rt < fastestRT {
			fastestRT = rt
		}
		if best < 5000 {
			break
		}
	}
	var rows int64
	if err := pgtest.Conn(t, db).QueryRow(context.Background(), "SELECT count(*) FROM "+Table).Scan(&rows); err != nil || rows != acked {
		t.Errorf("%d marker rows (%v), %d acknowledged", rows, err, acked)
	}
	// The median needs no quiet machine.
	if bestP50 >= 5000 {
		t.Errorf("lag p50 %dµs at best against the source itself: the instrument's floor should be under 5ms", bestP50)
	}
	switch {
	case best < 5000:
	case pgtest.RaceDetector:
		t.Skipf("lag p99 %dµs under the race detector: the 5ms floor is judged without it", best)
	case fastestRT >= 2500:
		t.Skipf("lag p99 %dµs at best; the machine is too busy to show a 5ms floor: the reader's query took %dµs at p99 in the fastest run", best, fastestRT)
	case bestPeriod >= 2500:
		t.Skipf("lag p99 %dµs at best; the machine is too busy to show a 5ms floor: the reader, asked to poll every 1ms, polled every %dµs at p99 in that run", best, bestPeriod)
	default:
		t.Errorf("lag p99 %dµs at best against the source itself: the instrument's floor should be under 5ms", best)
	}
}

// A pipeline that holds every marker 50ms before applying it: the lag
// measured is those 50ms, plus at most the pipeline's and the reader's
// polling.
func TestStreamThroughDelayedPipeline(t *testing.T) {
	src, dst := srv.NewDatabase(t), srv.NewDatabase(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := CreateDest(ctx, pgtest.Conn(t, dst), Table); err != nil {
		t.Fatal(err)
	}
	const hold = 50 * time.Millisecond
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	type held struct {
		w    int32
		s    int64
		at   time.Time
		seen time.Time
	}
	queue := make(chan held, 10000)
	pipeline := func() {
		// One side finds new markers on the source, the other applies each
		// one hold after it was found.
		wg.Go(func() {
			from := pgtest.Conn(t, src)
			var lastW int32
			var lastS int64
			for ctx.Err() == nil {
				rows, err := from.Query(ctx, "SELECT writer, seq, committed_at FROM "+Table+" WHERE (writer, seq) > ($1, $2) ORDER BY writer, seq", lastW, lastS)
				if err != nil {
					return
				}
				now := time.Now()
				for rows.Next() {
					r := held{seen: now}
					_ = rows.Scan(&r.w, &r.s, &r.at)
					lastW, lastS = r.w, r.s
					queue <- r
				}
				rows.Close()
				time.Sleep(time.Millisecond)
			}
		})
		wg.Go(func() {
			to := pgtest.Conn(t, dst)
			for {
				select {
				case <-ctx.Done():
					return
				case r := <-queue:
					time.Sleep(time.Until(r.seen.Add(hold)))
					if _, err := to.Exec(ctx, "INSERT INTO "+Table+" VALUES ($1, $2, $3)", r.w, r.s, r.at); err != nil {
						return
					}
				}
			}
		})
	}
	tr, _ := measure(t, src, dst, 2*time.Second, pipeline)
	h := tr.Total()
	t.Logf("lag min %dµs p50 %dµs p99 %dµs max %dµs over %d markers", h.Min(), h.ValueAtQuantile(50), h.ValueAtQuantile(99), h.Max(), h.TotalCount())
	// The pipeline may find a marker a little before the stream has the
	// acknowledgement of its COMMIT (more so on a busy machine): a lag may
	// be the hold less that, never much less.
	if h.Min() < (hold / 2).Microseconds() {
		t.Errorf("lag min %dµs: the pipeline held every marker %s", h.Min(), hold)
	}
	if p50 := h.ValueAtQuantile(50); p50 < (hold-5*time.Millisecond).Microseconds() || p50 > (hold+30*time.Millisecond).Microseconds() {
		t.Errorf("lag p50 %dµs: the pipeline holds markers %s and polls every 1ms", p50, hold)
	}
}

// Markers written inside a client's own transactions: committed ones are
// measured, rolled-back ones neither waited for nor found.
func TestTxMarks(t *testing.T) {
	db := srv.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exec(t, db, "CREATE TABLE acct (id INT PRIMARY KEY, n INT)", "INSERT INTO acct SELECT g, 0 FROM generate_series(1, 4) g")
	conn := pgtest.Conn(t, db)
	if err := CreateSource(ctx, conn); err != nil {
		t.Fatal(err)
	}
	first, err := FirstWriter(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	const clients, txs = 3, 60
	tr := NewTracker(time.Now(), clients, 10*time.Second)
	marks := NewTxMarks(tr, 0, first)
	rctx, stop := context.WithCancel(ctx)
	reader := &Reader{Target: target(t, db), Tracker: tr, FirstWriter: first, Poll: time.Millisecond}
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := reader.Run(rctx); err != nil {
			t.Error(err)
		}
	})
	var cw sync.WaitGroup
	for id := range clients {
		cw.Go(func() {
			c := pgtest.Conn(t, db)
			mark := marks.Client(id)
			for i := range txs {
				tx, err := c.Begin(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = tx.Exec(ctx, "UPDATE acct SET n = n + 1 WHERE id = $1", id+1)
				sql, args := mark.Begin()
				if _, err := tx.Exec(ctx, sql, args...); err != nil {
					t.Error(err)
				}
				if i%4 == 3 {
					_ = tx.Rollback(ctx)
					mark.RolledBack(false, time.Now())
					continue
				}
				err = tx.Commit(ctx)
				if err != nil {
					t.Error(err)
				}
				mark.Committed(time.Now())
			}
		})
	}
	cw.Wait()
	for n, _ := tr.Pending(); n > 0 && ctx.Err() == nil; n, _ = tr.Pending() {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	wg.Wait()
	c := tr.Counts()
	committed := int64(clients * txs * 3 / 4)
	if c.Sent != clients*txs || c.Acked != committed || c.Failed != clients*txs/4 || c.Measured != committed {
		t.Errorf("markers %+v; want %d sent, %d committed and measured", c, clients*txs, committed)
	}
	var rows int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+Table+" WHERE writer >= $1", first).Scan(&rows); err != nil || rows != committed {
		t.Errorf("%d marker rows (%v), want %d", rows, err, committed)
	}
	if pos := tr.Positions(nil); pos[0].After != txs {
		t.Errorf("client 0's markers resolved up to %d, want %d", pos[0].After, txs)
	}
}
