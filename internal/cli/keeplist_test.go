package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/txload/txload/internal/pgtest"
)

// --init keep with a list of variants is refused before the database is
// touched: a list runs each on fresh data, which would drop the tables
// --init keep keeps (and with them what was done to them: here a balance
// changed by hand, which the next check must still find).
func TestBankInitKeepWithListRefused(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "bank", "--url", url, "--accounts", "100"); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	sqlExec(t, url, "UPDATE bank_account SET balance = balance + 500 WHERE id = 7")
	for _, tc := range []struct {
		name  string
		args  []string
		lists string
	}{
		{"isolation", []string{"--isolation", "rc,ser"}, "--isolation"},
		{"selection", []string{"--isolation", "rc", "--selection", "10,20"}, "--selection"},
		{"both", []string{"--isolation", "rc,ser", "--selection", "10,20"}, "--isolation and --selection"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := txload(t.Context(), nil, append([]string{"run", "bank", "--url", url, "--init", "keep", "--accounts", "100",
				"-c", "1", "-d", "1s", "--progress", "0"}, tc.args...)...)
			want := "txload: --init keep with a list of " + tc.lists + ": a list runs each on fresh data"
			if r.code != ExitUsage || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "init:") {
				t.Fatalf("exit %d, want 2 and %q before any init:\n%s\n%s", r.code, want, r.stderr, r.stdout)
			}
		})
	}
	var balance int64
	if err := pgtest.Conn(t, url).QueryRow(context.Background(), "SELECT balance FROM bank_account WHERE id = 7").Scan(&balance); err != nil {
		t.Fatal(err)
	}
	if balance != 10500 {
		t.Fatalf("account 7 holds %d, want the 10500 it was given: the tables were reloaded", balance)
	}
	// --init skip with a list runs each on the tables as they are.
	r := txload(t.Context(), nil, "run", "bank", "--url", url, "--init", "skip", "--accounts", "100", "-c", "1", "-d", "1s",
		"--progress", "0", "--isolation", "rc,ser")
	if r.code != ExitFailed || !strings.Contains(r.stdout, "VIOLATION") {
		t.Fatalf("--init skip with a list: exit %d, want 1 and the changed balance found:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
