package pgio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// RunOptions is what a run learns of the run's own settings.
type RunOptions struct {
	// Duration is the measured period, after a warm-up of Warmup.
	Duration, Warmup time.Duration
	// Interval is the progress interval (0: no progress lines).
	Interval time.Duration
	// Rate is the open-loop rate of statements; 0: closed loop.
	Rate float64
	// ScaleSet and TablesSet say --scale and --tables were given: the run
	// then covers only that part of the loaded tables.
	ScaleSet, TablesSet bool
	// Seed seeds the client-mode choices.
	Seed uint64
	// Log receives progress lines.
	Log io.Writer
	// Figure, if set, takes each progress interval's figures as gauges
	// (see Figures).
	Figure func(name, help string, value float64)
}

// Run is one pgio run on a loaded schema: its settings as resolved against
// the schema, its server counters, and its collector.
type Run struct {
	cfg     Config
	opts    RunOptions
	target  *pg.Target
	dialect pg.Dialect
	mode    Mode
	id      int64

	sampler  *Sampler
	base     Counters // at the start of the measured period
	haveBase bool

	mu        sync.Mutex
	collector *Collector
	notes     []string
	// bounds are the boundaries the counters are sampled at; arrived
	// counts, for each, the client sessions that reached it (and flushed
	// their statistics, where that is needed), and arrive wakes the
	// sampler. baseTaken is closed once the counters were sampled at the
	// start of the measured period, which client sessions wait for.
	bounds      []time.Time
	arrived     []atomic.Int32
	arrive      chan struct{}
	baseTaken   chan struct{}
	stopSampler func()
	samplerDone chan struct{}
	final       Counters // taken once every session ended
	haveFinal   bool
	// updates counts each session's updates by phase (0: the warm-up);
	// failures are the sessions that ended on an error.
	updates  [2][]int64
	failures []SessionFailure
	// sizes are the run's tables' sizes before it (PostgreSQL).
	sizes     Sizes
	haveSizes bool
}

// SessionFailure is a session that ended on an error.
type SessionFailure struct {
	Session int
	Table   string
	// Phase is 0 in the warm-up, 1 in the measured period; At is when, on
	// the run's timeline (zero: before the sessions were released).
	Phase int
	At    time.Time
	Err   error
	// Updates are those the session made in the phase: under --commit run
	// its failure rolled them back.
	Updates int64
}

// Prepare checks the schema and resolves the run against it: the tables and
// scale loaded (or the part of them asked for), the mode, the counters the
// server has. It installs the server-mode procedures. It fails with one
// line that says what to do when the schema is missing, incomplete, or
// smaller than asked.
func Prepare(ctx context.Context, t *pg.Target, cfg Config, opts RunOptions) (*Run, error) {
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	r := &Run{cfg: cfg, opts: opts, target: t, id: rand.Int64N(1 << 53)}
	ok := false
	defer func() {
		if !ok {
			conn.Close(context.WithoutCancel(ctx))
		}
	}()
	server, err := pg.Detect(ctx, conn)
	if err != nil {
		return nil, err
	}
	r.dialect = server.Dialect
	m, err := workload.ReadMarker(ctx, conn, Workload)
	if err != nil {
		return nil, err
	}
	if err := m.Require(Workload); err != nil {
		return nil, err
	}
	tables, scale, err := ParseSettings(m.Settings)
	if err != nil {
		return nil, err
	}
	switch {
	case opts.TablesSet && cfg.Tables > tables:
		return nil, fmt.Errorf("--tables %d: the pgio schema holds %d tables; run `txload init pgio --drop --tables %d`", cfg.Tables, tables, cfg.Tables)
	case opts.ScaleSet && cfg.Scale > scale:
		return nil, fmt.Errorf("--scale %d: the pgio tables hold %d rows; run `txload init pgio --drop --scale %d`", cfg.Scale, scale, cfg.Scale)
	}
	if !opts.TablesSet {
		r.cfg.Tables = tables
	}
	if !opts.ScaleSet {
		r.cfg.Scale = scale
	}
	if err := r.cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w (the pgio tables hold %d rows)", err, scale)
	}
	if r.mode, err = chooseMode(cfg.Mode, r.dialect, opts.Rate); err != nil {
		return nil, err
	}
	if r.sampler, err = NewSampler(ctx, conn, r.dialect); err != nil {
		return nil, err
	}
	if r.dialect == pg.PostgreSQL {
		if r.sizes, err = ReadSizes(ctx, conn, r.cfg.Tables); err != nil {
			return nil, err
		}
		r.haveSizes = true
	}
	for i := range r.updates {
		r.updates[i] = make([]int64, r.Sessions())
	}
	if r.mode == ModeServer {
		if err := r.installServer(ctx, conn); err != nil {
			return nil, err
		}
	}
	ok = true
	return r, nil
}

func chooseMode(m Mode, d pg.Dialect, rate float64) (Mode, error) {
	switch {
	case m == ModeServer && rate > 0:
		return "", errors.New("--rate runs an open loop of statements from txload: it needs --mode client (or auto)")
	case m == ModeServer && d == pg.CockroachDB:
		return "", fmt.Errorf("--mode server runs a PL/pgSQL procedure that commits as it goes, which %s does not run: use --mode client (or auto)", d)
	case m == ModeAuto && (rate > 0 || d == pg.CockroachDB):
		return ModeClient, nil
	case m == ModeAuto:
		return ModeServer, nil
	}
	return m, nil
}

// Config is the run's settings, resolved against the schema.
func (r *Run) Config() Config { return r.cfg }

// Mode is the run's mode, ModeServer or ModeClient.
func (r *Run) Mode() Mode { return r.mode }

// Dialect is the server's.
func (r *Run) Dialect() pg.Dialect { return r.dialect }

// Sessions is the number of sessions.
func (r *Run) Sessions() int { return r.cfg.Sessions() }

// TableOf is session s's table: sessions-per-table sessions on each.
func (r *Run) TableOf(s int) string { return Table(1 + s/r.cfg.SessionsPerTable) }

func (r *Run) logf(format string, args ...any) {
	if r.opts.Log != nil {
		fmt.Fprintf(r.opts.Log, format, args...)
	}
}

// Collector is the run's collector, once the run started.
func (r *Run) Collector() *Collector {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.collector
}

// begin starts the collector of a run whose measured period starts at
// measured.
func (r *Run) begin(ctx context.Context, measured time.Time) {
	var print func(*Interval)
	if r.opts.Interval > 0 && (r.opts.Log != nil || r.opts.Figure != nil) {
		print = func(iv *Interval) {
			live := blocksLive(r.mode, r.cfg.Commit, r.sampler.Stmts, r.sampler.DB)
			r.logf("%s\n", ProgressLine(r.dialect, iv, live))
			if r.opts.Figure != nil {
				Figures(r.dialect, iv, live, r.opts.Figure)
			}
		}
	}
	c := NewCollector(r.Sessions(), measured, r.opts.Warmup, r.opts.Duration, r.opts.Interval, print)
	bounds := c.Boundaries(measured.Add(r.opts.Duration))
	r.mu.Lock()
	r.collector = c
	r.bounds = bounds
	r.arrived = make([]atomic.Int32, len(bounds))
	r.arrive = make(chan struct{}, 1)
	r.baseTaken = make(chan struct{})
	r.mu.Unlock()
}

// flushEach says whether client sessions flush their statistics at every
// boundary: when pg_stat_database is the only block counter that moves as
// the run goes. A backend flushes it on its own at most once a second, so
// an interval's figure would hold some of the interval before; inside a
// transaction (--commit run) it cannot flush at all.
func (r *Run) flushEach() bool {
	return r.mode == ModeClient && r.sampler.DB && !r.sampler.Stmts && r.cfg.Commit == CommitStatement && r.opts.Interval > 0
}

// reached says a client session reached boundaries from to to-1.
func (r *Run) reached(from, to int) {
	for i := from; i < to; i++ {
		r.arrived[i].Add(1)
	}
	select {
	case r.arrive <- struct{}{}:
	default:
	}
}

// awaitArrivals waits until every client session reached boundary i, or
// timeout passed; it says whether they all did.
func (r *Run) awaitArrivals(ctx context.Context, i int, timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for int(r.arrived[i].Load()) < r.Sessions() {
		select {
		case <-r.arrive:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// sampleLoop samples the counters at each boundary of the run's timeline,
// shifted to real time by shift (server mode: the pause between the
// warm-up's calls and the measured period's), until stopSampling; it skips
// the boundaries before from. In client mode, at the start of the measured
// period it first waits for the sessions to flush their statistics, and
// lets them go on once it sampled.
func (r *Run) sampleLoop(ctx context.Context, shift time.Duration, from time.Time) {
	c := r.Collector()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	r.mu.Lock()
	r.stopSampler, r.samplerDone = cancel, done
	r.mu.Unlock()
	var release sync.Once
	releaseSessions := func() {
		if r.mode == ModeClient && r.opts.Warmup > 0 {
			release.Do(func() { close(r.baseTaken) })
		}
	}
	go func() {
		defer close(done)
		defer releaseSessions()
		for i, b := range r.bounds {
			if b.Before(from) {
				continue
			}
			t := time.NewTimer(time.Until(b.Add(shift)))
			select {
			case <-sctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			switch {
			case r.mode != ModeClient:
			case b.Equal(c.Measured()) && r.opts.Warmup > 0:
				if !r.awaitArrivals(sctx, i, time.Second) && sctx.Err() == nil {
					r.note("not every session reached the end of the warm-up within a second of it: the counters of the measured period include some of the warm-up's statements, or miss some of its own")
				}
			case r.flushEach():
				// Not all: an idle session (an open loop between its
				// statements) flushes on its own within a second.
				r.awaitArrivals(sctx, i, min(r.opts.Interval/4, 250*time.Millisecond))
			}
			// Not cancelled by stopSampling: a query cancelled half-way
			// leaves pgx's connection closed, and the run's last samples
			// need it.
			qctx, qcancel := context.WithTimeout(context.WithoutCancel(ctx), sampleTimeout)
			s, err := r.sampler.Sample(qctx)
			qcancel()
			if err != nil {
				if sctx.Err() == nil {
					r.note("sampling the counters failed during the run: " + oneLine(err.Error()))
				}
				return
			}
			// The sample is the boundary's, however late it came (a
			// loaded machine): every interval gets the counters of its
			// end, and none waits for them for ever.
			s.At = b
			if b.Equal(c.Measured()) {
				r.setBase(s)
				releaseSessions()
			}
			c.Sample(s)
		}
	}()
}

// sampleTimeout bounds a sample of the counters during the run.
const sampleTimeout = 10 * time.Second

func (r *Run) stopSampling() {
	r.mu.Lock()
	stop, done := r.stopSampler, r.samplerDone
	r.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

func (r *Run) setBase(s Counters) {
	r.mu.Lock()
	if !r.haveBase {
		r.base, r.haveBase = s, true
	}
	r.mu.Unlock()
}

func (r *Run) note(n string) {
	r.mu.Lock()
	r.notes = append(r.notes, n)
	r.mu.Unlock()
}

// ForceFlush makes conn's backend flush its statistics to pg_stat_database
// now (PostgreSQL 15 and later): by default a backend flushes them when it
// goes idle, at most once a second, and never inside a procedure call. It
// says whether the server could.
func ForceFlush(ctx context.Context, conn *pgx.Conn) bool {
	_, err := conn.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	return err == nil
}

// end takes the last sample of the counters, once every session ended and
// flushed its statistics: the end of the last interval, at at on the run's
// timeline (zero: when the last statement ended).
func (r *Run) end(ctx context.Context, at time.Time) error {
	r.stopSampling()
	c := r.Collector()
	if c == nil {
		return nil
	}
	defer c.Final()
	s, err := r.sampler.Sample(ctx)
	if err != nil {
		return err
	}
	if at.IsZero() {
		at = c.LastEnd()
	}
	if !at.IsZero() {
		s.At = at
	}
	r.mu.Lock()
	r.final, r.haveFinal = s, true
	r.mu.Unlock()
	c.Sample(s)
	return nil
}

// Cut says the run was interrupted at t (this machine's clock): the
// measured window ends there, on the run's timeline (in server mode, the
// replay's lag earlier: what the engine was told of by then).
func (r *Run) Cut(t time.Time) {
	if r.mode == ModeServer {
		t = t.Add(-replayLag)
	}
	if c := r.Collector(); c != nil {
		c.Cut(t)
	}
}

// Finish ends the run: it takes the last sample of the counters (every
// session flushed its statistics before ending) and returns the result of
// the measured window, which is the engine's: from the end of the warm-up
// to the end of the duration or the interrupt, or, when the sessions ended
// before (--statements), to the end of the last statement, as pgbench
// measures it. Its statements are those that ended in it; those in flight
// at its end are the drain's, apart, as the run's summary counts them, so
// that the two give one figure for the same statements over one window.
func (r *Run) Finish(ctx context.Context) (*Result, error) {
	r.stopSampling()
	c := r.Collector()
	if c == nil {
		return nil, errors.New("pgio: the run never started")
	}
	elapsed := c.Window(r.cfg.Statements == 0)
	res := &Result{Config: r.cfg, Dialect: r.dialect, Mode: r.mode, Elapsed: elapsed,
		DB: r.sampler.DB, Stmts: r.sampler.Stmts, DBWhy: r.sampler.DBWhy, StmtsWhy: r.sampler.StmtsWhy, Database: r.sampler.Database,
		Disk: r.sampler.Disk, DiskWhy: r.sampler.DiskWhy}
	res.Kinds, res.Warmup, res.Intervals, res.StartSpread = c.Totals()
	res.MeasuredIntervals = c.MeasuredIntervals()
	res.Drain = c.Drain()
	res.Measured = c.Measured()
	r.mu.Lock()
	haveBase, base := r.haveBase, r.base
	last, haveLast := r.final, r.haveFinal
	res.Notes = append(res.Notes, r.notes...)
	res.Failures = append(res.Failures, r.failures...)
	res.SizesBefore, res.HaveSizes = r.sizes, r.haveSizes
	r.mu.Unlock()
	if res.HaveSizes {
		var err error
		if res.SizesAfter, err = ReadSizes(ctx, r.sampler.conn, r.cfg.Tables); err != nil {
			return nil, err
		}
	}
	if res.DB || res.Stmts {
		if !haveLast {
			var err error
			if last, err = r.sampler.Sample(ctx); err != nil {
				return nil, err
			}
		}
		if !haveBase {
			return nil, errors.New("pgio: the counters were not sampled at the start of the measured period")
		}
		res.Counters = last.Sub(base)
		if res.Stmts && res.Counters.Dealloc > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("pg_stat_statements evicted entries %d times during the run (pg_stat_statements.max is too small for the server's statements): "+
				"its counts may miss some of the run's statements, so the headline comes from pg_stat_database", res.Counters.Dealloc))
		}
	}
	return res, nil
}

// Close releases the run's connection and deletes its rows of pgio_runs.
func (r *Run) Close(ctx context.Context) {
	r.stopSampling()
	conn := r.sampler.conn
	if r.mode == ModeServer && !conn.IsClosed() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = conn.Exec(cctx, "DELETE FROM pgio_runs WHERE run = $1", r.id)
		conn.Close(cctx)
		return
	}
	conn.Close(context.WithoutCancel(ctx))
}

// wrote counts an update of session s in phase p.
func (r *Run) wrote(s, p int) {
	r.mu.Lock()
	r.updates[p][s]++
	r.mu.Unlock()
}

// sessionFailed records that session s ended on err in phase p, at at.
func (r *Run) sessionFailed(s, p int, at time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, SessionFailure{Session: s, Table: r.TableOf(s), Phase: p, At: at, Err: err, Updates: r.updates[p][s]})
}

// failed says whether session s ended on an error.
func (r *Run) failed(s int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.failures {
		if f.Session == s {
			return true
		}
	}
	return false
}

func (r *Run) failureCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures)
}

// Failure is the error a run whose sessions ended on errors ends with; nil
// if none did.
func (r *Run) Failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failures) == 0 {
		return nil
	}
	f := r.failures[0]
	what := fmt.Sprintf("session %d on %s ended", f.Session, f.Table)
	if n := len(r.failures); n > 1 {
		what = fmt.Sprintf("%d of %d sessions ended on an error, the first %s", n, r.Sessions(), what)
	}
	hint := ""
	if r.cfg.Commit == CommitRun && sqlState(f.Err) == "40P01" {
		hint = " (under --commit run, sessions that update the same table deadlock, as pgio's do: --sessions-per-table 1 or --commit statement runs without)"
	}
	return fmt.Errorf("%s: %w%s", what, f.Err, hint)
}

// sqlState is err's SQLSTATE, or "".
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
