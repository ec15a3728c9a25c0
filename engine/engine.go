package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	Concurrency int           // clients, each with its own connection
	Jobs        int           // I/O loops driving the clients; 0 = one per core
	Rate        float64       // operations per second; 0 = closed loop
	Arrival     Arrival       // open loop only
	Duration    time.Duration // measured period; 0 with Transactions: until every client is done
	Warmup      time.Duration // run before it, excluded from results
	MaxTries    int           // attempts per operation for retryable errors
	MaxLag      time.Duration // open loop: stop when this far behind schedule
	Progress    time.Duration // tick interval; 0 = only at the end
	Seed        uint64        // arrival schedule
	// Instance and Instances: this process is instance Instance (from 0)
	// of Instances load generators running one schedule together; it
	// offers its exact share of the operations (0 and 0: the only one).
	Instance, Instances int
	// AllClients, with Instances and Transactions, is the clients of every
	// instance together (0: Concurrency × Instances): the schedule holds
	// Transactions of each at Rate, and this instance's share of it is
	// its clients' (Window).
	AllClients int
	// Spin, if positive, makes a client waiting for an open-loop arrival
	// on Go's timers yield in a loop for the last Spin before it instead of
	// sleeping through it: sub-millisecond accuracy for some CPU (see
	// DefaultSpin and executor.Clients).
	Spin time.Duration
	// DrainTimeout bounds how long operations still in flight at the end of
	// the run are waited for (and reconnections tried); those still running
	// then are abandoned and counted as such. The run ends by then whatever
	// the server does.
	DrainTimeout time.Duration
	// ContinueOnError keeps a client running after an error that is neither
	// retryable nor a lost connection (a division by zero, a constraint
	// violation); by default such an error ends the client, as pgbench does,
	// and the run reports it.
	ContinueOnError bool
	// StopOnAbort stops the whole run at the first client that aborts,
	// with what ran so far (pgbench's --exit-on-abort); Result.AbortGroup
	// says which group it was in.
	StopOnAbort bool
	// Start, if set, receives the run's start time once clients are up.
	Start func(time.Time)
	// LatencyLimit, if positive, counts operations slower than it as late;
	// in open loop, an operation that would start later than it behind
	// schedule is skipped (pgbench's --latency-limit).
	LatencyLimit time.Duration
	// Transactions, if positive, is a number of transactions per client
	// (pgbench's -t): in closed loop each client stops after that many
	// (committed or failed for good), and the run ends when every client
	// has; in open loop the schedule holds exactly Transactions ×
	// Concurrency operations spread over the time they take at Rate
	// (Duration is then ignored). Warm-up is not allowed with it.
	Transactions int
	// ConnectPerTxn makes a new connection for each transaction (pgbench's
	// -C): a client closes its connection and connects anew before each
	// transaction, retries excepted. In open loop the connection is made
	// once the transaction is due, and its time is part of the latency; in
	// closed loop the transaction starts once connected. Result.Connections
	// and ConnectionTime count them.
	ConnectPerTxn bool
	// ClockBeforeConnect starts the clock of Duration and of Progress
	// before the clients connect, as pgbench's -T and -P do: the measured
	// window still starts once every client is connected, but ends
	// Duration after connecting began (at once if connecting took longer),
	// and progress intervals end every Progress from the start of
	// connecting, the first covering the connections (one interval ends
	// as the clients are connected if any was due while they connected).
	// The run then ends once the clients' connections are closed (the
	// drain counts closing them), as pgbench's. Not with Warmup; with
	// Transactions only the progress clock moves.
	ClockBeforeConnect bool

	// Classify tells the class of an error and whether it is fatal.
	Classify func(error) (metrics.Class, bool)
	// OnTick, if set, receives each interval (from the ticking goroutine).
	OnTick func(Tick)
	// OnError, if set, receives every failed attempt (from client
	// goroutines).
	OnError func(ErrorEvent)
	// OnEvent, if set, receives what happened to the run as a whole: the
	// server became unreachable or reachable again, a client was aborted.
	OnEvent func(Event)
	// OnTxn, if set, receives every transaction that ended: committed,
	// failed for good, or skipped (pgbench's -l). It is called on the
	// goroutine that drives the client, and never concurrently for two
	// clients of one group (Txn.Group, one of Groups): state kept per
	// group needs no lock.
	OnTxn func(Txn)
}

// TxnOutcome is how a transaction ended.
type TxnOutcome uint8

// The outcomes.
const (
	// TxnOK committed, possibly after retries.
	TxnOK TxnOutcome = iota
	// TxnSerialization and TxnDeadlock failed on that error, retries
	// exhausted.
	TxnSerialization
	TxnDeadlock
	// TxnFailed failed on another error (Txn.Class).
	TxnFailed
	// TxnSkipped never started: it was more than LatencyLimit behind
	// schedule when a client was free for it.
	TxnSkipped
)

// Txn is one transaction that ended, for Config.OnTxn.
type Txn struct {
	// Client is the client's id; Group the index of the group (I/O loop)
	// that drives it.
	Client, Group int
	// Number is the client's count of transactions with this one (1 for
	// its first), skipped and failed ones included.
	Number int64
	// Op is the operation's index in the workload's Ops.
	Op int
	// Intended is when it should have started (its arrival in open loop),
	// Start when its first attempt started, End when it ended. Latency is
	// End−Intended, Lag Start−Intended.
	Intended, Start, End time.Time
	Latency, Lag         time.Duration
	Outcome              TxnOutcome
	// Class is the error's class when it failed.
	Class metrics.Class
	// Tries is the number of attempts (0 when skipped).
	Tries int
	// Measured is false during the warm-up.
	Measured bool
}

// DefaultSpin is how long before an intended start a waiting client stops
// sleeping and yields in a loop instead: Go's timers wake up to a
// millisecond late.
const DefaultSpin = 2 * time.Millisecond

// Unlimited is a MaxTries of no limit: a transaction is retried until it
// commits or the run ends.
const Unlimited = math.MaxInt32

// DefaultMaxLag is how far behind schedule an open-loop run may fall.
const DefaultMaxLag = 10 * time.Second

// DefaultDrainTimeout is how long operations in flight at the end of a run
// are waited for.
const DefaultDrainTimeout = 5 * time.Second

// maxOperations bounds an open-loop schedule: beyond it float64 counts lose
// whole operations, and no run gets there in practice.
const maxOperations = 1 << 53

// MaxRate bounds an open loop's rate: the schedule places operations to
// the nanosecond.
const MaxRate = 1e9

// maxDuration bounds every duration of a run: 100 years.
const maxDuration = 100 * 365 * 24 * time.Hour

// Window is the period the run's schedule covers after the warm-up:
// Duration, or with Transactions the time they take at Rate (closed loop:
// until the clients are done, bounded by 100 years).
func (c Config) Window() time.Duration {
	switch {
	case c.Transactions == 0:
		return c.Duration
	case c.Rate > 0:
		n := float64(c.Transactions) * float64(c.allClients())
		return max(time.Duration(n/c.Rate*float64(time.Second)), time.Nanosecond)
	}
	return maxDuration
}

// allClients are the clients of the whole schedule: of every instance.
func (c Config) allClients() int {
	switch {
	case c.Instances <= 1:
		return c.Concurrency
	case c.AllClients > 0:
		return c.AllClients
	}
	return c.Concurrency * c.Instances
}

// ShareRate is this instance's part of Rate: Rate when it is the only
// one; with Transactions, its clients' part (each client runs the same
// number); else its exact share of the schedule's arrivals.
func (c Config) ShareRate() float64 {
	switch {
	case c.Instances <= 1:
		return c.Rate
	case c.Transactions > 0:
		return c.Rate * float64(c.Concurrency) / float64(c.allClients())
	}
	return c.Rate / float64(c.Instances)
}

// Validate checks c; its errors name the flag and what is allowed.
func (c Config) Validate() error {
	switch {
	case c.Concurrency < 1:
		return fmt.Errorf("--concurrency must be at least 1, got %d", c.Concurrency)
	case c.Jobs < 0:
		return fmt.Errorf("--jobs must be at least 1, got %d", c.Jobs)
	case math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate < 0:
		return fmt.Errorf("--rate must be 0 (closed loop) or a positive, finite number of operations per second, got %g", c.Rate)
	case c.Rate > MaxRate:
		return fmt.Errorf("--rate %g is more than one operation per nanosecond, the schedule's resolution (at most 1e9)", c.Rate)
	case c.Transactions < 0:
		return fmt.Errorf("--transactions must be 0 (run for --duration) or a positive number per client, got %d", c.Transactions)
	case c.ClockBeforeConnect && c.Warmup > 0:
		return fmt.Errorf("--warmup cannot be used when the duration counts from before connecting (pgbench's -T)")
	case c.Transactions > 0 && c.Warmup > 0:
		return fmt.Errorf("--warmup cannot be used with --transactions (a number of transactions per client)")
	case c.Transactions == 0 && (c.Duration <= 0 || c.Duration > maxDuration):
		return fmt.Errorf("--duration must be positive and at most 100 years (for example 10s or 1m), got %s", c.Duration)
	case c.Warmup < 0 || c.Warmup > maxDuration:
		return fmt.Errorf("--warmup must be between 0 and 100 years, got %s", c.Warmup)
	case c.MaxTries < 1:
		return fmt.Errorf("--max-tries must be at least 1, got %d", c.MaxTries)
	case c.Progress < 0:
		return fmt.Errorf("--progress must be 0 (off) or positive, got %s", c.Progress)
	case c.MaxLag <= 0 && c.Rate > 0:
		return fmt.Errorf("--max-lag must be positive, got %s", c.MaxLag)
	case c.Transactions == 0 && c.Rate > 0 && c.Rate*c.Duration.Seconds() < 1:
		return fmt.Errorf("--rate %g over --duration %s schedules no operation", c.Rate, c.Duration)
	case float64(c.Transactions)*float64(c.Concurrency) > maxOperations:
		return fmt.Errorf("--transactions %d for each of %d clients is more than txload can count (2^53)", c.Transactions, c.Concurrency)
	case c.Transactions == 0 && c.Rate*(c.Duration+c.Warmup).Seconds() > maxOperations:
		return fmt.Errorf("--rate %g over --duration %s schedules %.3g operations, more than txload can count (2^53)", c.Rate, c.Duration+c.Warmup, c.Rate*(c.Duration+c.Warmup).Seconds())
	case c.Spin < 0:
		return fmt.Errorf("--spin must not be negative, got %s", c.Spin)
	case c.DrainTimeout < 0:
		return fmt.Errorf("--drain-timeout must not be negative, got %s", c.DrainTimeout)
	case c.LatencyLimit < 0:
		return fmt.Errorf("--latency-limit must not be negative, got %s", c.LatencyLimit)
	case c.Instances < 0 || c.Instance < 0 || (c.Instances > 0 && c.Instance >= c.Instances):
		return fmt.Errorf("--instance %d/%d: want i/N with 0 <= i < N", c.Instance, c.Instances)
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
	// Final marks the run's last interval. With Drain it is what ended
	// after the measured window (operations in flight at its end): not
	// part of the window's figures, and no progress line. Without Drain
	// (a run of a number of transactions, or one stopped early) it is the
	// window's last interval, often a sliver.
	Final, Drain bool
	// End is when the interval ended.
	End time.Time
	// Resumed marks the first interval after the clients connected when
	// ticks were due while they connected (Config.ClockBeforeConnect): it
	// starts as they are connected and is shorter than Progress, and
	// pgbench prints it all the same.
	Resumed bool
}

// ErrorEvent is one failed attempt.
type ErrorEvent struct {
	Client  int
	Op      string
	OpIndex int // Op's index among the run's operations (pgbench: the script)
	Stmt    int // the statement that failed, from 0 (-1: not known)
	// At is when the attempt failed; Intended when its operation was
	// scheduled to start (pgbench's share of --latency-limit used).
	At, Intended time.Time
	Attempt      int
	Class        metrics.Class
	Retry        bool // it will be retried
	Err          error
}

// EventKind is the kind of an Event.
type EventKind uint8

// The events.
const (
	// Unreachable: a connection attempt failed and no connection has
	// succeeded since; Err says why.
	Unreachable EventKind = iota
	// Reachable: a connection or an operation succeeded again after
	// Unreachable; Down is how long the server was unreachable.
	Reachable
	// Aborted: a client ended after an error no retry can cure.
	Aborted
)

// Event is something that happened to the run as a whole.
type Event struct {
	Kind    EventKind
	At      time.Time
	Client  int
	Op      string
	OpIndex int // Aborted: Op's index among the run's operations
	Stmt    int // Aborted: the statement that failed, from 0 (-1: not known)
	Err     error
	Down    time.Duration
}

// BehindShare is the share of an open loop's offered operations that may
// be left never started at the end of its window (a burst of arrivals in
// its last milliseconds) before the run is said to be behind its rate.
// However few the operations offered, one a client may be left: an
// arrival that came while its client served the one before (a loop that
// keeps up can end its window so), which at 40 ops/s for 2 s on one
// client is more than 1%.
const BehindShare = 0.01

// Result is what a run measured.
type Result struct {
	Total *metrics.Snapshot // measured window; Total.Elapsed is its length
	// Drain is what ended after the window: the operations in flight at
	// its end (the end of the duration, or an interrupt), completed,
	// failed or abandoned; Drain.Elapsed is how long they took to end. Nil
	// when the window ran until the last operation ended (a number of
	// transactions, saturation, a fatal error).
	Drain *metrics.Snapshot
	// Offered is the number of operations the open-loop schedule put in the
	// measured period; Unstarted of those never ran (saturation, interrupt).
	Offered, Unstarted int64
	// Saturated: the open loop fell more than MaxLag behind and stopped.
	Saturated bool
	// Behind: the open loop ran its window, but more than BehindShare of
	// the operations it offered, and more than one a client, never started
	// before the window ended:
	// it did not run at its rate, and the latency of what it dropped (the
	// latest of all) is in no figure.
	Behind bool
	// Interrupted: the context was cancelled (Ctrl-C) before the end;
	// Cause is its context.Cause.
	Interrupted bool
	Cause       error
	// End is when the run ended: its last operation, or the drain's end.
	End time.Time
	// Drained: the drain timeout ended the run with operations in flight
	// (counted as abandoned).
	Drained bool
	// ConnectTime is how long connecting every client took.
	ConnectTime time.Duration
	// Connections counts the connections made for transactions under
	// Config.ConnectPerTxn; ConnectionTime is the time they took in all,
	// closing the previous connection and failed attempts included.
	Connections    int64
	ConnectionTime time.Duration
	// EmitLag is the open-loop scheduler's own lateness (µs): when an idle
	// client was released for each operation, against the operation's
	// intended start. Unlike Lag it leaves out waiting for a free client:
	// it measures the generator, not the system under test.
	EmitLag *hdr.Histogram
	// Aborted counts clients ended by an error; AbortErr is the first.
	Aborted  int
	AbortErr error
	// AbortGroup is the group (I/O loop, pgbench's thread) of the first
	// client that aborted.
	AbortGroup int
	// FirstErrors holds the first error of each class, for the summary.
	FirstErrors [metrics.NumClasses]error
	// Outages counts the times the server became unreachable; Unreachable
	// is how long it was, in all.
	Outages     int
	Unreachable time.Duration
}

// Run executes load under cfg. On a fatal error it stops at once and returns
// what ran so far together with the error.
func Run(ctx context.Context, cfg Config, load *workload.QueryLoad) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if load.Drive == nil {
		return nil, errors.New("engine: the workload gives no Drive")
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = DefaultDrainTimeout
	}
	cfg.Duration = cfg.Window()
	driveCtx, cancelDrive := context.WithCancel(ctx)
	defer cancelDrive()
	r := &run{cfg: cfg, mode: newMode(cfg), ops: load.Ops, parent: ctx, ctx: driveCtx, stop: make(chan struct{})}
	r.cut.Store(math.MaxInt64)
	defer context.AfterFunc(ctx, func() { r.cutAt(time.Now()) })()
	r.reg = metrics.NewRegistry(load.Ops, time.Now(), load.Statements...)
	r.makeGroups(load)

	var deadline *time.Timer
	connStart := time.Now()
	ready := func(start time.Time) {
		r.start, r.origin = start, start
		if cfg.ClockBeforeConnect {
			r.origin = connStart
		}
		r.measureStart = start.Add(cfg.Warmup)
		r.end = r.measureStart.Add(cfg.Duration)
		if cfg.ClockBeforeConnect && cfg.Transactions == 0 {
			r.end = connStart.Add(cfg.Duration)
			if r.end.Before(r.measureStart) {
				r.end = r.measureStart
			}
		}
		if r.bounded() {
			r.cutAt(r.end)
		}
		r.reg.Restart(r.origin)
		for _, g := range r.groups {
			g.arrivals.start = start
		}
		r.connectTime = start.Sub(connStart)
		r.readyDone.Store(true)
		if cfg.Start != nil {
			cfg.Start(start)
		}
		// The window's end, then the drain: nothing starts after the
		// window (an open loop of a number of transactions may start its
		// last up to MaxLag late, its window running until they end).
		hard := r.end.Add(cfg.DrainTimeout)
		if cfg.Rate > 0 && !r.bounded() {
			hard = hard.Add(cfg.MaxLag)
		}
		deadline = time.AfterFunc(time.Until(hard), func() {
			r.cutAt(time.Now()) // a window with no end of its own ends here
			r.drained.Store(true)
			cancelDrive()
		})
		r.tickDone = make(chan struct{})
		r.tickerExited = make(chan struct{})
		go r.tickLoop()
	}
	err := load.Drive(driveCtx, workload.Clients{Groups: r.sessionGroups(), Ready: ready, Spin: cfg.Spin})
	// The run ended when its last client stopped: not when the clients'
	// connections were closed after it, which with hundreds of them can
	// take the server a second. pgbench's clock (ClockBeforeConnect) runs
	// until they are closed.
	lastEnd := time.Now()
	if r.stops.Load() == int64(r.cfg.Concurrency) && !cfg.ClockBeforeConnect {
		lastEnd = time.Unix(0, r.lastStop.Load())
	}
	if deadline != nil {
		deadline.Stop()
	}
	if !r.readyDone.Load() {
		if err == nil {
			err = errors.New("engine: the clients never started")
		}
		return nil, err
	}
	close(r.tickDone)
	<-r.tickerExited
	if err != nil && r.ctx.Err() == nil {
		r.setFatal(err)
	}
	return r.result(lastEnd)
}

type run struct {
	cfg    Config
	mode   mode
	ops    []string
	parent context.Context // the caller's: cancelled on interrupt
	// cut is when the measured window ends (Unix ns): the end of its
	// duration, or an interrupt before it; an operation that ended from
	// then on is the drain's.
	cut atomic.Int64
	// stops counts the clients that stopped; lastStop is when the last one
	// did (Unix ns).
	stops, lastStop atomic.Int64
	ctx             context.Context // the clients': also cancelled at the drain deadline
	reg             *metrics.Registry
	groups          []*group

	start, measureStart, end time.Time
	// origin is when the clock of the duration and the progress started:
	// start, or with Config.ClockBeforeConnect when connecting began.
	origin      time.Time
	connectTime time.Duration
	// resumed: the next tick is Tick.Resumed (the tick loop's alone).
	resumed   bool
	readyDone atomic.Bool

	stop     chan struct{} // closed when no new operation may start
	stopOnce sync.Once

	offered         int64
	startedMeasured atomic.Int64
	saturated       atomic.Bool
	drained         atomic.Bool
	fatal           atomic.Pointer[error]
	tickDone        chan struct{}
	tickerExited    chan struct{}

	mu          sync.Mutex // guards what follows
	firstErrors [metrics.NumClasses]error
	aborted     int
	abortErr    error
	abortGroup  int
	down        atomic.Bool
	downSince   time.Time
	upAt        time.Time // when the last outage ended
	outages     int
	unreachable time.Duration
}

// group is the clients one goroutine drives at a time (one I/O loop of
// the executor): they share a recorder and, in open loop, a share of the
// schedule.
type group struct {
	index    int
	rec      *metrics.Recorder
	late     *metrics.Recorder // what ends at or after the window's end
	clients  []*client
	arrivals arrivals
	emitLag  *hdr.Histogram
	// Config.ConnectPerTxn: the connections made and their time.
	conns    int64
	connTime time.Duration
}

// arrivals is a group's share of the open-loop schedule, peeked one ahead.
type arrivals struct {
	sched *schedule
	start time.Time
	next  time.Time
	have  bool
	done  bool
}

func (a *arrivals) peek() (time.Time, bool) {
	if !a.have && !a.done {
		off, _, ok := a.sched.next()
		if !ok {
			a.done = true
		} else {
			a.next, a.have = a.start.Add(off), true
		}
	}
	return a.next, a.have
}

func (a *arrivals) pop() { a.have = false }

// Groups is the number of groups a run of any load under c drives its
// clients in: the executor's I/O loops (Jobs, at most one per client).
// Txn.Group is below it.
func Groups(c Config, _ *workload.QueryLoad) int {
	g := c.Jobs
	if g == 0 {
		g = runtime.GOMAXPROCS(0)
	}
	return max(min(g, c.Concurrency), 1)
}

func (r *run) makeGroups(load *workload.QueryLoad) {
	n := r.cfg.Concurrency
	g := Groups(r.cfg, load)
	var counts [][]int64
	inst, insts := r.cfg.Instance, max(r.cfg.Instances, 1)
	if r.cfg.Rate > 0 {
		whole := newSchedule(r.cfg.Arrival, r.cfg.Rate, r.cfg.Seed, r.cfg.Warmup, r.cfg.Duration)
		// This instance's exact share of each segment.
		mine := []int64{share(whole.total(0), inst, insts), share(whole.total(1), inst, insts)}
		if r.cfg.Transactions > 0 {
			// Exactly this instance's clients' transactions.
			mine = []int64{0, int64(r.cfg.Transactions) * int64(n)}
		}
		r.offered = mine[1]
		counts = split(mine, n, g)
	}
	id := 0
	for i := 0; i < g; i++ {
		gr := &group{index: i, rec: r.reg.NewRecorder(), late: r.reg.NewLateRecorder()}
		size := n/g + btoi(i < n%g)
		if counts != nil {
			// Uniform arrivals of every group of every instance interleave:
			// the k-th of group i of instance inst lands on slot
			// k·g·insts + i·insts + inst of the whole schedule.
			phase := float64(inst+i*insts) / float64(g*insts)
			gr.arrivals.sched = newScheduleCounts(r.cfg.Arrival, r.cfg.Seed+uint64(inst)*1000003+uint64(i), phase,
				[]time.Duration{r.cfg.Warmup, r.cfg.Duration}, counts[i])
			gr.emitLag = metrics.NewHistogram()
		}
		for j := 0; j < size; j++ {
			c := &client{r: r, g: gr, id: id, choose: zero, last: -1}
			if load.Chooser != nil {
				c.choose = load.Chooser(id)
			}
			if load.Pause != nil && r.cfg.Rate == 0 {
				c.pause = load.Pause(id)
			}
			gr.clients = append(gr.clients, c)
			id++
		}
		r.groups = append(r.groups, gr)
	}
}

func zero() int { return 0 }

// share is instance i's part of total split exactly between n instances.
func share(total int64, i, n int) int64 {
	return total*int64(i+1)/int64(n) - total*int64(i)/int64(n)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// split shares each segment's count of operations between g groups in
// proportion to their clients (n in all), exactly.
func split(totals []int64, n, g int) [][]int64 {
	out := make([][]int64, g)
	for _, total := range totals {
		var given int64
		clients := 0
		for i := 0; i < g; i++ {
			clients += n/g + btoi(i < n%g)
			upto := total * int64(clients) / int64(n)
			out[i] = append(out[i], upto-given)
			given = upto
		}
	}
	return out
}

func (r *run) sessionGroups() [][]workload.Session {
	out := make([][]workload.Session, len(r.groups))
	for i, g := range r.groups {
		for _, c := range g.clients {
			out[i] = append(out[i], c)
		}
	}
	return out
}

func (r *run) result(lastEnd time.Time) (*Result, error) {
	interrupted := r.parent.Err() != nil
	if interrupted {
		r.cutAt(lastEnd) // if the interrupt's own cut has not run yet
	}
	// The window ended if the run reached its end or was interrupted: its
	// last interval holds what ended before the cut, and what ended after
	// it (or never did) is the drain's.
	var windowEnd time.Time
	if cut := time.Unix(0, r.cut.Load()); interrupted || !lastEnd.Before(cut) {
		windowEnd = cut
		iv, err := r.reg.EndWindow(windowEnd)
		if err != nil {
			return nil, err
		}
		if r.cfg.OnTick != nil && r.cfg.Progress > 0 && iv.Elapsed > 0 {
			r.cfg.OnTick(Tick{Elapsed: windowEnd.Sub(r.origin), Warmup: windowEnd.Before(r.measureStart), Interval: iv, End: windowEnd})
		}
		// Operations still in flight when the run stopped waiting for
		// them: at an interrupt, or at the drain deadline. Their outcome
		// is unknown.
		if interrupted || r.drained.Load() {
			for _, g := range r.groups {
				for _, c := range g.clients {
					if c.busy {
						g.late.Abandoned(c.op, c.measured)
					}
				}
			}
		}
	}
	if err := r.tick(lastEnd, true); err != nil {
		return nil, err
	}
	res := &Result{Total: r.reg.Total(), Saturated: r.saturated.Load(), Interrupted: interrupted,
		Drained: r.drained.Load() && !interrupted, ConnectTime: r.connectTime}
	res.End = lastEnd
	if interrupted {
		res.Cause = context.Cause(r.parent)
	}
	// The measured window ends at the end of the duration (or of an open
	// loop's schedule), or at the interrupt: what ended after it is the
	// drain, apart. A closed loop of a number of transactions, or a run
	// stopped early (saturation, a fatal error), runs until its last
	// operation ended, as pgbench measures it, so that a rate is never
	// taken over less time than the operations took.
	stopAt := lastEnd
	if windowEnd.IsZero() && r.cfg.Rate > 0 && !interrupted && !res.Saturated && lastEnd.Before(r.end) {
		// An open loop done before the end of its window was idle until
		// then: the window counts.
		stopAt = r.end
	}
	if !windowEnd.IsZero() {
		stopAt = windowEnd
		res.Drain = r.reg.Drain()
		res.Drain.Elapsed = max(lastEnd.Sub(windowEnd), 0)
	}
	res.Total.Elapsed = max(stopAt.Sub(r.measureStart), 0)
	for _, g := range r.groups {
		res.Connections += g.conns
		res.ConnectionTime += g.connTime
	}
	if r.cfg.Rate > 0 {
		if m, ok := r.mode.(openLoop); ok && m.cut {
			// The schedule's arrivals at or after the window's end were
			// never offered.
			for _, g := range r.groups {
				for {
					at, ok := g.arrivals.peek()
					if !ok {
						break
					}
					g.arrivals.pop()
					if !at.Before(r.end) {
						r.offered--
					}
				}
			}
		}
		res.Offered = r.offered
		res.Unstarted = r.offered - r.startedMeasured.Load()
		res.Behind = !res.Saturated && !interrupted && res.Unstarted > int64(r.cfg.Concurrency) && float64(res.Unstarted) > BehindShare*float64(res.Offered)
		res.EmitLag = metrics.NewHistogram()
		for _, g := range r.groups {
			res.EmitLag.Merge(g.emitLag)
		}
	}
	r.mu.Lock()
	res.FirstErrors = r.firstErrors
	res.Aborted, res.AbortErr, res.AbortGroup = r.aborted, r.abortErr, r.abortGroup
	if !r.downSince.IsZero() {
		r.unreachable += lastEnd.Sub(r.downSince)
	}
	res.Outages, res.Unreachable = r.outages, r.unreachable
	r.mu.Unlock()
	if f := r.fatal.Load(); f != nil {
		return res, *f
	}
	return res, nil
}

// bounded says whether the measured window has an end: a duration, or an
// open loop's schedule.
func (r *run) bounded() bool { return r.mode.bounded() }

func (r *run) closeStop() { r.stopOnce.Do(func() { close(r.stop) }) }

func (r *run) stopped() bool {
	select {
	case <-r.stop:
		return true
	default:
		return r.ctx.Err() != nil
	}
}

// tickLoop ticks the progress intervals, at every Progress from the
// origin, until the measured window ends (at the end of the duration, or
// at an interrupt). Ticks due while the clients connected (Config.
// ClockBeforeConnect) are one, at the start. The window's last interval,
// and the drain after it, are ticked once the clients are done (result):
// by then every operation that ended inside the window has been recorded.
func (r *run) tickLoop() {
	defer close(r.tickerExited)
	if r.cfg.Progress <= 0 {
		return
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	k := time.Duration(1)
	if due := r.start.Sub(r.origin) / r.cfg.Progress; due > 0 {
		// As pgbench: one report once connected for those due before,
		// even when connecting took all of the duration.
		if err := r.tick(r.start, false); err != nil {
			return
		}
		k = due + 1
		r.resumed = true
	}
	for ; ; k++ {
		next := r.origin.Add(k * r.cfg.Progress)
		if r.bounded() && !next.Before(r.end) {
			return
		}
		timer.Reset(time.Until(next))
		select {
		case <-r.tickDone:
			return
		case <-r.parent.Done():
			return
		case now := <-timer.C:
			if r.late(now) {
				return
			}
			// The interval is labelled by its scheduled end: a tick that
			// fires a few µs after the warm-up ended still closes the
			// warm-up's last interval.
			if err := r.tick(next, false); err != nil {
				return
			}
		}
	}
}

// tick ticks one interval ending at now and hands it to OnTick; final marks
// the run's last.
func (r *run) tick(now time.Time, final bool) error {
	drain := r.reg.WindowEnded()
	iv, err := r.reg.Tick(now)
	if err != nil {
		r.setFatal(err)
		return err
	}
	resumed := r.resumed
	r.resumed = false
	if r.cfg.OnTick != nil && r.cfg.Progress > 0 {
		r.cfg.OnTick(Tick{Elapsed: now.Sub(r.origin), Warmup: !now.After(r.measureStart), Interval: iv, Final: final, Drain: drain, End: now,
			Resumed: resumed})
	}
	return nil
}

// clientStopped notes that a client stopped at now.
func (r *run) clientStopped(now time.Time) {
	ns := now.UnixNano()
	for {
		old := r.lastStop.Load()
		if ns <= old || r.lastStop.CompareAndSwap(old, ns) {
			break
		}
	}
	r.stops.Add(1)
}

// late says whether an operation that ended at now ended after the
// measured window: at or after its end, or the interrupt.
func (r *run) late(now time.Time) bool { return now.UnixNano() >= r.cut.Load() }

// cutAt ends the measured window at t, unless it ended before.
func (r *run) cutAt(t time.Time) {
	ns := t.UnixNano()
	for {
		old := r.cut.Load()
		if ns >= old || r.cut.CompareAndSwap(old, ns) {
			return
		}
	}
}

func (r *run) setFatal(err error) {
	if r.fatal.CompareAndSwap(nil, &err) {
		r.closeStop()
	}
}

func (r *run) saturate() {
	r.saturated.Store(true)
	r.closeStop()
}

func (r *run) event(e Event) {
	if r.cfg.OnEvent != nil {
		r.cfg.OnEvent(e)
	}
}

func (r *run) noteError(class metrics.Class, err error) {
	r.mu.Lock()
	if r.firstErrors[class] == nil {
		r.firstErrors[class] = err
	}
	r.mu.Unlock()
}

func (r *run) abort(c *client, err error, stmt int) {
	r.mu.Lock()
	r.aborted++
	if r.abortErr == nil {
		r.abortErr, r.abortGroup = err, c.g.index
	}
	r.mu.Unlock()
	if r.cfg.StopOnAbort {
		r.closeStop()
	}
	r.event(Event{Kind: Aborted, At: time.Now(), Client: c.id, Op: r.ops[c.op], OpIndex: c.op, Stmt: stmt, Err: err})
}

// unreachableAt notes a failed connection attempt, asked for at asked
// (zero: not known). An attempt asked for before the server was last seen
// answering belongs to the outage that answer ended: with several clients,
// one may reconnect while another's attempt, begun during the outage, is
// still failing. It counts as a failed reconnection, not a new outage.
func (r *run) unreachableAt(asked, now time.Time, err error) {
	r.mu.Lock()
	first := r.downSince.IsZero() && (asked.IsZero() || !asked.Before(r.upAt))
	if first {
		r.downSince = now
		r.outages++
		r.down.Store(true)
	}
	r.mu.Unlock()
	if first {
		r.event(Event{Kind: Unreachable, At: now, Err: err})
	}
}

// reachableAt notes that the server answered: a connection or an operation
// begun at began succeeded at now. An exchange begun before the outage did
// not end it: its reply may have been in before the server went away and
// read late (a busy I/O loop), while the server is still down.
func (r *run) reachableAt(began, now time.Time) {
	if !r.down.Load() {
		return
	}
	r.mu.Lock()
	var down time.Duration
	if !r.downSince.IsZero() && !began.Before(r.downSince) {
		down = now.Sub(r.downSince)
		r.unreachable += down
		r.downSince, r.upAt = time.Time{}, now
		r.down.Store(false)
	}
	r.mu.Unlock()
	if down > 0 {
		r.event(Event{Kind: Reachable, At: now, Down: down})
	}
}

// All is everything the run counted: the window's figures and the drain's,
// over the time from the start of the window to the end of the drain (for
// the workload's audit, which must account for every transaction, and for
// pgbench's report, which counts the drain as pgbench does).
func (res *Result) All() (*metrics.Snapshot, error) {
	if res.Drain == nil {
		return res.Total, nil
	}
	all, err := res.Total.Plus(res.Drain)
	if err != nil {
		return nil, err
	}
	all.Elapsed = res.Total.Elapsed + res.Drain.Elapsed
	return all, nil
}

// InFlight is how many operations were in flight when the window ended:
// those that ended in the drain, completed, failed or abandoned.
func (res *Result) InFlight() int64 {
	if res.Drain == nil {
		return 0
	}
	t := res.Drain.Total("all")
	return t.OK + t.FailedTotal() + t.Abandoned + t.Warmup
}
