package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/workload"
)

// Config is how to run. Validate it before anything touches the database.
type Config struct {
	Concurrency int           // workers, each with its own connection
	Rate        float64       // operations per second; 0 = closed loop
	Arrival     Arrival       // open loop only
	Duration    time.Duration // measured period
	Warmup      time.Duration // run before it, excluded from results
	MaxTries    int           // attempts per operation for retryable errors
	MaxLag      time.Duration // open loop: stop when this far behind schedule
	Progress    time.Duration // tick interval; 0 = only at the end
	Seed        uint64        // arrival schedule
	// Spin, if positive, makes the open-loop emitter yield in a loop for
	// the last Spin before each intended start instead of sleeping through
	// it: sub-millisecond accuracy for some CPU (see DefaultSpin).
	Spin time.Duration
	// Start, if set, receives the run's start time once workers are up.
	Start func(time.Time)
	// LatencyLimit, if positive, counts operations slower than it as late;
	// in open loop, an operation that would start later than it behind
	// schedule is skipped (pgbench's --latency-limit).
	LatencyLimit time.Duration

	// Classify tells the class of an error and whether it is fatal.
	Classify func(error) (metrics.Class, bool)
	// OnTick, if set, receives each interval (from the ticking goroutine).
	OnTick func(Tick)
	// OnError, if set, receives every failed attempt (from worker goroutines).
	OnError func(ErrorEvent)
}

// DefaultSpin is how long before an intended start the open-loop emitter
// stops sleeping and yields in a loop instead: Go's timers wake up to a
// millisecond late.
const DefaultSpin = 2 * time.Millisecond

// DefaultMaxLag is how far behind schedule an open-loop run may fall.
const DefaultMaxLag = 10 * time.Second

// Validate checks c; its errors name the flag and what is allowed.
func (c Config) Validate() error {
	switch {
	case c.Concurrency < 1:
		return fmt.Errorf("--concurrency must be at least 1, got %d", c.Concurrency)
	case c.Rate < 0:
		return fmt.Errorf("--rate must be 0 (closed loop) or a positive number of operations per second, got %g", c.Rate)
	case c.Duration <= 0:
		return fmt.Errorf("--duration must be positive (for example 10s or 1m), got %s", c.Duration)
	case c.Warmup < 0:
		return fmt.Errorf("--warmup must not be negative, got %s", c.Warmup)
	case c.MaxTries < 1:
		return fmt.Errorf("--max-tries must be at least 1, got %d", c.MaxTries)
	case c.Progress < 0:
		return fmt.Errorf("--progress must be 0 (off) or positive, got %s", c.Progress)
	case c.MaxLag <= 0 && c.Rate > 0:
		return fmt.Errorf("--max-lag must be positive, got %s", c.MaxLag)
	case c.Rate > 0 && c.Rate*c.Duration.Seconds() < 1:
		return fmt.Errorf("--rate %g over --duration %s schedules no operation", c.Rate, c.Duration)
	case c.Spin < 0:
		return fmt.Errorf("--spin must not be negative, got %s", c.Spin)
	case c.LatencyLimit < 0:
		return fmt.Errorf("--latency-limit must not be negative, got %s", c.LatencyLimit)
	case c.Classify == nil:
		return errors.New("engine: no error classifier")
	}
	return nil
}

// Tick is one progress interval.
type Tick struct {
	Elapsed  time.Duration // since the run started, warm-up included
	Warmup   bool          // the interval ended during the warm-up
	Interval *metrics.Snapshot
	// Final marks the last interval: the tail while in-flight operations
	// drained, often a sliver. Logs need it; progress lines may skip it.
	Final bool
	// End is when the interval ended.
	End time.Time
}

// ErrorEvent is one failed attempt.
type ErrorEvent struct {
	Worker  int
	Op      string
	Attempt int
	Class   metrics.Class
	Retry   bool // it will be retried
	Err     error
}

// Result is what a run measured.
type Result struct {
	Total *metrics.Snapshot // measured period; Total.Elapsed is its length
	// Offered is the number of operations the open-loop schedule put in the
	// measured period; Unstarted of those never ran (saturation, interrupt).
	Offered, Unstarted int64
	// Saturated: the open loop fell more than MaxLag behind and stopped.
	Saturated bool
	// Interrupted: the context was cancelled (Ctrl-C) before the end.
	Interrupted bool
	// ConnectTime is the mean time a worker took to start (connect).
	ConnectTime time.Duration
	// EmitLag is the open-loop scheduler's own lateness (µs): when it
	// released each operation, against the operation's intended start.
	// Unlike Lag it leaves out waiting for a free worker: it measures the
	// generator, not the system under test.
	EmitLag *hdr.Histogram
}

// Run executes load under cfg. On a fatal error it stops at once and returns
// what ran so far together with the error.
func Run(ctx context.Context, cfg Config, load *workload.QueryLoad) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	workers := make([]workload.Worker, 0, cfg.Concurrency)
	recs := make([]*metrics.Recorder, 0, cfg.Concurrency)
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for _, w := range workers {
			w.Close(cctx)
		}
	}()
	reg := metrics.NewRegistry(load.Ops, time.Now(), load.Statements...)
	connStart := time.Now()
	for i := 0; i < cfg.Concurrency; i++ {
		w, err := load.NewWorker(ctx, i)
		if err != nil {
			return nil, fmt.Errorf("starting worker %d: %w", i, err)
		}
		rec := reg.NewRecorder()
		if sw, ok := w.(workload.StatementWorker); ok {
			sw.SetStatementRecorder(rec)
		}
		workers = append(workers, w)
		recs = append(recs, rec)
	}
	connectTime := time.Since(connStart) / time.Duration(cfg.Concurrency)

	r := &run{cfg: cfg, ops: load.Ops, stop: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(ctx)
	defer r.cancel()
	r.start = time.Now()
	r.measureStart = r.start.Add(cfg.Warmup)
	r.end = r.measureStart.Add(cfg.Duration)
	r.reg = reg
	reg.Restart(r.start)
	if cfg.Start != nil {
		cfg.Start(r.start)
	}

	tickDone := make(chan struct{})
	r.tickerExited = make(chan struct{})
	go r.tickLoop(tickDone)

	var wg sync.WaitGroup
	var arrivals chan time.Time
	var sched *schedule
	if cfg.Rate > 0 {
		arrivals = make(chan time.Time, cfg.Concurrency)
		sched = newSchedule(cfg.Arrival, cfg.Rate, cfg.Seed, cfg.Warmup, cfg.Duration)
		r.offered = sched.total(1)
		wg.Add(1)
		go func() { defer wg.Done(); r.emit(sched, arrivals) }()
	}
	var workersWG sync.WaitGroup
	for i, w := range workers {
		workersWG.Add(1)
		go func() {
			defer workersWG.Done()
			rec := recs[i]
			if arrivals != nil {
				r.openWorker(i, w, rec, arrivals)
			} else {
				r.closedWorker(i, w, rec)
			}
		}()
	}
	workersWG.Wait()
	r.closeStop()
	wg.Wait()
	lastEnd := time.Now()
	close(tickDone)
	<-r.tickerExited

	total, err := r.reg.Tick(lastEnd)
	if err == nil && cfg.OnTick != nil && cfg.Progress > 0 {
		cfg.OnTick(Tick{Elapsed: lastEnd.Sub(r.start), Warmup: lastEnd.Before(r.measureStart), Interval: total, Final: true, End: lastEnd})
	}
	if err != nil {
		return nil, err
	}
	res := &Result{Total: r.reg.Total(), Saturated: r.saturated.Load(), Interrupted: ctx.Err() != nil, ConnectTime: connectTime}
	// The measured period is the window in which operations could start:
	// operations still in flight at its end complete and count, but a
	// straggler must not stretch the period the others were idle in.
	// Closed loop: the window, even if a straggler ran past it (the other
	// workers were idle then). Open loop: the window if the schedule was
	// done by its end; past it, the time the offered work took.
	stopAt := lastEnd
	switch {
	case cfg.Rate == 0 && stopAt.After(r.end):
		stopAt = r.end
	case cfg.Rate > 0 && !res.Interrupted && !res.Saturated && stopAt.Before(r.end):
		stopAt = r.end
	case res.Interrupted && stopAt.After(r.end):
		stopAt = r.end
	}
	res.Total.Elapsed = max(stopAt.Sub(r.measureStart), 0)
	if cfg.Rate > 0 {
		res.Offered = r.offered
		res.Unstarted = r.offered - r.startedMeasured.Load()
		res.EmitLag = r.emitLag
	}
	if f := r.fatal.Load(); f != nil {
		return res, *f
	}
	return res, nil
}

type run struct {
	cfg    Config
	ops    []string
	ctx    context.Context
	cancel context.CancelFunc
	reg    *metrics.Registry

	start, measureStart, end time.Time

	stop     chan struct{} // closed when no new operation may start
	stopOnce sync.Once

	offered         int64
	startedMeasured atomic.Int64
	saturated       atomic.Bool
	fatal           atomic.Pointer[error]
	tickerExited    chan struct{}
	emitLag         *hdr.Histogram // written by the emitter only
}

func (r *run) closeStop() { r.stopOnce.Do(func() { close(r.stop) }) }

func (r *run) stopped() bool {
	select {
	case <-r.stop:
		return true
	case <-r.ctx.Done():
		return true
	default:
		return false
	}
}

func (r *run) tickLoop(done chan struct{}) {
	defer close(r.tickerExited)
	if r.cfg.Progress <= 0 {
		<-done
		return
	}
	t := time.NewTicker(r.cfg.Progress)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			iv, err := r.reg.Tick(now)
			if err != nil {
				r.setFatal(err)
				return
			}
			if r.cfg.OnTick != nil {
				r.cfg.OnTick(Tick{Elapsed: now.Sub(r.start), Warmup: now.Before(r.measureStart), Interval: iv, End: now})
			}
		}
	}
}

func (r *run) setFatal(err error) {
	if r.fatal.CompareAndSwap(nil, &err) {
		r.cancel()
	}
}

func (r *run) closedWorker(id int, w workload.Worker, rec *metrics.Recorder) {
	for !r.stopped() {
		now := time.Now()
		if !now.Before(r.end) {
			r.closeStop()
			return
		}
		r.do(id, w, rec, now, now, !now.Before(r.measureStart))
	}
}

// emit sends each intended start time when it comes due.
func (r *run) emit(s *schedule, out chan<- time.Time) {
	defer close(out)
	r.emitLag = metrics.NewHistogram()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		off, _, ok := s.next()
		if !ok {
			return
		}
		at := r.start.Add(off)
		if d := time.Until(at); d > 0 {
			// Go's timers wake up to a millisecond late: sleep until
			// Spin before the intended time, then yield in a loop.
			if d > r.cfg.Spin {
				timer.Reset(d - r.cfg.Spin)
				select {
				case <-timer.C:
				case <-r.stop:
					return
				case <-r.ctx.Done():
					return
				}
			}
			for time.Now().Before(at) {
				runtime.Gosched()
			}
			// Only operations the emitter waited for measure it: one it
			// releases late because every worker was busy measures the
			// system, and is in Lag.
			if !at.Before(r.measureStart) {
				_ = r.emitLag.RecordValue(max(time.Since(at).Microseconds(), 0))
			}
		} else if -d > r.cfg.MaxLag {
			r.saturate()
			return
		}
		select {
		case out <- at:
		case <-r.stop:
			return
		case <-r.ctx.Done():
			return
		}
	}
}

func (r *run) saturate() {
	r.saturated.Store(true)
	r.closeStop()
}

func (r *run) openWorker(id int, w workload.Worker, rec *metrics.Recorder, in <-chan time.Time) {
	for intended := range in {
		if r.stopped() {
			continue // drain: the emitter is stopping too
		}
		now := time.Now()
		if now.Sub(intended) > r.cfg.MaxLag {
			r.saturate()
			continue
		}
		measured := !intended.Before(r.measureStart)
		if measured {
			r.startedMeasured.Add(1)
		}
		if r.cfg.LatencyLimit > 0 && now.Sub(intended) > r.cfg.LatencyLimit {
			rec.Skip(w.Next(), measured)
			continue
		}
		r.do(id, w, rec, intended, now, measured)
	}
}

// do runs one operation to completion: retries, reconnects, records.
func (r *run) do(id int, w workload.Worker, rec *metrics.Recorder, intended, start time.Time, measured bool) {
	op := w.Next()
	rec.Begin(measured)
	for attempt := 1; ; attempt++ {
		err := w.Do(r.ctx, op, attempt)
		if err == nil {
			end := time.Now()
			rec.Success(op, measured, end.Sub(intended), end.Sub(start), start.Sub(intended), attempt)
			if r.cfg.LatencyLimit > 0 && end.Sub(intended) > r.cfg.LatencyLimit {
				rec.Late(op, measured)
			}
			return
		}
		if r.ctx.Err() != nil {
			return // interrupted: neither a success nor a failure
		}
		class, fatal := r.cfg.Classify(err)
		if fatal {
			r.setFatal(fmt.Errorf("running %s: %w", r.ops[op], err))
			return
		}
		retry := class.Retryable() && attempt < r.cfg.MaxTries
		rec.Error(op, measured, class)
		if r.cfg.OnError != nil {
			r.cfg.OnError(ErrorEvent{Worker: id, Op: r.ops[op], Attempt: attempt, Class: class, Retry: retry, Err: err})
		}
		if class == metrics.ConnectionLost || class == metrics.AmbiguousCommit {
			if !r.reconnect(w) {
				return
			}
		}
		if !retry {
			rec.Failure(op, measured, class, attempt)
			return
		}
	}
}

// reconnect re-establishes w's connection, backing off while the server is
// away; false when the run ended first.
func (r *run) reconnect(w workload.Worker) bool {
	backoff := 10 * time.Millisecond
	for {
		err := w.Reset(r.ctx)
		if err == nil {
			return true
		}
		if r.ctx.Err() != nil {
			return false
		}
		if _, fatal := r.cfg.Classify(err); fatal {
			r.setFatal(fmt.Errorf("reconnecting: %w", err))
			return false
		}
		select {
		case <-time.After(backoff):
		case <-r.ctx.Done():
			return false
		}
		if backoff < time.Second {
			backoff *= 2
		}
		if r.stopped() && time.Now().After(r.end.Add(r.cfg.MaxLag+5*time.Second)) {
			return false
		}
	}
}
