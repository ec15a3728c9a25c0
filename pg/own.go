package pg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
func (t *Target) connectOwn(ctx context.Context, i int, adjust func(*pgx.ConnConfig)) (*pgx.Conn, error) {
	if t.ownRefused[i].Load() {
		return t.connect(ctx, i, adjust)
	}
	conn, err := t.connect(ctx, i, func(cfg *pgx.ConnConfig) {
		SetOwnSettings(&cfg.Config)
		if adjust != nil {
			adjust(cfg)
		}
	})
	if err != nil && refusedOwn(err) {
		t.ownRefused[i].Store(true)
		return t.connect(ctx, i, adjust)
	}
	return conn, err
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
