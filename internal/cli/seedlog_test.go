package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pgtest"
)

// A run's identity seed reaches the server only after the run's last
// write. With every statement logged (log_statement = all, which a
// superuser can set while a run is under way), whoever reads the log
// learns a seed too late to forge rows whose hashes add up to those they
// delete. The fifth retest did just that for vote and tpcb-like: their
// runs sent the seed in the scan that summed the table before the run.
func TestRunSeedLoggedAfterWrites(t *testing.T) {
	t.Parallel()
	s := pgtest.OwnServer(t, "log_statement=all") // every statement logged: a server of its own
	paramRE := regexp.MustCompile(`\$1 = '(\d+)'`)
	for _, c := range []struct {
		name, init, write string
		run               []string
	}{
		{"vote", "vote", "INSERT INTO vote ", []string{"vote"}},
		{"tpcb-like", "tpcb", "INSERT INTO pgbench_history ", []string{"tpcb-like"}},
		{"bank", "bank", "INSERT INTO bank_ledger ", []string{"bank", "--isolation", "rc"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := pgx.Connect(t.Context(), s.URL())
			if err != nil {
				t.Fatal(err)
			}
			db := "seedlog_" + strings.ReplaceAll(c.name, "-", "_")
			if _, err := conn.Exec(t.Context(), "CREATE DATABASE "+db); err != nil {
				t.Fatal(err)
			}
			conn.Close(t.Context())
			url := strings.Replace(s.URL(), "/postgres?", "/"+db+"?", 1)
			if r := txload(t.Context(), nil, "init", c.init, "--url", url); r.code != 0 {
				t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
			}
			from := logLines(t, s.LogPath())
			r := txload(t.Context(), nil, append(append([]string{"run"}, c.run...), "--url", url, "--concurrency", "2", "--duration", "1s", "--progress", "0")...)
			if r.code != 0 {
				t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "identity: ") || strings.Contains(r.stdout, "not checked") {
				t.Fatalf("the run's audit summed no identity:\n%s", r.stdout)
			}
			lines := logLines(t, s.LogPath())[len(from):]
			lastWrite, seeds := -1, map[string]bool{}
			for i, l := range lines {
				if strings.Contains(l, c.write) {
					lastWrite = i
				}
				// The seed is the first parameter of a statement that
				// hashes with md5: its DETAIL line follows.
				if strings.Contains(l, "md5($1") {
					for _, d := range lines[i+1:] {
						if m := paramRE.FindStringSubmatch(d); m != nil {
							seeds[m[1]] = true
							break
						}
					}
				}
			}
			if lastWrite < 0 || len(seeds) == 0 {
				t.Fatalf("the log holds no write of the run (%d) or no seeded statement (%d): is every statement logged?", lastWrite, len(seeds))
			}
			for seed := range seeds {
				for i, l := range lines[:lastWrite] {
					if strings.Contains(l, seed) {
						t.Errorf("the seed %s is in the log at line %d, before the run's last write at line %d:\n%s", seed, i, lastWrite, l)
						break
					}
				}
			}
		})
	}
}

// logLines reads the server's log, a line each.
func logLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}
