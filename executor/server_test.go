package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// loopSession runs max operations back to back and keeps the errors.
type loopSession struct {
	id, n, max int
	mu         sync.Mutex
	errs       []error
	stopOnErr  bool
}

func (s *loopSession) ID() int { return s.id }
func (s *loopSession) Next(time.Time) Step {
	if s.n >= s.max {
		return Step{Kind: Stop}
	}
	s.n++
	return Step{Kind: Start, Op: 0, Attempt: 1}
}
func (s *loopSession) Done(now time.Time, err error, _ int) Step {
	if err != nil {
		s.mu.Lock()
		s.errs = append(s.errs, err)
		s.mu.Unlock()
		if s.stopOnErr {
			return Step{Kind: Stop}
		}
	}
	return s.Next(now)
}
func (s *loopSession) Connected(now time.Time, err error) Step        { return s.Next(now) }
func (s *loopSession) StatementAt(int, int, time.Duration, time.Time) {}

// stepsProgram sends its statements one exchange each, simple protocol.
type stepsProgram struct {
	stmts []*Stmt
	i     int
}

func (p *stepsProgram) Start(c *Conn, _, _ int) Action {
	p.i = 0
	return p.next(c)
}

func (p *stepsProgram) next(c *Conn) Action {
	if p.i == len(p.stmts) {
		return Action{Kind: Finish}
	}
	s := p.stmts[p.i]
	p.i++
	c.Simple([]byte(s.SQL), s, CaptureNone)
	return Action{Kind: Await}
}

func (p *stepsProgram) Resume(c *Conn) Action {
	if r := c.Result(0); r.Err != nil {
		return Action{Kind: Finish, Err: r.Err, Stmt: p.i - 1}
	}
	return p.next(c)
}
func (p *stepsProgram) Connected(*Conn) {}

// A connection lost while a statement runs is retryable only inside an
// open transaction block with no COMMIT sent; while COMMIT is in flight, or
// for a statement run outside a block, the outcome is unknown (ambiguous).
func TestLostConnectionClass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stmts []*Stmt
		want  metrics.Class
	}{
		{"inside a block", []*Stmt{{SQL: "BEGIN", Begins: true}, {SQL: "SELECT pg_sleep(5)"}, {SQL: "COMMIT", Commits: true}}, metrics.ConnectionLost},
		{"commit in flight", []*Stmt{{SQL: "BEGIN", Begins: true}, {SQL: "SELECT 1"}, {SQL: "SELECT pg_sleep(5); COMMIT", Commits: true}}, metrics.AmbiguousCommit},
		{"outside a block", []*Stmt{{SQL: "SELECT pg_sleep(5)"}}, metrics.AmbiguousCommit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := srv.NewDatabase(t) + "&application_name=victim"
			tg, err := pg.NewTarget([]string{url})
			if err != nil {
				t.Fatal(err)
			}
			s := &loopSession{max: 1, stopOnErr: true}
			admin := pgtest.Conn(t, srv.URL())
			killed := make(chan struct{})
			defer func() { <-killed }()
			go func() {
				defer close(killed)
				// Kill the backend once it sleeps.
				for i := 0; i < 500; i++ {
					time.Sleep(10 * time.Millisecond)
					var n int
					_ = admin.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
						WHERE application_name = 'victim' AND query LIKE '%pg_sleep%' AND state = 'active'`).Scan(&n)
					if n > 0 {
						return
					}
				}
			}()
			err = Run(t.Context(), tg, Clients{Groups: [][]Session{{s}}, Ready: func(time.Time) {}}, func(int) Program { return &stepsProgram{stmts: tc.stmts} })
			if err != nil {
				t.Fatal(err)
			}
			if len(s.errs) != 1 {
				t.Fatalf("errors %v", s.errs)
			}
			if class, _ := pg.Classify(s.errs[0]); class != tc.want {
				t.Fatalf("classified %s (%v), want %s", class, s.errs[0], tc.want)
			}
		})
	}
}

// selectProgram is pgbench's select-only, prepared: the per-transaction
// path of the benchmark below.
type selectProgram struct {
	stmt *Stmt
	aid  int64
}

func (p *selectProgram) Start(c *Conn, _, _ int) Action {
	p.aid = p.aid%100000 + 1
	c.Bind(p.stmt, CaptureNone).Int(p.aid).Send()
	return Action{Kind: Await}
}
func (p *selectProgram) Resume(c *Conn) Action {
	return Action{Kind: Finish, Err: c.Result(0).Err, Stmt: 0}
}
func (p *selectProgram) Connected(*Conn) {}

// The executor's per-transaction path allocates nothing: b.N prepared
// selects on 32 clients of one loop, against the real server; its CPU time
// and context switches per transaction are reported beside.
func BenchmarkSelectPrepared(b *testing.B) {
	url := srv.NewDatabase(b)
	conn := pgtest.Conn(b, url)
	if _, err := conn.Exec(context.Background(), `CREATE TABLE acc (aid int PRIMARY KEY, abalance int);
		INSERT INTO acc SELECT g, 0 FROM generate_series(1, 100000) g`); err != nil {
		b.Fatal(err)
	}
	tg, err := pg.NewTarget([]string{url})
	if err != nil {
		b.Fatal(err)
	}
	const clients = 32
	stmt := &Stmt{SQL: "SELECT abalance FROM acc WHERE aid = $1", Name: "sel"}
	group := make([]Session, clients)
	sessions := make([]*loopSession, clients)
	for i := range group {
		sessions[i] = &loopSession{id: i, max: b.N / clients}
		group[i] = sessions[i]
	}
	b.ReportAllocs()
	var from pgtest.Usage
	err = Run(context.Background(), tg, Clients{Groups: [][]Session{group}, Ready: func(time.Time) { from = pgtest.ReadUsage(b); b.ResetTimer() }},
		func(int) Program { return &selectProgram{stmt: stmt} })
	b.StopTimer()
	pgtest.ReportUsage(b, from, clients*(b.N/clients))
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range sessions {
		if len(s.errs) > 0 {
			b.Fatal(s.errs[0])
		}
	}
}

// syncsProgram queues three extended statements in one exchange, each with
// its own Sync (outside a pipeline), and keeps their tags.
type syncsProgram struct{ tags []string }

func (p *syncsProgram) Start(c *Conn, _, _ int) Action {
	for _, s := range []*Stmt{{SQL: "SELECT 1"}, {SQL: "SELECT 2"}, {SQL: "SELECT 3"}} {
		c.Bind(s, CaptureNone).Send()
	}
	return Action{Kind: Await}
}
func (p *syncsProgram) Resume(c *Conn) Action {
	for i := 0; i < c.Results(); i++ {
		if r := c.Result(i); r.Err != nil {
			return Action{Kind: Finish, Err: r.Err, Stmt: i}
		}
		p.tags = append(p.tags, string(c.Result(i).Tag()))
	}
	return Action{Kind: Finish, Stmt: -1}
}
func (p *syncsProgram) Connected(*Conn) {}

// Extended statements with a Sync each, awaited as one exchange: every one
// gets its result (a ReadyForQuery ends the segment it closes, not the one
// of the statement after it).
func TestSeveralSyncsOneExchange(t *testing.T) {
	tg, err := pg.NewTarget([]string{srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	s := &loopSession{max: 2}
	p := &syncsProgram{}
	if err := Run(t.Context(), tg, Clients{Groups: [][]Session{{s}}, Ready: func(time.Time) {}}, func(int) Program { return p }); err != nil {
		t.Fatal(err)
	}
	if len(s.errs) > 0 || len(p.tags) != 6 {
		t.Fatalf("errors %v, tags %q: want 6 SELECT 1", s.errs, p.tags)
	}
}

// A backend terminated while its client idles (pg_terminate_backend, as an
// administrator or a failover would): the next operation's session hears
// the server's FATAL and reconnects. The epoll loop reads it while idle,
// before anything of the operation is sent: a lost connection, retried.
// The blocking loop learns of it once it has sent the operation: its
// outcome is unknown (ambiguous). As TestFatalWhileIdle, against the real
// server.
func TestBackendTerminatedWhileIdle(t *testing.T) {
	for name, raw := range loops() {
		t.Run(name, func(t *testing.T) {
			url := srv.NewDatabase(t) + "&application_name=idler"
			tg, err := pg.NewTarget([]string{url})
			if err != nil {
				t.Fatal(err)
			}
			admin := pgtest.Conn(t, srv.URL())
			sess := &idleSession{recSession: recSession{ops: 2}, pause: time.Second}
			p := queryProgram("SELECT 1")
			killed := make(chan error, 1)
			go func() {
				time.Sleep(300 * time.Millisecond) // op 0 is done, the client idles
				var n int
				err := admin.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
					WHERE application_name = 'idler' AND state = 'idle'`).Scan(&n)
				if err == nil && n != 1 {
					err = fmt.Errorf("terminated %d idle backends, want 1", n)
				}
				killed <- err
			}()
			if err := run(t.Context(), tg, Clients{Groups: [][]Session{{sess}}, Ready: func(time.Time) {}}, func(int) Program { return p }, raw); err != nil {
				t.Fatal(err)
			}
			if err := <-killed; err != nil {
				t.Fatal(err)
			}
			d := sess.done
			if len(d) != 3 || d[0].err != nil || d[1].err == nil || d[2].err != nil || d[2].attempt != 2 {
				t.Fatalf("told %+v: want op 0's success, op 1's loss, op 1's retry's success", d)
			}
			want := metrics.ConnectionLost
			if !raw {
				want = metrics.AmbiguousCommit
			}
			var pe *pgconn.PgError
			if class, _ := pg.Classify(d[1].err); class != want || !errors.As(d[1].err, &pe) || pe.Code != "57P01" {
				t.Fatalf("terminated while idle: %v, classified %s; want the server's FATAL, %s", d[1].err, class, want)
			}
		})
	}
}

// oneProgram runs its statement once: simple protocol, or Bind (unnamed or
// named, as the statement says).
type oneProgram struct {
	stmt   *Stmt
	simple bool
}

func (p *oneProgram) Start(c *Conn, _, _ int) Action {
	if p.simple {
		c.Simple([]byte(p.stmt.SQL), p.stmt, CaptureNone)
	} else {
		c.Bind(p.stmt, CaptureNone).Send()
	}
	return Action{Kind: Await}
}

func (p *oneProgram) Resume(c *Conn) Action { return Action{Kind: Finish, Err: c.Result(0).Err} }
func (p *oneProgram) Connected(*Conn)       {}

// A backend terminated while it parses a statement (waiting for a lock on
// the table it names) sends a FATAL that points into the statement. libpq
// shows the line with a caret under it when it has the text: a simple
// Query's, or the statement Parsed in the same exchange. The error the
// executor reports carries that text, so that whoever words it as libpq
// prints the same (pgbench's abort line did not: "... at character 15").
func TestLostConnectionErrorPosition(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stmt   *Stmt
		simple bool
	}{
		{"simple", &Stmt{SQL: "SELECT * FROM t"}, true},
		{"unnamed", &Stmt{SQL: "SELECT * FROM t"}, false},
		{"named, parsed in the exchange", &Stmt{SQL: "SELECT * FROM t", Name: "s1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := srv.NewDatabase(t)
			admin := pgtest.Conn(t, db)
			ctx := t.Context()
			if _, err := admin.Exec(ctx, "CREATE TABLE t (k int)"); err != nil {
				t.Fatal(err)
			}
			locker := pgtest.Conn(t, db)
			if _, err := locker.Exec(ctx, "BEGIN; LOCK TABLE t IN ACCESS EXCLUSIVE MODE"); err != nil {
				t.Fatal(err)
			}
			tg, err := pg.NewTarget([]string{db + "&application_name=victim"})
			if err != nil {
				t.Fatal(err)
			}
			killed := make(chan error, 1)
			go func() {
				for i := 0; i < 500; i++ {
					time.Sleep(10 * time.Millisecond)
					var n int
					if err := admin.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
						WHERE application_name = 'victim' AND wait_event_type = 'Lock'`).Scan(&n); err != nil || n > 0 {
						killed <- err
						return
					}
				}
				killed <- errors.New("the statement never waited for the lock")
			}()
			s := &loopSession{max: 1, stopOnErr: true}
			err = Run(ctx, tg, Clients{Groups: [][]Session{{s}}, Ready: func(time.Time) {}}, func(int) Program { return &oneProgram{stmt: tc.stmt, simple: tc.simple} })
			if kerr := <-killed; kerr != nil {
				t.Fatal(kerr)
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.errs) != 1 {
				t.Fatalf("errors %v", s.errs)
			}
			got := pg.LibpqMessage(s.errs[0], "", "")
			want := "FATAL:  terminating connection due to administrator command\nLINE 1: SELECT * FROM t\n                      ^\n"
			if got != want {
				t.Errorf("worded as libpq:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// A run ended (its context done) while a statement waits in the server:
// the loop cancels it and reads the answer, 57014, which the session is
// told (a known outcome: nothing committed), in well under
// SettleTimeout; before, the loop closed the connection unread and told
// the session nothing.
func TestStoppedReadsCancelledAnswer(t *testing.T) {
	for name, raw := range loops() {
		t.Run(name, func(t *testing.T) {
			url := srv.NewDatabase(t) + "&application_name=sleeper"
			tg, err := pg.NewTarget([]string{url})
			if err != nil {
				t.Fatal(err)
			}
			admin := pgtest.Conn(t, url)
			sess := &loopSession{max: 1, stopOnErr: true}
			p := &stepsProgram{stmts: []*Stmt{{SQL: "BEGIN", Begins: true}, {SQL: "SELECT pg_sleep(60)"}, {SQL: "COMMIT", Commits: true}}}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			stopped := make(chan time.Time, 1)
			go func() {
				for ctx.Err() == nil {
					var n int
					if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
						WHERE application_name = 'sleeper' AND state = 'active' AND query = 'SELECT pg_sleep(60)'`).Scan(&n); err == nil && n == 1 {
						stopped <- time.Now()
						cancel()
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
			if err := run(ctx, tg, Clients{Groups: [][]Session{{sess}}, Ready: func(time.Time) {}}, func(int) Program { return p }, raw); err != nil {
				t.Fatal(err)
			}
			var took time.Duration
			select {
			case at := <-stopped:
				took = time.Since(at)
			default:
				t.Fatal("the run ended before the statement ran")
			}
			var pe *pgconn.PgError
			if len(sess.errs) != 1 || !errors.As(sess.errs[0], &pe) || pe.Code != "57014" {
				t.Fatalf("told %v: want the cancelled statement's 57014", sess.errs)
			}
			if class, _ := pg.Classify(sess.errs[0]); class == metrics.AmbiguousCommit {
				t.Fatalf("the cancelled statement is classified %s", class)
			}
			if took >= SettleTimeout {
				t.Errorf("the answer took %s after the stop, the whole wait", took)
			}
		})
	}
}
