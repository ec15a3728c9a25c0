package cli

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txload/txload/internal/pgtest"
)

// withOptions is dsn with options=opts (libpq's -c settings for the
// session), as a user sets statement_timeout for production.
func withOptions(t *testing.T, dsn, opts string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// libpq (and pgx) decode %20, not +, as a space.
	q := "options=" + strings.ReplaceAll(url.QueryEscape(opts), "+", "%20")
	if u.RawQuery != "" {
		q = u.RawQuery + "&" + q
	}
	u.RawQuery = q
	return u.String()
}

// A URL with options=-c statement_timeout=100ms (and lock_timeout): txload's
// own sessions (the init's load, the counts before and after, the audit)
// run with the timeouts off, and the runs succeed, their audits included;
// the workload's clients keep the user's settings (a statement of the
// workload slower than 100 ms is cancelled). Before, `run bank` failed in
// its init (loading 100000 accounts: canceling statement due to statement
// timeout), and so did tpcb-like.
func TestOwnSessionsIgnoreTimeouts(t *testing.T) {
	t.Parallel()
	const opts = "-c statement_timeout=100ms -c lock_timeout=100ms -c idle_in_transaction_session_timeout=100ms"
	slow := filepath.Join(t.TempDir(), "slow.sql")
	if err := os.WriteFile(slow, []byte("SELECT pg_sleep(0.3);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  []string // in stdout
		err  []string // in stderr
	}{
		{"bank", []string{"run", "bank", "-c", "2", "-d", "1s"}, ExitOK, []string{"check: ok"}, nil},
		{"tpcb-like", []string{"run", "tpcb-like", "--init", "fresh", "--scale", "2", "-c", "1", "-d", "1s"}, ExitOK, []string{"check: ok", "per the history"}, nil},
		{"the workload's statement", []string{"run", "script", "--file", slow, "-c", "1", "-t", "1"}, ExitFailed, nil,
			[]string{"canceling statement due to statement timeout"}},
		// Through a pooler that refuses the settings, the step the server
		// cut is named, and why it could. Which of the three timeouts cuts
		// it first depends on the machine (the statement's, or on a loaded
		// one the idle transaction's: "terminating connection due to
		// idle-in-transaction timeout").
		{"pooled", []string{"run", "bank", "-c", "2", "-d", "1s"}, ExitFailed, nil,
			[]string{"txload: init bank: ", " timeout (SQLSTATE ", ") (a step of txload's own, cut by the server's timeout: the server refused the startup parameters that turn statement_timeout, lock_timeout and idle_in_transaction_session_timeout off for txload's own sessions (a pooler?); set them to 0 for this role, or connect directly)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := withOptions(t, srv.NewDatabase(t), opts)
			if tc.name == "pooled" {
				host := strings.SplitN(strings.TrimPrefix(u, "postgres://"), "/", 2)[0]
				host = host[strings.LastIndex(host, "@")+1:]
				u = strings.Replace(u, host, pgtest.RefusingPooler(t, host, "statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"), 1)
			}
			r := txload(t.Context(), nil, append(tc.args, "--url", u)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			mustContain(t, r.stdout, tc.out...)
			mustContain(t, r.stderr, tc.err...)
		})
	}
}
