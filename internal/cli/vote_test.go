package cli

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// The counter variant keeps article.votes equal to the vote rows; check
// verifies it and catches a tampered counter.
func TestVoteCounter(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	js := jsonPath(t)
	r := txload(t.Context(), nil, "run", "vote", "--url", url, "--variant", "counter", "--rate", "200", "--duration", "3s",
		"--articles", "1000", "--write-every", "4", "--distribution", "zipf", "--progress", "0", "--json", js)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "total votes:", "votes counted per article: verified", "check: ok")
	run := readDoc(t, js).Runs[0]
	var writes int64
	for _, op := range allOf(t, run).Ops { // the window and the drain
		if op.Name == "write" {
			writes = op.OK
		}
	}
	conn := pgtest.Conn(t, url)
	var votes, sum int64
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM vote), (SELECT sum(votes) FROM article)`).Scan(&votes, &sum); err != nil {
		t.Fatal(err)
	}
	if votes == 0 || votes != sum || votes != writes {
		t.Fatalf("%d vote rows, article.votes sums to %d, txload committed %d writes", votes, sum, writes)
	}
	if v := run.Check.Values; v["total_votes"] != votes || v["mismatched_articles"] != 0 {
		t.Errorf("report values %v", v)
	}
	c := txload(t.Context(), nil, "check", "vote", "--url", url)
	if c.code != 0 {
		t.Fatalf("check exit %d\n%s\n%s", c.code, c.stdout, c.stderr)
	}
	// After the fact, the identity is said not checked (retest 9's O1).
	mustContain(t, c.stdout, "check: ok", "votes counted per article: verified", "identity:", "not checked after the fact: which vote rows a run wrote")
	if _, err := conn.Exec(context.Background(), `UPDATE article SET votes = votes + 1 WHERE id = 500`); err != nil {
		t.Fatal(err)
	}
	c = txload(t.Context(), nil, "check", "vote", "--url", url)
	if c.code != 1 {
		t.Fatalf("check after tampering exit %d, want 1\n%s", c.code, c.stdout)
	}
	mustContain(t, c.stdout, "VIOLATION: 1 article whose votes disagree with the vote rows (first: article 500)")
}

func TestVoteJoinAndMatview(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"join", "matview"} {
		t.Run(variant, func(t *testing.T) {
			url := srv.NewDatabase(t)
			js := jsonPath(t)
			r := txload(t.Context(), nil, "run", "vote", "--url", url, "--variant", variant, "--rate", "300", "--duration", "3s",
				"--articles", "1000", "--write-every", "3", "--read-batch", "5", "--refresh", "200ms", "--concurrency", "4",
				"--progress", "0", "--json", js)
			if !r.ran() {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			mustContain(t, r.stdout, "total votes:", "votes counted per article: not maintained (join/matview variant)", "check: ok")
			run := readDoc(t, js).Runs[0]
			if len(run.Ops) != 2 || run.Ops[0].Name != "read" || run.Ops[1].Name != "write" || run.Ops[0].OK == 0 || run.Ops[1].OK == 0 {
				t.Fatalf("ops %+v", run.Ops)
			}
			v := run.Check.Values
			if committed := allOf(t, run).Ops[1].OK; v["total_votes"] != committed {
				t.Errorf("server counts %d votes, txload committed %d", v["total_votes"], committed)
			}
			if variant == "matview" {
				mustContain(t, r.stdout, "staleness (votes):", "view age at read:", "view refreshes:")
				// 100 votes/s, refreshed every 200ms: some reads lag.
				if v["view_refreshes"] < 5 || v["staleness_max"] == 0 || v["view_age_mean_us"] <= 0 {
					t.Errorf("matview figures %v\n%s", v, r.stdout)
				}
			} else if strings.Contains(r.stdout, "staleness") {
				t.Errorf("join run reports staleness:\n%s", r.stdout)
			}
			c := txload(t.Context(), nil, "check", "vote", "--url", url)
			if c.code != 0 {
				t.Fatalf("check exit %d\n%s", c.code, c.stdout)
			}
			mustContain(t, c.stdout, "not maintained (join/matview variant)")
		})
	}
}

func TestVoteUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ flag, value string }{
		{"--write-every", "0"},
		{"--zipf-exponent", "0"},
		{"--variant", "cache"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			url := srv.NewDatabase(t)
			r := txload(t.Context(), nil, "run", "vote", "--url", url, "--progress", "0", tc.flag, tc.value)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tc.flag) {
				t.Fatalf("stdout %q, stderr %q: want one stderr line naming %s", r.stdout, r.stderr, tc.flag)
			}
			var n int
			if err := pgtest.Conn(t, url).QueryRow(context.Background(),
				`SELECT count(*) FROM information_schema.tables WHERE table_name IN ('article', 'vote')`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Fatalf("a usage error created %d tables", n)
			}
		})
	}
}

// A vote run at a modest rate offers and completes its target; far beyond
// capacity it reports saturation, with sojourn time far above remote time.
func TestVoteOpenLoopAccuracyAndSaturation(t *testing.T) {
	timingSensitive(t)
	url := srv.NewDatabase(t)
	r := txload(t.Context(), nil, "run", "vote", "--url", url, "--articles", "1000", "--variant", "counter", "--rate", "300",
		"--duration", "4s", "--progress", "0")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rate := func(label string) float64 {
		m := regexp.MustCompile(`(?m)^# ` + label + ` ops/s: ([0-9.]+)$`).FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("no %q line:\n%s", label, r.stdout)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	gen, act := rate("generated"), rate("actual")
	if gen < 300*0.98 || gen > 300*1.02 || act < gen*0.98 || act > gen*1.02 {
		t.Errorf("generated %.2f ops/s (target 300), actual %.2f", gen, act)
	}
	for _, op := range []string{"read", "write"} {
		if !regexp.MustCompile(`(?m)^` + op + ` +99 +[0-9]+ +[0-9]+ +\(all µs\)$`).MatchString(r.stdout) {
			t.Errorf("no %s p99 row:\n%s", op, r.stdout)
		}
	}
	js := jsonPath(t)
	// A fresh database: join votes do not maintain article.votes, which the
	// counter run's audit would rightly flag.
	r = txload(t.Context(), nil, "run", "vote", "--url", srv.NewDatabase(t), "--articles", "1000", "--variant", "join", "--rate", "100000",
		"--concurrency", "2", "--duration", "30s", "--max-lag", "1s", "--progress", "0", "--json", js)
	if r.code != 1 { // saturated: not the rate asked
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "SATURATED: the target of 100000 ops/s is beyond what the database sustains")
	read := readDoc(t, js).Runs[0].Ops[0]
	if read.Response.P50 < 10*read.Service.P50 {
		t.Errorf("read sojourn p50 %d µs, remote p50 %d µs: want sojourn ≫ remote", read.Response.P50, read.Service.P50)
	}
}

// Runs of the counter and join variants on one database, in either order,
// leave counters that count only the counter run's votes: neither the runs
// nor check call that a mismatch, and a counter above its vote rows still
// is one.
func TestVoteMixedVariants(t *testing.T) {
	t.Parallel()
	for _, order := range [][]string{{"counter", "join"}, {"join", "counter"}} {
		t.Run(strings.Join(order, "-then-"), func(t *testing.T) {
			t.Parallel()
			url := srv.NewDatabase(t)
			for i, v := range order {
				args := []string{"run", "vote", "--url", url, "--variant", v, "--articles", "1000", "--write-every", "2",
					"--concurrency", "2", "--duration", "1s", "--progress", "0"}
				if i > 0 {
					args = append(args, "--init", "keep")
				}
				if r := txload(t.Context(), nil, args...); r.code != 0 {
					t.Fatalf("run --variant %s: exit %d\n%s\n%s", v, r.code, r.stdout, r.stderr)
				}
			}
			c := txload(t.Context(), nil, "check", "vote", "--url", url)
			if c.code != 0 {
				t.Fatalf("check: exit %d\n%s", c.code, c.stdout)
			}
			mustContain(t, c.stdout, "votes counted per article: at most the vote rows", "(runs: counter, join;", "check: ok")
			if _, err := pgtest.Conn(t, url).Exec(t.Context(), `UPDATE article SET votes = votes + 1000 WHERE id = 5`); err != nil {
				t.Fatal(err)
			}
			c = txload(t.Context(), nil, "check", "vote", "--url", url)
			if c.code != 1 {
				t.Fatalf("check of a counter above its vote rows: exit %d, want 1\n%s", c.code, c.stdout)
			}
			mustContain(t, c.stdout, "VIOLATION: 1 article whose votes are more than their vote rows")
		})
	}
}

// A second writer during a run that duplicates one vote and deletes
// another (retest 3, row 1), the counters kept consistent, keeps the row
// count: the run's audit holds WHICH rows the run added (a sum of their
// hashes, seeded afresh by the run) and fails it. A clean run on the same
// tables afterwards, and one whose connections are killed, pass.
func TestVoteAuditSecondWriter(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"counter", "join"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			url := srv.NewDatabase(t)
			run := func(args ...string) result {
				return txload(t.Context(), nil, append([]string{"run", "vote", "--url", url, "--variant", v, "--articles", "1000",
					"--write-every", "2", "--concurrency", "2", "--duration", "3s", "--progress", "0"}, args...)...)
			}
			swap := `WITH d AS (DELETE FROM vote WHERE ctid = (SELECT min(ctid) FROM vote) RETURNING article_id),
				dup AS (INSERT INTO vote SELECT article_id, user_id FROM vote WHERE ctid = (SELECT max(ctid) FROM vote) RETURNING article_id)`
			if v == "counter" {
				swap += ` UPDATE article SET votes = votes + (SELECT count(*) FROM dup WHERE dup.article_id = article.id) - (SELECT count(*) FROM d WHERE d.article_id = article.id)
				WHERE id IN (SELECT article_id FROM d UNION SELECT article_id FROM dup)`
			} else {
				swap += ` SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM dup)`
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			// Once the run's votes are there (it summed the table before).
			wait := writeBeside(ctx, t, url, "SELECT count(*) FROM vote", 10, swap)
			r := run("--init", "fresh")
			if err := wait(); err != nil {
				t.Fatalf("the second writer: %v", err)
			}
			if r.code != 1 || !strings.Contains(r.stdout, "VIOLATION: vote rows: the rows the run added are not the votes it saw commit") {
				t.Fatalf("run beside a second writer: exit %d, want 1 and the identity's VIOLATION\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout, "more than txload saw commit") || strings.Contains(r.stdout, "fewer") {
				t.Errorf("the tampering was meant to keep the count:\n%s", r.stdout)
			}
			t.Log(r.stdout[strings.Index(r.stdout, "articles:"):])
			// The same tables, a clean run: its audit holds.
			if r := run("--init", "keep"); r.code != 0 || !strings.Contains(squeeze(r.stdout), "vote identity: the rows the run added are the votes it saw commit") {
				t.Fatalf("clean run after: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// Connections killed during a run leave votes whose commit was in flight:
// the audit of the rows the run added explains the table by the votes
// that committed and some of those in doubt, and accuses nothing.
func TestVoteAuditConnectionsKilled(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"counter", "join"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			url := srv.NewDatabase(t)
			if r := txload(t.Context(), nil, "init", "vote", "--url", url, "--articles", "1000"); r.code != 0 {
				t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan result, 1)
			go func() {
				done <- txload(ctx, nil, "run", "vote", "--url", url, "--init", "keep", "--variant", v, "--articles", "1000",
					"--write-every", "1", "--concurrency", "4", "--duration", "2s", "--progress", "0")
			}()
			conn := pgtest.Conn(t, url)
			var r result
			// One connection at a time, every 300 ms: a few votes in
			// doubt, whose subsets the audit tries (41 in doubt, all four
			// killed every 150 ms on a loaded machine, were more than the
			// 2^20 it tries, and it counted only).
			tick := time.NewTicker(300 * time.Millisecond)
			defer tick.Stop()
		wait:
			for {
				select {
				case r = <-done:
					break wait
				case <-tick.C:
					// The clients', once they vote: not the run's setup.
					_, _ = conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM (SELECT pid FROM pg_stat_activity
						WHERE datname = current_database() AND pid <> pg_backend_pid() AND (query LIKE 'INSERT INTO vote%' OR query = 'COMMIT') LIMIT 1) c`)
				}
			}
			if r.code != 0 || !strings.Contains(squeeze(r.stdout), "vote identity: the rows the run added are the votes it saw commit") {
				t.Fatalf("run with its connections killed: exit %d, want 0 and the identity held\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			t.Log(r.stdout[strings.Index(r.stdout, "ambiguous:"):])
		})
	}
}

// article_votes redefined, still a materialized view of the same columns,
// counting 1000 more votes for one article (the sixth outside retest): a
// matview run's REFRESH keeps the forged definition, and its audit names
// it. A role that may not create temporary tables (where the audit prints
// init's definition to compare) gets a line saying it was not compared,
// and no violation; a scratch view refused otherwise (an event trigger, the
// eighth outside retest) is an error of the check, never a skip.
func TestVoteViewRedefined(t *testing.T) {
	t.Parallel()
	t.Run("matview run", func(t *testing.T) {
		t.Parallel()
		url := srv.NewDatabase(t)
		if r := txload(t.Context(), nil, "init", "vote", "--url", url, "--articles", "1000"); r.code != 0 {
			t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
		}
		conn := pgtest.Conn(t, url)
		if _, err := conn.Exec(t.Context(), `DROP MATERIALIZED VIEW article_votes;
			CREATE MATERIALIZED VIEW article_votes AS
				SELECT article_id, count(*)::BIGINT + CASE WHEN article_id = 910 THEN 1000 ELSE 0 END AS votes, now() AS refreshed_at FROM vote GROUP BY article_id
				UNION ALL SELECT 0, count(*)::BIGINT, now() FROM vote;
			CREATE UNIQUE INDEX article_votes_article_id ON article_votes (article_id)`); err != nil {
			t.Fatal(err)
		}
		r := txload(t.Context(), nil, "run", "vote", "--url", url, "--init", "keep", "--variant", "matview", "--articles", "1000",
			"--write-every", "2", "--concurrency", "2", "--duration", "1s", "--progress", "0")
		if r.code != 1 || !strings.Contains(r.stdout, "VIOLATION: article_votes is not the view init makes, as the server prints both") ||
			!strings.Contains(r.stdout, "CASE WHEN (vote.article_id = 910) THEN 1000 ELSE 0 END") {
			t.Errorf("matview run on a redefined view: exit %d, want 1 and a VIOLATION naming its definition\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("no temporary tables", func(t *testing.T) {
		t.Parallel()
		url := srv.NewDatabase(t)
		if r := txload(t.Context(), nil, "run", "vote", "--url", url, "--variant", "matview", "--articles", "1000",
			"--write-every", "2", "--concurrency", "2", "--duration", "1s", "--progress", "0"); r.code != 0 {
			t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		notemp := loginRole(t, url, "vote_notemp", `GRANT SELECT ON ALL TABLES IN SCHEMA public TO %[1]s;
			REVOKE TEMP ON DATABASE "%[2]s" FROM PUBLIC`)
		r := txload(t.Context(), nil, "check", "vote", "--url", notemp)
		if r.code != 0 || !strings.Contains(r.stdout, "article_votes' definition: not compared with init's: the role may not make the scratch view that prints init's (the role has no TEMP privilege on the database)") {
			t.Errorf("check vote without TEMP: exit %d, want 0 and the line saying the definition was not compared\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("scratch view refused by an event trigger", func(t *testing.T) {
		t.Parallel()
		url := srv.NewDatabase(t)
		if r := txload(t.Context(), nil, "init", "vote", "--url", url, "--articles", "1000"); r.code != 0 {
			t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
		}
		// The rigged view, and an event trigger (database-wide, in this
		// test's own database) refusing only txload's scratch view.
		if _, err := pgtest.Conn(t, url).Exec(t.Context(), `DROP MATERIALIZED VIEW article_votes;
			CREATE MATERIALIZED VIEW article_votes AS
				SELECT article_id, count(*)::BIGINT + CASE WHEN article_id = 910 THEN 1000 ELSE 0 END AS votes, now() AS refreshed_at FROM vote GROUP BY article_id
				UNION ALL SELECT 0, count(*)::BIGINT, now() FROM vote;
			CREATE UNIQUE INDEX article_votes_article_id ON article_votes (article_id);
			CREATE FUNCTION public.noview() RETURNS event_trigger LANGUAGE plpgsql AS $$
			BEGIN IF current_query() ~ 'txload_article_votes' THEN RAISE EXCEPTION 'temporary views are disabled here'; END IF; END $$;
			CREATE EVENT TRIGGER noview ON ddl_command_start WHEN TAG IN ('CREATE VIEW') EXECUTE FUNCTION public.noview()`); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"check", "vote", "--url", url},
			{"run", "vote", "--url", url, "--init", "keep", "--variant", "matview", "--articles", "1000",
				"--write-every", "2", "--concurrency", "2", "--duration", "1s", "--progress", "0"},
		} {
			r := txload(t.Context(), nil, args...)
			if out := r.stdout + r.stderr; r.code == 0 || strings.Contains(out, "not compared") ||
				!strings.Contains(out, "making a scratch view of init's definition: ERROR: temporary views are disabled here") {
				t.Errorf("%s with the scratch view refused by an event trigger: exit %d, want non-zero and the refusal shown\n%s\n%s", args[0], r.code, r.stdout, r.stderr)
			}
		}
	})
}
