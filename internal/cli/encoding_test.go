package cli

import (
	"strings"
	"testing"
)

// Every command runs on a database of any encoding: SQL_ASCII (what
// `initdb --locale C` makes), LATIN1 and UTF8. txload's own queries speak
// UTF8 through pgx; the workload's statements go out in the database's
// encoding, as pgbench's do: the script below fails unless its session's
// client_encoding is the database's. (simple-update leaves the balances
// of branches and tellers behind: check tpcb runs before it, and lag
// runs simple-update, whose audit is of the accounts and history.) The runs are
// of a few transactions and the data small (bank's 1,000 accounts, pgio's
// 1,000 blocks, not its 512 MB): the encoding is what is tried.
func TestEveryCommandAnyEncoding(t *testing.T) {
	for _, enc := range []string{"SQL_ASCII", "LATIN1", "UTF8"} {
		t.Run(enc, func(t *testing.T) {
			t.Parallel()
			db := srv.NewDatabaseEncoding(t, enc)
			check := writeScript(t, "encoding.sql", "SELECT current_setting('client_encoding') = '"+enc+"' AS same \\gset\n"+
				"\\if :same\nSELECT 'é' AS e;\n\\else\nSELECT 1/0;\n\\endif\n")
			run := []string{"--url", db, "--transactions", "25", "--progress", "0"}
			for _, args := range [][]string{
				{"pgbench", "-i", "-s", "1", db},
				{"pgbench", "-t", "5", "-c", "2", db},
				{"pgbench", "-n", "-t", "3", "-M", "prepared", "-f", check, db},
				{"check", "tpcb", "--url", db},
				append([]string{"run", "tpcb-like", "--protocol", "extended"}, run...),
				{"check", "tpcb", "--url", db},
				append([]string{"run", "simple-update"}, run...),
				append([]string{"run", "select-only", "--protocol", "prepared"}, run...),
				append([]string{"run", "script", "--file", check}, run...),
				{"init", "bank", "--accounts", "1000", "--url", db},
				append([]string{"run", "bank", "--accounts", "1000", "--isolation", "rc,serializable"}, run...),
				{"check", "bank", "--accounts", "1000", "--url", db},
				append([]string{"run", "vote", "--articles", "1000", "--rate", "200"}, run...),
				{"check", "vote", "--url", db},
				{"init", "pgio", "--scale", "1000", "--url", db},
				{"run", "pgio", "--url", db, "--duration", "1s", "--progress", "0"}, // timed only
				{"sweep", "select-only", "--url", db, "--init", "keep", "--slo", "p99<=2s", "--step-duration", "500ms",
					"--step-warmup", "0s", "--start", "100", "--max-steps", "2"},
				{"lag", "--source", db, "--dest", db, "--workload", "simple-update", "--rate", "50", "--duration", "1s"},
			} {
				r := txload(t.Context(), nil, args...)
				// A sweep's step may fail its SLO on a busy machine (exit
				// 1, "no sustainable rate"): what matters here is that it
				// ran its step on this database.
				if args[0] == "sweep" && r.code == 1 && strings.Contains(r.stdout, "achieved/s") && strings.Contains(r.stdout, "no sustainable rate") {
					continue
				}
				if !r.ran() {
					t.Fatalf("txload %s on a %s database: exit %d\n%s\n%s", strings.Join(args, " "), enc, r.code, r.stdout, r.stderr)
				}
			}
		})
	}
}
