package cli

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// The server ends every pgbench session in the middle of a run (as a
// crash or an administrator would): pgbench's clients give up with their
// connections, it prints why and "Run was aborted", and exits 2. So does
// txload pgbench, with the same kinds of lines (client numbers masked),
// where it used to reconnect and exit 0.
func TestPgbenchCommandLostConnectionsLikePgbench(t *testing.T) {
	pgtest.OutsideRace(t, "pgbench's output")
	t.Parallel()
	pgbench, _ := installedPgbench(t)
	bin := buildTxload(t)
	db := srv.NewDatabase(t)
	pgbenchOK(t, nil, "-i", "-q", db)
	name := strings.TrimPrefix(mustURL(t, db).Path, "/")
	env := append(os.Environ(), pgEnv(t, srv.URL())...)
	clients := regexp.MustCompile(`client [0-9]+`)
	run := func(prog string, args ...string) (code int, stderr string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, prog, append(args, "-n", "-S", "-c", "3", "-T", "4", "-P", "1", name)...)
		cmd.Env = env
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Once the clients run their statements, end their sessions.
		admin := pgtest.Conn(t, db)
		ended := 0
		for deadline := time.Now().Add(3 * time.Second); ended < 3 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			var n int
			if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE datname = current_database() AND application_name = 'pgbench' AND pid <> pg_backend_pid()
				AND query LIKE 'SELECT abalance FROM pgbench_accounts%'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			ended += n
		}
		_ = cmd.Wait()
		if ended == 0 {
			t.Fatalf("%s: no session to end\n%s", prog, errb.String())
		}
		mustContain(t, out.String(), "number of transactions actually processed: ")
		return cmd.ProcessState.ExitCode(), clients.ReplaceAllString(errb.String(), "client N")
	}
	theirCode, theirs := run(pgbench)
	ourCode, ours := run(bin, "pgbench")
	if theirCode != 2 || ourCode != theirCode {
		t.Errorf("exit %d, pgbench's %d\ntxload:\n%s\npgbench:\n%s", ourCode, theirCode, ours, theirs)
	}
	// What a client says depends on when it learns of its end (with the
	// server's FATAL, or with a connection found closed), in pgbench as in
	// txload: each line must be one pgbench prints in such a run.
	allowed := map[string]bool{
		"pgbench: error: client N script 0 aborted in command 1 query 0: FATAL:  terminating connection due to administrator command": true,
		"pgbench: error: client N aborted in command 1 (SQL) of script 0; perhaps the backend died while processing":                  true,
		"pgbench: error: Run was aborted; the above results are incomplete.":                                                          true,
	}
	for _, out := range []struct{ who, lines string }{{"pgbench", theirs}, {"txload", ours}} {
		aborted := 0
		for _, l := range strings.Split(out.lines, "\n") {
			if !strings.HasPrefix(l, "pgbench: error: ") {
				continue
			}
			if !allowed[l] {
				t.Errorf("%s prints %q", out.who, l)
			}
			if strings.Contains(l, " aborted ") {
				aborted++
			}
		}
		if aborted == 0 {
			t.Errorf("%s says no client aborted:\n%s", out.who, out.lines)
		}
	}
	mustContain(t, ours, "pgbench: error: Run was aborted; the above results are incomplete.")
}

// Through PgBouncer in transaction mode, -M prepared is refused naming -M,
// as the user typed it, not txload's --protocol.
func TestPgbenchCommandPreparedThroughPooler(t *testing.T) {
	t.Parallel()
	direct := srv.NewDatabase(t)
	pgbenchOK(t, nil, "-i", "-q", direct)
	url := pgtest.Pgbouncer(t, direct, "transaction")
	r := txload(t.Context(), nil, "pgbench", "-n", "-S", "-t", "1", "-M", "prepared", url)
	if r.code != 1 {
		t.Fatalf("exit %d, want pgbench's 1 for a refused command line\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stderr, "pgbench: error: -M prepared keeps named prepared statements in the server session, but PgBouncer",
		": use -M extended or simple")
	if strings.Contains(r.stderr, "--protocol") {
		t.Errorf("the refusal names --protocol, which the user did not type:\n%s", r.stderr)
	}
	if r := txload(t.Context(), nil, "pgbench", "-n", "-S", "-t", "5", "-M", "extended", url); r.code != 0 {
		t.Errorf("-M extended through the pooler: exit %d\n%s", r.code, r.stderr)
	}
}

// txload run script: a script that ends inside a transaction block fails
// its transaction (it never committed), and the run says so and exits 1;
// pgbench's \shell and \setshell run, with variables substituted.
func TestScriptRunEndsInsideTransaction(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	open := writeScript(t, "open.sql", "BEGIN;\nSELECT 1;\n")
	r := txload(t.Context(), nil, "run", "script", "--url", db, "--file", open, "--transactions", "5", "--progress", "0")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stderr, "open.sql:2: end of script reached without completing the last transaction")
}

func TestScriptRunShell(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	dir := t.TempDir()
	if _, err := pgtestExec(t, db, "CREATE TABLE seen (v int)"); err != nil {
		t.Fatal(err)
	}
	// A word that begins with ':' is a variable; \shell fails (and the
	// run with it) when its command exits with another status than 0.
	shell := writeScript(t, "shell.sql", "\\set a 3\n\\setshell x expr :a + 4\n\\shell test :a -eq 3\n\\shell touch "+dir+"/ran\nINSERT INTO seen VALUES (:x);\n")
	r := txload(t.Context(), nil, "run", "script", "--url", db, "--file", shell, "--transactions", "4", "--concurrency", "1", "--progress", "0")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := count(t, db, "SELECT count(*) FROM seen WHERE v = 7"); n != 4 {
		t.Errorf("%d rows of 7 (\\setshell of expr 3 + 4), want 4", n)
	}
	if _, err := os.Stat(dir + "/ran"); err != nil {
		t.Errorf("\\shell did not run: %v", err)
	}
}
