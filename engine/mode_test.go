package engine

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/txload/txload/metrics"
)

// fixture is one client of a run of cfg that started at t0, in a group of
// its own (with cfg.Rate, its arrivals are the whole uniform schedule).
func fixture(cfg Config, t0 time.Time) *client {
	cfg.Classify = func(error) (metrics.Class, bool) { return metrics.Other, false }
	r := &run{cfg: cfg, mode: newMode(cfg), ctx: context.Background(), stop: make(chan struct{}),
		start: t0, measureStart: t0.Add(cfg.Warmup)}
	r.end = r.measureStart.Add(cfg.Window())
	r.cut.Store(math.MaxInt64)
	if r.bounded() {
		r.cutAt(r.end)
	}
	r.reg = metrics.NewRegistry([]string{"op"}, t0)
	g := &group{rec: r.reg.NewRecorder(), late: r.reg.NewLateRecorder(), emitLag: metrics.NewHistogram()}
	if cfg.Rate > 0 {
		g.arrivals = arrivals{sched: newSchedule(Uniform, cfg.Rate, 1, cfg.Warmup, cfg.Window()), start: t0}
	}
	return &client{r: r, g: g, choose: zero}
}

func TestClosedLoopMode(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name  string
		cfg   Config
		done  int
		fresh bool
		at    time.Duration
		want  decision
	}{
		{"starts at once", Config{Duration: time.Second}, 0, false, 300 * time.Millisecond,
			decision{kind: start, intended: t0.Add(300 * time.Millisecond), measured: true}},
		{"in the warm-up: not measured", Config{Duration: time.Second, Warmup: time.Second}, 0, false, 300 * time.Millisecond,
			decision{kind: start, intended: t0.Add(300 * time.Millisecond)}},
		{"stops at the end of the window", Config{Duration: time.Second}, 0, false, time.Second, decision{kind: stop}},
		{"stops after its transactions", Config{Transactions: 5}, 5, false, time.Hour, decision{kind: stop}},
		{"one more transaction", Config{Transactions: 5}, 4, false, time.Hour,
			decision{kind: start, intended: t0.Add(time.Hour), measured: true}},
		{"connects anew first (-C)", Config{Duration: time.Second, ConnectPerTxn: true}, 0, false, 0, decision{kind: connect}},
		{"then starts once connected", Config{Duration: time.Second, ConnectPerTxn: true}, 0, true, 10 * time.Millisecond,
			decision{kind: start, intended: t0.Add(10 * time.Millisecond), measured: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fixture(tc.cfg, t0)
			c.done, c.fresh = tc.done, tc.fresh
			if got := c.r.mode.next(c, t0.Add(tc.at), true); got != tc.want {
				t.Fatalf("decided %+v, want %+v", got, tc.want)
			}
		})
	}
	if (closedLoop{}).bounded() != true || (closedLoop{perClient: 3}).bounded() != false {
		t.Fatal("a closed loop's window ends with its duration, not with a number of transactions")
	}
}

// An open loop takes its group's arrivals in order: it waits for the next,
// starts it late with its intended time kept, skips one later than the
// latency limit, and saturates the run beyond the lag it may fall behind.
func TestOpenLoopMode(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	cfg := Config{Rate: 100, Duration: time.Second, MaxLag: 500 * ms, LatencyLimit: 50 * ms} // arrivals every 10 ms from 0
	c := fixture(cfg, t0)
	first := c.r.mode.next(c, t0.Add(-5*ms), true)
	if first.kind != wait || first.intended.Before(t0) {
		t.Fatalf("before the first arrival: %+v, want to wait for it", first)
	}
	d := c.r.mode.next(c, first.intended.Add(3*ms), true)
	if d.kind != start || d.intended != first.intended || !d.measured {
		t.Fatalf("3 ms after the first arrival: %+v, want it started with its intended time", d)
	}
	if n := c.g.emitLag.TotalCount(); n != 1 || c.g.emitLag.Max() < 2999 {
		t.Fatalf("emission lag %d values, max %dµs: want the idle client's 3 ms", n, c.g.emitLag.Max())
	}
	// 80 ms later, busy until then: the arrivals more than 50 ms late are
	// skipped, the next one starts (and a busy client is no emission lag).
	now := first.intended.Add(83 * ms)
	d = c.r.mode.next(c, now, false)
	if d.kind != start || now.Sub(d.intended) > 50*ms {
		t.Fatalf("after a stall: %+v, want the first arrival within the latency limit", d)
	}
	c.r.reg.Tick(now)
	if skipped := c.r.reg.Total().Ops[0].Skipped; skipped < 3 || skipped > 4 {
		t.Fatalf("%d skipped, want the 3 or 4 arrivals more than 50 ms late", skipped)
	}
	if c.g.emitLag.TotalCount() != 1 {
		t.Fatal("a busy client's late start counted as the generator's lag")
	}
	// Far behind: the run saturates and the client stops.
	d = c.r.mode.next(c, now.Add(600*ms), false)
	if d.kind != stop || !c.r.saturated.Load() {
		t.Fatalf("600 ms behind: %+v, saturated %v; want stop and saturated", d, c.r.saturated.Load())
	}
	// The schedule's end: nothing more to start; the client waits for the
	// window's end, and stops there.
	c = fixture(Config{Rate: 10, Duration: 200 * ms, MaxLag: time.Hour}, t0)
	var starts int
	for {
		d := c.r.mode.next(c, t0.Add(150*ms), true)
		if d.kind != start {
			if d.kind != wait || d.intended != c.r.end {
				t.Fatalf("the schedule done before the window's end: %+v, want to wait for its end", d)
			}
			break
		}
		starts++
	}
	if d := c.r.mode.next(c, c.r.end, true); starts != 2 || d.kind != stop {
		t.Fatalf("%d operations from a schedule of 2, then at the window's end %+v", starts, d)
	}
	// The window's end: nothing new starts, however late the arrivals it
	// held (they are never started), but a run of a number of
	// transactions starts every one.
	for _, tc := range []struct {
		cfg    Config
		starts int
	}{
		{Config{Rate: 10, Duration: 200 * ms, MaxLag: time.Hour}, 0},
		{Config{Rate: 10, Transactions: 2, Concurrency: 1, MaxLag: time.Hour}, 2},
	} {
		c = fixture(tc.cfg, t0)
		starts = 0
		for c.r.mode.next(c, t0.Add(time.Second), true).kind != stop {
			starts++
		}
		if starts != tc.starts || c.r.mode.bounded() != (tc.cfg.Transactions == 0) {
			t.Fatalf("%+v: %d started after the window, want %d", tc.cfg, starts, tc.starts)
		}
	}
}
