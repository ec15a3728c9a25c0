package cli

import (
	"context"
	"fmt"
	neturl "net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// A second writer tampers with a vote or tpcb-like run's rows, the table
// gaining rows (vote: one deleted, twelve forged; tpcb-like: one
// transaction deleted and undone, one forged and a row of delta 0), then
// holds the table the run writes locked across the run's end, with 32
// and 24 clients waiting on it. The drain cancels them and reads their
// answers: none committed, so none is in doubt, and the rows gained are a
// violation. On the code before, every one of them was in doubt, more
// subsets than the audit tries (vote) or more in doubt than it tries
// (tpcb-like): "not checked", exit 0 (the sixth retest's (2)). Without
// the tampering, the same lock leaves 0 abandoned and the run passes.
func TestLockAcrossEndNoDoubt(t *testing.T) {
	t.Parallel()
	const forgeVotes = `DELETE FROM vote WHERE ctid = (SELECT min(ctid) FROM vote);
		INSERT INTO vote SELECT 7, 1000 + g FROM generate_series(1, 12) g`
	// In tpcb-like's order: accounts, tellers, branches.
	const forgeTxn = `CREATE TEMP TABLE gone ON COMMIT DROP AS SELECT * FROM pgbench_history WHERE ctid = (SELECT max(ctid) FROM pgbench_history);
		DELETE FROM pgbench_history WHERE ctid = (SELECT max(ctid) FROM pgbench_history);
		UPDATE pgbench_accounts a SET abalance = a.abalance - g.delta FROM gone g WHERE a.aid = g.aid;
		UPDATE pgbench_accounts SET abalance = abalance - 4000 WHERE aid = 17;
		UPDATE pgbench_tellers t SET tbalance = t.tbalance - g.delta FROM gone g WHERE t.tid = g.tid;
		UPDATE pgbench_tellers SET tbalance = tbalance - 4000 WHERE tid = 3;
		UPDATE pgbench_branches b SET bbalance = b.bbalance - g.delta FROM gone g WHERE b.bid = g.bid;
		UPDATE pgbench_branches SET bbalance = bbalance - 4000 WHERE bid = 1;
		INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 17, -4000, now()), (3, 1, 17, 0, now())`
	for _, tc := range []struct {
		name, count, tamper, lock string
		db                        func(*testing.T) string
		args                      []string
	}{
		{"vote", "SELECT count(*) FROM vote", forgeVotes, "LOCK TABLE vote IN ACCESS EXCLUSIVE MODE",
			func(t *testing.T) string {
				url := srv.NewDatabase(t)
				if r := txload(t.Context(), nil, "init", "vote", "--url", url, "--articles", "2000"); r.code != 0 {
					t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
				}
				return url
			},
			[]string{"vote", "--variant", "join", "--articles", "2000", "--write-every", "1", "--concurrency", "32", "--init", "keep"}},
		{"tpcb-like", "SELECT count(*) FROM pgbench_history", forgeTxn, "LOCK TABLE pgbench_accounts IN ACCESS EXCLUSIVE MODE",
			tpcbDatabase, []string{"tpcb-like", "--concurrency", "24"}},
	} {
		for _, tamper := range []bool{true, false} {
			name := tc.name
			if !tamper {
				name += "/clean"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				url := tc.db(t)
				conn := pgtest.Conn(t, url)
				ctx := t.Context()
				done := beside(ctx, conn, tc.count, 10, func() (bool, error) {
					if tamper {
						// Tried again on a deadlock with the run.
						if _, err := conn.Exec(ctx, "BEGIN; "+tc.tamper+"; COMMIT"); err != nil {
							_, _ = conn.Exec(ctx, "ROLLBACK")
							return true, nil
						}
					}
					// Held past the run's end (3 s) and its drain
					// (--drain-timeout 500ms), then let go.
					_, err := conn.Exec(ctx, "BEGIN; "+tc.lock+"; SELECT pg_sleep(6); COMMIT")
					return false, err
				})
				r := txload(ctx, nil, append(append([]string{"run"}, tc.args...), "--url", url, "--progress", "0",
					"--duration", "3s", "--drain-timeout", "500ms")...)
				if err := <-done; err != nil {
					t.Fatalf("the second writer did not lock (and tamper) during the run: %v\n%s", err, r.stdout)
				}
				out := squeeze(r.stdout)
				t.Log(out[strings.Index(out, "drain:"):])
				if !regexp.MustCompile(`drain: \d+ operations? in flight when the window ended, not in the figures below: \d+ committed and [1-9]\d* failed in the [^,]+, 0 abandoned`).MatchString(out) {
					t.Errorf("the operations waiting on the lock at the drain deadline were not all failed, none abandoned:\n%s", r.stdout)
				}
				if !tamper {
					if r.code != 0 || strings.Contains(out, "not checked") {
						t.Fatalf("clean run behind a lock: exit %d, want 0 and the identity checked\n%s\n%s", r.code, r.stdout, r.stderr)
					}
					return
				}
				if r.code != 1 || !strings.Contains(out, "VIOLATION") {
					t.Fatalf("run beside a second writer that added rows: exit %d, want 1 and a VIOLATION\n%s\n%s", r.code, r.stdout, r.stderr)
				}
			})
		}
	}
}

// The seventh retest's O4, as the tables' owner: a deferred constraint
// trigger holds every vote's COMMIT, swallowing the drain's cancel; a
// writer the trigger lets by deletes a vote and forges eight, and the held
// votes would fail after the run. With 48 clients the held votes are more
// than the identity's subsets reach (40): the run must end their sessions
// and ask whether they committed, so that none is in doubt and the forged
// rows are a violation. On the code before, the 48 were abandoned (outcome
// unknown): "not checked", exit 0. Where txload cannot end the sessions
// (a pooler, or a URL of several hosts, here 127.0.0.1 and localhost) the 48
// stay in doubt, and the audit reads which of them have a row (none: they
// are held): the identity is checked all the same. It was "not checked",
// exit 0. When the writer also copies 44 of the held votes (their content
// is all their hash is made of) and deletes 22, more than 40 in doubt have
// a row, their subsets of 23 are too many, and the identity cannot be
// checked: that fails the audit (it said "not checked" over check: ok,
// the retry of retest 8b).
func TestCommitsHeldPastEnd(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name           string
		direct, copied bool
	}{{"direct", true, false}, {"two hosts", false, false}, {"two hosts, held votes copied", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			commitsHeldPastEnd(t, c.direct, c.copied) // one after the other: 48 held sessions each
		})
	}
}

func commitsHeldPastEnd(t *testing.T, direct, copied bool) {
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "vote", "--url", url, "--articles", "2000"); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	conn := pgtest.Conn(t, url)
	ctx := t.Context()
	if _, err := conn.Exec(ctx, `CREATE SCHEMA zz; CREATE TABLE zz.gate (v text NOT NULL); INSERT INTO zz.gate VALUES ('pass');
		CREATE FUNCTION zz.hold() RETURNS trigger LANGUAGE plpgsql AS $$ DECLARE g text; BEGIN
			IF current_setting('application_name') = 'atk' THEN RETURN NULL; END IF;
			-- What a held vote wrote, for any session to read.
			PERFORM set_config('application_name', 'h:' || NEW.article_id || ':' || NEW.user_id, true);
			LOOP SELECT v INTO g FROM zz.gate; EXIT WHEN g <> 'hold';
				BEGIN PERFORM pg_sleep(0.05); EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP;
			IF g = 'fail' THEN RAISE EXCEPTION 'gate'; END IF; RETURN NULL; END $$;
		CREATE CONSTRAINT TRIGGER zz_hold AFTER INSERT ON vote DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION zz.hold()`); err != nil {
		t.Fatal(err)
	}
	if copied {
		// Votes from before the run, 22 of which the writer deletes: the
		// count's 23 of the 44 with a row, however few the run commits.
		if _, err := conn.Exec(ctx, `INSERT INTO vote SELECT 1999, g FROM generate_series(1, 100) g`); err != nil {
			t.Fatal(err)
		}
	}
	// The held votes fail once the run is over (and before the database
	// is dropped).
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), "UPDATE zz.gate SET v = 'fail'"); err != nil {
			t.Error(err)
		}
	}()
	done := beside(ctx, conn, "SELECT count(*) FROM vote", 10, func() (bool, error) {
		if _, err := conn.Exec(ctx, "UPDATE zz.gate SET v = 'hold'"); err != nil {
			return false, err
		}
		time.Sleep(300 * time.Millisecond)
		copies := ""
		if copied {
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				var n int
				if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'h:%'`).Scan(&n); err != nil {
					return false, err
				}
				if n >= 44 {
					break
				}
				if time.Now().After(deadline) {
					return false, fmt.Errorf("only %d votes held", n)
				}
			}
			copies = `INSERT INTO vote SELECT split_part(application_name, ':', 2)::bigint, split_part(application_name, ':', 3)::bigint
				FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'h:%' LIMIT 44;`
		}
		// 8 forged and 1 deleted: within the count's reach of 48 in doubt.
		// With 44 copies, 22 deleted and 1 forged: the count says 23 of
		// the 44 with a row committed, and their subsets are too many.
		forged, deleted := 8, 1
		if copied {
			forged, deleted = 1, 22
		}
		_, err := conn.Exec(ctx, `SET application_name = 'atk'; BEGIN; `+copies+`
			DELETE FROM vote WHERE ctid IN (SELECT ctid FROM vote WHERE article_id = 1999 OR NOT `+strconv.FormatBool(copied)+` ORDER BY ctid LIMIT `+strconv.Itoa(deleted)+`);
			INSERT INTO vote SELECT 7, 1000 + g FROM generate_series(1, `+strconv.Itoa(forged)+`) g; COMMIT`)
		return false, err
	})
	runURL := url
	if !direct {
		u, err := neturl.Parse(url)
		if err != nil {
			t.Fatal(err)
		}
		u.Host += ",localhost:" + u.Port() // another host's name: nothing tells txload it is the same server
		runURL = u.String()
	}
	r := txload(ctx, nil, "run", "vote", "--variant", "join", "--articles", "2000", "--write-every", "1", "--concurrency", "48",
		"--init", "keep", "--url", runURL, "--progress", "0", "--duration", "3s", "--drain-timeout", "500ms")
	if err := <-done; err != nil {
		t.Fatalf("the second writer did not hold the commits and forge during the run: %v\n%s", err, r.stdout)
	}
	out := squeeze(r.stdout)
	switch reaped := strings.Contains(out, "its backend was terminated and its transaction did not commit") && strings.Contains(out, " 0 abandoned"); {
	case direct && !reaped:
		t.Fatalf("the votes held in their COMMIT were not settled by ending their sessions (or none was held: the test did not make the doubt it is about)\n%s", r.stdout)
	case !direct && (reaped || !regexp.MustCompile(`(4[1-8]) abandoned`).MatchString(out)):
		t.Fatalf("want more than 40 votes abandoned, their sessions not ended (the test did not make the doubt it is about)\n%s", r.stdout)
	}
	switch {
	case copied && (r.code != 1 || !strings.Contains(out, "VIOLATION: votes: the rows the run added cannot be told from rows forged in their place")):
		t.Fatalf("run beside a writer that held the commits, copied 44 and forged votes: exit %d, want 1 and the identity's failure\n%s\n%s", r.code, r.stdout, r.stderr)
	case !copied && (r.code != 1 || !strings.Contains(out, "VIOLATION") || strings.Contains(out, "NOT CHECKED")):
		t.Fatalf("run beside a writer that held the commits and forged votes: exit %d, want 1, a VIOLATION and the identity checked\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Log(out[strings.Index(out, "drain:"):])
}
