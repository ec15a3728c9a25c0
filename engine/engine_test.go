package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/workload"
)

// classErr is an error of a given class, as pg.Classify would return.
type classErr struct {
	class metrics.Class
	fatal bool
}

func (e classErr) Error() string { return "class " + e.class.String() }

func classify(err error) (metrics.Class, bool) {
	var ce classErr
	if errors.As(err, &ce) {
		return ce.class, ce.fatal
	}
	return metrics.Other, false
}

// worker is a test's client: Do makes an attempt, Reset a new connection,
// each taking the time it blocks for, as a client waiting for the server.
type worker interface {
	Do(ctx context.Context, op, attempt int) error
	Reset(ctx context.Context) error
}

// workerDrive is the engine's tests' Drive: each client runs on a goroutine
// of its own, its group's sessions called under the group's lock, as the
// executor's blocking loop runs them; newWorker makes client id's worker
// (record records a statement's latency, as a program's Conn.Statement
// does).
func workerDrive(newWorker func(id int, record func(op, stmt int, d time.Duration)) worker) func(context.Context, workload.Clients) error {
	return func(ctx context.Context, cs workload.Clients) error {
		var clients []*testClient
		for _, g := range cs.Groups {
			mu := &sync.Mutex{}
			for _, s := range g {
				c := &testClient{s: s, mu: mu}
				c.w = newWorker(s.ID(), func(op, stmt int, d time.Duration) {
					c.call(func() workload.Step { s.StatementAt(op, stmt, d, time.Now()); return workload.Step{} })
				})
				clients = append(clients, c)
			}
		}
		cs.Ready(time.Now())
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() { c.drive(ctx) })
		}
		wg.Wait()
		return nil
	}
}

// testClient is a session with its worker and its group's lock.
type testClient struct {
	s  workload.Session
	w  worker
	mu *sync.Mutex
}

// call calls the session under its group's lock.
func (c *testClient) call(f func() workload.Step) workload.Step {
	c.mu.Lock()
	defer c.mu.Unlock()
	return f()
}

// drive steps the client as its session decides until it says Stop or
// ctx ends.
func (c *testClient) drive(ctx context.Context) {
	s := c.s
	step := c.call(func() workload.Step { return s.Next(time.Now()) })
	for {
		switch step.Kind {
		case workload.Stop:
			return
		case workload.Wait:
			if !sleepUntil(ctx, step.At) {
				return
			}
			step = c.call(func() workload.Step { return s.Next(time.Now()) })
		case workload.Start:
			err := c.w.Do(ctx, step.Op, step.Attempt)
			now := time.Now()
			step = c.call(func() workload.Step { return s.Done(now, err, -1) })
		case workload.Reconnect:
			if !sleepUntil(ctx, step.At) {
				return
			}
			err := c.w.Reset(ctx)
			now := time.Now()
			step = c.call(func() workload.Step { return s.Connected(now, err) })
		}
	}
}

// sleepUntil waits until at; false when ctx ended first.
func sleepUntil(ctx context.Context, at time.Time) bool {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// workers is a load of one operation whose clients are made by newWorker.
func workers(newWorker func(id int) worker) *workload.QueryLoad {
	return &workload.QueryLoad{Ops: []string{"op"},
		Drive: workerDrive(func(id int, _ func(int, int, time.Duration)) worker { return newWorker(id) })}
}

// fakeWorker sleeps for service per attempt and fails according to fail.
type fakeWorker struct {
	service func(n int64) time.Duration
	fail    func(n int64, attempt int) error
	n       *atomic.Int64
	resets  *atomic.Int64
}

func (w *fakeWorker) Do(ctx context.Context, op, attempt int) error {
	n := w.n.Add(1)
	if w.service != nil {
		select {
		case <-time.After(w.service(n)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if w.fail != nil {
		return w.fail(n, attempt)
	}
	return nil
}
func (w *fakeWorker) Reset(context.Context) error { w.resets.Add(1); return nil }

func load(w fakeWorker) (*workload.QueryLoad, *atomic.Int64, *atomic.Int64) {
	var n, resets atomic.Int64
	w.n, w.resets = &n, &resets
	return workers(func(int) worker {
		c := w
		return &c
	}), &n, &resets
}

// base is the tests' configuration: its clients in one group.
func base() Config {
	return Config{Concurrency: 4, Jobs: 1, Duration: 5 * time.Second, MaxTries: 1, MaxLag: DefaultMaxLag, Classify: classify, Seed: 1}
}

func TestOpenLoopExactCount(t *testing.T) {
	for _, arrival := range []Arrival{Uniform, Poisson} {
		t.Run(arrival.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := base()
				cfg.Rate, cfg.Arrival = 500, arrival
				l, _, _ := load(fakeWorker{service: func(int64) time.Duration { return time.Millisecond }})
				res, err := Run(t.Context(), cfg, l)
				if err != nil {
					t.Fatal(err)
				}
				op := res.Total.Ops[0]
				if op.OK != 2500 || res.Offered != 2500 || res.Unstarted != 0 {
					t.Fatalf("ok=%d offered=%d unstarted=%d, want 2500 2500 0", op.OK, res.Offered, res.Unstarted)
				}
				if arrival == Uniform && op.Lag.Max() > 1 {
					t.Errorf("uniform at 500/s on 4 idle workers lagged %d µs", op.Lag.Max())
				}
				// Under synctest timers fire exactly: the generator is never late.
				if res.EmitLag == nil || res.EmitLag.TotalCount() == 0 || res.EmitLag.Max() != 0 {
					t.Errorf("emission lag: %v", res.EmitLag)
				}
				if got := op.Service.ValueAtQuantile(50); got < 990 || got > 1010 {
					t.Errorf("service p50 = %d µs, want 1000", got)
				}
			})
		})
	}
}

// The Poisson schedule: exactly n arrivals, in order, inside the segment, with
// exponential-looking gaps (mean 1/rate, coefficient of variation ≈ 1).
func TestPoissonSchedule(t *testing.T) {
	const rate = 1000.0
	s := newSchedule(Poisson, rate, 42, 0, 100*time.Second)
	var n int64
	var prev time.Duration
	var sum, sumSq float64
	for {
		off, seg, ok := s.next()
		if !ok {
			break
		}
		if seg != 1 || off < prev || off >= 100*time.Second {
			t.Fatalf("arrival %d at %s (segment %d) after %s", n, off, seg, prev)
		}
		gap := (off - prev).Seconds()
		sum += gap
		sumSq += gap * gap
		prev = off
		n++
	}
	if n != 100000 {
		t.Fatalf("n = %d, want 100000", n)
	}
	mean := sum / float64(n)
	sd := math.Sqrt(sumSq/float64(n) - mean*mean)
	if math.Abs(mean-1/rate) > 0.02/rate {
		t.Errorf("mean gap %.6f s, want %.6f", mean, 1/rate)
	}
	if cv := sd / mean; math.Abs(cv-1) > 0.03 {
		t.Errorf("coefficient of variation %.3f, want ≈ 1", cv)
	}
	// Same seed, same schedule.
	a, b := newSchedule(Poisson, rate, 7, time.Second), newSchedule(Poisson, rate, 7, time.Second)
	for i := 0; i < 1000; i++ {
		x, _, _ := a.next()
		y, _, _ := b.next()
		if x != y {
			t.Fatalf("seeded schedules differ at %d: %s vs %s", i, x, y)
		}
	}
}

// A stall charges every operation queued behind it with its wait: response
// time includes the lag, service time does not.
func TestOpenLoopNoCoordinatedOmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Rate, cfg.Arrival, cfg.Duration = 1, 100, Uniform, 3*time.Second
		l, _, _ := load(fakeWorker{service: func(n int64) time.Duration {
			if n == 50 {
				return time.Second // one stall
			}
			return time.Millisecond
		}})
		res, err := Run(t.Context(), cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		op := res.Total.Ops[0]
		if op.OK != 300 {
			t.Fatalf("ok = %d, want 300", op.OK)
		}
		if got := op.Service.Max(); got < 999000 || got > 1001000 {
			t.Errorf("service max = %d µs, want 1 s", got)
		}
		// ~100 operations were due during the stall; they waited up to ~1 s.
		if got := op.Lag.Max(); got < 980000 {
			t.Errorf("lag max = %d µs, want ≈ 990 ms", got)
		}
		if got := op.Response.ValueAtQuantile(75); got < 100000 {
			t.Errorf("response p75 = %d µs: the wait behind the stall was not charged", got)
		}
		if got := op.Service.ValueAtQuantile(75); got > 1100 {
			t.Errorf("service p75 = %d µs, want ≈ 1 ms", got)
		}
	})
}

func TestClosedLoopWarmupExcluded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Warmup, cfg.Duration = 2, time.Second, 2*time.Second
		l, n, _ := load(fakeWorker{service: func(int64) time.Duration { return 10 * time.Millisecond }})
		res, err := Run(t.Context(), cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		// The window is [1 s, 3 s): each client's last operation ends at 3 s,
		// in the drain.
		op := res.Total.Ops[0]
		if op.OK != 398 || op.Warmup != 200 || res.Drain.Ops[0].OK != 2 {
			t.Fatalf("ok=%d warmup=%d drained %d, want 398 200 2", op.OK, op.Warmup, res.Drain.Ops[0].OK)
		}
		if n.Load() != 600 || res.Total.Elapsed != 2*time.Second {
			t.Fatalf("attempts=%d elapsed=%s, want 600 2s", n.Load(), res.Total.Elapsed)
		}
		if op.Lag.Max() > 1 {
			t.Errorf("closed loop has lag %d µs", op.Lag.Max())
		}
	})
}

func TestRetriesAndFailures(t *testing.T) {
	// Every operation fails its first two attempts with a serialization error.
	fail := func(_ int64, attempt int) error {
		if attempt <= 2 {
			return classErr{class: metrics.Serialization}
		}
		return nil
	}
	for _, tc := range []struct {
		tries                    int
		wantOK, wantFailed       bool
		wantRetriesPerOp, errsOp int64
	}{
		{tries: 1, wantFailed: true, wantRetriesPerOp: 0, errsOp: 1},
		{tries: 2, wantFailed: true, wantRetriesPerOp: 1, errsOp: 2},
		{tries: 3, wantOK: true, wantRetriesPerOp: 2, errsOp: 2},
	} {
		synctest.Test(t, func(t *testing.T) {
			cfg := base()
			cfg.Concurrency, cfg.MaxTries, cfg.Duration = 1, tc.tries, time.Second
			var events atomic.Int64
			cfg.OnError = func(ErrorEvent) { events.Add(1) }
			l, _, _ := load(fakeWorker{service: func(int64) time.Duration { return 10 * time.Millisecond }, fail: fail})
			res, err := Run(t.Context(), cfg, l)
			if err != nil {
				t.Fatal(err)
			}
			all, err := res.All() // the error events include the drain's
			if err != nil {
				t.Fatal(err)
			}
			op := all.Ops[0]
			ops := op.OK + op.FailedTotal()
			if ops == 0 || (op.OK > 0) != tc.wantOK || (op.Failed[metrics.Serialization] > 0) != tc.wantFailed {
				t.Fatalf("tries %d: ok=%d failed=%v", tc.tries, op.OK, op.Failed)
			}
			if op.Retries != tc.wantRetriesPerOp*ops || op.Errors[metrics.Serialization] != tc.errsOp*ops || events.Load() != op.ErrorsTotal() {
				t.Fatalf("tries %d: ops=%d retries=%d errors=%v events=%d", tc.tries, ops, op.Retries, op.Errors, events.Load())
			}
		})
	}
}

func TestConnectionLostResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.MaxTries, cfg.Duration = 1, 3, time.Second
		l, _, resets := load(fakeWorker{
			service: func(int64) time.Duration { return 10 * time.Millisecond },
			fail: func(n int64, _ int) error {
				if n%10 == 0 {
					return classErr{class: metrics.ConnectionLost}
				}
				return nil
			},
		})
		res, err := Run(t.Context(), cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		all, err := res.All() // resets include the drain's
		if err != nil {
			t.Fatal(err)
		}
		op := all.Ops[0]
		if resets.Load() == 0 || resets.Load() != op.Errors[metrics.ConnectionLost] || op.FailedTotal() != 0 {
			t.Fatalf("resets=%d errors=%v failed=%v", resets.Load(), op.Errors, op.Failed)
		}
	})
}

func TestFatalStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Duration = time.Hour
		l, _, _ := load(fakeWorker{
			service: func(int64) time.Duration { return time.Millisecond },
			fail: func(n int64, _ int) error {
				if n == 100 {
					return classErr{class: metrics.Other, fatal: true}
				}
				return nil
			},
		})
		start := time.Now()
		res, err := Run(t.Context(), cfg, l)
		if err == nil || res == nil {
			t.Fatalf("err=%v res=%v, want the fatal error and a partial result", err, res)
		}
		if time.Since(start) > time.Second {
			t.Fatalf("run went on for %s after a fatal error", time.Since(start))
		}
	})
}

func TestSaturationStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Rate, cfg.Duration, cfg.MaxLag = 1, 1000, time.Minute, time.Second
		l, _, _ := load(fakeWorker{service: func(int64) time.Duration { return 10 * time.Millisecond }})
		start := time.Now()
		res, err := Run(t.Context(), cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Saturated || res.Unstarted == 0 {
			t.Fatalf("saturated=%v unstarted=%d", res.Saturated, res.Unstarted)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("saturated run took %s", d)
		}
	})
}

func TestInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Duration = time.Hour
		ctx, cancel := context.WithTimeout(t.Context(), 2005*time.Millisecond)
		defer cancel()
		l, _, _ := load(fakeWorker{service: func(int64) time.Duration { return 10 * time.Millisecond }})
		res, err := Run(ctx, cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		op := res.Total.Ops[0]
		if !res.Interrupted || op.OK != 800 || op.ErrorsTotal() != 0 || res.Total.Elapsed != 2005*time.Millisecond {
			t.Fatalf("interrupted=%v ok=%d errors=%d elapsed=%s", res.Interrupted, op.OK, op.ErrorsTotal(), res.Total.Elapsed)
		}
		// The operation each client had in flight at the interrupt has an
		// unknown outcome: abandoned, in the drain, never lost.
		if res.Drain == nil || res.Drain.Ops[0].Abandoned != int64(cfg.Concurrency) || res.InFlight() != int64(cfg.Concurrency) {
			t.Fatalf("drain %+v, want the %d operations in flight abandoned", res.Drain, cfg.Concurrency)
		}
	})
}

// TestValidate: every bad number gets one line naming its flag and what
// is allowed, before anything runs: NaN, infinities, schedules too large to
// count, durations beyond a century.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"concurrency", func(c *Config) { c.Concurrency = 0 }, "--concurrency must be at least 1, got 0"},
		{"jobs", func(c *Config) { c.Jobs = -1 }, "--jobs must be at least 1, got -1"},
		{"rate negative", func(c *Config) { c.Rate = -1 }, "--rate must be 0 (closed loop) or a positive, finite number of operations per second, got -1"},
		{"rate NaN", func(c *Config) { c.Rate = math.NaN() }, "--rate must be 0 (closed loop) or a positive, finite number of operations per second, got NaN"},
		{"rate +Inf", func(c *Config) { c.Rate = math.Inf(1) }, "--rate must be 0 (closed loop) or a positive, finite number of operations per second, got +Inf"},
		{"rate -Inf", func(c *Config) { c.Rate = math.Inf(-1) }, "--rate must be 0 (closed loop) or a positive, finite number of operations per second, got -Inf"},
		{"rate beyond a nanosecond", func(c *Config) { c.Rate = 1e12 }, "--rate 1e+12 is more than one operation per nanosecond, the schedule's resolution (at most 1e9)"},
		{"rate × duration overflows", func(c *Config) { c.Rate, c.Duration = 1e9, 10000*time.Hour },
			"--rate 1e+09 over --duration 10000h0m0s schedules 3.6e+16 operations, more than txload can count (2^53)"},
		{"rate × warm-up overflows", func(c *Config) { c.Rate, c.Duration, c.Warmup = 1e9, time.Second, 10000*time.Hour },
			"--rate 1e+09 over --duration 10000h0m1s schedules 3.6e+16 operations, more than txload can count (2^53)"},
		{"duration zero", func(c *Config) { c.Duration = 0 }, "--duration must be positive and at most 100 years (for example 10s or 1m), got 0s"},
		{"duration beyond a century", func(c *Config) { c.Duration = 2000000 * time.Hour }, "--duration must be positive and at most 100 years (for example 10s or 1m), got 2000000h0m0s"},
		{"warmup negative", func(c *Config) { c.Warmup = -time.Second }, "--warmup must be between 0 and 100 years, got -1s"},
		{"warmup beyond a century", func(c *Config) { c.Warmup = 1000000 * time.Hour }, "--warmup must be between 0 and 100 years, got 1000000h0m0s"},
		{"tries", func(c *Config) { c.MaxTries = 0 }, "--max-tries must be at least 1, got 0"},
		{"progress", func(c *Config) { c.Progress = -1 }, "--progress must be 0 (off) or positive, got -1ns"},
		{"max lag", func(c *Config) { c.Rate, c.MaxLag = 100, 0 }, "--max-lag must be positive, got 0s"},
		{"empty schedule", func(c *Config) { c.Rate = 0.1 }, "--rate 0.1 over --duration 5s schedules no operation"},
		{"spin", func(c *Config) { c.Spin = -time.Millisecond }, "--spin must not be negative, got -1ms"},
		{"drain timeout", func(c *Config) { c.DrainTimeout = -time.Second }, "--drain-timeout must not be negative, got -1s"},
		{"latency limit", func(c *Config) { c.LatencyLimit = -time.Second }, "--latency-limit must not be negative, got -1s"},
		{"instance", func(c *Config) { c.Instance, c.Instances = 2, 2 }, "--instance 2/2: want i/N with 0 <= i < N"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.mod(&c)
			err := c.Validate()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %s", err, tc.want)
			}
		})
	}
	for name, mod := range map[string]func(*Config){
		"closed loop":       func(*Config) {},
		"a billion per sec": func(c *Config) { c.Rate = 1e9 },
		"a century":         func(c *Config) { c.Rate, c.Duration = 1e6, 100*365*24*time.Hour },
	} {
		c := base()
		mod(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The measured window ends at the end of the duration: an operation still
// running then ends in the drain, which is apart from the window's figures
// and counted in All.
func TestWindowEndsAtDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Duration = 2, 2005*time.Millisecond
		l, _, _ := load(fakeWorker{service: func(n int64) time.Duration {
			if n == 3 {
				return 3 * time.Second // starts at 10ms, ends at 3.01s
			}
			return 10 * time.Millisecond
		}})
		res, err := Run(t.Context(), cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		// One client: 1 operation, then the 3 s one; the other: one every
		// 10 ms, 200 by 2.005 s and one in flight then.
		op := res.Total.Ops[0]
		if res.Total.Elapsed != 2005*time.Millisecond || op.OK != 201 || op.Response.Max() >= 3_000_000 {
			t.Fatalf("window %s ok %d max %dµs, want 2.005s, 201, and the 3 s operation left out", res.Total.Elapsed, op.OK, op.Response.Max())
		}
		if res.Drain == nil || res.Drain.Elapsed != 1005*time.Millisecond || res.Drain.Ops[0].OK != 2 || res.InFlight() != 2 {
			t.Fatalf("drain %+v, want 2 operations ended in the 1.005s after the window", res.Drain)
		}
		all, err := res.All()
		if err != nil || all.Ops[0].OK != 203 || all.Elapsed != 3010*time.Millisecond {
			t.Fatalf("all: %v %+v, want 203 over 3.01s", err, all)
		}
	})
}

// --latency-limit: operations that would start too late are skipped, those
// that run longer than the limit are counted late.
func TestLatencyLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Rate, cfg.Arrival, cfg.Duration = 1, 100, Uniform, 2*time.Second
		cfg.LatencyLimit = 50 * time.Millisecond
		l, _, _ := load(fakeWorker{service: func(n int64) time.Duration {
			if n == 10 {
				return 500 * time.Millisecond // a stall: the next ~50 arrivals are too late
			}
			return time.Millisecond
		}})
		res, err := Run(t.Context(), cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		op := res.Total.Ops[0]
		// The stalled one, and the first one after it: it starts just under
		// 50 ms behind schedule and its 1 ms of service takes it over.
		if op.Late != 2 {
			t.Errorf("late = %d, want 2", op.Late)
		}
		// Arrivals every 10 ms; those due more than 50 ms before the stall
		// ended are skipped: about 45 of them.
		if op.Skipped < 40 || op.Skipped > 50 || op.OK+op.Skipped != 200 {
			t.Errorf("skipped %d, ok %d, want ≈45 skipped and 200 in all", op.Skipped, op.OK)
		}
	})
}

type stmtWorker struct {
	fakeWorker
	record func(op, stmt int, d time.Duration)
}

func (w *stmtWorker) Do(ctx context.Context, op, attempt int) error {
	time.Sleep(time.Millisecond)
	w.record(op, 0, time.Millisecond)
	w.record(op, 1, 2*time.Millisecond)
	return nil
}

func TestStatementRecorder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Duration, cfg.Warmup = 1, time.Second, 100*time.Millisecond
		l := &workload.QueryLoad{Ops: []string{"op"}, Statements: []int{2},
			Drive: workerDrive(func(_ int, record func(int, int, time.Duration)) worker {
				return &stmtWorker{record: record}
			})}
		res, err := Run(t.Context(), cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		op := res.Total.Ops[0]
		if len(op.Stmts) != 2 || op.Stmts[0].Count != op.OK || op.Stmts[1].Mean() != 2*time.Millisecond {
			t.Fatalf("ok %d, stmts %+v", op.OK, op.Stmts)
		}
	})
}

// The server goes away for good near the end: operations block until the
// drain timeout, which ends the run and counts them as abandoned.
func TestDrainTimeoutEndsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Duration, cfg.DrainTimeout = 3, 2*time.Second, time.Second
		start := time.Now()
		var blocked atomic.Int64
		l := workers(func(int) worker {
			return &blockingWorker{start: start, after: 1500 * time.Millisecond, blocked: &blocked}
		})
		res, err := Run(t.Context(), cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("run took %s, want duration + drain timeout = 3s", d)
		}
		if res.Drain == nil {
			t.Fatal("no drain")
		}
		op := res.Drain.Ops[0]
		if !res.Drained || op.Abandoned != 3 || blocked.Load() != 3 || op.FailedTotal() != 0 || res.Total.Ops[0].Abandoned != 0 {
			t.Fatalf("drained=%v abandoned=%d blocked=%d failed=%d", res.Drained, op.Abandoned, blocked.Load(), op.FailedTotal())
		}
	})
}

type blockingWorker struct {
	start   time.Time
	after   time.Duration
	blocked *atomic.Int64
}

func (w *blockingWorker) Do(ctx context.Context, _, _ int) error {
	if time.Since(w.start) < w.after {
		time.Sleep(10 * time.Millisecond)
		return nil
	}
	w.blocked.Add(1)
	<-ctx.Done() // a server that never answers
	return ctx.Err()
}
func (w *blockingWorker) Reset(context.Context) error { return nil }

// outageWorker's server is down in [down, up): operations fail with a lost
// connection and reconnecting fails.
type outageWorker struct {
	start    time.Time
	down, up time.Duration
}

func (w *outageWorker) isDown() bool {
	e := time.Since(w.start)
	return e >= w.down && e < w.up
}

func (w *outageWorker) Do(context.Context, int, int) error {
	time.Sleep(10 * time.Millisecond)
	if w.isDown() {
		return classErr{class: metrics.ConnectionLost}
	}
	return nil
}

func (w *outageWorker) Reset(context.Context) error {
	if w.isDown() {
		return classErr{class: metrics.ConnectionLost}
	}
	return nil
}
func outageLoad(start time.Time, down, up time.Duration) *workload.QueryLoad {
	return workers(func(int) worker { return &outageWorker{start: start, down: down, up: up} })
}

// An outage in the middle: failed reconnects are counted, the run says when
// the server went away and came back, and how long it was gone.
func TestOutageCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Duration, cfg.MaxTries = 2, 4*time.Second, 3
		events := recordEvents(&cfg)
		var reconnectErrors atomic.Int64
		cfg.OnError = func(e ErrorEvent) {
			if e.Op == "reconnect" {
				reconnectErrors.Add(1)
			}
		}
		res, err := Run(t.Context(), cfg, outageLoad(time.Now(), time.Second, 3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		// --verbose-errors shows every failed reconnection.
		if reconnectErrors.Load() != res.Total.Reconnects {
			t.Errorf("%d reconnect errors reported, %d counted", reconnectErrors.Load(), res.Total.Reconnects)
		}
		if res.Total.Reconnects < 10 || res.Outages != 1 {
			t.Fatalf("reconnects %d outages %d", res.Total.Reconnects, res.Outages)
		}
		// From the first failed attempt to the first that succeeded: the
		// outage, plus at most the 1 s reconnection backoff.
		if res.Unreachable < 1900*time.Millisecond || res.Unreachable > 3100*time.Millisecond {
			t.Errorf("unreachable for %s, want 2s to 3s", res.Unreachable)
		}
		if len(events()) != 2 || events()[0].Kind != Unreachable || events()[1].Kind != Reachable || events()[0].Err == nil {
			t.Fatalf("events %+v", events())
		}
		if op := res.Total.Ops[0]; op.OK == 0 || op.Errors[metrics.ConnectionLost] == 0 {
			t.Fatalf("ok %d errors %v", op.OK, op.Errors)
		}
	})
}

// The server goes down before the end and stays down: the run still ends at
// its duration (reconnection stops there), not when the server returns.
func TestServerDownAtEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Duration, cfg.MaxTries = 2, 3*time.Second, 10
		start := time.Now()
		res, err := Run(t.Context(), cfg, outageLoad(start, 2*time.Second, time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 3*time.Second+time.Second {
			t.Fatalf("run took %s with the server down: want it to end by its duration", d)
		}
		all, err := res.All() // the clients give up in the drain
		if err != nil {
			t.Fatal(err)
		}
		op := all.Ops[0]
		if op.Failed[metrics.ConnectionLost] != 2 || res.Total.Reconnects == 0 || res.Outages != 1 {
			t.Fatalf("failed %v reconnects %d outages %d", op.Failed, res.Total.Reconnects, res.Outages)
		}
	})
}

// A fatal error stops the run, and the operation that hit it is counted.
func TestFatalCountsTheFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency = 1
		l, _, _ := load(fakeWorker{fail: func(n int64, _ int) error {
			if n == 5 {
				return classErr{class: metrics.Other, fatal: true}
			}
			return nil
		}, service: func(int64) time.Duration { return time.Millisecond }})
		res, err := Run(t.Context(), cfg, l)
		if err == nil {
			t.Fatal("no error")
		}
		if op := res.Total.Ops[0]; op.OK != 4 || op.Failed[metrics.Other] != 1 {
			t.Fatalf("ok %d failed %v", op.OK, op.Failed)
		}
	})
}

// An error that no retry cures ends the client, as pgbench does; with
// ContinueOnError the client goes on and the error is counted.
func TestOtherErrorAbortsClient(t *testing.T) {
	for _, cont := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			cfg := base()
			cfg.Concurrency, cfg.Duration, cfg.ContinueOnError = 2, time.Second, cont
			var aborted atomic.Int64
			cfg.OnEvent = func(e Event) {
				if e.Kind == Aborted {
					aborted.Add(1)
				}
			}
			l, _, _ := load(fakeWorker{fail: func(n int64, _ int) error {
				if n%10 == 0 {
					return errors.New("division by zero")
				}
				return nil
			}, service: func(int64) time.Duration { return 10 * time.Millisecond }})
			res, err := Run(t.Context(), cfg, l)
			if err != nil {
				t.Fatal(err)
			}
			op := res.Total.Ops[0]
			if res.FirstErrors[metrics.Other] == nil || res.FirstErrors[metrics.Other].Error() != "division by zero" {
				t.Errorf("first error %v", res.FirstErrors[metrics.Other])
			}
			if !cont && (res.Aborted != 2 || aborted.Load() != 2 || op.Failed[metrics.Other] != 2 || op.OK >= 30) {
				t.Fatalf("aborted %d/%d failed %v ok %d", res.Aborted, aborted.Load(), op.Failed, op.OK)
			}
			if cont && (res.Aborted != 0 || op.Failed[metrics.Other] < 15) {
				t.Fatalf("continue: aborted %d failed %v", res.Aborted, op.Failed)
			}
		})
	}
}

// groupDrive drives each group from one goroutine, as the driver's loops do,
// with operations of a fixed service time run one after another per client.
func groupDrive(service time.Duration, perGroup *[]int64) func(context.Context, workload.Clients) error {
	return func(ctx context.Context, cs workload.Clients) error {
		cs.Ready(time.Now())
		*perGroup = make([]int64, len(cs.Groups))
		var wg sync.WaitGroup
		for gi, g := range cs.Groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, s := range g {
					step := s.Next(time.Now())
					for step.Kind != workload.Stop {
						switch step.Kind {
						case workload.Wait:
							time.Sleep(time.Until(step.At))
							step = s.Next(time.Now())
						case workload.Start:
							time.Sleep(service)
							(*perGroup)[gi]++
							step = s.Done(time.Now(), nil, -1)
						default:
							step = s.Connected(time.Now(), nil)
						}
					}
				}
			}()
		}
		wg.Wait()
		return nil
	}
}

// An asynchronous Drive gets the clients in Jobs groups, and in open loop
// each group a share of the schedule in proportion to its clients; together
// they offer exactly the run's count.
func TestDriveGroupsShareSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Jobs, cfg.Rate, cfg.Arrival, cfg.Duration = 5, 2, 1000, Uniform, 2*time.Second
		var per []int64
		l := &workload.QueryLoad{Ops: []string{"op"}, Drive: groupDrive(0, &per)}
		res, err := Run(t.Context(), cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		op := res.Total.Ops[0]
		if op.OK != 2000 || res.Unstarted != 0 || len(per) != 2 || per[0] != 1200 || per[1] != 800 {
			t.Fatalf("ok %d unstarted %d per group %v, want 2000 0 [1200 800]", op.OK, res.Unstarted, per)
		}
		// Uniform shares interleave: no arrival of one group lands on one
		// of the other's, so with instant service nothing lags.
		if op.Lag.Max() != 0 {
			t.Errorf("lag max %d µs", op.Lag.Max())
		}
	})
}

// A Drive is handed the run's --spin, for the loops that wait on Go's
// timers.
func TestDriveGetsSpin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Duration, cfg.Spin = 10*time.Millisecond, 3*time.Millisecond
		var got time.Duration
		var per []int64
		drive := groupDrive(time.Millisecond, &per)
		l := &workload.QueryLoad{Ops: []string{"op"}, Drive: func(ctx context.Context, cs workload.Clients) error {
			got = cs.Spin
			return drive(ctx, cs)
		}}
		if _, err := Run(t.Context(), cfg, l); err != nil {
			t.Fatal(err)
		}
		if got != cfg.Spin {
			t.Fatalf("the Drive was handed spin %s, want %s", got, cfg.Spin)
		}
	})
}

// Three instances of one open-loop run offer exactly the operations one
// process would, uniform arrivals interleaved without collisions.
func TestInstancesShareSchedule(t *testing.T) {
	var total int64
	var lagMax int64
	for i := 0; i < 3; i++ {
		synctest.Test(t, func(t *testing.T) {
			cfg := base()
			cfg.Concurrency, cfg.Jobs, cfg.Rate, cfg.Arrival, cfg.Duration = 2, 0, 1000, Uniform, time.Second
			cfg.Instance, cfg.Instances = i, 3
			var per []int64
			res, err := Run(t.Context(), cfg, &workload.QueryLoad{Ops: []string{"op"}, Drive: groupDrive(0, &per)})
			if err != nil {
				t.Fatal(err)
			}
			total += res.Offered
			if res.Total.Ops[0].OK != res.Offered {
				t.Fatalf("instance %d: ok %d offered %d", i, res.Total.Ops[0].OK, res.Offered)
			}
			lagMax = max(lagMax, res.Total.Ops[0].Lag.Max())
		})
	}
	if total != 1000 || lagMax != 0 {
		t.Fatalf("offered %d in all, want 1000; lag max %d", total, lagMax)
	}
	cfg := base()
	cfg.Instance, cfg.Instances = 3, 2
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--instance 3/2") {
		t.Fatalf("3/2: %v", err)
	}
}

// perClientWorker counts the attempts of each client; client i takes i+1 ms
// per attempt, and every third attempt of a client fails with a
// serialization error.
type perClientWorker struct {
	id    int
	count []atomic.Int64
}

func (w *perClientWorker) Do(ctx context.Context, op, attempt int) error {
	n := w.count[w.id].Add(1)
	time.Sleep(time.Duration(w.id+1) * time.Millisecond)
	if n%3 == 0 {
		return classErr{class: metrics.Serialization}
	}
	return nil
}
func (w *perClientWorker) Reset(context.Context) error { return nil }

// Transactions per client (pgbench's -t): in closed loop every client ends
// after exactly that many transactions, failed ones included, however fast
// it is, and the run ends when the slowest is done; in open loop the
// schedule offers exactly transactions × clients over the time they take at
// the rate.
func TestTransactionsPerClient(t *testing.T) {
	t.Run("closed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			cfg := base()
			cfg.Concurrency, cfg.Duration, cfg.Transactions = 4, 0, 30
			counts := make([]atomic.Int64, 4)
			l := workers(func(id int) worker { return &perClientWorker{id: id, count: counts} })
			res, err := Run(t.Context(), cfg, l)
			if err != nil {
				t.Fatal(err)
			}
			for i := range counts {
				if n := counts[i].Load(); n != 30 {
					t.Errorf("client %d ran %d transactions, want 30", i, n)
				}
			}
			op := res.Total.Ops[0]
			if op.OK != 80 || op.Failed[metrics.Serialization] != 40 {
				t.Fatalf("ok %d failed %v, want 80 and 40", op.OK, op.Failed)
			}
			// The slowest client takes 4 ms per transaction.
			if res.Total.Elapsed != 120*time.Millisecond {
				t.Fatalf("elapsed %s, want 120ms", res.Total.Elapsed)
			}
		})
	})
	t.Run("drive", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			cfg := base()
			cfg.Concurrency, cfg.Jobs, cfg.Duration, cfg.Transactions = 5, 2, 0, 7
			var per []int64
			res, err := Run(t.Context(), cfg, &workload.QueryLoad{Ops: []string{"op"}, Drive: groupDrive(time.Millisecond, &per)})
			if err != nil {
				t.Fatal(err)
			}
			if op := res.Total.Ops[0]; op.OK != 35 || len(per) != 2 || per[0] != 21 || per[1] != 14 {
				t.Fatalf("ok %d per group %v, want 35 [21 14]", op.OK, per)
			}
		})
	})
	t.Run("open", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			cfg := base()
			cfg.Concurrency, cfg.Duration, cfg.Transactions, cfg.Rate, cfg.Arrival = 4, 0, 25, 200, Uniform
			l, _, _ := load(fakeWorker{service: func(int64) time.Duration { return time.Millisecond }})
			res, err := Run(t.Context(), cfg, l)
			if err != nil {
				t.Fatal(err)
			}
			if op := res.Total.Ops[0]; op.OK != 100 || res.Offered != 100 || res.Unstarted != 0 {
				t.Fatalf("ok %d offered %d unstarted %d, want 100 100 0", op.OK, res.Offered, res.Unstarted)
			}
			if res.Total.Elapsed != 500*time.Millisecond {
				t.Fatalf("elapsed %s, want 500ms (100 at 200/s)", res.Total.Elapsed)
			}
		})
	})
	bad := base()
	bad.Duration, bad.Transactions, bad.Warmup = 0, 10, time.Second
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "--warmup") {
		t.Fatalf("warm-up with transactions: %v", err)
	}
	bad.Warmup, bad.Transactions = 0, 0
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "--duration") {
		t.Fatalf("neither duration nor transactions: %v", err)
	}
}

// OnTxn gets every transaction that ended, once, on its group: numbered per
// client from 1 in order, with its outcome, tries, latency and lag; calls
// for the clients of one group never overlap. Skipped ones are reported
// too, and numbered.
func TestOnTxn(t *testing.T) {
	t.Run("drive", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			cfg := base()
			cfg.Concurrency, cfg.Jobs, cfg.Duration, cfg.Transactions, cfg.MaxTries = 5, 2, 0, 12, 2
			var busy [2]atomic.Bool
			got := map[int][]Txn{}
			var mu sync.Mutex
			cfg.OnTxn = func(x Txn) {
				if !busy[x.Group].CompareAndSwap(false, true) {
					t.Errorf("two calls at once on group %d", x.Group)
				}
				time.Sleep(time.Microsecond) // give another call of the group the chance to overlap
				mu.Lock()
				got[x.Client] = append(got[x.Client], x)
				mu.Unlock()
				busy[x.Group].Store(false)
			}
			// The third transaction of each client fails every try on a
			// deadlock; the fourth fails its first try on a serialization
			// error.
			l := &workload.QueryLoad{Ops: []string{"a", "b"}, Chooser: func(id int) func() int {
				n := 0
				return func() int { n++; return n % 2 }
			}, Drive: func(ctx context.Context, cs workload.Clients) error {
				cs.Ready(time.Now())
				var wg sync.WaitGroup
				for _, g := range cs.Groups {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for _, s := range g {
							n := 0
							step := s.Next(time.Now())
							for step.Kind == workload.Start {
								if step.Attempt == 1 {
									n++
								}
								time.Sleep(time.Millisecond)
								var err error
								switch {
								case n%12 == 3:
									err = classErr{class: metrics.Deadlock}
								case n%12 == 4 && step.Attempt == 1:
									err = classErr{class: metrics.Serialization}
								}
								step = s.Done(time.Now(), err, -1)
							}
						}
					}()
				}
				wg.Wait()
				return nil
			}}
			res, err := Run(t.Context(), cfg, l)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 5 {
				t.Fatalf("transactions of %d clients, want 5", len(got))
			}
			for c, txns := range got {
				if len(txns) != 12 {
					t.Fatalf("client %d: %d transactions, want 12", c, len(txns))
				}
				for i, x := range txns {
					wantGroup := 0
					if c >= 3 {
						wantGroup = 1
					}
					wantOutcome, wantTries := TxnOK, 1
					switch i + 1 {
					case 3:
						wantOutcome, wantTries = TxnDeadlock, 2
					case 4:
						wantTries = 2
					}
					if x.Number != int64(i+1) || x.Group != wantGroup || x.Op != (i+1)%2 || x.Outcome != wantOutcome || x.Tries != wantTries || !x.Measured {
						t.Fatalf("client %d transaction %d: %+v", c, i+1, x)
					}
					// Closed loop: no lag; 1 ms per try (and the previous
					// call's microsecond).
					if d := x.Latency - time.Duration(wantTries)*time.Millisecond; x.Lag != 0 || d < 0 || d > 10*time.Microsecond || x.End.Sub(x.Intended) != x.Latency {
						t.Fatalf("client %d transaction %d: latency %s lag %s", c, i+1, x.Latency, x.Lag)
					}
					if i > 0 && x.End.Before(txns[i-1].End) {
						t.Fatalf("client %d: transaction %d ended before %d", c, i+1, i)
					}
				}
			}
			if op := res.Total.Total("all"); op.OK != 55 || op.Failed[metrics.Deadlock] != 5 {
				t.Fatalf("ok %d failed %v, want 55 and 5 deadlocks", op.OK, op.Failed)
			}
		})
	})
	t.Run("skipped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			cfg := base()
			cfg.Concurrency, cfg.Rate, cfg.Arrival, cfg.Duration = 1, 100, Uniform, 2*time.Second
			cfg.LatencyLimit = 50 * time.Millisecond
			var txns []Txn
			cfg.OnTxn = func(x Txn) { txns = append(txns, x) }
			l, _, _ := load(fakeWorker{service: func(n int64) time.Duration {
				if n == 10 {
					return 500 * time.Millisecond
				}
				return time.Millisecond
			}})
			res, err := Run(t.Context(), cfg, l)
			if err != nil {
				t.Fatal(err)
			}
			op := res.Total.Ops[0]
			var skipped int64
			for i, x := range txns {
				if x.Number != int64(i+1) {
					t.Fatalf("transaction %d numbered %d", i+1, x.Number)
				}
				switch x.Outcome {
				case TxnSkipped:
					skipped++
					if x.Tries != 0 || x.Lag <= cfg.LatencyLimit {
						t.Fatalf("skipped %+v", x)
					}
				case TxnOK:
					if x.Tries != 1 || x.Latency != x.Lag+x.End.Sub(x.Start) {
						t.Fatalf("ok %+v", x)
					}
				}
			}
			if len(txns) != 200 || skipped != op.Skipped || skipped == 0 {
				t.Fatalf("%d transactions, %d skipped; the run counted %d skipped", len(txns), skipped, op.Skipped)
			}
		})
	})
}

// connWorker takes 1 ms per attempt and 2 ms per connection; it counts its
// connections.
type connWorker struct{ conns *atomic.Int64 }

func (w connWorker) Do(ctx context.Context, op, attempt int) error {
	time.Sleep(time.Millisecond)
	return nil
}
func (w connWorker) Reset(context.Context) error {
	time.Sleep(2 * time.Millisecond)
	w.conns.Add(1)
	return nil
}

// ConnectPerTxn (pgbench's -C) connects anew before every transaction and
// counts the connections and their time: in closed loop the transaction
// starts once connected (its latency leaves the connection out); in open
// loop it was due before, and its latency holds the connection.
func TestConnectPerTransaction(t *testing.T) {
	for _, rate := range []float64{0, 100} {
		synctest.Test(t, func(t *testing.T) {
			cfg := base()
			cfg.Concurrency, cfg.Duration, cfg.Transactions, cfg.ConnectPerTxn = 3, 0, 10, true
			cfg.Rate, cfg.Arrival = rate, Uniform
			var conns atomic.Int64
			l := workers(func(int) worker { return connWorker{conns: &conns} })
			res, err := Run(t.Context(), cfg, l)
			if err != nil {
				t.Fatal(err)
			}
			op := res.Total.Ops[0]
			if op.OK != 30 || conns.Load() != 30 || res.Connections != 30 || res.ConnectionTime != 60*time.Millisecond {
				t.Fatalf("rate %g: ok %d, %d connections made, %d counted taking %s; want 30, 30, 30 and 60ms",
					rate, op.OK, conns.Load(), res.Connections, res.ConnectionTime)
			}
			want := time.Millisecond
			if rate > 0 {
				want += 2 * time.Millisecond
			}
			// The histogram's resolution: 3 significant digits.
			if got := time.Duration(op.Response.Max()) * time.Microsecond; got < want || got > want+want/500 {
				t.Errorf("rate %g: latency max %s, want %s", rate, got, want)
			}
		})
	}
}

// straddleWorker's connection attempts fail when the server was down as
// they began, and take slow to fail: one begun during the outage may still
// be failing after another client has reconnected.
type straddleWorker struct {
	outageWorker
	slow time.Duration
}

func (w *straddleWorker) Reset(context.Context) error {
	wasDown := w.isDown()
	time.Sleep(w.slow)
	if wasDown {
		return classErr{class: metrics.ConnectionLost}
	}
	return nil
}

// One outage is one outage even when a slow attempt begun during it fails
// after another client reconnected: client 1's attempts take 3.5 s, so the
// one it began as the server went away (at 1 s) fails at 4.5 s, after
// client 0 reconnected (at 3 s plus at most its 1 s backoff).
func TestOutageCountedOnceAcrossSlowAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res, events := twoClientOutage(t, 8*time.Second, func(id int, w outageWorker) worker {
			slow := 10 * time.Millisecond
			if id == 1 {
				slow = 3500 * time.Millisecond
			}
			return &straddleWorker{outageWorker: w, slow: slow}
		})
		if res.Outages != 1 || res.Total.Reconnects < 2 {
			t.Fatalf("outages %d, failed reconnects %d: want 1 outage and client 1's late failure counted as a reconnect", res.Outages, res.Total.Reconnects)
		}
		if len(events()) != 2 || events()[0].Kind != Unreachable || events()[1].Kind != Reachable {
			t.Fatalf("events %+v", events())
		}
	})
}

// lateReplyWorker answers an operation begun in the last 100 ms before the
// outage only once the outage has begun: a reply that was in before the
// server went away, read late by a busy I/O loop.
type lateReplyWorker struct {
	outageWorker
	late time.Duration
}

func (w *lateReplyWorker) Do(ctx context.Context, op, attempt int) error {
	if e := time.Since(w.start); e >= w.down-100*time.Millisecond && e < w.down {
		time.Sleep(w.late)
		return nil
	}
	return w.outageWorker.Do(ctx, op, attempt)
}

// A success read after the outage began, of an operation begun before it,
// does not end the outage: client 1's reply comes 600 ms late, while
// client 0 still fails to reconnect; one outage, from 1 s to 3 s.
func TestOutageNotEndedByALateReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res, events := twoClientOutage(t, 6*time.Second, func(id int, w outageWorker) worker {
			if id == 1 {
				return &lateReplyWorker{outageWorker: w, late: 600 * time.Millisecond}
			}
			return &w
		})
		if res.Outages != 1 {
			t.Fatalf("outages %d, want 1 (events %+v)", res.Outages, events())
		}
		ev := events()
		if len(ev) != 2 || ev[0].Kind != Unreachable || ev[1].Kind != Reachable || ev[1].Down < 1900*time.Millisecond {
			t.Fatalf("events %+v: want one outage of about 2 s", ev)
		}
	})
}

// twoClientOutage runs two clients for d through an outage from 1 s to 3 s
// (inside synctest), each client's worker made by worker from the outage's
// plain one; it returns the result and the run's events.
func twoClientOutage(t *testing.T, d time.Duration, newWorker func(id int, w outageWorker) worker) (*Result, func() []Event) {
	t.Helper()
	cfg := base()
	cfg.Concurrency, cfg.Duration, cfg.MaxTries = 2, d, 3
	events := recordEvents(&cfg)
	w := outageWorker{start: time.Now(), down: time.Second, up: 3 * time.Second}
	load := workers(func(id int) worker { return newWorker(id, w) })
	res, err := Run(t.Context(), cfg, load)
	if err != nil {
		t.Fatal(err)
	}
	return res, events
}

// recordEvents keeps the run's events; the returned function reads them.
func recordEvents(cfg *Config) func() []Event {
	var mu sync.Mutex
	var events []Event
	cfg.OnEvent = func(e Event) { mu.Lock(); events = append(events, e); mu.Unlock() }
	return func() []Event { mu.Lock(); defer mu.Unlock(); return append([]Event(nil), events...) }
}

// Progress intervals are labelled by their scheduled end: the warm-up's
// last ends exactly where the warm-up does and is the warm-up's; the first
// after it is measured.
func TestWarmupIntervalsLabelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Warmup, cfg.Duration, cfg.Progress = 1, time.Second, time.Second, 500*time.Millisecond
		var labels []bool
		var ends []time.Duration
		cfg.OnTick = func(tk Tick) {
			if !tk.Drain {
				labels, ends = append(labels, tk.Warmup), append(ends, tk.Elapsed)
			}
		}
		l, _, _ := load(fakeWorker{service: func(int64) time.Duration { return 10 * time.Millisecond }})
		if _, err := Run(t.Context(), cfg, l); err != nil {
			t.Fatal(err)
		}
		want := []bool{true, true, false, false}
		if len(labels) != len(want) {
			t.Fatalf("intervals ending at %v, labelled %v; want 4", ends, labels)
		}
		for i := range want {
			if labels[i] != want[i] {
				t.Fatalf("intervals ending at %v labelled warm-up %v, want %v", ends, labels, want)
			}
		}
	})
}

// slowConnect is a Drive whose clients take connect to connect before
// drive runs them (workerDrive).
func slowConnect(connect time.Duration, l *workload.QueryLoad) *workload.QueryLoad {
	drive := l.Drive
	l.Drive = func(ctx context.Context, cs workload.Clients) error {
		time.Sleep(connect)
		return drive(ctx, cs)
	}
	return l
}

// pgbench's clock (ClockBeforeConnect): -T counts from before the clients
// connect, the window from when they are connected to the end of -T;
// progress ticks every -P from before connecting, those due while
// connecting as one tick once connected, then a short one to the next
// boundary.
func TestClockBeforeConnect(t *testing.T) {
	for _, rate := range []float64{0, 100, 400} {
		t.Run(fmt.Sprintf("rate %g", rate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := base()
				cfg.Concurrency, cfg.Duration, cfg.Progress, cfg.Rate, cfg.Arrival = 2, 5*time.Second, time.Second, rate, Uniform
				cfg.ClockBeforeConnect = true
				var got []string
				cfg.OnTick = func(tk Tick) {
					got = append(got, fmt.Sprintf("%s/%s/%t", tk.Elapsed, tk.Interval.Elapsed, tk.Resumed))
				}
				l, _, _ := load(fakeWorker{service: func(int64) time.Duration { return 10 * time.Millisecond }})
				began := time.Now()
				res, err := Run(t.Context(), cfg, slowConnect(2500*time.Millisecond, l))
				if err != nil {
					t.Fatal(err)
				}
				if wall := time.Since(began); wall < 5*time.Second || wall > 5010*time.Millisecond {
					t.Errorf("the run took %s, want the 5s of -T, connecting included (and what was in flight then)", wall)
				}
				if res.ConnectTime != 2500*time.Millisecond || res.Total.Elapsed != 2500*time.Millisecond {
					t.Errorf("connecting %s, window %s: want 2.5s and the 2.5s left of -T", res.ConnectTime, res.Total.Elapsed)
				}
				// Closed loop: 2 clients, 10 ms each; open loop: 100/s over
				// the 2.5 s left, the schedule's tail never offered.
				want := int64(500)
				switch rate {
				case 100:
					want = 250
					if res.Offered != want || res.Unstarted != 0 {
						t.Errorf("offered %d, unstarted %d: want %d and 0", res.Offered, res.Unstarted, want)
					}
				case 400: // more than the clients can do: what is left at the end never starts
					if res.Offered != 1000 || res.Unstarted != 500 {
						t.Errorf("offered %d, unstarted %d: want 1000 and 500", res.Offered, res.Unstarted)
					}
				}
				if ok := res.Total.Ops[0].OK; ok < want-2 || ok > want {
					t.Errorf("%d operations in the window, want %d", ok, want)
				}
				wantTicks := []string{"2.5s/2.5s/false", "3s/500ms/true", "4s/1s/false", "5s/1s/false"}
				if len(got) < 4 || strings.Join(got[:4], " ") != strings.Join(wantTicks, " ") {
					t.Errorf("ticks (elapsed/interval/resumed) %v, want %v first", got, wantTicks)
				}
			})
		})
	}
}

// Connecting that takes longer than the duration leaves an empty window,
// as pgbench's (0 transactions), and one progress tick once connected.
func TestClockBeforeConnectLongerThanDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Duration, cfg.Progress, cfg.ClockBeforeConnect = 2, 5*time.Second, time.Second, true
		var got []string
		cfg.OnTick = func(tk Tick) {
			got = append(got, fmt.Sprintf("%s/%s/%d", tk.Elapsed, tk.Interval.Elapsed, tk.Interval.Ops[0].OK))
		}
		l, n, _ := load(fakeWorker{service: func(int64) time.Duration { return 10 * time.Millisecond }})
		began := time.Now()
		res, err := Run(t.Context(), cfg, slowConnect(6*time.Second, l))
		if err != nil {
			t.Fatal(err)
		}
		if wall := time.Since(began); wall != 6*time.Second || n.Load() != 0 || res.Total.Elapsed != 0 || res.Total.Ops[0].OK != 0 {
			t.Errorf("wall %s, %d operations, window %s: want 6s, none, 0s", wall, n.Load(), res.Total.Elapsed)
		}
		if len(got) == 0 || got[0] != "6s/6s/0" {
			t.Errorf("ticks (elapsed/interval/ok) %v, want 6s/6s/0 first", got)
		}
	})
}

// An open loop past its window: nothing new starts once it has ended, what
// is running drains within the drain timeout, and what was scheduled but
// not started is counted once, as never started. In flight at the end are
// only operations really sent: at most one per client. (The old engine
// kept starting the late arrivals after the window until --max-lag
// tripped, and counted them all as in flight: 4400 on 2 clients, and a
// run of 2 s with a drain timeout of 1 s that took 7.5 s.)
func TestOpenLoopWindowEnd(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rate    float64
		clients int
		service time.Duration // of each operation
		slow    int64         // the operation, from 1, that takes 60ms (0: none)
		hang    time.Duration // the server stops answering then (0: never)
		offered int64
		// The run ends within [window, window+ended], every operation
		// offered was in it or never started, at least unstarted of them.
		ended     time.Duration
		drained   bool
		abandoned int64
		unstarted int64
		// behind: more than 1% of the offered, and more than one a
		// client, never started.
		behind bool
	}{
		{name: "behind at the end", rate: 3000, clients: 2, service: 2500 * time.Microsecond, offered: 6000,
			ended: 2500 * time.Microsecond, unstarted: 6000 - 2*801, behind: true},
		{name: "a rate of 1e9", rate: 1e9, clients: 2, service: time.Millisecond, offered: 2e9,
			ended: time.Millisecond, unstarted: 2e9 - 2*2001, behind: true},
		{name: "a server that stops answering", rate: 100, clients: 3, hang: 1500 * time.Millisecond, offered: 200,
			ended: time.Second, drained: true, abandoned: 3, unstarted: 200 - 150 - 3, behind: true},
		{name: "keeping up", rate: 100, clients: 2, service: time.Millisecond, offered: 200, ended: time.Millisecond},
		// 80 offered on one client: the one that arrives while its
		// client serves the last long operation is never started, and
		// is more than 1%, but a loop that keeps up can end so.
		{name: "one left to its client", rate: 40, clients: 1, slow: 79, service: time.Millisecond, offered: 80,
			ended: 20 * time.Millisecond, unstarted: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := base()
				cfg.Concurrency, cfg.Rate, cfg.Arrival, cfg.DrainTimeout = tc.clients, tc.rate, Uniform, time.Second
				cfg.Duration = 2 * time.Second
				start := time.Now()
				l, _, _ := load(fakeWorker{service: func(n int64) time.Duration {
					if n == tc.slow {
						return 60 * time.Millisecond
					}
					return tc.service
				}})
				if tc.hang > 0 {
					var blocked atomic.Int64
					l = workers(func(int) worker { return &blockingWorker{start: start, after: tc.hang, blocked: &blocked} })
				}
				res, err := Run(t.Context(), cfg, l)
				if err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took < cfg.Duration || took > cfg.Duration+tc.ended {
					t.Errorf("the run took %s, want at most %s (window 2s, drain timeout 1s)", took, cfg.Duration+tc.ended)
				}
				if res.Saturated || res.Drained != tc.drained || res.Behind != tc.behind {
					t.Errorf("saturated %v drained %v behind %v, want false %v %v", res.Saturated, res.Drained, res.Behind, tc.drained, tc.behind)
				}
				w := res.Total.Ops[0]
				inFlight := res.InFlight()
				if inFlight > int64(tc.clients) || res.Drain == nil || res.Drain.Ops[0].Abandoned != tc.abandoned {
					t.Fatalf("in flight at the window's end %d (abandoned %+v), want at most the %d clients", inFlight, res.Drain, tc.clients)
				}
				if res.Offered != tc.offered || res.Unstarted < tc.unstarted {
					t.Errorf("offered %d, never started %d; want %d, at least %d", res.Offered, res.Unstarted, tc.offered, tc.unstarted)
				}
				// Every operation offered is counted once: ended in the
				// window, in flight at its end, or never started.
				if sum := w.OK + w.FailedTotal() + w.Skipped + inFlight + res.Unstarted; sum != res.Offered {
					t.Errorf("ok %d + failed %d + skipped %d + in flight %d + never started %d = %d, want the %d offered",
						w.OK, w.FailedTotal(), w.Skipped, inFlight, res.Unstarted, sum, res.Offered)
				}
			})
		})
	}
}

// An open loop whose schedule is done before its window's end (no
// operation in flight then) still ends its window at its end: the run
// lasts its duration and its last progress interval ends there, not at
// its last operation's end (whose interval the progress lines left out).
func TestOpenLoopIdleAtTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Rate, cfg.Arrival, cfg.Duration, cfg.Progress = 2, 100, Uniform, 2*time.Second, time.Second
		var last struct{ end, length time.Duration } // of the window's last interval
		cfg.OnTick = func(tk Tick) {
			if !tk.Drain {
				last.end, last.length = tk.Elapsed, tk.Interval.Elapsed
			}
		}
		l, _, _ := load(fakeWorker{service: func(int64) time.Duration { return time.Millisecond }})
		start := time.Now()
		res, err := Run(t.Context(), cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != cfg.Duration || res.Total.Elapsed != cfg.Duration || res.Total.Ops[0].OK != 200 {
			t.Fatalf("took %s, window %s, ok %d: want 2s, 2s, 200", took, res.Total.Elapsed, res.Total.Ops[0].OK)
		}
		if last.end != cfg.Duration || last.length != time.Second {
			t.Fatalf("the window's last interval ends at %s after %s: want a whole interval ending at 2s", last.end, last.length)
		}
	})
}

// QueryLoad.Pause: each operation starts after its client's pause (the
// think time after the last, the keying time of the next), intended at the
// pause's end, so that the pause is in no latency; a pause that would end
// after the run does not start its operation, and the run ends on time.
func TestPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Duration = 1, time.Second
		var pauses [][2]int
		var starts []time.Time
		l := &workload.QueryLoad{Ops: []string{"a", "b"}, Chooser: func(int) func() int {
			n := 0
			return func() int { n++; return n % 2 }
		}, Pause: func(int) func(prev, next int) time.Duration {
			return func(prev, next int) time.Duration {
				pauses = append(pauses, [2]int{prev, next})
				return 100 * time.Millisecond * time.Duration(next+1) // a: 100ms, b: 200ms
			}
		}, Drive: func(ctx context.Context, cs workload.Clients) error {
			start := time.Now()
			cs.Ready(start)
			s := cs.Groups[0][0]
			step := s.Next(time.Now())
			for step.Kind != workload.Stop {
				switch step.Kind {
				case workload.Pause:
					time.Sleep(time.Until(step.At))
					step = s.Next(time.Now())
				case workload.Start:
					starts = append(starts, time.Now())
					time.Sleep(10 * time.Millisecond)
					step = s.Done(time.Now(), nil, -1)
				default:
					t.Fatalf("step %v", step.Kind)
				}
			}
			return nil
		}}
		begin := time.Now()
		res, err := Run(t.Context(), cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		// b at 200ms (ends 210), a at 310 (320), b at 520 (530), a at 630
		// (640), b at 840 (850); the next a would start at 950 (ends 960),
		// then b's pause would end at 1160, after the end: 6 operations.
		wantAt := []time.Duration{200, 310, 520, 630, 840, 950}
		if len(starts) != len(wantAt) {
			t.Fatalf("%d operations started, want %d", len(starts), len(wantAt))
		}
		for i, at := range starts {
			if d := at.Sub(begin); d != wantAt[i]*time.Millisecond {
				t.Errorf("operation %d started at %s, want %dms", i, d, wantAt[i])
			}
		}
		if want := [][2]int{{-1, 1}, {1, 0}, {0, 1}, {1, 0}, {0, 1}, {1, 0}, {0, 1}}; fmt.Sprint(pauses) != fmt.Sprint(want) {
			t.Errorf("pauses asked %v, want %v", pauses, want)
		}
		all := res.Total.Total("all")
		if all.OK != 6 || all.Response.Max() > 10010 || all.Lag.Max() != 0 {
			t.Errorf("ok %d, max response %dµs, max lag %dµs: want 6, 10ms (the pause in no latency), 0", all.OK, all.Response.Max(), all.Lag.Max())
		}
		if d := time.Since(begin); d != time.Second || res.Total.Elapsed != time.Second {
			t.Errorf("the run ended after %s, its window %s: want both 1s (a pause beyond the end ends with it)", d, res.Total.Elapsed)
		}
	})
}

// A number of transactions per client with a rate, split between
// instances: --rate is the whole schedule's, as --concurrency is, so an
// instance offers its clients' transactions over the whole's window, at
// its clients' share of the rate. The code before it ran each instance at
// the whole rate: N instances drove N × --rate.
func TestInstancesShareRateWithTransactions(t *testing.T) {
	for _, tc := range []struct {
		clients, all, instances int
		window                  time.Duration
		share                   float64
	}{
		{2, 4, 2, 400 * time.Millisecond, 50}, // 10 × 4 at 100/s
		{1, 3, 2, 300 * time.Millisecond, 100.0 / 3},
		{2, 0, 2, 400 * time.Millisecond, 50},  // AllClients unknown: Concurrency × Instances
		{4, 0, 1, 400 * time.Millisecond, 100}, // the only one
	} {
		cfg := base()
		cfg.Concurrency, cfg.AllClients, cfg.Instances, cfg.Transactions, cfg.Rate = tc.clients, tc.all, tc.instances, 10, 100
		if got := cfg.Window(); got != tc.window {
			t.Errorf("%+v: window %s, want %s", tc, got, tc.window)
		}
		if got := cfg.ShareRate(); math.Abs(got-tc.share) > 1e-9 {
			t.Errorf("%+v: share %g, want %g", tc, got, tc.share)
		}
	}
	// Run: instance 1 of 2 with 2 of 4 clients offers its 20 transactions
	// over 400 ms (the whole's 40 at 100/s), not over 200 ms.
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.AllClients, cfg.Jobs, cfg.Rate, cfg.Arrival, cfg.Transactions, cfg.Duration = 2, 4, 0, 100, Uniform, 10, 0
		cfg.Instance, cfg.Instances = 1, 2
		var per []int64
		began := time.Now()
		res, err := Run(t.Context(), cfg, &workload.QueryLoad{Ops: []string{"op"}, Drive: groupDrive(0, &per)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Offered != 20 || res.Total.Ops[0].OK != 20 {
			t.Fatalf("offered %d, ok %d: want 20 of each", res.Offered, res.Total.Ops[0].OK)
		}
		if took := time.Since(began); took < 380*time.Millisecond {
			t.Errorf("20 transactions took %s: at its 50/s share they take about 400ms", took)
		}
	})
}
