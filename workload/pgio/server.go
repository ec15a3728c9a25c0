package pgio

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"
)

// procedure is pgio's mypgio() as a procedure, for one table (its name
// inlined, so that its statements are planned once and cached): a session
// announces itself, waits for the start time txload gives every session,
// then runs random SELECT and UPDATE ranges until the phase's end or its
// statement limit, choosing the kind as Chooser does. Unlike mypgio() it
// commits every statement (its updates are visible as the run goes on; a
// SELECT's commit costs next to nothing), and every flush period it hands
// txload what it did, committed into pgio_progress: each statement's start
// (µs after the start time), its duration with its COMMIT (µs, times 2,
// plus 1 for an update) and its rows.
const procedure = `CREATE OR REPLACE PROCEDURE pgio_session_%[1]s(
	p_run BIGINT, p_phase INT, p_session INT, p_pct INT, p_wu BIGINT, p_uwu BIGINT, p_scale BIGINT,
	p_secs FLOAT8, p_limit BIGINT, p_flush_ms INT)
LANGUAGE plpgsql AS $pgio$
DECLARE
	v_release TIMESTAMPTZ;
	v_t0      TIMESTAMPTZ;
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
	INSERT INTO pgio_progress (run, phase, session, seq, through, done, offs, durs, nrows)
		VALUES (p_run, p_phase, p_session, 0, clock_timestamp(), false, '{}', '{}', '{}');
	COMMIT;
	LOOP
		SELECT released_at INTO v_release FROM pgio_runs WHERE run = p_run AND phase = p_phase;
		EXIT WHEN v_release IS NOT NULL;
		PERFORM pg_sleep(0.002);
	END LOOP;
	PERFORM pg_sleep(GREATEST(extract(epoch FROM v_release - clock_timestamp())::FLOAT8, 0));
	v_t0 := clock_timestamp();
	v_end := v_release + make_interval(secs => p_secs);
	v_flush := v_release + v_period;
	LOOP
		v_before := clock_timestamp();
		IF v_before >= v_flush THEN
			v_seq := v_seq + 1;
			INSERT INTO pgio_progress (run, phase, session, seq, started_at, through, done, offs, durs, nrows)
				VALUES (p_run, p_phase, p_session, v_seq, v_t0, v_before, false, v_offs[1:v_i], v_durs[1:v_i], v_rows[1:v_i]);
			COMMIT;
			v_i := 0;
			WHILE v_flush <= v_before LOOP
				v_flush := v_flush + v_period;
			END LOOP;
			v_before := clock_timestamp();
		END IF;
		EXIT WHEN v_before >= v_end OR (p_limit > 0 AND v_done >= p_limit);
		v_upd := v_wupd < p_pct AND floor(random() * (100 - v_win)) < p_pct - v_wupd;
		IF v_upd THEN
			v_k := 1 + floor(random() * (p_scale - p_uwu + 1))::BIGINT;
			UPDATE %[1]s SET scratch = scratch + 1 WHERE mykey BETWEEN v_k AND v_k + p_uwu - 1;
			GET DIAGNOSTICS v_n = ROW_COUNT;
			v_wupd := v_wupd + 1;
		ELSE
			v_k := 1 + floor(random() * (p_scale - p_wu + 1))::BIGINT;
			SELECT count(*), sum(scratch) INTO v_n, v_sum FROM %[1]s WHERE mykey BETWEEN v_k AND v_k + p_wu - 1;
		END IF;
		COMMIT;
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
	INSERT INTO pgio_progress (run, phase, session, seq, started_at, through, done, offs, durs, nrows)
		VALUES (p_run, p_phase, p_session, v_seq + 1, v_t0, clock_timestamp(), true, v_offs[1:v_i], v_durs[1:v_i], v_rows[1:v_i]);
	COMMIT;
END $pgio$`

// installServer creates the procedure of every table of the run.
func (r *Run) installServer(ctx context.Context, conn *pgx.Conn) error {
	for i := 1; i <= r.cfg.Tables; i++ {
		if _, err := conn.Exec(ctx, fmt.Sprintf(procedure, Table(i))); err != nil {
			return fmt.Errorf("creating the server-mode procedure of %s: %w", Table(i), err)
		}
	}
	return nil
}

// ServerHooks are what the caller of RunServer learns as the run goes.
type ServerHooks struct {
	// Ready receives the time the sessions start at (the run's start), as
	// they are released, before any statement.
	Ready func(start time.Time)
	// Statement receives each statement of session s, on the run's
	// timeline: its start and duration, in the order the session ran them,
	// about one flush period after it ran. Calls are serialised.
	Statement func(s int, k Kind, at time.Time, d time.Duration)
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
}

// releaseMargin is how far ahead of now the start time is set: the
// sessions poll for it every 2 ms, then sleep until it.
const releaseMargin = 30 * time.Millisecond

// RunServer runs the server mode: each session calls its table's procedure
// on its own connection, once for the warm-up and once for the measured
// period (between them every session flushes its statistics, so that the
// database's counters of the measured period are exact). Every session of
// a call waits for the start time txload gives them all, once all are
// waiting; their statements come back through pgio_progress as the run
// goes.
func (r *Run) RunServer(ctx context.Context, h ServerHooks) error {
	n := r.Sessions()
	conns := make([]*pgx.Conn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close(context.WithoutCancel(ctx))
			}
		}
	}()
	g, gctx := errgroup.WithContext(ctx)
	for i := range conns {
		g.Go(func() error {
			c, err := r.target.Connect(gctx)
			if err != nil {
				return fmt.Errorf("connecting session %d: %w", i, err)
			}
			conns[i] = c
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if r.sampler.Stmts {
		// The procedure's statements are nested: pg_stat_statements counts
		// them one by one only when told to (a superuser setting).
		for _, c := range conns {
			if _, err := c.Exec(ctx, "SET pg_stat_statements.track = 'all'"); err != nil {
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
		err := r.runPhase(ctx, control, conns, p, func(at time.Time) {
			if i == 0 {
				start = at
				r.begin(ctx, start.Add(r.opts.Warmup))
				if h.Ready != nil {
					h.Ready(start)
				}
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
			}
		}, h, last)
		if err != nil {
			return err
		}
		// Every session flushes what it counted into pg_stat_database: the
		// sample that follows cuts the measured period exactly.
		flushed := true
		for _, c := range conns {
			if r.sampler.DB {
				flushed = ForceFlush(ctx, c) && flushed
			}
		}
		if !flushed {
			r.note("this server cannot flush a session's statistics on demand (before PostgreSQL 15): the database's counters may miss up to a second of each session's work")
		}
		if p.n == 0 {
			s, err := r.sampler.Sample(ctx)
			if err != nil {
				return err
			}
			s.At = r.Collector().Measured()
			r.setBase(s)
			r.Collector().Sample(s)
		}
	}
	return r.end(ctx)
}

// runPhase runs one call per session; released receives the local time the
// sessions start at, before they do.
func (r *Run) runPhase(ctx context.Context, control *pgx.Conn, conns []*pgx.Conn, p *phase, released func(time.Time), h ServerHooks, last bool) error {
	n := len(conns)
	if _, err := control.Exec(ctx, "INSERT INTO pgio_runs (run, phase) VALUES ($1, $2)", r.id, p.n); err != nil {
		return fmt.Errorf("starting a server-mode phase: %w", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(cctx)
	calls := make(chan struct{})
	for s, c := range conns {
		g.Go(func() error {
			_, err := c.Exec(gctx, "CALL pgio_session_"+r.TableOf(s)+"($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
				r.id, p.n, s, r.cfg.UpdatePct, r.cfg.WorkUnit, r.cfg.UpdateWorkUnit, r.cfg.Scale,
				p.secs.Seconds(), p.limit, int(r.interval().Milliseconds()))
			if err != nil {
				return fmt.Errorf("session %d on %s: %w", s, r.TableOf(s), err)
			}
			return nil
		})
	}
	go func() { _ = g.Wait(); close(calls) }()

	// The barrier: once every session is waiting, give them a start time.
	for {
		var waiting int
		if err := control.QueryRow(ctx, "SELECT count(*) FROM pgio_progress WHERE run = $1 AND phase = $2 AND seq = 0", r.id, p.n).Scan(&waiting); err != nil {
			cancel()
			<-calls
			return fmt.Errorf("waiting for the sessions to start: %w", err)
		}
		if waiting == n {
			break
		}
		select {
		case <-calls:
			if err := g.Wait(); err != nil {
				return err
			}
			return errors.New("a session ended before the start")
		case <-time.After(5 * time.Millisecond):
		}
	}
	t1 := time.Now()
	var release time.Time
	if err := control.QueryRow(ctx, "UPDATE pgio_runs SET released_at = clock_timestamp() + $3::INTERVAL WHERE run = $1 AND phase = $2 RETURNING released_at",
		r.id, p.n, fmt.Sprintf("%d microseconds", releaseMargin.Microseconds())).Scan(&release); err != nil {
		cancel()
		<-calls
		return fmt.Errorf("releasing the sessions: %w", err)
	}
	t2 := time.Now()
	at := t1.Add(t2.Sub(t1)/2 + releaseMargin)
	released(at)

	fetch := func() error { return r.fetchProgress(ctx, control, p, release, h, last) }
	tick := time.NewTicker(min(r.interval()/4, 250*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-calls:
			if err := g.Wait(); err != nil {
				return err
			}
			return fetch()
		case <-tick.C:
			if err := fetch(); err != nil {
				cancel()
				<-calls
				return err
			}
		}
	}
}

// progressRow is one flush of a session.
type progressRow struct {
	session, seq int
	started      *time.Time
	through      time.Time
	done         bool
	offs, durs   []int64
	rows         []int64
}

// fetchProgress takes the sessions' flushes out of pgio_progress and hands
// their statements on.
func (r *Run) fetchProgress(ctx context.Context, conn *pgx.Conn, p *phase, release time.Time, h ServerHooks, last bool) error {
	rows, err := conn.Query(ctx, `DELETE FROM pgio_progress WHERE run = $1 AND phase = $2 AND seq > 0
		RETURNING session, seq, started_at, through, done, offs, durs, nrows`, r.id, p.n)
	if err != nil {
		return fmt.Errorf("reading the sessions' progress: %w", err)
	}
	var batch []progressRow
	var pr progressRow
	_, err = pgx.ForEachRow(rows, []any{&pr.session, &pr.seq, &pr.started, &pr.through, &pr.done, &pr.offs, &pr.durs, &pr.rows}, func() error {
		batch = append(batch, pr)
		pr = progressRow{}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the sessions' progress: %w", err)
	}
	sort.Slice(batch, func(i, j int) bool {
		if batch[i].session != batch[j].session {
			return batch[i].session < batch[j].session
		}
		return batch[i].seq < batch[j].seq
	})
	c := r.Collector()
	timeline := func(t time.Time) time.Time { return p.origin.Add(t.Sub(release)) }
	for _, b := range batch {
		if len(b.offs) != len(b.durs) || len(b.offs) != len(b.rows) {
			return fmt.Errorf("session %d's progress %d is malformed: %d starts, %d durations, %d row counts", b.session, b.seq, len(b.offs), len(b.durs), len(b.rows))
		}
		if b.started != nil && p.n == 1 {
			c.Started(b.session, timeline(*b.started))
		}
		for i, off := range b.offs {
			k := Kind(b.durs[i] & 1)
			at := p.origin.Add(time.Duration(off) * time.Microsecond)
			d := time.Duration(b.durs[i]>>1) * time.Microsecond
			c.Record(b.session, k, at, d, b.rows[i])
			if h.Statement != nil {
				h.Statement(b.session, k, at, d)
			}
		}
		if p.n == 1 {
			c.Through(b.session, timeline(b.through))
			if b.done && last {
				c.Done(b.session)
			}
		}
	}
	return nil
}
