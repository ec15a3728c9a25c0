package pg

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

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
