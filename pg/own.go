package pg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// txload's own sessions (init, counts, audits, markers, the readers of
// lag and history: every connection that is not a workload's client) turn
// off the server's timeouts, which a user sets for the workload
// (options=-c statement_timeout=100ms in the URL, a role's or a database's
// setting): a count of a large table or a load must not be cancelled as a
// slow transaction would. They are startup parameters, which win over the
// URL's options and over the role's and the database's settings. The
// workload's clients (ConnectRaw, ConnectClient) keep the user's settings.
var ownSettings = [...][2]string{
	{"statement_timeout", "0"},
	{"lock_timeout", "0"},
	{"idle_in_transaction_session_timeout", "0"},
}

// connectOwn opens one of txload's own sessions to node i: with
// ownSettings, unless the node refused them before (a pooler that takes no
// such startup parameter: PgBouncer's "unsupported startup parameter"; a
// server without one of them). A refusal is remembered and the connection
// made again without them: the server's timeouts then apply, and a step
// they cut says what it was doing (its error is wrapped with it).
//
// A server that says it is starting up (SQLSTATE 57P03: a restart's
// recovery, a standby not yet consistent) is asked again every 100ms for
// as long as the connect timeout (10 s where none is set): an audit
// after a run whose server crashed near its end waits for the recovery
// instead of failing the run.
//
// A query of an own session whose context ends is cancelled on the
// server (a CancelRequest), and the call returns once the server has
// stopped it (or 5 s later): pgx's default closes the socket and sends
// the cancel from a goroutine, which an exiting process never runs, and
// an interrupted audit's aggregate then ran on alone on the server.
func (t *Target) connectOwn(ctx context.Context, i int, adjust func(*pgx.ConnConfig)) (*pgx.Conn, error) {
	wait := t.configs[i].ConnectTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	until := time.Now().Add(wait)
	for {
		conn, err := t.connectOwnOnce(ctx, i, adjust)
		if err == nil || !startingUp(err) || time.Now().After(until) {
			return conn, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (t *Target) connectOwnOnce(ctx context.Context, i int, adjust func(*pgx.ConnConfig)) (*pgx.Conn, error) {
	cancelling := func(cfg *pgx.ConnConfig) {
		cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: 5 * time.Second}
		}
		if adjust != nil {
			adjust(cfg)
		}
	}
	if t.ownRefused[i].Load() {
		return t.connect(ctx, i, cancelling)
	}
	conn, err := t.connect(ctx, i, func(cfg *pgx.ConnConfig) {
		SetOwnSettings(&cfg.Config)
		cancelling(cfg)
	})
	if err != nil && refusedOwn(err) {
		t.ownRefused[i].Store(true)
		return t.connect(ctx, i, cancelling)
	}
	return conn, err
}

// startingUp says err is a server's refusal while it starts up (57P03,
// cannot_connect_now).
func startingUp(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "57P03"
}

// refusedOwn says err is the server's (or a pooler's) refusal of one of
// ownSettings as a startup parameter.
func refusedOwn(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	for _, s := range ownSettings {
		if strings.Contains(pe.Message, s[0]) {
			return true
		}
	}
	return false
}

// OwnSettingsRefused says node i refused ownSettings: txload's own
// sessions there run under the server's timeouts.
func (t *Target) OwnSettingsRefused(i int) bool { return t.ownRefused[i].Load() }

// OwnTimeoutHint explains err, a step of txload's own that failed, when a
// server's timeout cut it on a node that refused ownSettings: "" otherwise.
func (t *Target) OwnTimeoutHint(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "timeout") {
		return ""
	}
	for i := range t.ownRefused {
		if !t.ownRefused[i].Load() {
			continue
		}
		who := "the server"
		if len(t.urls) > 1 {
			who = Redact(t.urls[i])
		}
		return fmt.Sprintf("a step of txload's own, cut by the server's timeout: %s refused the startup parameters that turn statement_timeout, lock_timeout and idle_in_transaction_session_timeout off for txload's own sessions (a pooler?); set them to 0 for this role, or connect directly", who)
	}
	return ""
}

// SetOwnSettings sets ownSettings on cfg, for code that connects with pgx
// itself to reach a node of its choosing (the failover prober): with
// RefusedOwnSettings, it does as connectOwn does.
func SetOwnSettings(cfg *pgconn.Config) {
	for _, s := range ownSettings {
		cfg.RuntimeParams[s[0]] = s[1]
	}
}

// RefusedOwnSettings says err, a failed connection's, is the refusal of
// the settings SetOwnSettings set: connect again without them.
func RefusedOwnSettings(err error) bool { return refusedOwn(err) }

// AsLoginRole makes conn, one of txload's own sessions, its login role's
// with pg_catalog first on its path (pg_temp last): a database's or a
// role's `SET role` makes current_user another role than the one txload
// logged in as, and a path of `public, pg_catalog` makes an unqualified
// name (pg_stat_activity, txid_status, =) the one public holds, a
// database owner's doing. The sessions that end txload's own backends
// and ask what became of their transactions (the drain's settle) take
// it first (the eighth retest's retry turned both against them).
func AsLoginRole(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, "SET ROLE NONE; SET search_path = pg_catalog, pg_temp"); err != nil {
		return fmt.Errorf("setting the session's role and path: %w", err)
	}
	return nil
}
