package cli

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// A run's audit holds the run to what it changed: after pgbench truncated
// the history (txload's pgbench as pgbench's own does before each run
// unless -n), a tpcb-like or simple-update run with --init keep passes its
// audit; the standalone checks say what they can hold of such tables.
func TestBuiltinAuditAfterTruncation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		pgbench func(t *testing.T, url string)
	}{
		{"txload pgbench", func(t *testing.T, url string) {
			if r := txload(t.Context(), nil, "pgbench", "-T", "2", "-c", "2", url); r.code != 0 {
				t.Fatalf("txload pgbench: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
		}},
		{"pgbench", func(t *testing.T, url string) {
			path, _ := pgtest.Pgbench(t)
			cmd := exec.Command(path, "-T", "2", "-c", "2", url)
			cmd.Env = append(os.Environ(), "LANG=C")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("pgbench: %v\n%s", err, out)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := srv.NewDatabase(t)
			run := func(args ...string) result {
				t.Helper()
				r := txload(t.Context(), nil, append(args, "--url", url)...)
				if r.code != 0 {
					t.Fatalf("%s: exit %d\n%s\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
				}
				return r
			}
			run("init", "tpcb")
			run("run", "tpcb-like", "--concurrency", "2", "--duration", "1s", "--progress", "0")
			c.pgbench(t, url)
			for _, b := range []string{"tpcb-like", "simple-update", "tpcb-like"} {
				r := run("run", b, "--init", "keep", "--concurrency", "2", "--duration", "1s", "--progress", "0")
				for _, want := range []string{"before the run", "the rows the run's transactions wrote", "check: ok"} {
					if !strings.Contains(r.stdout, want) {
						t.Errorf("run %s: no %q\n%s", b, want, r.stdout)
					}
				}
			}
			run("check", "tpcb")
			// The history no longer covers the balances: check tpcb-like
			// says so, and names check tpcb.
			r := txload(t.Context(), nil, "check", "tpcb-like", "--url", url)
			if r.code != 1 || !strings.Contains(r.stdout, "after pgbench truncated the history") {
				t.Errorf("check tpcb-like after a truncation: exit %d\n%s", r.code, r.stdout)
			}
		})
	}
}

// A second writer during a run that swaps one history transaction for a
// coherent one of its own (row count and every sum kept, every balance
// its history's sum) fails the run's audit: it checks which rows the run
// added, not how many; one that re-dates a row the run wrote fails it by
// the row's mtime.
func TestBuiltinAuditSecondWriter(t *testing.T) {
	t.Parallel()
	// The first history row's delta moves from its account to the next
	// one; its row is replaced by one naming that account (its teller and
	// branch, moved by tpcb-like, are the same).
	const swap = `WITH h AS (DELETE FROM pgbench_history WHERE ctid = (SELECT min(ctid) FROM pgbench_history WHERE delta <> 0) RETURNING *),
		a AS (UPDATE pgbench_accounts SET abalance = abalance + CASE WHEN aid = (SELECT aid FROM h) THEN -(SELECT delta FROM h) ELSE (SELECT delta FROM h) END
			WHERE aid IN ((SELECT aid FROM h), (SELECT aid % 100000 + 1 FROM h)))
		INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) SELECT tid, bid, aid % 100000 + 1, delta, mtime FROM h`
	// A row split in two (one more row), and a row of delta 0 (one more
	// row, no sum moved): the count catches them too.
	const split = `WITH h AS (DELETE FROM pgbench_history WHERE ctid = (SELECT min(ctid) FROM pgbench_history WHERE delta > 1) RETURNING *)
		INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) SELECT tid, bid, aid, delta / 2, mtime FROM h UNION ALL SELECT tid, bid, aid, delta - delta / 2, mtime FROM h`
	const zero = `INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, 9, 0, now())`
	// A row the run wrote re-dated by three hours: after the table was
	// made (the check's margins), but not within the run.
	const dated = `UPDATE pgbench_history SET mtime = mtime - interval '3 hours' WHERE ctid = (SELECT max(ctid) FROM pgbench_history WHERE delta <> 0)`
	// The fifth retest's (issue 36, (9)): a row the run wrote re-dated
	// three hours back, and a transaction's row dated three hours before
	// the run re-dated into it: as many rows dated within the run as it
	// added. prior is that transaction, made before the run.
	const prior = `INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, 9, 17, localtimestamp - interval '3 hours');
		UPDATE pgbench_accounts SET abalance = abalance + 17 WHERE aid = 9; UPDATE pgbench_tellers SET tbalance = tbalance + 17 WHERE tid = 1;
		UPDATE pgbench_branches SET bbalance = bbalance + 17 WHERE bid = 1`
	const redated = `UPDATE pgbench_history SET mtime = CASE WHEN mtime < localtimestamp - interval '150 minutes' THEN localtimestamp ELSE mtime - interval '3 hours' END
		WHERE ctid IN ((SELECT min(ctid) FROM pgbench_history WHERE mtime < localtimestamp - interval '150 minutes'),
			(SELECT max(ctid) FROM pgbench_history WHERE delta <> 0 AND mtime > localtimestamp - interval '1 hour'))`
	identity := "VIOLATION: the history rows the run added are not the ones its transactions wrote"
	for _, c := range []struct{ builtin, what, pre, sql, want string }{
		{"tpcb-like", "swap", "", swap, identity}, {"simple-update", "swap", "", swap, identity}, {"tpcb-like", "split", "", split, identity}, {"simple-update", "zero", "", zero, identity},
		{"tpcb-like", "dated", "", dated, "VIOLATION: 1 history row the run added not dated within it"},
		{"tpcb-like", "redated both ways", prior, redated, "VIOLATION: the history rows dated before the run"},
	} {
		builtin, swap := c.builtin, c.sql
		t.Run(builtin+"/"+c.what, func(t *testing.T) {
			t.Parallel()
			url := tpcbDatabase(t)
			if c.pre != "" {
				if _, err := pgtest.Conn(t, url).Exec(t.Context(), c.pre); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			wait := writeBeside(ctx, t, url, "SELECT count(*) FROM pgbench_history WHERE delta <> 0", 10, swap)
			r := txload(t.Context(), nil, "run", builtin, "--url", url, "--concurrency", "2", "--duration", "3s", "--progress", "0")
			if err := wait(); err != nil {
				t.Fatalf("the second writer: %v", err)
			}
			if r.code != 1 || !strings.Contains(r.stdout, c.want) {
				t.Errorf("run %s beside a second writer: exit %d, want 1 and %q\n%s\n%s", builtin, r.code, c.want, r.stdout, r.stderr)
			}
			// The sums kept.
			if strings.Contains(r.stdout, "disagree") {
				t.Errorf("the tampering was meant to keep sums and count:\n%s", r.stdout)
			}
		})
	}
}

// The record of the scripts run since init holds the tellers and branches
// at 0 while only select-only and simple-update ran, and lets them move
// once tpcb-like ran: runs one after another, with --init keep, pass their
// audits and the checks; tables pgbench -i made again are held to no
// record and no marker.
func TestBuiltinRecordMixes(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	want := func(code int, args ...string) result {
		t.Helper()
		r := txload(t.Context(), nil, append(args, "--url", url)...)
		if r.code != code {
			t.Fatalf("%s: exit %d, want %d\n%s\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
		}
		return r
	}
	short := []string{"--concurrency", "2", "--duration", "1s", "--progress", "0"}
	want(0, "init", "tpcb")
	want(0, append([]string{"run", "simple-update"}, short...)...)
	want(0, append([]string{"run", "select-only", "--init", "keep"}, short...)...)
	for _, c := range []string{"tpcb", "simple-update", "select-only"} {
		want(0, "check", c)
	}
	conn := pgtest.Conn(t, url)
	move := func(n int) {
		t.Helper()
		if _, err := conn.Exec(t.Context(), "UPDATE pgbench_tellers SET tbalance = tbalance + CASE tid WHEN 1 THEN $1::int ELSE -$1::int END WHERE tid IN (1, 2)", n); err != nil {
			t.Fatal(err)
		}
	}
	move(7)
	if r := want(1, "check", "simple-update"); !strings.Contains(r.stdout, "2 tellers whose tbalance is not init's 0") {
		t.Errorf("tellers moved after simple-update:\n%s", r.stdout)
	}
	move(-7)
	// tpcb-like moves the tellers: simple-update's check no longer holds
	// them at 0, and the tpcb-like run is held to its own changes (the
	// history's simple-update rows name tellers they did not move).
	want(0, append([]string{"run", "tpcb-like", "--init", "keep"}, short...)...)
	want(0, append([]string{"run", "simple-update", "--init", "keep"}, short...)...)
	want(0, append([]string{"run", "tpcb-like", "--init", "keep"}, short...)...)
	// simple-update's history rows name tellers it did not move: after
	// both ran, tpcb-like's check holds the tables to simple-update's rule.
	for _, c := range []string{"tpcb", "simple-update", "tpcb-like"} {
		want(0, "check", c)
	}
	if _, err := conn.Exec(t.Context(), "UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = 1"); err != nil {
		t.Fatal(err)
	}
	if r := want(1, "check", "tpcb-like"); !strings.Contains(r.stdout, "balances disagree: tellers") {
		t.Errorf("a teller changed after the mix:\n%s", r.stdout)
	}
	if _, err := conn.Exec(t.Context(), "UPDATE pgbench_tellers SET tbalance = tbalance - 1 WHERE tid = 1"); err != nil {
		t.Fatal(err)
	}
	// pgbench -i at another scale: new tables, no record, the marker not
	// theirs.
	path, _ := pgtest.Pgbench(t)
	if out, err := exec.Command(path, "-i", "-s", "2", url).CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	want(0, append([]string{"run", "simple-update", "--init", "keep"}, short...)...)
	want(0, "check", "tpcb")
	if out, err := exec.Command(path, "-T", "1", url).CombinedOutput(); err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	want(0, "check", "tpcb")
}

// A run interrupted under load abandons what was in flight: the audit
// counts those transactions among the ones in doubt, by the rows they
// were writing, and still checks which rows the run added.
func TestBuiltinAuditInterrupted(t *testing.T) {
	t.Parallel()
	url := tpcbDatabase(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		conn := pgtest.Conn(t, url)
		var n int64
		for n < 200 && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
			_ = conn.QueryRow(ctx, "SELECT count(*) FROM pgbench_history").Scan(&n)
		}
		cancel()
	}()
	r := txload(ctx, nil, "run", "tpcb-like", "--url", url, "--concurrency", "8", "--duration", "60s", "--progress", "0")
	if r.code != 130 || strings.Contains(r.stdout, "VIOLATION") || !strings.Contains(r.stdout, "history identity:   the rows the run's transactions wrote") {
		t.Errorf("interrupted run: exit %d, want 130, no VIOLATION and the rows identified\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// pgbench's own runs are not recorded in txload_pgbench_builtin: after
// txload's simple-update, PostgreSQL's pgbench running tpcb-like (-n: the
// history kept) moves the tellers and branches, and `check tpcb`, the
// check of any mix of the builtins, passes; so does `check tpcb-like`,
// which then holds the tables to simple-update's rule. Only `check
// simple-update`, which says only it ran, holds them to the record, and
// names check tpcb. (Retest 3's row 8, with pgbench's -t for its -T 2: a
// count of transactions, whatever the machine's load.)
func TestBuiltinCheckAfterOwnPgbench(t *testing.T) {
	t.Parallel()
	path, _ := pgtest.Pgbench(t)
	url := tpcbDatabase(t)
	if r := txload(t.Context(), nil, "run", "simple-update", "--url", url, "--concurrency", "2", "--duration", "2s", "--progress", "0"); r.code != 0 {
		t.Fatalf("run simple-update: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	cmd := exec.Command(path, "-n", "-b", "tpcb-like", "-t", "100", "-c", "2", url)
	cmd.Env = append(os.Environ(), "LANG=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	for _, c := range []struct {
		check string
		code  int
		want  string
	}{
		{"tpcb", 0, "check: ok"},
		{"select-only", 0, "check: ok"},
		{"tpcb-like", 0, "they are held to simple-update's rule"},
		{"simple-update", 1, "after pgbench's own runs, which txload does not record, `txload check tpcb` checks what every builtin keeps"},
	} {
		if r := txload(t.Context(), nil, "check", c.check, "--url", url); r.code != c.code || !strings.Contains(r.stdout, c.want) {
			t.Errorf("check %s after pgbench's tpcb-like: exit %d, want %d and %q\n%s\n%s", c.check, r.code, c.code, c.want, r.stdout, r.stderr)
		}
	}
}

// The checks of pgbench's tables audit them as they are (the scale is the
// number of branches): the flags that shape the tables, and the scripts'
// own, are taken so that one command line serves init, run and check, and
// said to be ignored in one line.
func TestBuiltinCheckSaysIgnoredFlags(t *testing.T) {
	t.Parallel()
	url := tpcbDatabase(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tpcb-like", "--scale", "5"}, "txload: txload check tpcb-like ignores --scale: it reads the settings init recorded in the database\n"},
		{[]string{"simple-update", "--protocol", "prepared", "-D", "x=1"}, "txload: txload check simple-update ignores --define, --protocol: it reads the settings init recorded in the database\n"},
		{[]string{"tpcb", "--scale", "5", "--partitions", "2"}, "txload: txload check tpcb ignores --partitions, --scale: it reads the settings init recorded in the database\n"},
		{[]string{"select-only"}, ""},
	} {
		r := txload(t.Context(), nil, append(append([]string{"check"}, c.args...), "--url", url)...)
		if r.code != 0 {
			t.Fatalf("check %s: exit %d\n%s\n%s", strings.Join(c.args, " "), r.code, r.stdout, r.stderr)
		}
		if c.want == "" && strings.Contains(r.stderr, "ignores") || !strings.Contains(r.stderr, c.want) {
			t.Errorf("check %s: stderr %q, want %q", strings.Join(c.args, " "), r.stderr, c.want)
		}
	}
}

// A history row's mtime is CURRENT_TIMESTAMP in the writer's session time
// zone, which the checks cannot know: pgbench's own -i (server-side) and
// runs at UTC+14, then txload's run at UTC-12 (its audit holds its rows
// to the run in its own session's zone), pass every check, as do runs one
// after another on txload's init.
func TestBuiltinCheckMtimeTimeZones(t *testing.T) {
	t.Parallel()
	path, _ := pgtest.Pgbench(t)
	url := srv.NewDatabase(t)
	pgbench := func(args ...string) {
		t.Helper()
		cmd := exec.Command(path, append(args, url)...)
		cmd.Env = append(os.Environ(), "LANG=C", "PGTZ=Pacific/Kiritimati")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pgbench %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	west := url + "&timezone=Etc/GMT%2B12"
	if !strings.Contains(url, "?") {
		west = url + "?timezone=Etc/GMT%2B12"
	}
	want := func(url string, args ...string) {
		t.Helper()
		if r := txload(t.Context(), nil, append(args, "--url", url)...); r.code != 0 || strings.Contains(r.stdout, "VIOLATION") {
			t.Fatalf("%s: exit %d\n%s\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	short := []string{"--init", "keep", "--concurrency", "2", "--duration", "1s", "--progress", "0"}
	// The rows are dated in the writers' zones, hours either side of UTC.
	dated := func(cond string) {
		t.Helper()
		var n int64
		if err := pgtest.Conn(t, url).QueryRow(t.Context(), "SELECT count(*) FROM pgbench_history WHERE mtime "+cond).Scan(&n); err != nil || n == 0 {
			t.Fatalf("no history row of mtime %s (%v): the time zone was not the writer's", cond, err)
		}
	}
	pgbench("-i", "-I", "dtGvp")
	pgbench("-n", "-t", "50", "-c", "2")
	dated("> (now() AT TIME ZONE 'UTC') + interval '13 hours'")
	want(url, "check", "tpcb")
	want(west, append([]string{"run", "tpcb-like"}, short...)...)
	dated("< (now() AT TIME ZONE 'UTC') - interval '11 hours'")
	want(url, "check", "tpcb")
	want(url, "init", "tpcb", "--drop")
	want(west, append([]string{"run", "tpcb-like"}, short...)...)
	pgbench("-n", "-t", "50", "-c", "2")
	want(url, append([]string{"run", "simple-update"}, short...)...)
	for _, c := range []string{"tpcb", "tpcb-like"} {
		want(west, "check", c)
	}
}

// The database's time zone changed during a clean tpcb-like run (the sixth
// outside retest's false alarm, issue 36): the sessions opened after it,
// the clients' reconnections and the audit's, would date the history in a
// zone 12 hours behind the run's first sessions, and the audit found the
// run's rows "not dated within it". Every session of the run keeps the
// zone its first saw: the clean run passes its audit, and a row re-dated
// beside it is still caught.
func TestBuiltinAuditTimeZoneChanged(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ what, sql, want string }{
		{"clean", "", "check: ok"},
		{"re-dated", `UPDATE pgbench_history SET mtime = mtime - interval '3 hours' WHERE ctid = (SELECT max(ctid) FROM pgbench_history WHERE delta <> 0)`,
			"VIOLATION: 1 history row the run added not dated within it"},
	} {
		t.Run(c.what, func(t *testing.T) {
			t.Parallel()
			url := tpcbDatabase(t)
			conn := pgtest.Conn(t, url)
			ctx := t.Context()
			// Etc/GMT+12 is UTC-12: more than the audit's 2 hours' margin
			// behind the server's zone.
			if off := count(t, url, `SELECT extract(timezone FROM now())::bigint`); off < -9*3600 {
				t.Skipf("the server's zone is %d s from UTC: too near UTC-12 for the test", off)
			}
			done := make(chan result, 1)
			go func() {
				done <- txload(ctx, nil, "run", "tpcb-like", "--url", url, "--concurrency", "2", "--duration", "6s", "--max-tries", "10", "--progress", "0")
			}()
			// until is the history's rows reaching n, or the run's end.
			var r result
			ended := false
			until := func(n int64) {
				t.Helper()
				for !ended {
					var have int64
					if err := conn.QueryRow(ctx, "SELECT count(*) FROM pgbench_history").Scan(&have); err != nil {
						t.Fatal(err)
					}
					if have >= n {
						return
					}
					select {
					case r = <-done:
						ended = true
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
			until(10)
			if _, err := conn.Exec(ctx, `ALTER DATABASE "`+dbName(t, url)+`" SET timezone = 'Etc/GMT+12'`); err != nil {
				t.Fatal(err)
			}
			// The clients connect again, after the change.
			var killed int64
			if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ~* 'pgbench_|^(BEGIN|END)'`).Scan(&killed); err != nil {
				t.Fatal(err)
			}
			at := count(t, url, "SELECT count(*) FROM pgbench_history")
			until(at + 10)
			if c.sql != "" {
				if _, err := conn.Exec(ctx, c.sql); err != nil {
					t.Fatal(err)
				}
			}
			if !ended {
				r = <-done
			}
			if killed == 0 || count(t, url, "SELECT count(*) FROM pgbench_history") < at+10 {
				t.Fatalf("%d clients killed, and the history grew from %d to %d rows after: the run ended before its clients wrote again\n%s",
					killed, at, count(t, url, "SELECT count(*) FROM pgbench_history"), r.stdout)
			}
			code := 0
			if c.sql != "" {
				code = 1
			}
			if r.code != code || !strings.Contains(r.stdout, c.want) {
				t.Errorf("run with the zone changed (%s): exit %d, want %d and %q\n%s\n%s", c.what, r.code, code, c.want, r.stdout, r.stderr)
			}
		})
	}
}
