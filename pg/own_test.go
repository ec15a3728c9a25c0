package pg

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/internal/pgtest"
)

// txload's own sessions turn the server's timeouts off, whatever the URL's
// options say; a workload's client sessions (ConnectClient, ConnectRaw)
// keep them. Behind a pooler that refuses them as startup parameters, the
// own sessions connect without them (the server's timeouts apply), and the
// target says so.
func TestOwnSessionSettings(t *testing.T) {
	ctx := testCtx(t)
	base := srv.NewDatabase(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	const opts = "options=-c%20statement_timeout%3D100ms%20-c%20lock_timeout%3D200ms%20-c%20idle_in_transaction_session_timeout%3D300ms"
	direct := base + "&" + opts
	pooled := strings.Replace(direct, u.Host, pgtest.RefusingPooler(t, u.Host, ownNames()...), 1)
	user := "100ms 200ms 300ms"
	for _, tc := range []struct {
		name, url   string
		own, client string
		refused     bool
	}{
		{"direct", direct, "0 0 0", user, false},
		{"a pooler that refuses them", pooled, user, user, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := NewTarget([]string{tc.url})
			if err != nil {
				t.Fatal(err)
			}
			own, err := tg.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer own.Close(ctx)
			if got := timeouts(t, ctx, own); got != tc.own {
				t.Errorf("own session: statement, lock, idle in transaction timeouts %q, want %q", got, tc.own)
			}
			client, err := tg.ConnectClient(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close(ctx)
			if got := timeouts(t, ctx, client); got != tc.client {
				t.Errorf("client session: timeouts %q, want %q", got, tc.client)
			}
			raw, err := tg.ConnectRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close(ctx)
			res := raw.ExecParams(ctx, "SELECT current_setting('statement_timeout')", nil, nil, nil, nil).Read()
			if res.Err != nil || len(res.Rows) != 1 || string(res.Rows[0][0]) != "100ms" {
				t.Errorf("raw (executor) session: statement_timeout %q (%v), want the URL's 100ms", res.Rows, res.Err)
			}
			if got := tg.OwnSettingsRefused(0); got != tc.refused {
				t.Errorf("OwnSettingsRefused = %v, want %v", got, tc.refused)
			}
		})
	}
}

func ownNames() []string {
	var names []string
	for _, s := range ownSettings {
		names = append(names, s[0])
	}
	return names
}

func timeouts(t *testing.T, ctx context.Context, c *pgx.Conn) string {
	t.Helper()
	var s, l, i string
	err := c.QueryRow(ctx, "SELECT current_setting('statement_timeout'), current_setting('lock_timeout'), current_setting('idle_in_transaction_session_timeout')").Scan(&s, &l, &i)
	if err != nil {
		t.Fatal(err)
	}
	return s + " " + l + " " + i
}

// An own session's query whose context ends is stopped on the server by
// the time the call returns: an interrupted audit leaves no backend
// running its aggregate (pgx's default closed the socket only, and the
// query ran on: `check bank` interrupted, its audit still active on the
// server 9 s after txload had exited).
func TestOwnSessionCancelledOnServer(t *testing.T) {
	ctx := testCtx(t)
	url := srv.NewDatabase(t)
	tg, err := NewTarget([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	own, err := tg.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close(context.Background())
	look := pgtest.Conn(t, url)
	qctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	// The call returns with the server's own word that it stopped the
	// query (57014), not with the context's end alone.
	_, err = own.Exec(qctx, "SELECT pg_sleep(30) /* own-cancel */")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("pg_sleep(30) cancelled after 300ms: %v, want the server's 57014 (canceling statement due to user request)", err)
	}
	var n int
	if err := look.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE state = 'active' AND query LIKE '%own-cancel%' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d backends still run the cancelled query", n)
	}
}

// A server starting up (57P03) is asked again until it answers, within the
// connect timeout: an audit after a crash near a run's end waits for the
// recovery (TestServerCrashesHistoryExact's run failed so under load).
func TestOwnSessionWaitsForStartingServer(t *testing.T) {
	ctx := testCtx(t)
	base := srv.NewDatabase(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	starting := strings.Replace(base, u.Host, pgtest.StartingUp(t, u.Host, 3), 1)
	tg, err := NewTarget([]string{starting})
	if err != nil {
		t.Fatal(err)
	}
	own, err := tg.Connect(ctx)
	if err != nil {
		t.Fatalf("connecting past three 'starting up' refusals: %v", err)
	}
	own.Close(ctx)
	// A server that never ends its start: the refusal, once the connect
	// timeout has passed.
	never := strings.Replace(base, u.Host, pgtest.StartingUp(t, u.Host, 1000), 1)
	tg, err = NewTarget([]string{never + "&connect_timeout=1"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := tg.Connect(ctx); !startingUp(err) {
		t.Fatalf("a server that never ends its start: %v, want its 57P03", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("gave up after %s, want about the 1 s connect timeout", took)
	}
}
