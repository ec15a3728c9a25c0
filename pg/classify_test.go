package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/metrics"
)

// sqlState returns the SQLSTATE err carries, failing the test if it carries
// none: every error in these tests comes from the real server.
func sqlState(t *testing.T, err error) string {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) carries no SQLSTATE", err, err)
	}
	return pe.Code
}

func checkClass(t *testing.T, err error, wantClass metrics.Class, wantFatal bool) {
	t.Helper()
	class, fatal := Classify(err)
	if class != wantClass || fatal != wantFatal {
		t.Errorf("Classify(%v) = %v, fatal %v; want %v, fatal %v", err, class, fatal, wantClass, wantFatal)
	}
}

// newTable creates t(id int primary key, v int) holding rows 1 and 2.
func newTable(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	conn := pgtest.Conn(t, url)
	if _, err := conn.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL); INSERT INTO t VALUES (1, 0), (2, 0)"); err != nil {
		t.Fatal(err)
	}
}

func mustExec(t *testing.T, ctx context.Context, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// execAsync runs sql on conn in a goroutine; the error arrives on the channel.
func execAsync(ctx context.Context, conn *pgx.Conn, sql string) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, sql)
		ch <- err
	}()
	return ch
}

// waitForLock waits until backend pid waits for a lock.
func waitForLock(t *testing.T, ctx context.Context, mon *pgx.Conn, pid uint32) {
	t.Helper()
	for {
		var waiting bool
		err := mon.QueryRow(ctx, "SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1", int64(pid)).Scan(&waiting)
		if err != nil {
			t.Fatalf("watching backend %d: %v", pid, err)
		}
		if waiting {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("backend %d never waited for a lock: %v", pid, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// receive waits for an error from ch, failing the test on timeout.
func receive(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: no answer within 15s", what)
		return nil
	}
}

// TestClassifySerializationConcurrentUpdate: two serializable transactions
// read a row, then both update it; the second blocks on the first's row lock
// and fails with 40001 once the first commits.
func TestClassifySerializationConcurrentUpdate(t *testing.T) {
	ctx := testCtx(t)
	url := srv.NewDatabase(t)
	newTable(t, ctx, url)
	a, b, mon := pgtest.Conn(t, url), pgtest.Conn(t, url), pgtest.Conn(t, url)

	for _, c := range []*pgx.Conn{a, b} {
		mustExec(t, ctx, c, Serializable.BeginSQL())
		var v int
		if err := c.QueryRow(ctx, "SELECT v FROM t WHERE id = 1").Scan(&v); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(t, ctx, a, "UPDATE t SET v = v + 1 WHERE id = 1")
	errB := execAsync(ctx, b, "UPDATE t SET v = v + 1 WHERE id = 1")
	waitForLock(t, ctx, mon, b.PgConn().PID())
	mustExec(t, ctx, a, "COMMIT")

	err := receive(t, errB, "second update")
	if err == nil {
		t.Fatal("the second update succeeded; want a serialization failure")
	}
	if code := sqlState(t, err); code != "40001" {
		t.Fatalf("SQLSTATE %s (%v), want 40001", code, err)
	}
	checkClass(t, err, metrics.Serialization, false)
	checkClass(t, DuringCommit(err), metrics.Serialization, false)
	if IsConnectionError(err) {
		t.Errorf("IsConnectionError(%v) = true", err)
	}
	if !metrics.Serialization.Retryable() {
		t.Error("a serialization failure must be retryable")
	}
}

// TestClassifySerializationWriteSkew: SSI rejects write skew, possibly only
// at COMMIT; a serialization failure raised by COMMIT is still a
// serialization failure, not an ambiguous commit.
func TestClassifySerializationWriteSkew(t *testing.T) {
	ctx := testCtx(t)
	url := srv.NewDatabase(t)
	newTable(t, ctx, url)
	a, b := pgtest.Conn(t, url), pgtest.Conn(t, url)

	for _, c := range []*pgx.Conn{a, b} {
		mustExec(t, ctx, c, Serializable.BeginSQL())
		var sum int
		if err := c.QueryRow(ctx, "SELECT sum(v) FROM t").Scan(&sum); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		conn   *pgx.Conn
		sql    string
		commit bool
	}{
		{a, "UPDATE t SET v = 1 WHERE id = 1", false},
		{b, "UPDATE t SET v = 1 WHERE id = 2", false},
		{a, "COMMIT", true},
		{b, "COMMIT", true},
	}
	var failure error
	for _, s := range steps {
		_, err := s.conn.Exec(ctx, s.sql)
		if err == nil {
			continue
		}
		if s.commit {
			err = DuringCommit(err)
		}
		failure = err
		break
	}
	if failure == nil {
		t.Fatal("write skew committed under SERIALIZABLE")
	}
	if code := sqlState(t, failure); code != "40001" {
		t.Fatalf("SQLSTATE %s (%v), want 40001", code, failure)
	}
	checkClass(t, failure, metrics.Serialization, false)
}

// TestClassifyDeadlock: two transactions lock rows 1 and 2 in opposite order.
func TestClassifyDeadlock(t *testing.T) {
	ctx := testCtx(t)
	url := srv.NewDatabase(t)
	newTable(t, ctx, url)
	a, b, mon := pgtest.Conn(t, url), pgtest.Conn(t, url), pgtest.Conn(t, url)
	for _, c := range []*pgx.Conn{a, b} {
		if _, err := c.Exec(ctx, "SET deadlock_timeout = '100ms'"); err != nil {
			t.Logf("keeping the default deadlock_timeout: %v", err)
		}
	}
	mustExec(t, ctx, a, "BEGIN")
	mustExec(t, ctx, a, "UPDATE t SET v = v + 1 WHERE id = 1")
	mustExec(t, ctx, b, "BEGIN")
	mustExec(t, ctx, b, "UPDATE t SET v = v + 1 WHERE id = 2")
	errA := execAsync(ctx, a, "UPDATE t SET v = v + 1 WHERE id = 2")
	waitForLock(t, ctx, mon, a.PgConn().PID())
	errB := execAsync(ctx, b, "UPDATE t SET v = v + 1 WHERE id = 1")
	ea := receive(t, errA, "a's update")
	eb := receive(t, errB, "b's update")

	// The server aborts exactly one of them; the other then gets its lock.
	var victim error
	switch {
	case ea != nil && eb == nil:
		victim = ea
	case eb != nil && ea == nil:
		victim = eb
	default:
		t.Fatalf("want exactly one failure, got a: %v, b: %v", ea, eb)
	}
	if code := sqlState(t, victim); code != "40P01" {
		t.Fatalf("SQLSTATE %s (%v), want 40P01", code, victim)
	}
	checkClass(t, victim, metrics.Deadlock, false)
	checkClass(t, fmt.Errorf("transfer: %w", victim), metrics.Deadlock, false)
	if IsConnectionError(victim) {
		t.Errorf("IsConnectionError(%v) = true", victim)
	}
}

// TestClassifyServerErrors runs statements that fail on the real server.
func TestClassifyServerErrors(t *testing.T) {
	ctx := testCtx(t)
	url := srv.NewDatabase(t)
	newTable(t, ctx, url)
	tests := []struct {
		name     string
		setup    []string // run first, must succeed
		sql      string
		code     string
		class    metrics.Class
		fatal    bool
		inCommit bool // wrap with DuringCommit too: must not change the class
	}{
		{name: "unique violation", sql: "INSERT INTO t VALUES (1, 0)", code: "23505", class: metrics.Constraint},
		{name: "not null violation", sql: "INSERT INTO t VALUES (3, NULL)", code: "23502", class: metrics.Constraint},
		{name: "check violation", setup: []string{"CREATE TABLE c (x int CHECK (x > 0))"}, sql: "INSERT INTO c VALUES (-1)", code: "23514", class: metrics.Constraint},
		{
			name:  "deferred unique violation at commit",
			setup: []string{"CREATE TABLE d (x int UNIQUE DEFERRABLE INITIALLY DEFERRED)", "BEGIN", "INSERT INTO d VALUES (1), (1)"},
			sql:   "COMMIT", code: "23505", class: metrics.Constraint, inCommit: true,
		},
		{name: "undefined table", sql: "SELECT * FROM no_such_table", code: "42P01", class: metrics.Other, fatal: true},
		{name: "syntax error", sql: "SELEC 1", code: "42601", class: metrics.Other, fatal: true},
		{name: "undefined column", sql: "SELECT no_such_column FROM t", code: "42703", class: metrics.Other, fatal: true},
		{name: "undefined function", sql: "SELECT no_such_function()", code: "42883", class: metrics.Other, fatal: true},
		{name: "feature not supported", sql: "SELECT count(*) FROM t FOR UPDATE", code: "0A000", class: metrics.Other, fatal: true},
		{name: "division by zero", sql: "SELECT 1 / 0", code: "22012", class: metrics.Other},
		{name: "query canceled by statement_timeout", setup: []string{"SET statement_timeout = '50ms'"}, sql: "SELECT pg_sleep(5)", code: "57014", class: metrics.Other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := pgtest.Conn(t, url)
			for _, s := range tt.setup {
				mustExec(t, ctx, conn, s)
			}
			_, err := conn.Exec(ctx, tt.sql)
			if err == nil {
				t.Fatalf("%s succeeded", tt.sql)
			}
			if code := sqlState(t, err); code != tt.code {
				t.Fatalf("%s: SQLSTATE %s (%v), want %s", tt.sql, code, err, tt.code)
			}
			checkClass(t, err, tt.class, tt.fatal)
			checkClass(t, fmt.Errorf("op 3: %w", err), tt.class, tt.fatal)
			if tt.inCommit {
				checkClass(t, DuringCommit(err), tt.class, tt.fatal)
			}
			if IsConnectionError(err) {
				t.Errorf("IsConnectionError(%v) = true for a server error", err)
			}
			if conn.IsClosed() {
				t.Errorf("the connection closed after %v", err)
			}
		})
	}
}

// TestClassifyInFailedTransaction: a statement after an error in the same
// transaction gets 25P02, which is not fatal.
func TestClassifyInFailedTransaction(t *testing.T) {
	ctx := testCtx(t)
	conn := pgtest.Conn(t, srv.NewDatabase(t))
	mustExec(t, ctx, conn, "BEGIN")
	if _, err := conn.Exec(ctx, "SELECT 1 / 0"); err == nil {
		t.Fatal("1 / 0 succeeded")
	}
	_, err := conn.Exec(ctx, "SELECT 1")
	if code := sqlState(t, err); code != "25P02" {
		t.Fatalf("SQLSTATE %s (%v), want 25P02", code, err)
	}
	checkClass(t, err, metrics.Other, false)
}

// TestClassifyConnectFailures connects through Target, so that the error
// passes through ConnectError.
func TestClassifyConnectFailures(t *testing.T) {
	base := srv.NewDatabase(t)
	tests := []struct {
		name   string
		mutate func(u *neturl)
		prefix string // SQLSTATE prefix
	}{
		{name: "nonexistent role", mutate: func(u *neturl) { u.setUser("no_such_role_txload", "s3cretPW") }, prefix: "28"},
		{name: "nonexistent database", mutate: func(u *neturl) { u.Path = "/no_such_db_txload" }, prefix: "3D"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			u := parseURL(t, base)
			tt.mutate(u)
			raw := u.String()
			target, err := NewTarget([]string{raw})
			if err != nil {
				t.Fatalf("NewTarget: %v", err)
			}
			conn, err := target.Connect(ctx)
			if err == nil {
				conn.Close(ctx)
				t.Fatal("Connect succeeded")
			}
			var ce *ConnectError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not a *pg.ConnectError", err, err)
			}
			if code := sqlState(t, err); !strings.HasPrefix(code, tt.prefix) {
				t.Fatalf("SQLSTATE %s (%v), want %sxxx", code, err, tt.prefix)
			}
			checkClass(t, err, metrics.Other, true)
			if IsConnectionError(err) {
				t.Errorf("IsConnectionError(%v) = true; the server answered", err)
			}
			if ce.URL != Redact(raw) || !strings.Contains(err.Error(), Redact(raw)) {
				t.Errorf("error %q does not name the redacted URL %q", err, Redact(raw))
			}
			if strings.Contains(err.Error(), "s3cretPW") {
				t.Errorf("error %q leaks the password", err)
			}
		})
	}
}

// TestClassifyTerminatedBackend: a connection whose backend was terminated
// by another session.
func TestClassifyTerminatedBackend(t *testing.T) {
	url := srv.NewDatabase(t)
	terminate := func(t *testing.T, ctx context.Context, victim *pgx.Conn) {
		t.Helper()
		killer := pgtest.Conn(t, url)
		var ok bool
		// With a timeout the function waits until the backend has exited.
		if err := killer.QueryRow(ctx, "SELECT pg_terminate_backend($1, 10000)", int64(victim.PgConn().PID())).Scan(&ok); err != nil || !ok {
			t.Fatalf("pg_terminate_backend: %v, %v", ok, err)
		}
	}
	t.Run("idle", func(t *testing.T) {
		ctx := testCtx(t)
		victim := pgtest.Conn(t, url)
		terminate(t, ctx, victim)
		_, err := victim.Exec(ctx, "SELECT 1")
		if err == nil {
			t.Fatal("query on a terminated backend succeeded")
		}
		t.Logf("error: %v (%T)", err, err)
		if !IsConnectionError(err) {
			t.Errorf("IsConnectionError(%v) = false", err)
		}
		checkClass(t, err, metrics.ConnectionLost, false)
		checkClass(t, DuringCommit(err), metrics.AmbiguousCommit, false)
		checkClass(t, fmt.Errorf("op: %w", DuringCommit(err)), metrics.AmbiguousCommit, false)
		// Once the connection is known dead, later use fails the same way.
		_, err = victim.Exec(ctx, "SELECT 1")
		if err == nil {
			t.Fatal("second query on a terminated backend succeeded")
		}
		if !IsConnectionError(err) {
			t.Errorf("IsConnectionError(%v) = false on reuse", err)
		}
		checkClass(t, err, metrics.ConnectionLost, false)
	})
	t.Run("commit", func(t *testing.T) {
		ctx := testCtx(t)
		setup := pgtest.Conn(t, url)
		mustExec(t, ctx, setup, "CREATE TABLE k (id int)")
		victim := pgtest.Conn(t, url)
		mustExec(t, ctx, victim, "BEGIN")
		mustExec(t, ctx, victim, "INSERT INTO k VALUES (1)")
		terminate(t, ctx, victim)
		_, err := victim.Exec(ctx, "COMMIT")
		if err == nil {
			t.Fatal("COMMIT on a terminated backend succeeded")
		}
		t.Logf("error: %v (%T)", err, err)
		checkClass(t, DuringCommit(err), metrics.AmbiguousCommit, false)
		checkClass(t, err, metrics.ConnectionLost, false)
		if metrics.AmbiguousCommit.Retryable() {
			t.Error("an ambiguous commit must not be retried")
		}
	})
}

// TestClassifyRefused connects to a loopback port where nothing listens.
func TestClassifyRefused(t *testing.T) {
	ctx := testCtx(t)
	raw := "postgres://alice:hunter2PW@127.0.0.1:1/shop?connect_timeout=5"
	target, err := NewTarget([]string{raw})
	if err != nil {
		t.Fatalf("NewTarget: %v", err)
	}
	conn, err := target.Connect(ctx)
	if err == nil {
		conn.Close(ctx)
		t.Fatal("Connect to 127.0.0.1:1 succeeded")
	}
	t.Logf("error: %v", err)
	var ce *ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *pg.ConnectError", err, err)
	}
	var pce *pgconn.ConnectError
	if !errors.As(err, &pce) {
		t.Errorf("error %v does not unwrap to *pgconn.ConnectError", err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		t.Errorf("a refused connection carries SQLSTATE %s", pe.Code)
	}
	if !IsConnectionError(err) {
		t.Errorf("IsConnectionError(%v) = false", err)
	}
	checkClass(t, err, metrics.ConnectionLost, false)
	msg := err.Error()
	if strings.Contains(msg, "hunter2PW") {
		t.Errorf("error %q leaks the password", msg)
	}
	want := "connecting to " + Redact(raw) + ": "
	if !strings.HasPrefix(msg, want) {
		t.Errorf("error %q does not start with %q", msg, want)
	}
	if strings.Contains(msg, "failed to connect to") {
		t.Errorf("error %q repeats pgx's prefix", msg)
	}
	if !strings.Contains(msg, "127.0.0.1") {
		t.Errorf("error %q does not say where it tried", msg)
	}
}

// TestIsConnectionErrorContext: a cancelled or expired context is the
// caller's decision, not a lost connection.
func TestIsConnectionErrorContext(t *testing.T) {
	for _, err := range []error{
		context.Canceled,
		context.DeadlineExceeded,
		fmt.Errorf("running op: %w", context.Canceled),
		fmt.Errorf("running op: %w", context.DeadlineExceeded),
	} {
		if IsConnectionError(err) {
			t.Errorf("IsConnectionError(%v) = true", err)
		}
		checkClass(t, err, metrics.Other, false)
	}

	// A connection attempt abandoned because of the context: pgx wraps the
	// context's error in a *pgconn.ConnectError, which alone would count as
	// a connection error.
	url := srv.NewDatabase(t)
	target, err := NewTarget([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []error{context.Canceled, context.DeadlineExceeded} {
		t.Run("connect "+want.Error(), func(t *testing.T) {
			var ctx context.Context
			var cancel context.CancelFunc
			if want == context.DeadlineExceeded {
				ctx, cancel = context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
				defer cancel()
			} else {
				ctx, cancel = context.WithCancel(t.Context())
				cancel()
			}
			conn, err := target.Connect(ctx)
			if err == nil {
				conn.Close(t.Context())
				t.Fatal("Connect with a done context succeeded")
			}
			t.Logf("error: %v", err)
			var ce *pgconn.ConnectError
			if !errors.Is(err, want) || !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) does not wrap both %v and a *pgconn.ConnectError", err, err, want)
			}
			if IsConnectionError(err) {
				t.Errorf("IsConnectionError(%v) = true", err)
			}
			checkClass(t, err, metrics.Other, false)
		})
	}

	// The same, for a query the real server is running when the context is
	// cancelled.
	conn := pgtest.Conn(t, url)
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(t.Context(), 100*time.Millisecond)
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			_, err := conn.Exec(ctx, "SELECT pg_sleep(5)")
			if err == nil {
				t.Fatal("pg_sleep(5) finished despite the context")
			}
			t.Logf("error: %v (%T)", err, err)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v does not wrap %v", err, tc.want)
			}
			if IsConnectionError(err) {
				t.Errorf("IsConnectionError(%v) = true", err)
			}
			if class, _ := Classify(err); class == metrics.ConnectionLost || class == metrics.AmbiguousCommit {
				t.Errorf("Classify(%v) = %v", err, class)
			}
		})
		if !conn.IsClosed() {
			// pgx closes a connection whose query it had to abandon; if it
			// did not, it must still work.
			if _, err := conn.Exec(t.Context(), "SELECT 1"); err != nil {
				t.Fatalf("connection unusable after %s: %v", tc.name, err)
			}
		} else {
			conn = pgtest.Conn(t, srv.NewDatabase(t))
		}
	}
}

// TestClassifyCockroachAmbiguous: 40003 is CockroachDB's "result is
// ambiguous"; PostgreSQL cannot produce it.
func TestClassifyCockroachAmbiguous(t *testing.T) {
	err := &pgconn.PgError{Code: "40003", Message: "result is ambiguous"}
	checkClass(t, err, metrics.AmbiguousCommit, false)
	checkClass(t, fmt.Errorf("op: %w", err), metrics.AmbiguousCommit, false)
	checkClass(t, DuringCommit(err), metrics.AmbiguousCommit, false)
	if IsConnectionError(err) {
		t.Errorf("IsConnectionError(40003) = true")
	}
}

func TestIsConnectionErrorPlain(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("something else"), false},
		{io.EOF, true},
		{fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), true},
		{net.ErrClosed, true},
		{&net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}, true},
		{errors.New("conn closed"), true},
		{errors.New("write: broken pipe"), true},
	}
	for _, tt := range tests {
		if got := IsConnectionError(tt.err); got != tt.want {
			t.Errorf("IsConnectionError(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestDuringCommit(t *testing.T) {
	if DuringCommit(nil) != nil {
		t.Error("DuringCommit(nil) != nil")
	}
	inner := io.ErrUnexpectedEOF
	err := DuringCommit(inner)
	if !errors.Is(err, inner) {
		t.Errorf("DuringCommit(%v) does not unwrap to it", inner)
	}
	if got, want := err.Error(), "commit: "+inner.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// A protocol violation the server reports as an ERROR (a Bind with the
// wrong number of parameters) leaves the session usable: not a lost
// connection, and no reconnection.
func TestProtocolViolationIsNotALostConnection(t *testing.T) {
	url := srv.NewDatabase(t)
	conn := pgtest.Conn(t, url)
	_, err := conn.PgConn().ExecParams(t.Context(), "SELECT 1", [][]byte{[]byte("1")}, nil, nil, nil).Close()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "08P01" {
		t.Fatalf("err = %v, want 08P01", err)
	}
	if class, fatal := Classify(err); class != metrics.Other || fatal || IsConnectionError(err) {
		t.Fatalf("classified %s fatal=%v connection=%v", class, fatal, IsConnectionError(err))
	}
	// A FATAL of the same class is a lost connection.
	lost := &pgconn.PgError{Severity: "FATAL", Code: "08006"}
	if class, _ := Classify(lost); class != metrics.ConnectionLost {
		t.Fatalf("FATAL 08006 classified %s", class)
	}
}

// A session the server ends with a FATAL of another class than 08 or 57P0x
// (here idle_in_transaction_session_timeout, 25P03) is a lost connection:
// retried on a new one, not an error that ends the client.
func TestClassifyOtherFatalEndsSession(t *testing.T) {
	ctx := testCtx(t)
	conn := pgtest.Conn(t, srv.NewDatabase(t))
	mustExec(t, ctx, conn, "SET idle_in_transaction_session_timeout = '100ms'")
	mustExec(t, ctx, conn, "BEGIN")
	time.Sleep(400 * time.Millisecond)
	_, err := conn.Exec(ctx, "SELECT 1")
	if err == nil {
		t.Fatal("the session outlived idle_in_transaction_session_timeout")
	}
	t.Logf("%v", err)
	checkClass(t, err, metrics.ConnectionLost, false)
	// The server's own words, as the driver keeps them.
	checkClass(t, &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "25P03",
		Message: "terminating connection due to idle-in-transaction timeout"}, metrics.ConnectionLost, false)
}
