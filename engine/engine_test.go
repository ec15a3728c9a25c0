package engine

import (
	"context"
	"errors"
	"math"
	"strings"
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

// fakeWorker sleeps for service per attempt and fails according to fail.
type fakeWorker struct {
	service func(n int64) time.Duration
	fail    func(n int64, attempt int) error
	n       *atomic.Int64
	resets  *atomic.Int64
}

func (w *fakeWorker) Next() int { return 0 }
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
func (w *fakeWorker) Close(context.Context)       {}

func load(w fakeWorker) (*workload.QueryLoad, *atomic.Int64, *atomic.Int64) {
	var n, resets atomic.Int64
	w.n, w.resets = &n, &resets
	return &workload.QueryLoad{
		Ops: []string{"op"},
		NewWorker: func(context.Context, int) (workload.Worker, error) {
			c := w
			return &c, nil
		},
	}, &n, &resets
}

func base() Config {
	return Config{Concurrency: 4, Duration: 5 * time.Second, MaxTries: 1, MaxLag: DefaultMaxLag, Classify: classify, Seed: 1}
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
		op := res.Total.Ops[0]
		if op.OK != 400 || op.Warmup != 200 {
			t.Fatalf("ok=%d warmup=%d, want 400 200", op.OK, op.Warmup)
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
			op := res.Total.Ops[0]
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
		op := res.Total.Ops[0]
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
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		l, _, _ := load(fakeWorker{service: func(int64) time.Duration { return 10 * time.Millisecond }})
		res, err := Run(ctx, cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		op := res.Total.Ops[0]
		if !res.Interrupted || op.OK != 800 || op.ErrorsTotal() != 0 || res.Total.Elapsed != 2*time.Second {
			t.Fatalf("interrupted=%v ok=%d errors=%d elapsed=%s", res.Interrupted, op.OK, op.ErrorsTotal(), res.Total.Elapsed)
		}
	})
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"concurrency", func(c *Config) { c.Concurrency = 0 }, "--concurrency"},
		{"rate", func(c *Config) { c.Rate = -1 }, "--rate"},
		{"duration", func(c *Config) { c.Duration = 0 }, "--duration"},
		{"warmup", func(c *Config) { c.Warmup = -time.Second }, "--warmup"},
		{"tries", func(c *Config) { c.MaxTries = 0 }, "--max-tries"},
		{"progress", func(c *Config) { c.Progress = -1 }, "--progress"},
		{"empty schedule", func(c *Config) { c.Rate = 0.1 }, "schedules no operation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.mod(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
	if err := base().Validate(); err != nil {
		t.Fatal(err)
	}
}

// An operation still running at the end counts, but does not stretch the
// measured period.
func TestStragglerDoesNotStretchPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Duration = 2, 2*time.Second
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
		op := res.Total.Ops[0]
		if res.Total.Elapsed != 2*time.Second || op.OK != 202 {
			t.Fatalf("elapsed %s ok %d, want 2s and 202", res.Total.Elapsed, op.OK)
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
	rec workload.StatementRecorder
}

func (w *stmtWorker) SetStatementRecorder(r workload.StatementRecorder) { w.rec = r }
func (w *stmtWorker) Do(ctx context.Context, op, attempt int) error {
	time.Sleep(time.Millisecond)
	w.rec.Statement(op, 0, time.Millisecond)
	w.rec.Statement(op, 1, 2*time.Millisecond)
	return nil
}

func TestStatementRecorder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := base()
		cfg.Concurrency, cfg.Duration, cfg.Warmup = 1, time.Second, 100*time.Millisecond
		l := &workload.QueryLoad{Ops: []string{"op"}, Statements: []int{2},
			NewWorker: func(context.Context, int) (workload.Worker, error) { return &stmtWorker{}, nil }}
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
