package pgio

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sync/errgroup"
)

// procedure is pgio's mypgio() as a procedure, for one table (its name
// inlined, so that its statements are planned once and cached): a session
// announces itself (a NOTICE), waits for the start time txload gives every
// session, then runs random SELECT and UPDATE ranges until the phase's end
// or its statement limit, choosing the kind as Chooser does and the keys as
// Config.Span says. With p_commit it commits every statement; without, the
// whole phase is one transaction, as mypgio()'s call is (the CALL's end
// commits it). Every flush period it hands txload what it did in a NOTICE,
// which the server sends at once, inside a transaction or not: each
// statement's start (µs after the start time), its duration with its
// COMMIT, if any (µs, times 2, plus 1 for an update), and its rows.
const procedure = `CREATE OR REPLACE PROCEDURE pgio_session_%[1]s(
	p_run BIGINT, p_phase INT, p_pct INT, p_first BIGINT, p_width BIGINT, p_ufirst BIGINT, p_uwidth BIGINT,
	p_secs FLOAT8, p_limit BIGINT, p_flush_ms INT, p_commit BOOLEAN)
LANGUAGE plpgsql AS $pgio$
DECLARE
	v_release TIMESTAMPTZ;
	v_started BIGINT;
	v_end     TIMESTAMPTZ;
	v_flush   TIMESTAMPTZ;
	v_before  TIMESTAMPTZ;
	v_period  INTERVAL := make_interval(secs => p_flush_ms / 1000.0);
	v_k       BIGINT;
	v_n       BIGINT;
	v_sum     BIGINT;
	v_upd     BOOLEAN;
	v_win     INT := 0;
	v_wupd    INT := 0;
	v_done    BIGINT := 0;
	v_seq     INT := 0;
	v_i       INT := 0;
	v_offs    BIGINT[] := '{}';
	v_durs    BIGINT[] := '{}';
	v_rows    BIGINT[] := '{}';
BEGIN
	RAISE NOTICE 'pgio ready';
	LOOP
		SELECT released_at INTO v_release FROM pgio_runs WHERE run = p_run AND phase = p_phase;
		EXIT WHEN v_release IS NOT NULL;
		COMMIT; -- the next look sees the release whatever the isolation level
		PERFORM pg_sleep(0.001);
	END LOOP;
	COMMIT; -- the phase's own transaction, or its first, starts below
	PERFORM pg_sleep(GREATEST(extract(epoch FROM v_release - clock_timestamp())::FLOAT8, 0));
	v_started := (extract(epoch FROM clock_timestamp() - v_release) * 1000000)::BIGINT;
	v_end := v_release + make_interval(secs => p_secs);
	v_flush := v_release + v_period;
	LOOP
		v_before := clock_timestamp();
		IF v_before >= v_flush THEN
			v_seq := v_seq + 1;
			RAISE NOTICE 'pgio %% 0 %% %% %% %% %%', v_seq, v_started, (extract(epoch FROM v_before - v_release) * 1000000)::BIGINT,
				array_to_string(v_offs[1:v_i], ','), array_to_string(v_durs[1:v_i], ','), array_to_string(v_rows[1:v_i], ',');
			v_i := 0;
			WHILE v_flush <= v_before LOOP
				v_flush := v_flush + v_period;
			END LOOP;
			v_before := clock_timestamp();
		END IF;
		EXIT WHEN v_before >= v_end OR (p_limit > 0 AND v_done >= p_limit);
		v_upd := v_wupd < p_pct AND floor(random() * (100 - v_win)) < p_pct - v_wupd;
		IF v_upd THEN
			v_k := 1 + floor(random() * p_ufirst)::BIGINT;
			UPDATE %[1]s SET scratch = scratch + 1 WHERE mykey BETWEEN v_k AND v_k + p_uwidth - 1;
			GET DIAGNOSTICS v_n = ROW_COUNT;
			v_wupd := v_wupd + 1;
		ELSE
			v_k := 1 + floor(random() * p_first)::BIGINT;
			SELECT count(*), sum(scratch) INTO v_n, v_sum FROM %[1]s WHERE mykey BETWEEN v_k AND v_k + p_width - 1;
		END IF;
		IF p_commit THEN
			COMMIT;
		END IF;
		v_i := v_i + 1;
		v_offs[v_i] := (extract(epoch FROM v_before - v_release) * 1000000)::BIGINT;
		v_durs[v_i] := (extract(epoch FROM clock_timestamp() - v_before) * 1000000)::BIGINT * 2 + v_upd::INT;
		v_rows[v_i] := v_n;
		v_done := v_done + 1;
		v_win := v_win + 1;
		IF v_win = 100 THEN
			v_win := 0;
			v_wupd := 0;
		END IF;
	END LOOP;
	RAISE NOTICE 'pgio %% 1 %% %% %% %% %%', v_seq + 1, v_started, (extract(epoch FROM clock_timestamp() - v_release) * 1000000)::BIGINT,
		array_to_string(v_offs[1:v_i], ','), array_to_string(v_durs[1:v_i], ','), array_to_string(v_rows[1:v_i], ',');
END $pgio$`

// flushPeriod is how often a server-mode session hands txload what it did.
const flushPeriod = 100 * time.Millisecond

// installServer creates the procedure of every table of the run.
func (r *Run) installServer(ctx context.Context, conn *pgx.Conn) error {
	for i := 1; i <= r.cfg.Tables; i++ {
		if _, err := conn.Exec(ctx, fmt.Sprintf(procedure, Table(i))); err != nil {
			return fmt.Errorf("creating the server-mode procedure of %s: %w", Table(i), err)
		}
	}
	return nil
}

// ServerHooks are what the caller of RunServer learns as the run goes, a
// fixed lag (replayLag) after it happened, on the run's clock shifted by
// that lag (see Replay). Calls are serialised.
type ServerHooks struct {
	// Ready receives the time the sessions started at (the run's start).
	Ready func(start time.Time)
	// Statement receives each statement of session s: its start and
	// duration, in the order they started.
	Statement func(s int, k Kind, at time.Time, d time.Duration)
	// Failed says session s ended on err at at: nothing more comes from
	// it.
	Failed func(s int, at time.Time, err error)
}

// phase is one procedure call per session: the warm-up, or the measured
// period.
type phase struct {
	n     int
	secs  time.Duration
	limit int64
	// origin is the run's time of the phase's release; shift is how much
	// later it was released in real time.
	origin time.Time
	shift  time.Duration
	// ready counts the sessions that announced themselves; announced
	// receives a value at each.
	ready     atomic.Int32
	announced chan struct{}
	// set is closed once origin and shift are set, which the sessions'
	// reports wait for; stop once the phase's calls are cancelled.
	set  chan struct{}
	stop <-chan struct{}
}

// timeline maps a local time of the phase to the run's timeline.
func (p *phase) timeline(t time.Time) time.Time { return t.Add(-p.shift) }

// releaseMargin is how far ahead of now the start time is set: the
// sessions poll for it every millisecond, then sleep until it.
const releaseMargin = 20 * time.Millisecond

// serverSession is one server-mode session: its connection, and what its
// NOTICEs carry, handled as they come.
type serverSession struct {
	r    *Run
	s    int
	conn *pgx.Conn
	rp   *Replay
	mu   *sync.Mutex // guards err
	// phase is the current call's; err the first malformed message.
	phase atomic.Pointer[phase]
	last  bool
	err   error
}

func (ss *serverSession) notice(n *pgconn.Notice) {
	p := ss.phase.Load()
	if p == nil || !strings.HasPrefix(n.Message, "pgio ") {
		return
	}
	if n.Message == "pgio ready" {
		p.ready.Add(1)
		select {
		case p.announced <- struct{}{}:
		default:
		}
		return
	}
	// The release's reply may come after a session's first report: its
	// times are offsets from the release, placed once the release is known.
	select {
	case <-p.set:
	case <-p.stop:
		return
	}
	f, err := parseFlush(n.Message)
	if err != nil {
		ss.mu.Lock()
		if ss.err == nil {
			ss.err = fmt.Errorf("session %d's progress: %w", ss.s, err)
		}
		ss.mu.Unlock()
		return
	}
	ss.r.flushed(ss.s, p, f, ss.rp, ss.last)
}

// flush is one NOTICE of a session's statements.
type flush struct {
	seq                 int
	done                bool
	started, through    int64 // µs after the release
	offs, durs, rowsets []int64
}

// parseFlush reads "pgio SEQ DONE STARTED THROUGH OFFS DURS ROWS", the
// last three comma-separated lists of the same length.
func parseFlush(msg string) (flush, error) {
	var f flush
	p := strings.Split(msg, " ")
	if len(p) != 8 {
		return f, fmt.Errorf("malformed message %q", trim(msg))
	}
	ints := make([]int64, 4)
	for i := range ints {
		v, err := strconv.ParseInt(p[1+i], 10, 64)
		if err != nil {
			return f, fmt.Errorf("malformed message %q", trim(msg))
		}
		ints[i] = v
	}
	f.seq, f.done, f.started, f.through = int(ints[0]), ints[1] == 1, ints[2], ints[3]
	lists := make([][]int64, 3)
	for i := range lists {
		if p[5+i] == "" {
			continue
		}
		for _, x := range strings.Split(p[5+i], ",") {
			v, err := strconv.ParseInt(x, 10, 64)
			if err != nil {
				return f, fmt.Errorf("malformed message %q", trim(msg))
			}
			lists[i] = append(lists[i], v)
		}
	}
	f.offs, f.durs, f.rowsets = lists[0], lists[1], lists[2]
	if len(f.offs) != len(f.durs) || len(f.offs) != len(f.rowsets) {
		return f, fmt.Errorf("%d starts, %d durations, %d row counts", len(f.offs), len(f.durs), len(f.rowsets))
	}
	return f, nil
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// flushed hands a session's flush on to the replay.
func (r *Run) flushed(s int, p *phase, f flush, rp *Replay, last bool) {
	at := func(us int64) time.Time { return p.origin.Add(time.Duration(us) * time.Microsecond) }
	if p.n == 1 && f.seq == 1 {
		rp.Push(Replayed{Ev: EvStarted, S: s, At: at(f.started)})
	}
	for i, off := range f.offs {
		k := Kind(f.durs[i] & 1)
		if k == Update {
			r.wrote(s, p.n)
		}
		rp.Push(Replayed{Ev: EvStatement, S: s, K: k, At: at(off), D: time.Duration(f.durs[i]>>1) * time.Microsecond, Rows: f.rowsets[i]})
	}
	if p.n == 1 {
		rp.Push(Replayed{Ev: EvThrough, S: s, At: at(f.through)})
		if f.done && last {
			rp.Push(Replayed{Ev: EvDone, S: s, At: at(f.through)})
		}
	}
}

// replayed takes an event the replay hands on: to the collector, and to
// the hooks on the shifted clock.
func (r *Run) replayed(x Replayed, h ServerHooks, lag time.Duration) {
	c := r.Collector()
	switch x.Ev {
	case EvStarted:
		c.Started(x.S, x.At)
	case EvStatement:
		c.Record(x.S, x.K, x.At, x.D, x.Rows)
		if h.Statement != nil {
			h.Statement(x.S, x.K, x.At.Add(lag), x.D)
		}
	case EvThrough:
		c.Through(x.S, x.At)
	case EvDone:
		c.Done(x.S)
	case EvFailed:
		c.Done(x.S)
		if h.Failed != nil {
			h.Failed(x.S, x.At.Add(lag), x.Err)
		}
	}
}

// RunServer runs the server mode: each session calls its table's procedure
// on its own connection, once for the warm-up and once for the measured
// period (between them every session flushes its statistics, so that the
// database's counters of the measured period are exact). Every session of
// a call waits for the start time txload gives them all, once all are
// waiting; their statements come back in NOTICEs as the run goes. A
// session whose call fails ends there (pgio's sessions do too) and the
// others go on; RunServer then returns an error that says so, once the
// phase is over.
func (r *Run) RunServer(ctx context.Context, h ServerHooks) error {
	rp := NewReplay(replayLag)
	done := make(chan error, 1)
	go func() {
		defer rp.Close()
		done <- r.runServer(ctx, rp)
	}()
	rp.Run(ctx, func(start time.Time) {
		if h.Ready != nil {
			h.Ready(start)
		}
	}, func(x Replayed) { r.replayed(x, h, rp.Lag()) })
	return <-done
}

func (r *Run) runServer(ctx context.Context, rp *Replay) error {
	n := r.Sessions()
	var mu sync.Mutex
	sessions := make([]*serverSession, n)
	defer func() {
		for _, ss := range sessions {
			if ss != nil && ss.conn != nil {
				ss.conn.Close(context.WithoutCancel(ctx))
			}
		}
	}()
	g, gctx := errgroup.WithContext(ctx)
	for i := range sessions {
		ss := &serverSession{r: r, s: i, rp: rp, mu: &mu}
		sessions[i] = ss
		g.Go(func() error {
			c, err := r.target.ConnectClient(gctx, func(cc *pgx.ConnConfig) {
				cc.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { ss.notice(n) }
			})
			if err != nil {
				return fmt.Errorf("connecting session %d: %w", i, err)
			}
			ss.conn = c
			// The procedure's NOTICEs are its progress: sent whatever the
			// role's or the database's default says.
			if _, err := c.Exec(gctx, "SET client_min_messages = notice"); err != nil {
				return fmt.Errorf("setting up session %d: %w", i, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if r.sampler.Stmts {
		// The procedure's statements are nested: pg_stat_statements counts
		// them one by one only when told to (a superuser setting).
		for _, ss := range sessions {
			if _, err := ss.conn.Exec(ctx, "SET pg_stat_statements.track = 'all'"); err != nil {
				r.sampler.Stmts = false
				r.sampler.StmtsWhy = "server mode's statements run inside a procedure, which pg_stat_statements counts only with pg_stat_statements.track = all: " + oneLine(err.Error())
				break
			}
		}
	}
	control, err := r.target.Connect(ctx)
	if err != nil {
		return err
	}
	defer control.Close(context.WithoutCancel(ctx))

	var phases []*phase
	if r.opts.Warmup > 0 {
		phases = append(phases, &phase{n: 0, secs: r.opts.Warmup})
	}
	phases = append(phases, &phase{n: 1, secs: r.opts.Duration, limit: r.cfg.Statements})
	var start time.Time
	for i, p := range phases {
		last := i == len(phases)-1
		err := r.runPhase(ctx, control, sessions, p, func(at time.Time) {
			if i == 0 {
				start = at
				r.begin(ctx, start.Add(r.opts.Warmup))
				rp.Begin(start)
			}
			p.origin = start
			if p.n == 1 {
				p.origin = r.Collector().Measured()
			}
			p.shift = at.Sub(p.origin)
			if p.n == 1 {
				if r.opts.Warmup == 0 {
					// Before the sessions start: the measured period's
					// first sample.
					if s, err := r.sampler.Sample(ctx); err == nil {
						s.At = p.origin
						r.setBase(s)
						r.Collector().Sample(s)
					}
				}
				r.sampleLoop(ctx, p.shift, p.origin.Add(1))
				if p.limit == 0 {
					// The sessions run statements until the period's
					// end: the period ends there, not before.
					rp.Hold(p.origin.Add(p.secs))
				}
			}
		}, last)
		if err != nil {
			return err
		}
		for _, ss := range sessions {
			ss.mu.Lock()
			err := ss.err
			ss.mu.Unlock()
			if err != nil {
				return err
			}
		}
		// Every session flushes what it counted into pg_stat_database: the
		// sample that follows cuts the measured period exactly.
		flushed := true
		for _, ss := range sessions {
			if r.sampler.DB && !r.failed(ss.s) {
				flushed = ForceFlush(ctx, ss.conn) && flushed
			}
		}
		if !flushed {
			r.note("this server cannot flush a session's statistics on demand (before PostgreSQL 15): the database's counters may miss up to a second of each session's work")
		}
		if p.n == 0 {
			if err := r.Failure(); err != nil {
				return fmt.Errorf("in the warm-up: %w", err)
			}
			s, err := r.sampler.Sample(ctx)
			if err != nil {
				return err
			}
			s.At = r.Collector().Measured()
			r.setBase(s)
			r.Collector().Sample(s)
		}
	}
	if err := r.end(ctx, phases[len(phases)-1].timeline(time.Now())); err != nil {
		return err
	}
	return r.Failure()
}

// runPhase runs one call per session; released receives the local time the
// sessions start at, before they do.
func (r *Run) runPhase(ctx context.Context, control *pgx.Conn, sessions []*serverSession, p *phase, released func(time.Time), last bool) error {
	n := len(sessions)
	p.announced, p.set = make(chan struct{}, 1), make(chan struct{})
	for _, ss := range sessions {
		ss.last = last
		ss.phase.Store(p)
	}
	if _, err := control.Exec(ctx, "INSERT INTO pgio_runs (run, phase) VALUES ($1, $2)", r.id, p.n); err != nil {
		return fmt.Errorf("starting a server-mode phase: %w", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.stop = cctx.Done()
	var wg sync.WaitGroup
	calls := make(chan struct{})
	errs := make([]error, n)
	first, width := r.cfg.Span(Select)
	ufirst, uwidth := r.cfg.Span(Update)
	for s, ss := range sessions {
		if r.failed(s) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := ss.conn.Exec(cctx, "CALL pgio_session_"+r.TableOf(s)+"($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
				r.id, p.n, r.cfg.UpdatePct, first, width, ufirst, uwidth,
				p.secs.Seconds(), p.limit, int(flushPeriod.Milliseconds()), r.cfg.Commit == CommitStatement)
			if err == nil {
				return
			}
			if cctx.Err() != nil {
				errs[s] = cctx.Err()
				return
			}
			// The session ends here, as a pgio session does; the others
			// go on.
			var at time.Time // zero: before the release
			select {
			case <-p.set:
				at = p.timeline(time.Now())
			default:
			}
			r.sessionFailed(s, p.n, at, err)
			if !at.IsZero() {
				ss.rp.Push(Replayed{Ev: EvFailed, S: s, At: at, Err: err})
			}
			select {
			case p.announced <- struct{}{}: // the barrier waits for one fewer
			default:
			}
		}()
	}
	go func() { wg.Wait(); close(calls) }()
	wait := func() error {
		<-calls
		return errors.Join(errs...)
	}
	// The barrier: once every session is waiting, give them a start time.
	for int(p.ready.Load()) < n-r.failureCount() {
		select {
		case <-calls:
			if err := wait(); err != nil {
				return err
			}
			if err := r.Failure(); err != nil {
				return fmt.Errorf("before the start: %w", err)
			}
			return errors.New("the sessions ended before the start")
		case <-p.announced:
		case <-ctx.Done():
			cancel()
			return wait()
		}
	}
	t1 := time.Now()
	var release time.Time
	if err := control.QueryRow(ctx, "UPDATE pgio_runs SET released_at = clock_timestamp() + $3::INTERVAL WHERE run = $1 AND phase = $2 RETURNING released_at",
		r.id, p.n, fmt.Sprintf("%d microseconds", releaseMargin.Microseconds())).Scan(&release); err != nil {
		cancel()
		_ = wait()
		return fmt.Errorf("releasing the sessions: %w", err)
	}
	t2 := time.Now()
	released(t1.Add(t2.Sub(t1)/2 + releaseMargin))
	close(p.set)
	return wait()
}
