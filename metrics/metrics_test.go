package metrics

import (
	"sync"
	"testing"
	"time"
)

func TestRecordTickMerge(t *testing.T) {
	start := time.Now()
	g := NewRegistry([]string{"read", "write"}, start)
	const workers, per = 4, 5000
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		r := g.NewRecorder()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				r.Success(i%2, true, time.Duration(i+1)*time.Microsecond, time.Microsecond, 0, 1+i%3)
				if i%10 == 0 {
					r.Error(1, true, Serialization)
					r.Failure(1, true, Serialization, 2)
				}
				r.Success(0, false, time.Millisecond, time.Millisecond, 0, 1)
			}
		}()
	}
	// Tick concurrently with recording: nothing may be lost or counted twice.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var ticks int
	for loop := true; loop; {
		select {
		case <-done:
			loop = false
		case <-time.After(time.Millisecond):
		}
		if _, err := g.Tick(time.Now()); err != nil {
			t.Fatal(err)
		}
		ticks++
	}
	total := g.Total()
	read, write := total.Ops[0], total.Ops[1]
	if got, want := read.OK+write.OK, int64(workers*per); got != want {
		t.Errorf("OK = %d, want %d (after %d ticks)", got, want, ticks)
	}
	if got := read.Response.TotalCount() + write.Response.TotalCount(); got != int64(workers*per) {
		t.Errorf("response count = %d, want %d", got, workers*per)
	}
	if got, want := read.Warmup, int64(workers*per); got != want {
		t.Errorf("warmup = %d, want %d", got, want)
	}
	if got, want := write.Failed[Serialization], int64(workers*per/10); got != want {
		t.Errorf("failed = %d, want %d", got, want)
	}
	if got, want := write.Errors[Serialization], int64(workers*per/10); got != want {
		t.Errorf("errors = %d, want %d", got, want)
	}
	// tries cycle 1,2,3: per 3 successes, 2 retried and 3 retries; plus each failure had 1 retry.
	var wantRetried, wantRetries int64
	for i := 0; i < per; i++ {
		if tries := 1 + i%3; tries > 1 {
			wantRetried++
			wantRetries += int64(tries - 1)
		}
		if i%10 == 0 {
			wantRetried++
			wantRetries++
		}
	}
	if got := read.Retried + write.Retried; got != wantRetried*workers {
		t.Errorf("retried = %d, want %d", got, wantRetried*workers)
	}
	if got := read.Retries + write.Retries; got != wantRetries*workers {
		t.Errorf("retries = %d, want %d", got, wantRetries*workers)
	}
	if got := write.Response.Max(); got < per-per/100 || got > per+per/100 {
		t.Errorf("max = %d µs, want ≈ %d", got, per)
	}
}

func TestClampNeverDrops(t *testing.T) {
	g := NewRegistry([]string{"op"}, time.Now())
	r := g.NewRecorder()
	r.Success(0, true, -time.Second, 0, 3*time.Hour, 1)
	s, err := g.Tick(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	o := s.Ops[0]
	if o.Response.TotalCount() != 1 || o.Lag.TotalCount() != 1 || o.Service.TotalCount() != 1 {
		t.Fatalf("a value was dropped: %d %d %d", o.Response.TotalCount(), o.Service.TotalCount(), o.Lag.TotalCount())
	}
	if o.Lag.Max() < highestMicros*999/1000 {
		t.Errorf("lag max = %d, want clamped to ≈ %d", o.Lag.Max(), highestMicros)
	}
}

func TestEncodeDecodeExact(t *testing.T) {
	h := NewHistogram()
	for i := int64(1); i <= 100000; i += 7 {
		_ = h.RecordValue(i)
	}
	s, err := Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Equals(back) {
		t.Fatal("decoded histogram differs")
	}
	if _, err := Decode("not base64!"); err == nil {
		t.Fatal("decoding garbage succeeded")
	}
}

func TestMergeMismatch(t *testing.T) {
	a, b := NewSnapshot([]string{"x"}), NewSnapshot([]string{"y"})
	if err := a.Merge(b); err == nil {
		t.Fatal("merging different operations succeeded")
	}
	if err := a.Merge(NewSnapshot(nil)); err == nil {
		t.Fatal("merging different lengths succeeded")
	}
}

// The hot path must not allocate: a long run keeps flat memory and no GC work.
func TestRecordDoesNotAllocate(t *testing.T) {
	g := NewRegistry([]string{"op"}, time.Now())
	r := g.NewRecorder()
	allocs := testing.AllocsPerRun(1000, func() {
		r.Success(0, true, 1500*time.Microsecond, 900*time.Microsecond, 600*time.Microsecond, 2)
		r.Error(0, true, Deadlock)
		r.Failure(0, true, Deadlock, 3)
	})
	if allocs != 0 {
		t.Fatalf("recording allocates %.1f times per operation", allocs)
	}
}

func BenchmarkRecordSuccess(b *testing.B) {
	g := NewRegistry([]string{"op"}, time.Now())
	r := g.NewRecorder()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Success(0, true, time.Duration(i%50000)*time.Microsecond, time.Millisecond, 0, 1)
	}
}

// Recording while another goroutine ticks: the lock is the worker's own and
// is only contended once per tick.
func BenchmarkRecordParallelWithTick(b *testing.B) {
	g := NewRegistry([]string{"op"}, time.Now())
	stop := make(chan struct{})
	go func() {
		tk := time.NewTicker(10 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-tk.C:
				_, _ = g.Tick(now)
			}
		}
	}()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := g.NewRecorder()
		i := 0
		for pb.Next() {
			i++
			r.Success(0, true, time.Duration(i%50000)*time.Microsecond, time.Millisecond, 0, 1)
		}
	})
	close(stop)
}

func TestStatementsSkipLate(t *testing.T) {
	g := NewRegistry([]string{"a", "b"}, time.Now(), 3, 1)
	r := g.NewRecorder()
	for i := 0; i < 4; i++ {
		r.Statement(0, 1, time.Duration(i+1)*time.Millisecond)
	}
	r.StatementError(0, 2, true)
	r.StatementError(0, 2, false)
	r.Statement(0, 7, time.Second) // beyond the statements: ignored, no panic
	r.Skip(1, true)
	r.Skip(1, false)
	r.Late(0, true)
	r.Abandoned(1, true)
	r.Abandoned(1, false) // warm-up: not counted
	r.ReconnectFailed()
	if _, err := g.Tick(time.Now()); err != nil {
		t.Fatal(err)
	}
	r.Statement(0, 1, 5*time.Millisecond)
	if _, err := g.Tick(time.Now()); err != nil {
		t.Fatal(err)
	}
	a, b := g.Total().Ops[0], g.Total().Ops[1]
	if got := a.Stmts[1]; got.Count != 5 || got.Mean() != 3*time.Millisecond {
		t.Errorf("statement 1 = %+v, mean %s", got, got.Mean())
	}
	if got := a.Stmts[2]; got.Retries != 1 || got.Failures != 1 {
		t.Errorf("statement 2 = %+v", got)
	}
	if b.Skipped != 1 || a.Late != 1 || len(b.Stmts) != 1 || b.Abandoned != 1 || g.Total().Reconnects != 1 {
		t.Errorf("skipped %d late %d stmts %d abandoned %d reconnects %d", b.Skipped, a.Late, len(b.Stmts), b.Abandoned, g.Total().Reconnects)
	}
	allocs := testing.AllocsPerRun(100, func() { r.Statement(0, 1, time.Millisecond) })
	if allocs != 0 {
		t.Errorf("Statement allocates %.1f", allocs)
	}
}
