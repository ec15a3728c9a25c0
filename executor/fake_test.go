package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
)

// This file tests the executor at the level of the messages: a scripted
// server answers each exchange with the messages a test chooses, cut where
// it chooses, and the test checks what the program read and what the
// session was told. Every test runs on both loops.

// fakeServer is a scripted PostgreSQL server on a local TCP port: it does
// each connection's startup (no password), then hands it to script, with
// the connection's number (from 0).
type fakeServer struct {
	ln net.Listener
	wg sync.WaitGroup
}

func newFakeServer(t *testing.T, script func(c *serverConn)) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for n := 0; ; n++ {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer nc.Close()
				c := &serverConn{t: t, n: n, nc: nc, be: pgproto3.NewBackend(nc, nc)}
				if c.startup() {
					script(c)
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

// target is a pg.Target for the server.
func (s *fakeServer) target(t *testing.T) *pg.Target {
	t.Helper()
	tg, err := pg.NewTarget([]string{fmt.Sprintf("postgres://u@%s/db?sslmode=disable", s.ln.Addr())})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// serverConn is one connection of a fakeServer.
type serverConn struct {
	t  *testing.T
	n  int
	nc net.Conn
	be *pgproto3.Backend
}

func (c *serverConn) startup() bool {
	if _, err := c.be.ReceiveStartupMessage(); err != nil {
		c.t.Errorf("server: startup: %v", err)
		return false
	}
	c.send(&pgproto3.AuthenticationOk{}, &pgproto3.ParameterStatus{Name: "client_encoding", Value: "UTF8"},
		&pgproto3.ParameterStatus{Name: "server_version", Value: "15.0"},
		&pgproto3.BackendKeyData{ProcessID: uint32(1000 + c.n), SecretKey: []byte{1, 2, 3, 4}}, &pgproto3.ReadyForQuery{TxStatus: 'I'})
	return true
}

// segment reads the frontend's messages up to the end of a segment (a
// Sync or a Query) and returns them, described ("P name: sql", "B name",
// "D", "E", "S", "Q sql"); nil when the client went away.
func (c *serverConn) segment() []string {
	var out []string
	for {
		m, err := c.be.Receive()
		if err != nil {
			return nil
		}
		switch m := m.(type) {
		case *pgproto3.Parse:
			out = append(out, "P "+m.Name+": "+m.Query)
		case *pgproto3.Bind:
			out = append(out, "B "+m.PreparedStatement)
		case *pgproto3.Describe:
			out = append(out, "D")
		case *pgproto3.Execute:
			out = append(out, "E")
		case *pgproto3.Sync:
			return append(out, "S")
		case *pgproto3.Query:
			return append(out, "Q "+m.String)
		case *pgproto3.Terminate:
			return nil
		default:
			c.t.Errorf("server: unexpected %T", m)
			return nil
		}
	}
}

// expect reads a segment and checks it is want.
func (c *serverConn) expect(want ...string) bool {
	got := c.segment()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		c.t.Errorf("server, connection %d: got %q, want %q", c.n, got, want)
		return false
	}
	return true
}

// send writes msgs in one write.
func (c *serverConn) send(msgs ...pgproto3.BackendMessage) { c.sendCut(nil, msgs...) }

// sendCut writes msgs in pieces a millisecond apart, so that the client
// reads them cut where the pieces end: the i-th piece has sizes[i] bytes,
// the last size repeating (nil: one write).
func (c *serverConn) sendCut(sizes []int, msgs ...pgproto3.BackendMessage) {
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = m.Encode(b); err != nil {
			c.t.Errorf("server: encoding %T: %v", m, err)
			return
		}
	}
	for i := 0; len(b) > 0; i++ {
		n := len(b)
		if len(sizes) > 0 {
			n = min(sizes[min(i, len(sizes)-1)], n)
		}
		if _, err := c.nc.Write(b[:n]); err != nil {
			return
		}
		b = b[n:]
		if len(b) > 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// waitGone waits until the client closed the connection (a Terminate, or
// EOF).
func (c *serverConn) waitGone() {
	for {
		if _, err := c.be.Receive(); err != nil {
			return
		}
	}
}

// The backend messages the tests answer with.
var (
	parseOK   = &pgproto3.ParseComplete{}
	bindOK    = &pgproto3.BindComplete{}
	noData    = &pgproto3.NoData{}
	idle      = &pgproto3.ReadyForQuery{TxStatus: 'I'}
	inBlock   = &pgproto3.ReadyForQuery{TxStatus: 'T'}
	failedTx  = &pgproto3.ReadyForQuery{TxStatus: 'E'}
	adminKill = &pgproto3.ErrorResponse{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}
)

func tag(s string) *pgproto3.CommandComplete { return &pgproto3.CommandComplete{CommandTag: []byte(s)} }

func serverError(code, msg string) *pgproto3.ErrorResponse {
	return &pgproto3.ErrorResponse{Severity: "ERROR", Code: code, Message: msg}
}

// doneCall is what a session was told of an attempt.
type doneCall struct {
	op, attempt int
	err         error
	stmt        int
}

// recSession runs ops operations one after another and keeps what it is
// told. After a lost connection it reconnects and retries the operation;
// after another error it goes on to the next one.
type recSession struct {
	ops         int
	op, attempt int
	done        []doneCall
	connected   []error
}

func (s *recSession) ID() int { return 0 }

func (s *recSession) Next(time.Time) Step {
	if s.op == s.ops {
		return Step{Kind: Stop}
	}
	s.attempt = 1
	return Step{Kind: Start, Op: s.op, Attempt: 1}
}

func (s *recSession) Done(now time.Time, err error, stmt int) Step {
	s.done = append(s.done, doneCall{op: s.op, attempt: s.attempt, err: err, stmt: stmt})
	if class, _ := pg.Classify(err); err != nil && (class == metrics.ConnectionLost || class == metrics.AmbiguousCommit) {
		return Step{Kind: Reconnect, At: now}
	}
	s.op++
	return s.Next(now)
}

func (s *recSession) Connected(now time.Time, err error) Step {
	s.connected = append(s.connected, err)
	if err != nil {
		return Step{Kind: Stop}
	}
	s.attempt++
	return Step{Kind: Start, Op: s.op, Attempt: s.attempt}
}

func (s *recSession) StatementAt(int, int, time.Duration, time.Time) {}

// funcProgram is a program of two functions: start queues operation op's
// statements, resume reads their results; its notices are kept.
type funcProgram struct {
	start   func(c *Conn, op int) Action
	resume  func(c *Conn, op int) Action
	op      int
	notices []*pgconn.PgError
}

func (p *funcProgram) Start(c *Conn, op, _ int) Action { p.op = op; return p.start(c, op) }
func (p *funcProgram) Resume(c *Conn) Action           { return p.resume(c, p.op) }
func (p *funcProgram) Connected(c *Conn) {
	c.Notice = func(pe *pgconn.PgError) { p.notices = append(p.notices, pe) }
}

// queryProgram sends sql as a simple query each operation, and finishes
// with its error.
func queryProgram(sql string) *funcProgram {
	return &funcProgram{
		start: func(c *Conn, _ int) Action {
			c.Simple([]byte(sql), nil, CaptureNone)
			return Action{Kind: Await}
		},
		resume: func(c *Conn, _ int) Action { return finishFirstError(c) },
	}
}

// finishFirstError finishes with the first statement's error, if any.
func finishFirstError(c *Conn) Action {
	for i := 0; i < c.Results(); i++ {
		if err := c.Result(i).Err; err != nil {
			return Action{Kind: Finish, Err: err, Stmt: i}
		}
	}
	return Action{Kind: Finish, Stmt: -1}
}

// loops are the ways a group's clients are driven: the epoll loop where
// the system has one, and the blocking loop.
func loops() map[string]bool {
	if rawLoops() {
		return map[string]bool{"epoll": true, "blocking": false}
	}
	return map[string]bool{"blocking": false}
}

// runOne runs one session and its program against s on the loop raw
// says, bounded by ten seconds.
func runOne(t *testing.T, s *fakeServer, raw bool, sess Session, p Program) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := run(ctx, s.target(t), Clients{Groups: [][]Session{{sess}}, Ready: func(time.Time) {}}, func(int) Program { return p }, raw); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the run did not end within 10 s")
	}
}

// An error in the middle of a pipeline fails its statement and the rest of
// the segment, as the server skips them; the statements before it keep
// their results. A named statement whose Parse the server skipped is not
// prepared: the next exchange parses it again, the others not.
func TestPipelineErrorMidway(t *testing.T) {
	a := &Stmt{SQL: "UPDATE a", Name: "a"}
	b := &Stmt{SQL: "UPDATE b", Name: "b"}
	cs := &Stmt{SQL: "UPDATE c", Name: "c"}
	for name, raw := range loops() {
		t.Run(name, func(t *testing.T) {
			srv := newFakeServer(t, func(c *serverConn) {
				if !c.expect("P a: UPDATE a", "B a", "D", "E", "P b: UPDATE b", "B b", "D", "E", "P c: UPDATE c", "B c", "D", "E", "S") {
					return
				}
				c.send(parseOK, bindOK, noData, tag("UPDATE 1"), parseOK, bindOK, noData,
					serverError("40001", "could not serialize access due to concurrent update"), idle)
				// The second time: only c is parsed again.
				if !c.expect("B a", "D", "E", "B b", "D", "E", "P c: UPDATE c", "B c", "D", "E", "S") {
					return
				}
				c.send(bindOK, noData, tag("UPDATE 1"), bindOK, noData, tag("UPDATE 2"), parseOK, bindOK, noData, tag("UPDATE 3"), idle)
				c.waitGone()
			})
			var results [2][3]string
			p := &funcProgram{
				start: func(c *Conn, _ int) Action {
					c.Pipeline(true)
					for _, s := range []*Stmt{a, b, cs} {
						c.Bind(s, CaptureNone).Send()
					}
					c.Pipeline(false)
					return Action{Kind: Await}
				},
				resume: func(c *Conn, op int) Action {
					for i := 0; i < c.Results(); i++ {
						r := c.Result(i)
						results[op][i] = fmt.Sprintf("%s %v %v", r.Tag(), r.Err, r.ParseFailed)
					}
					return finishFirstError(c)
				},
			}
			sess := &recSession{ops: 2}
			runOne(t, srv, raw, sess, p)
			serialization := "ERROR: could not serialize access due to concurrent update (SQLSTATE 40001)"
			want := [2][3]string{{"UPDATE 1 <nil> false", " " + serialization + " false", " " + serialization + " false"},
				{"UPDATE 1 <nil> false", "UPDATE 2 <nil> false", "UPDATE 3 <nil> false"}}
			if results != want {
				t.Fatalf("results\n%q\nwant\n%q", results, want)
			}
			if len(sess.done) != 2 || sess.done[0].stmt != 1 || sess.done[1].err != nil {
				t.Fatalf("the session was told %+v", sess.done)
			}
			if class, _ := pg.Classify(sess.done[0].err); class != metrics.Serialization {
				t.Fatalf("the first attempt failed with %v (%s)", sess.done[0].err, class)
			}
		})
	}
}

// A statement that fails inside a transaction block leaves it aborted: the
// executor rolls it back before the session is told, so that the next
// attempt starts clean.
func TestErrorInBlockRolledBack(t *testing.T) {
	for name, raw := range loops() {
		t.Run(name, func(t *testing.T) {
			srv := newFakeServer(t, func(c *serverConn) {
				if !c.expect("Q BEGIN; UPDATE t SET v = 1") {
					return
				}
				c.send(tag("BEGIN"), serverError("23505", "duplicate key value violates unique constraint"), failedTx)
				if !c.expect("Q ROLLBACK") {
					return
				}
				c.send(tag("ROLLBACK"), idle)
				if !c.expect("Q BEGIN; UPDATE t SET v = 1") {
					return
				}
				c.send(tag("BEGIN"), tag("UPDATE 1"), inBlock)
				c.waitGone()
			})
			p := queryProgram("BEGIN; UPDATE t SET v = 1")
			sess := &recSession{ops: 2}
			runOne(t, srv, raw, sess, p)
			if len(sess.done) != 2 || sess.done[1].err != nil {
				t.Fatalf("the session was told %+v", sess.done)
			}
			if class, _ := pg.Classify(sess.done[0].err); class != metrics.Constraint {
				t.Fatalf("the first attempt failed with %v (%s)", sess.done[0].err, class)
			}
		})
	}
}

// Notices reach the program's Notice, during an exchange and while idle;
// the exchange goes on.
func TestNotices(t *testing.T) {
	for name, raw := range loops() {
		t.Run(name, func(t *testing.T) {
			srv := newFakeServer(t, func(c *serverConn) {
				if !c.expect("Q SELECT 1") {
					return
				}
				c.send(&pgproto3.NoticeResponse{Severity: "NOTICE", Code: "00000", Message: "during"}, tag("SELECT 1"), idle)
				time.Sleep(20 * time.Millisecond)
				c.send(&pgproto3.NoticeResponse{Severity: "WARNING", Code: "01000", Message: "while idle"})
				if !c.expect("Q SELECT 1") {
					return
				}
				c.send(tag("SELECT 1"), idle)
				c.waitGone()
			})
			var wait time.Time
			p := &funcProgram{
				start: func(c *Conn, _ int) Action {
					c.Simple([]byte("SELECT 1"), nil, CaptureNone)
					return Action{Kind: Await}
				},
				resume: func(c *Conn, op int) Action {
					if op == 0 && wait.IsZero() {
						// Idle a while: the second notice arrives meanwhile.
						wait = c.Now.Add(50 * time.Millisecond)
						return Action{Kind: Sleep, At: wait}
					}
					return finishFirstError(c)
				},
			}
			sess := &recSession{ops: 2}
			runOne(t, srv, raw, sess, p)
			if len(sess.done) != 2 || sess.done[0].err != nil || sess.done[1].err != nil {
				t.Fatalf("the session was told %+v", sess.done)
			}
			var got []string
			for _, n := range p.notices {
				got = append(got, n.Severity+" "+n.Message)
			}
			if fmt.Sprint(got) != "[NOTICE during WARNING while idle]" {
				t.Fatalf("notices %q", got)
			}
		})
	}
}

// Messages cut anywhere, a row larger than the read buffer among them,
// are read whole: the program gets every value of every row.
func TestMessagesCutAnywhere(t *testing.T) {
	big := make([]byte, 40<<10) // beyond the read buffer (readBuf)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	rows := []*pgproto3.DataRow{{Values: [][]byte{[]byte("1"), nil}}, {Values: [][]byte{big, []byte("")}}, {Values: [][]byte{[]byte("3"), []byte("x")}}}
	for name, raw := range loops() {
		for _, cut := range []struct {
			name  string
			sizes []int
		}{
			// Headers and bodies cut byte by byte at first, then pieces
			// that end anywhere in the row and the messages after it.
			{"cut fine", []int{1, 1, 1, 1, 1, 2, 3, 5, 7, 11, 13, 1021}},
			{"4 KiB a write", []int{4096}},
			{"one write", nil},
		} {
			t.Run(name+", "+cut.name, func(t *testing.T) {
				srv := newFakeServer(t, func(c *serverConn) {
					if !c.expect("Q SELECT") {
						return
					}
					msgs := []pgproto3.BackendMessage{&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("k")}, {Name: []byte("v")}}}}
					for _, r := range rows {
						msgs = append(msgs, r)
					}
					msgs = append(msgs, tag("SELECT 3"), idle)
					c.sendCut(cut.sizes, msgs...)
					c.waitGone()
				})
				var got [][]string
				var names []string
				p := &funcProgram{
					start: func(c *Conn, _ int) Action {
						c.Simple([]byte("SELECT"), nil, CaptureAll)
						return Action{Kind: Await}
					},
					resume: func(c *Conn, _ int) Action {
						r := c.Result(0)
						for i := 0; i < r.Columns; i++ {
							names = append(names, string(r.Name(i)))
						}
						for row := 0; row < r.Kept(); row++ {
							var vals []string
							for col := 0; col < r.Columns; col++ {
								v, ok := r.Value(row, col)
								if !ok {
									vals = append(vals, "NULL")
								} else {
									vals = append(vals, string(v))
								}
							}
							got = append(got, vals)
						}
						return finishFirstError(c)
					},
				}
				sess := &recSession{ops: 1}
				runOne(t, srv, raw, sess, p)
				want := [][]string{{"1", "NULL"}, {string(big), ""}, {"3", "x"}}
				if fmt.Sprint(names) != "[k v]" || fmt.Sprint(got) != fmt.Sprint(want) || len(sess.done) != 1 || sess.done[0].err != nil {
					t.Fatalf("columns %q, %d rows (%v), told %+v", names, len(got), fmt.Sprint(got) == fmt.Sprint(want), sess.done)
				}
			})
		}
	}
}

// A connection lost while COMMIT is in flight leaves the transaction's
// outcome unknown: an ambiguous commit, never retried as if it had failed.
// Lost while a statement inside the block runs, it is a lost connection:
// nothing committed, the operation may be retried. Either way the
// session hears of it once, then reconnects.
func TestConnectionClosedDuringCommit(t *testing.T) {
	begin := &Stmt{SQL: "BEGIN", Begins: true}
	update := &Stmt{SQL: "UPDATE t SET v = v + 1"}
	commit := &Stmt{SQL: "COMMIT", Commits: true}
	for name, raw := range loops() {
		for _, tc := range []struct {
			at   string // the statement the server closes the connection at
			want metrics.Class
		}{
			{"COMMIT", metrics.AmbiguousCommit},
			{update.SQL, metrics.ConnectionLost},
		} {
			t.Run(name+", at "+tc.at, func(t *testing.T) {
				srv := newFakeServer(t, func(c *serverConn) {
					answers := map[string][]pgproto3.BackendMessage{"BEGIN": {tag("BEGIN"), inBlock}, update.SQL: {tag("UPDATE 1"), inBlock}, "COMMIT": {tag("COMMIT"), idle}}
					for {
						seg := c.segment()
						if seg == nil {
							return
						}
						sql := seg[0][2:]
						if c.n == 0 && sql == tc.at {
							return // closes the connection unanswered
						}
						c.send(answers[sql]...)
					}
				})
				var step int
				p := &funcProgram{
					start: func(c *Conn, _ int) Action {
						step = 0
						c.Simple([]byte(begin.SQL), begin, CaptureNone)
						return Action{Kind: Await}
					},
					resume: func(c *Conn, _ int) Action {
						if err := c.Result(0).Err; err != nil {
							return Action{Kind: Finish, Err: err, Stmt: step}
						}
						step++
						switch step {
						case 1:
							c.Simple([]byte(update.SQL), update, CaptureNone)
						case 2:
							c.Simple([]byte(commit.SQL), commit, CaptureNone)
						default:
							return Action{Kind: Finish, Stmt: -1}
						}
						return Action{Kind: Await}
					},
				}
				sess := &recSession{ops: 1}
				runOne(t, srv, raw, sess, p)
				if len(sess.done) != 2 || sess.done[1].err != nil || sess.done[1].attempt != 2 || len(sess.connected) != 1 || sess.connected[0] != nil {
					t.Fatalf("told %+v, connected %v: want the loss, then the retry's success on a new connection", sess.done, sess.connected)
				}
				if class, _ := pg.Classify(sess.done[0].err); class != tc.want || !errors.Is(sess.done[0].err, io.ErrUnexpectedEOF) {
					t.Fatalf("lost at %s: %v, classified %s; want %s", tc.at, sess.done[0].err, class, tc.want)
				}
			})
		}
	}
}

// The server ends an idle connection with a FATAL (an administrator's
// pg_terminate_backend, idle_session_timeout): the next operation's
// session hears the server's message, and reconnects. Seen while idle,
// before anything of the operation was sent, the loss is a lost connection
// (nothing of it ran): so on both loops when the FATAL came with the last
// reply, and on the epoll loop, which reads while idle, when it came
// later. The blocking loop reads a later one only once it has sent the
// operation: its outcome is unknown (ambiguous).
func TestFatalWhileIdle(t *testing.T) {
	for name, raw := range loops() {
		for _, later := range []bool{false, true} {
			when := map[bool]string{false: "with the last reply", true: "later"}[later]
			t.Run(name+", "+when, func(t *testing.T) {
				srv := newFakeServer(t, func(c *serverConn) {
					if !c.expect("Q INSERT INTO t VALUES (1)") {
						return
					}
					switch {
					case c.n > 0:
						c.send(tag("INSERT 0 1"), idle)
						c.waitGone()
					case later:
						c.send(tag("INSERT 0 1"), idle)
						time.Sleep(20 * time.Millisecond)
						c.send(adminKill)
					default:
						c.send(tag("INSERT 0 1"), idle, adminKill)
					}
				})
				p := queryProgram("INSERT INTO t VALUES (1)")
				// The session idles between its operations, while the
				// server goes away.
				sess := &idleSession{recSession: recSession{ops: 2}, pause: 200 * time.Millisecond}
				runOne(t, srv, raw, sess, p)
				d := sess.done
				if len(d) != 3 || d[0].err != nil || d[1].err == nil || d[2].err != nil || d[2].op != 1 || d[2].attempt != 2 {
					t.Fatalf("told %+v: want op 0's success, op 1's loss, op 1's retry's success", d)
				}
				want := metrics.ConnectionLost
				if later && !raw {
					want = metrics.AmbiguousCommit
				}
				var pe *pgconn.PgError
				if class, _ := pg.Classify(d[1].err); class != want || !errors.As(d[1].err, &pe) || pe.Code != "57P01" {
					t.Fatalf("lost while idle: %v, classified %s; want the server's FATAL, %s", d[1].err, class, want)
				}
			})
		}
	}
}

// idleSession is a recSession that waits pause between its operations.
type idleSession struct {
	recSession
	pause time.Duration
	rest  bool
}

func (s *idleSession) Next(now time.Time) Step {
	if s.op > 0 && s.op < s.ops && !s.rest {
		s.rest = true
		return Step{Kind: Wait, At: now.Add(s.pause)}
	}
	return s.recSession.Next(now)
}

func (s *idleSession) Done(now time.Time, err error, stmt int) Step {
	step := s.recSession.Done(now, err, stmt)
	if step.Kind == Start && step.Attempt == 1 {
		return s.Next(now)
	}
	return step
}

// What the client cannot go on with ends the connection, and the session
// hears why: a message the protocol does not have here, a COPY FROM STDIN
// that would wait for data.
func TestProtocolBreaks(t *testing.T) {
	for name, raw := range loops() {
		for _, tc := range []struct {
			name   string
			answer []pgproto3.BackendMessage
			want   string
		}{
			{"unknown message", []pgproto3.BackendMessage{&pgproto3.AuthenticationOk{}}, "protocol: unexpected message 'R'"},
			{"copy from stdin", []pgproto3.BackendMessage{&pgproto3.CopyInResponse{}}, ErrCopy.Error()},
		} {
			t.Run(name+", "+tc.name, func(t *testing.T) {
				srv := newFakeServer(t, func(c *serverConn) {
					if !c.expect("Q SELECT") {
						return
					}
					c.send(tc.answer...)
					c.waitGone()
				})
				p := queryProgram("SELECT")
				sess := &recSession{ops: 1}
				runOne(t, srv, raw, sess, p)
				d := sess.done
				if len(d) != 1 || d[0].err == nil || !strings.Contains(d[0].err.Error(), tc.want) {
					t.Fatalf("told %+v: want %q", d, tc.want)
				}
			})
		}
	}
}

// retrySession is a recSession that retries an operation on the same
// connection after a serialization failure, as the engine does.
type retrySession struct{ recSession }

func (s *retrySession) Done(now time.Time, err error, stmt int) Step {
	if class, _ := pg.Classify(err); err != nil && class == metrics.Serialization && s.attempt < 100 {
		s.done = append(s.done, doneCall{op: s.op, attempt: s.attempt, err: err, stmt: stmt})
		s.attempt++
		return Step{Kind: Start, Op: s.op, Attempt: s.attempt}
	}
	return s.recSession.Done(now, err, stmt)
}

// An ERROR after every statement of a segment completed, before its
// ReadyForQuery, is the Sync's: the commit of the segment's implicit
// transaction failed (here a serialization failure found at commit). The
// statement fails with it, a serialization failure, and is retried on the
// same connection, which the server left ready. It was taken for an error
// outside the statements awaited (a lost connection: the client
// reconnected, and a COMMIT in flight was counted of unknown outcome);
// before that, told of the failure, the client retried on a connection
// whose account of the exchange was lost, until the stack overflowed.
func TestErrorOutsideStatements(t *testing.T) {
	for name, raw := range loops() {
		t.Run(name, func(t *testing.T) {
			srv := newFakeServer(t, func(c *serverConn) {
				if c.n > 0 {
					t.Errorf("connection %d: the client reconnected", c.n)
					return
				}
				if !c.expect("P : SELECT 1", "B ", "D", "E", "S") {
					return
				}
				c.send(parseOK, bindOK, noData, tag("SELECT 1"), serverError("40001", "could not serialize access"), idle)
				if !c.expect("P : SELECT 1", "B ", "D", "E", "S") {
					return
				}
				c.send(parseOK, bindOK, noData, tag("SELECT 1"), idle)
				c.waitGone()
			})
			stmt := &Stmt{SQL: "SELECT 1"}
			p := &funcProgram{
				start: func(c *Conn, _ int) Action {
					c.Bind(stmt, CaptureNone).Send()
					return Action{Kind: Await}
				},
				resume: func(c *Conn, _ int) Action { return finishFirstError(c) },
			}
			sess := &retrySession{recSession{ops: 1}}
			runOne(t, srv, raw, sess, p)
			d := sess.done
			if len(d) != 2 || d[1].err != nil {
				t.Fatalf("told %+v: want the serialization failure, then the retry's success", d)
			}
			if class, _ := pg.Classify(d[0].err); class != metrics.Serialization {
				t.Errorf("told %v, classified %s: want a serialization failure", d[0].err, class)
			}
		})
	}
}

// pausingSession runs ops operations, pausing pause before each after the
// first (Pause: a think time of its own), and records when each started.
type pausingSession struct {
	recSession
	id     int
	pause  time.Duration
	rest   bool
	starts []time.Time
}

func (s *pausingSession) ID() int { return s.id }

func (s *pausingSession) Next(now time.Time) Step {
	if s.op > 0 && s.op < s.ops && !s.rest {
		s.rest = true
		return Step{Kind: Pause, At: now.Add(s.pause)}
	}
	s.rest = false
	step := s.recSession.Next(now)
	if step.Kind == Start {
		s.starts = append(s.starts, now)
	}
	return step
}

func (s *pausingSession) Done(now time.Time, err error, stmt int) Step {
	step := s.recSession.Done(now, err, stmt)
	if step.Kind == Start && step.Attempt == 1 {
		return s.Next(now) // pause first
	}
	return step
}

// Pause: clients of one loop pause each for its own time, not in the line
// of clients waiting for an arrival (Wait), where the second would wait
// for the first's longer pause.
func TestPauseAlone(t *testing.T) {
	for name, raw := range loops() {
		t.Run(name, func(t *testing.T) {
			srv := newFakeServer(t, func(c *serverConn) {
				for c.segment() != nil {
					c.send(tag("SELECT 1"), idle)
				}
			})
			long := &pausingSession{recSession: recSession{ops: 2}, id: 0, pause: 2 * time.Second}
			short := &pausingSession{recSession: recSession{ops: 2}, id: 1, pause: 20 * time.Millisecond}
			sessions := []Session{long, short}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err := run(ctx, srv.target(t), Clients{Groups: [][]Session{sessions}, Ready: func(time.Time) {}},
				func(int) Program { return queryProgram("SELECT 1") }, raw)
			if err != nil {
				t.Fatal(err)
			}
			if len(short.starts) != 2 || len(long.starts) != 2 {
				t.Fatalf("starts: short %d, long %d; want 2 each", len(short.starts), len(long.starts))
			}
			if gap := short.starts[1].Sub(short.starts[0]); gap > time.Second {
				t.Fatalf("the short pause took %s: it waited behind the long one", gap)
			}
			if gap := long.starts[1].Sub(long.starts[0]); gap < 2*time.Second {
				t.Fatalf("the long pause took %s, want 2s", gap)
			}
		})
	}
}
