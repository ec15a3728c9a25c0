package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	neturl "net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/report"
	"github.com/txload/txload/workload/pgio"
)

// pgioInit loads pgio's tables into a fresh database and returns its URL.
func pgioInit(t *testing.T, args ...string) string {
	t.Helper()
	url := srv.NewDatabase(t)
	r := txload(t.Context(), nil, append([]string{"init", "pgio", "--url", url}, args...)...)
	if r.code != 0 {
		t.Fatalf("init exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stderr, "layout: as pgio's")
	return url
}

// pgioRun runs pgio and returns its report's values and the engine's
// counts of each operation.
func pgioRun(t *testing.T, url string, args ...string) (result, map[string]int64, map[string]int64) {
	t.Helper()
	r, run := pgioRunDoc(t, url, args...)
	ops := map[string]int64{}
	for _, op := range run.Ops {
		ops[op.Name] = op.OK
	}
	return r, run.Check.Values, ops
}

// pgioRunDoc runs pgio and returns the run's JSON document.
func pgioRunDoc(t *testing.T, url string, args ...string) (result, report.RunDoc) {
	t.Helper()
	js := jsonPath(t)
	r := txload(t.Context(), nil, append([]string{"run", "pgio", "--url", url, "--json", js}, args...)...)
	if r.code != 0 {
		t.Fatalf("run exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	run := readDoc(t, js).Runs[0]
	if run.Check == nil {
		t.Fatalf("no pgio report in the JSON\n%s", r.stdout)
	}
	return r, run
}

// pssBlocks sums what pg_stat_statements counted for pgio's statements in
// the database of url: blocks and calls.
func pssBlocks(t *testing.T, conn *pgx.Conn) (blocks, calls int64) {
	t.Helper()
	if err := conn.QueryRow(context.Background(), `SELECT COALESCE(sum(shared_blks_hit + shared_blks_read), 0)::BIGINT, COALESCE(sum(calls), 0)::BIGINT
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND query ~ '^(SELECT|UPDATE)' AND query ~ 'pgio1 ' AND query ~ 'mykey BETWEEN'`).Scan(&blocks, &calls); err != nil {
		t.Fatalf("reading pg_stat_statements: %v", err)
	}
	// This session's own reads go to pg_stat_database now, not into the
	// next run's period.
	if _, err := conn.Exec(context.Background(), "SELECT pg_stat_force_next_flush()"); err != nil {
		t.Fatal(err)
	}
	return blocks, calls
}

func scratchSum(t *testing.T, conn *pgx.Conn, tables int) int64 {
	t.Helper()
	var total int64
	for i := 1; i <= tables; i++ {
		var s int64
		if err := conn.QueryRow(context.Background(), fmt.Sprintf("SELECT sum(scratch)::BIGINT FROM pgio%d", i)).Scan(&s); err != nil {
			t.Fatal(err)
		}
		total += s
	}
	return total
}

// After init --scale 2000: 2000 rows, one row per block, keys uncorrelated
// with heap order, an index on mykey; a second init keeps them.
func TestPgioInitLayout(t *testing.T) {
	t.Parallel()
	url := pgioInit(t, "--scale", "2000")
	conn := pgtest.Conn(t, url)
	ctx := context.Background()
	var rows, distinct, lo, hi, pages int64
	var corr float64
	var fillfactor, index string
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT mykey), min(mykey), max(mykey) FROM pgio1`).Scan(&rows, &distinct, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if rows != 2000 || distinct != 2000 || lo != 1 || hi != 2000 {
		t.Fatalf("%d rows, %d keys from %d to %d; want keys 1..2000 once each", rows, distinct, lo, hi)
	}
	if err := conn.QueryRow(ctx, `SELECT c.relpages::BIGINT, array_to_string(c.reloptions, ','),
		(SELECT correlation FROM pg_stats WHERE tablename = 'pgio1' AND attname = 'mykey'),
		(SELECT indexdef FROM pg_indexes WHERE tablename = 'pgio1')
		FROM pg_class c WHERE c.relname = 'pgio1'`).Scan(&pages, &fillfactor, &corr, &index); err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(pages-rows)) > 0.05*float64(rows) {
		t.Errorf("relpages %d for %d rows: want about one row per block", pages, rows)
	}
	if math.Abs(corr) >= 0.1 {
		t.Errorf("correlation of mykey with heap order %.3f, want |c| < 0.1", corr)
	}
	if fillfactor != "fillfactor=10" || !strings.Contains(index, "(mykey)") {
		t.Errorf("reloptions %q, index %q", fillfactor, index)
	}
	// Vacuumed by init: autovacuum has no pass to make over the freshly
	// loaded table during the first measured run.
	var unvacuumed int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_user_tables WHERE relname ~ '^pgio[0-9]+$' AND last_vacuum IS NULL`).Scan(&unvacuumed); err != nil {
		t.Fatal(err)
	}
	if unvacuumed != 0 {
		t.Errorf("%d pgio tables not vacuumed by init", unvacuumed)
	}
	r := txload(t.Context(), nil, "init", "pgio", "--url", url)
	if r.code != 0 || !strings.Contains(r.stderr, "pgio schema kept") {
		t.Fatalf("second init: exit %d\n%s", r.code, r.stderr)
	}
	r = txload(t.Context(), nil, "init", "pgio", "--url", url, "--scale", "4000")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--drop recreates them") {
		t.Fatalf("init of a larger scale over a smaller one: exit %d\n%s", r.code, r.stderr)
	}
}

// Bad input gets one line naming the flag, exit 2, and the database is not
// touched.
func TestPgioBadInput(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "pgio", "--update-pct", "150"}, "--update-pct must be between 0 and 100, got 150"},
		{[]string{"run", "pgio", "--work-unit", "0"}, "--work-unit must be at least 1 row, got 0"},
		{[]string{"run", "pgio", "--scale", "2000", "--work-unit", "3000"}, "--work-unit 3000 is too large for --scale 2000: pgio's range (BETWEEN k AND k+3000, k from 1 to scale-3000-1) needs a work unit of at most 1998"},
		{[]string{"run", "pgio", "--scale", "2000", "--work-unit", "1999"}, "needs a work unit of at most 1998 (--range exact reads up to the whole table)"},
		{[]string{"run", "pgio", "--scale", "2000", "--work-unit", "2001", "--range", "exact"}, "--work-unit 2001 is larger than --scale (2000 rows per table)"},
		{[]string{"run", "pgio", "--commit", "transaction"}, `--commit "transaction" is not allowed (allowed: statement, run)`},
		{[]string{"run", "pgio", "--range", "all"}, `--range "all" is not allowed (allowed: pgio, exact)`},
		{[]string{"run", "pgio", "--scale", "1X"}, `--scale "1X": give a number of 8 KiB blocks (2000) or a size with K, M, G or T`},
		{[]string{"init", "pgio", "--scale", "1X"}, `--scale "1X": give a number of 8 KiB blocks`},
		{[]string{"init", "pgio", "--scale", "0"}, `--scale "0": must be at least 1 block`},
		{[]string{"init", "pgio", "--scale", "-8G"}, `--scale "-8G": must be positive`},
		{[]string{"init", "pgio", "--scale", "99999999999999999999"}, "too large"},
		{[]string{"run", "pgio", "--mode", "fast"}, `--mode "fast" is not allowed (allowed: auto, server, client)`},
		{[]string{"run", "pgio", "--sessions-per-table", "0"}, "--sessions-per-table must be between 1 and 1000"},
		{[]string{"init", "pgio", "--tables", "0"}, "--tables must be between 1 and 8192"},
	} {
		t.Run(strings.Join(tc.args[2:], " "), func(t *testing.T) {
			r := txload(t.Context(), nil, append(tc.args, "--url", url)...)
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("stderr = %q, want one line containing %q", r.stderr, tc.want)
			}
		})
	}
	mustHaveNoTables(t, url)
}

// mustHaveNoTables fails t if the database of url holds a table: what a
// refusal must leave.
func mustHaveNoTables(t *testing.T, url string) {
	t.Helper()
	var n int
	if err := pgtest.Conn(t, url).QueryRow(context.Background(),
		`SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("a refused command created %d tables", n)
	}
}

// A read-only run: the logical I/Os txload reports agree with what
// pg_stat_statements counted for its statements, within 1%, in both modes,
// and pg_stat_database's blocks hold them (at most 3% more).
// A small work unit makes the index blocks count: pgio's nominal count (a
// work unit of blocks per statement) is far from them.
func TestPgioLIOPSAgreesWithStatements(t *testing.T) {
	t.Parallel()
	url := pgioInit(t, "--scale", "2000")
	conn := pgtest.Conn(t, url)
	if _, err := conn.Exec(context.Background(), "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		t.Fatal(err)
	}
	// Vacuumed and analyzed after the load: no autovacuum worker reads
	// the tables during a run (pg_stat_database counted 4.3% more blocks
	// than the statements under CI's load, a worker's among them).
	if _, err := conn.Exec(context.Background(), "VACUUM ANALYZE"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"server", "client"} {
		t.Run(mode, func(t *testing.T) {
			before, callsBefore := pssBlocks(t, conn)
			r, v, ops := pgioRun(t, url, "--mode", mode, "--work-unit", "16", "--duration", "2s", "--progress", "0")
			after, callsAfter := pssBlocks(t, conn)
			pss, calls := after-before, callsAfter-callsBefore
			if v["stmt_dealloc"] != 0 {
				t.Fatalf("pg_stat_statements evicted entries %d times during the run", v["stmt_dealloc"])
			}
			// The server counts the statements in flight at the window's
			// end too: the drain, which txload counts apart.
			stmts, drain := v["select_statements"], v["select_drain_statements"]
			if stmts == 0 || v["update_statements"] != 0 || calls != stmts+drain || ops["select"] != stmts {
				t.Fatalf("%d selects reported and %d in the drain, %d counted by pg_stat_statements, %d by the engine; %d updates", stmts, drain, calls, ops["select"], v["update_statements"])
			}
			if v["select_rows"] != 17*stmts {
				t.Errorf("%d rows for %d statements of 17 (pgio's BETWEEN k AND k+16)", v["select_rows"], stmts)
			}
			// The run's own figures match pg_stat_statements within 1%;
			// pg_stat_database's hold those blocks and what else the
			// database read meanwhile (catalogs, txload's own queries: up
			// to 1.4% more seen under CI's load), so 3% above.
			elapsed := float64(v["elapsed_us"]) / 1e6
			for _, key := range []string{"liops", "stmt_liops", "db_liops"} {
				blocks := float64(v[key]) * elapsed
				rel := (blocks - float64(pss)) / float64(pss)
				if over := map[bool]float64{false: 0.01, true: 0.03}[key == "db_liops"]; rel < -0.01 || rel > over {
					t.Errorf("%s %d/s over %.3fs is %.0f blocks; pg_stat_statements counted %d (%+.2f%%)", key, v[key], elapsed, blocks, pss, 100*rel)
				}
			}
			if db := v["db_blks_hit"] + v["db_blks_read"]; db < pss || float64(db-pss)/float64(pss) > 0.03 {
				t.Errorf("pg_stat_database: %d blocks; pg_stat_statements: %d", db, pss)
			}
			// pgio's own summary line, from pg_stat_database: RIOPS and
			// CACHE_HITS/s add up to the database's LIOPS.
			if kit := float64(v["riops"]+v["cache_hits_per_s"]) * elapsed; kit < 0.99*float64(pss) || kit > 1.03*float64(pss) {
				t.Errorf("RIOPS %d + CACHE_HITS/s %d over %.3fs is %.0f blocks; pg_stat_statements counted %d", v["riops"], v["cache_hits_per_s"], elapsed, kit, pss)
			}
			mustContain(t, r.stdout, fmt.Sprintf("RIOPS >%d< CACHE_HITS/s >%d<", v["riops"], v["cache_hits_per_s"]))
			if nominal := v["select_blk_touch_cnt"]; math.Abs(float64(nominal-pss))/float64(pss) < 0.05 {
				t.Errorf("pgio's nominal count %d is within 5%% of the measured %d: the test cannot tell them apart", nominal, pss)
			}
			mustContain(t, r.stdout, "headline:", "LIOPS", "the run's statements, pg_stat_statements", "pgio counters:", "loop_iterations")
		})
	}
}

// A scale that fits in shared_buffers, after a warm-up: every block is a
// hit. The counters of the measured period are cut exactly at the end of
// the warm-up: pg_stat_statements' calls equal txload's statements.
func TestPgioHitRatioAfterWarmup(t *testing.T) {
	t.Parallel()
	url := pgioInit(t, "--scale", "2000")
	for _, mode := range []string{"server", "client"} {
		t.Run(mode, func(t *testing.T) {
			r, v, _ := pgioRun(t, url, "--mode", mode, "--warmup", "500ms", "--duration", "2s", "--update-pct", "10", "--sessions-per-table", "2")
			for _, key := range []string{"stmt_hit_ratio_ppm", "db_hit_ratio_ppm"} {
				if v[key] < 990000 {
					t.Errorf("%s = %d, want at least 99%%", key, v[key])
				}
			}
			for _, k := range []string{"select", "update"} {
				if v[k+"_warmup_statements"] == 0 || v[k+"_calls"] != v[k+"_statements"]+v[k+"_drain_statements"] {
					t.Errorf("%s: %d warm-up statements; %d measured and %d in the drain, pg_stat_statements counted %d", k, v[k+"_warmup_statements"],
						v[k+"_statements"], v[k+"_drain_statements"], v[k+"_calls"])
				}
			}
			mustContain(t, r.stdout, "hit ratio 100.00%", "warm-up:")
			// Labelled as txload's lines: since the start, warm-up included.
			mustContain(t, r.stderr, "pgio    1.5s  select", "pgio    2.5s  select")
		})
	}
}

// --update-pct 20 makes 20% of the statements updates, and each update is
// committed as the run goes: another session sees scratch change before
// the run ends, and by the end it grew by exactly the rows updated.
func TestPgioUpdatesCommittedDuringRun(t *testing.T) {
	t.Parallel()
	url := pgioInit(t, "--scale", "2000")
	conn := pgtest.Conn(t, url)
	for _, mode := range []string{"server", "client"} {
		t.Run(mode, func(t *testing.T) {
			before := scratchSum(t, conn, 1)
			var seen atomic.Int64 // when another session first saw scratch change
			var running atomic.Bool
			running.Store(true)
			done := make(chan struct{})
			watcher := pgtest.Conn(t, url)
			go func() {
				defer close(done)
				for running.Load() {
					var s int64
					if err := watcher.QueryRow(context.Background(), "SELECT sum(scratch)::BIGINT FROM pgio1").Scan(&s); err == nil && s != before && seen.Load() == 0 {
						seen.Store(time.Now().UnixNano())
					}
					time.Sleep(50 * time.Millisecond)
				}
			}()
			start := time.Now()
			_, v, _ := pgioRun(t, url, "--mode", mode, "--update-pct", "20", "--duration", "2s", "--progress", "0")
			end := time.Now()
			running.Store(false)
			<-done
			sel, upd := v["select_statements"], v["update_statements"]
			if share := float64(upd) / float64(sel+upd); math.Abs(share-0.20) > 0.01 {
				t.Errorf("%d updates of %d statements: %.2f%%, want 20%% ± 1%%", upd, sel+upd, 100*share)
			}
			if s := seen.Load(); s == 0 || time.Unix(0, s).After(end.Add(-time.Second)) {
				t.Errorf("another session saw scratch change at %v of a run of %v", time.Unix(0, s).Sub(start), end.Sub(start))
			}
			if grew := scratchSum(t, conn, 1) - before; grew != v["update_rows"]+v["update_drain_rows"] || v["update_rows"] != 9*upd {
				t.Errorf("scratch grew by %d; txload reports %d rows updated by %d updates of 9 (BETWEEN k AND k+8), and %d by the drain's", grew, v["update_rows"], upd, v["update_drain_rows"])
			}
		})
	}
}

// Server and client mode run the same statements for the same settings,
// and start their sessions within 100 ms of each other (a timing bound: the
// test runs alone, not beside the parallel ones).
func TestPgioModesSameCounts(t *testing.T) {
	url := pgioInit(t, "--scale", "2000", "--tables", "2")
	conn := pgtest.Conn(t, url)
	for _, mode := range []string{"server", "client"} {
		t.Run(mode, func(t *testing.T) {
			before := scratchSum(t, conn, 2)
			_, v, ops := pgioRun(t, url, "--mode", mode, "--statements", "300", "--update-pct", "20", "--sessions-per-table", "2",
				"--duration", "1m", "--work-unit", "100", "--update-work-unit", "5", "--progress", "0")
			// 4 sessions, 3 windows of 100 each: exactly 60 updates a
			// session; pgio's ranges, of 101 and 6 rows.
			want := map[string]int64{"sessions": 4, "select_statements": 960, "update_statements": 240, "select_rows": 96960, "update_rows": 1440}
			for k, w := range want {
				if v[k] != w {
					t.Errorf("%s = %d, want %d", k, v[k], w)
				}
			}
			if ops["select"] != 960 || ops["update"] != 240 {
				t.Errorf("the engine counted %v", ops)
			}
			if grew := scratchSum(t, conn, 2) - before; grew != 1440 {
				t.Errorf("scratch grew by %d, want 1440", grew)
			}
			if s, ok := v["start_spread_us"]; !ok || s >= 100000 {
				t.Errorf("sessions started %dµs apart (known: %v)", s, ok)
			}
		})
	}
}

// --scale below the loaded one runs on its first rows only; above it, and on
// an interrupted load, the run refuses with one line that says what to do.
func TestPgioRunOnPartOfTheScale(t *testing.T) {
	t.Parallel()
	url := pgioInit(t, "--scale", "2000")
	conn := pgtest.Conn(t, url)
	ctx := context.Background()
	sums := func() (low, high int64) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT sum(scratch) FILTER (WHERE mykey <= 1000)::BIGINT, sum(scratch) FILTER (WHERE mykey > 1000)::BIGINT FROM pgio1`).Scan(&low, &high); err != nil {
			t.Fatal(err)
		}
		return low, high
	}
	low, high := sums()
	_, v, _ := pgioRun(t, url, "--scale", "1000", "--update-pct", "100", "--statements", "200", "--duration", "1m", "--progress", "0")
	low2, high2 := sums()
	if v["update_statements"] != 200 || low2-low != v["update_rows"] || high2 != high {
		t.Fatalf("%d updates of %d rows: keys up to 1000 gained %d, keys above %d", v["update_statements"], v["update_rows"], low2-low, high2-high)
	}
	r := txload(t.Context(), nil, "run", "pgio", "--url", url, "--scale", "4000", "--duration", "1s")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "less than asked (--scale 4000); --drop recreates them") {
		t.Fatalf("a run beyond the loaded scale: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := conn.Exec(ctx, `UPDATE txload_init SET state = 'loading' WHERE workload = 'pgio'`); err != nil {
		t.Fatal(err)
	}
	r = txload(t.Context(), nil, "run", "pgio", "--url", url, "--init", "skip", "--duration", "1s")
	if r.code != ExitFailed || !strings.Contains(r.stderr, "the pgio schema is incomplete (an init was interrupted): run `txload init pgio --drop`") {
		t.Fatalf("a run on an interrupted load: exit %d\n%s", r.code, r.stderr)
	}
}

// A flag's default is not asked for: on a load of 2 tables of 2000 rows,
// --tables 2 alone runs on the whole tables, --scale 1000 alone on both
// tables' first 1000 rows, and init with either keeps the load.
func TestPgioDefaultsAreNotAsked(t *testing.T) {
	t.Parallel()
	url := pgioInit(t, "--scale", "2000", "--tables", "2")
	for _, tc := range []struct {
		args     []string
		sessions int64
		header   string
	}{
		{[]string{"--tables", "2"}, 2, "2 tables × 1 session, 2000 rows per table"},
		{[]string{"--scale", "1000"}, 2, "2 tables × 1 session, 1000 rows per table"},
		{[]string{"--tables", "1"}, 1, "1 table × 1 session, 2000 rows per table"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r, v, _ := pgioRun(t, url, append(tc.args, "--statements", "20", "--duration", "1m", "--progress", "0")...)
			if v["sessions"] != tc.sessions || v["select_statements"] != 20*tc.sessions {
				t.Errorf("%d sessions ran %d statements; want %d sessions of 20", v["sessions"], v["select_statements"], tc.sessions)
			}
			mustContain(t, r.stdout, tc.header)
		})
	}
	for _, args := range [][]string{{"--tables", "2"}, {"--scale", "1000"}, {"--tables", "1", "--scale", "2000"}} {
		r := txload(t.Context(), nil, append([]string{"init", "pgio", "--url", url}, args...)...)
		if r.code != 0 || !strings.Contains(r.stderr, "pgio schema kept") || !strings.Contains(r.stderr, "2 tables (pgio1..pgio2) of 2000 rows") {
			t.Errorf("init %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	// More than was loaded, of the flag given only.
	r := txload(t.Context(), nil, "init", "pgio", "--url", url, "--tables", "3")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "less than asked (--tables 3); --drop recreates them") {
		t.Errorf("init --tables 3 over 2: exit %d\n%s", r.code, r.stderr)
	}
}

// init takes init's flags only: the flags that shape a run are not in its
// help, and given to it they are refused with one line (exit 2) before
// anything is touched.
func TestPgioInitTakesInitFlags(t *testing.T) {
	t.Parallel()
	runOnly := []string{"--work-unit", "--update-work-unit", "--update-pct", "--sessions-per-table", "--mode", "--commit", "--range", "--statements"}
	help := txload(t.Context(), nil, "init", "pgio", "--help")
	for _, f := range runOnly {
		if regexp.MustCompile(`(?m)^ +` + f + ` `).MatchString(help.stdout) {
			t.Errorf("init pgio --help lists %s:\n%s", f, help.stdout)
		}
	}
	mustContain(t, help.stdout, "--tables", "--scale", "--load-jobs", "--batch-rows", "--drop")
	runHelp := txload(t.Context(), nil, "run", "pgio", "--help")
	mustContain(t, runHelp.stdout, append(runOnly, "--tables", "--scale", "--load-jobs")...)

	url := srv.NewDatabase(t)
	for _, args := range [][]string{{"--work-unit", "7"}, {"--update-pct", "55"}, {"--mode", "client"}, {"--commit", "run"}, {"--scale", "2000", "--statements", "5"}} {
		r := txload(t.Context(), nil, append([]string{"init", "pgio", "--url", url}, args...)...)
		flag := args[len(args)-2]
		want := flag + " is not a flag of txload init pgio (only of txload run pgio and txload sweep pgio)"
		if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); r.code != ExitUsage || len(lines) != 1 || !strings.Contains(lines[0], want) {
			t.Errorf("init pgio %s: exit %d, stderr %q; want exit 2 and one line with %q", strings.Join(args, " "), r.code, r.stderr, want)
		}
	}
	mustHaveNoTables(t, url)
}

// One figure, one window: the pgio block's rates are over the summary's
// measured period, so the two say the same statements per second.
func TestPgioOneRateOneWindow(t *testing.T) {
	t.Parallel()
	url := pgioInit(t, "--scale", "2000")
	for _, mode := range []string{"server", "client"} {
		t.Run(mode, func(t *testing.T) {
			r, run := pgioRunDoc(t, url, "--mode", mode, "--duration", "2s", "--update-pct", "10", "--progress", "0")
			v := run.Check.Values
			if want := int64(math.Round(run.ElapsedSec * 1e6)); math.Abs(float64(v["elapsed_us"]-want)) > 1 {
				t.Errorf("pgio's period %dµs, the summary's %dµs", v["elapsed_us"], want)
			}
			for _, op := range run.Ops {
				// "select: 1589 ok, 0 failed, 529.5 ops/s" above, and
				// "select:   1589 statements (529.5/s)" in the pgio block.
				summary := fmt.Sprintf("%s: %d ok, 0 failed, %.1f ops/s", op.Name, op.OK, op.OpsPerSec)
				block := fmt.Sprintf("%d statements (%.1f/s)", op.OK, op.OpsPerSec)
				mustContain(t, r.stdout, summary, block)
			}
		})
	}
}

// pgio's own range by default: at WORK_UNIT 1 a SELECT reads rows k and
// k+1, as mypgio's BETWEEN k AND k+WORK_UNIT, and so does an UPDATE at
// UPDATE_WORK_UNIT 1; --range exact reads a work unit. The server's own
// count of what the updates changed (sum(scratch)) agrees. (pgio draws an
// update's k as a SELECT's, up to scale-WORK_UNIT-1: a larger update work
// unit may run past the table's end, and change fewer rows.)
func TestPgioRangeAsPgio(t *testing.T) {
	t.Parallel()
	url := pgioInit(t, "--scale", "2000")
	conn := pgtest.Conn(t, url)
	for _, tc := range []struct {
		mode, rng           string
		selectRows, updRows int64
	}{
		{"server", "", 2, 2},
		{"client", "", 2, 2},
		{"server", "exact", 1, 1},
		{"client", "exact", 1, 1},
	} {
		t.Run(tc.mode+" "+tc.rng, func(t *testing.T) {
			args := []string{"--mode", tc.mode, "--work-unit", "1", "--update-work-unit", "1", "--update-pct", "50", "--statements", "100", "--duration", "1m", "--progress", "0"}
			if tc.rng != "" {
				args = append(args, "--range", tc.rng)
			}
			before := scratchSum(t, conn, 1)
			_, v, _ := pgioRun(t, url, args...)
			if v["select_statements"] != 50 || v["select_rows"] != 50*tc.selectRows || v["update_rows"] != 50*tc.updRows {
				t.Errorf("%d selects read %d rows, 50 updates changed %d; want %d and %d rows each", v["select_statements"], v["select_rows"], v["update_rows"], tc.selectRows, tc.updRows)
			}
			if grew := scratchSum(t, conn, 1) - before; grew != 50*tc.updRows {
				t.Errorf("scratch grew by %d, want %d", grew, 50*tc.updRows)
			}
		})
	}
}

var (
	engineLine = regexp.MustCompile(`(?m)^ +(\d+\.\d)s +(\d+\.\d) ops/s .*$`)
	pgioLine   = regexp.MustCompile(`(?m)^pgio +(\d+\.\d)s +select +(\d+\.\d)/s +update +(\d+\.\d)/s +rows +(\d+)/s(?: +LIOPS +(\d+))?.*$`)
)

// progressSums adds up the measured progress lines of a run with 1 s
// intervals after a warm-up of warmup: txload's (ops/s times the time
// since the line before: a tick late under load makes a longer interval),
// and pgio's (select/s + update/s over its 1 s); it fails t on the first
// that reads 0. Both are labelled with the time since the start, warm-up
// included.
func progressSums(t *testing.T, stderr string, warmup float64) (engine, pgio float64) {
	t.Helper()
	first, prev := true, 0.0
	for _, m := range engineLine.FindAllStringSubmatch(stderr, -1) {
		at, _ := strconv.ParseFloat(m[1], 64)
		since := at - prev
		prev = at
		// The engine's tick at the end of the warm-up, a µs after it, is
		// not labelled warm-up: the label says which interval it is.
		if at <= warmup {
			continue
		}
		n, _ := strconv.ParseFloat(m[2], 64)
		if first && n == 0 {
			t.Errorf("the first progress line reads 0: %q", m[0])
		}
		first = false
		engine += n * since
	}
	for _, m := range pgioLine.FindAllStringSubmatch(stderr, -1) {
		if at, _ := strconv.ParseFloat(m[1], 64); at <= warmup != strings.Contains(m[0], "(warm-up)") {
			t.Errorf("pgio's line at %.1fs of a run with a warm-up of %.0fs: %q", at, warmup, m[0])
		} else if at <= warmup {
			continue
		}
		s, _ := strconv.ParseFloat(m[2], 64)
		u, _ := strconv.ParseFloat(m[3], 64)
		pgio += s + u
	}
	return engine, pgio
}

// The progress intervals add up to the summary, in both modes: pgio's own
// lines exactly (statements by their start), the JSON's intervals exactly,
// and txload's progress lines within their labels' precision (and a
// statement a session: one that ends after the last tick is in the run's
// last sliver, not printed); none reads 0 for want of the server-mode
// statements still in the server.
func TestPgioProgressSumsToSummary(t *testing.T) {
	t.Parallel()
	url := pgioInit(t, "--scale", "2000")
	for _, mode := range []string{"server", "client"} {
		t.Run(mode, func(t *testing.T) {
			r, run := pgioRunDoc(t, url, "--mode", mode, "--duration", "3s", "--warmup", "1s", "--update-pct", "10", "--sessions-per-table", "2")
			var total, intervals int64
			for _, op := range run.Ops {
				total += op.OK
			}
			start := run.Intervals[0].Start
			firstMeasured := true
			for _, iv := range run.Intervals {
				measured := iv.End.Sub(start) > 1500*time.Millisecond // the warm-up is 1 s
				for _, op := range iv.Ops {
					intervals += op.OK
					if measured && firstMeasured && op.Name == "select" && op.OK == 0 {
						t.Errorf("the first measured interval holds no select: %+v", iv)
					}
				}
				firstMeasured = firstMeasured && !measured
			}
			engine, pgio := progressSums(t, r.stderr, 1)
			// txload's lines' labels have a tenth of a second: their sum is
			// within 5%.
			if intervals != total || int64(math.Round(pgio)) != total || math.Abs(engine-float64(total)) > 2+0.05*float64(total) {
				t.Errorf("the summary counts %d statements; the JSON's intervals %d, pgio's lines %.0f, txload's lines %.1f\n%s", total, intervals, pgio, engine, r.stderr)
			}
		})
	}
}

var progressBlocks = regexp.MustCompile(`(?m)^pgio .*blk/select (\d+\.\d)`)

// blocksPerSelect reads the blocks per SELECT of each progress interval.
func blocksPerSelect(t *testing.T, stderr string) []float64 {
	t.Helper()
	var out []float64
	for _, m := range progressBlocks.FindAllStringSubmatch(stderr, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		out = append(out, v)
	}
	if len(out) < 3 {
		t.Fatalf("%d progress lines with blocks per select:\n%s", len(out), stderr)
	}
	return out
}

// --commit run is pgio's shape, the whole test one transaction per
// session: with updates the table and its index grow (no old row version
// can go before the end) and a SELECT reads more blocks as the run goes.
// With --commit statement the updates stay on their pages (HOT) and both
// stay flat. The runs are of a number of statements, not a time, so that
// a loaded machine makes as many updates: 4000 of 9 rows, 18 versions a
// row where a page has room for about 6. The sizes are the server's (pg_relation_size), read here too.
// The statement shape runs on a server of its own: a long transaction in
// any database (the run shape's, in a test beside it) holds back the
// pruning of old row versions in all of them.
func TestPgioCommitRunGrows(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, url, mode, commit string) {
		conn := pgtest.Conn(t, url)
		var before, after int64
		size := "SELECT pg_relation_size('pgio1') / 8192"
		if err := conn.QueryRow(context.Background(), size).Scan(&before); err != nil {
			t.Fatal(err)
		}
		r, v, _ := pgioRun(t, url, "--mode", mode, "--commit", commit, "--update-pct", "50", "--work-unit", "32",
			"--statements", "8000", "--duration", "5m", "--progress", "100ms")
		if err := conn.QueryRow(context.Background(), size).Scan(&after); err != nil {
			t.Fatal(err)
		}
		if v["heap_blocks_before"] != before || v["heap_blocks_after"] != after {
			t.Errorf("txload reports %d → %d heap blocks, the server %d → %d", v["heap_blocks_before"], v["heap_blocks_after"], before, after)
		}
		bps := blocksPerSelect(t, r.stderr)
		first, last := bps[0], bps[len(bps)-1]
		if commit == "run" {
			if after < before*3/2 || v["index_blocks_after"] <= v["index_blocks_before"] || last < 1.3*first {
				t.Errorf("--commit run: heap %d → %d blocks, index %d → %d, blocks per select %v: want them growing", before, after,
					v["index_blocks_before"], v["index_blocks_after"], bps)
			}
			mustContain(t, r.stdout, "the whole test one transaction per session, as pgio's mypgio() (--commit run)")
			return
		}
		if after > before+before/100 || v["index_blocks_after"] != v["index_blocks_before"] || math.Abs(last/first-1) > 0.05 {
			t.Errorf("--commit statement: heap %d → %d blocks, index %d → %d, blocks per select %v: want them flat", before, after,
				v["index_blocks_before"], v["index_blocks_after"], bps)
		}
		mustContain(t, r.stdout, "each statement its own transaction (--commit statement)")
	}
	for _, mode := range []string{"server", "client"} {
		t.Run(mode+" run", func(t *testing.T) {
			t.Parallel()
			check(t, pgioInit(t, "--scale", "2000"), mode, "run")
		})
	}
	t.Run("statement", func(t *testing.T) {
		t.Parallel()
		url := pgtest.OwnServer(t).URL()
		for _, mode := range []string{"server", "client"} {
			r := txload(t.Context(), nil, "init", "pgio", "--url", url, "--scale", "2000", "--drop")
			if r.code != 0 {
				t.Fatalf("init exit %d\n%s", r.code, r.stderr)
			}
			t.Run(mode, func(t *testing.T) { check(t, url, mode, "statement") })
		}
	})
}

// Under --commit run, sessions that update one table deadlock, as pgio's
// do: the session the server picks ends (its transaction rolled back), the
// others go on to the end, and the run says so and exits 1. (Two sessions
// may instead stall, one waiting for the other's commit at the end, when
// the first update of one waits for the other's: with four, and only
// updates, a cycle of waits comes within milliseconds.)
func TestPgioCommitRunDeadlock(t *testing.T) {
	t.Parallel()
	url := pgioInit(t, "--scale", "2000")
	for _, mode := range []string{"server", "client"} {
		t.Run(mode, func(t *testing.T) {
			js := jsonPath(t)
			r := txload(t.Context(), nil, "run", "pgio", "--url", url, "--json", js, "--mode", mode, "--commit", "run", "--sessions-per-table", "4",
				"--update-pct", "100", "--duration", "3s", "--progress", "0")
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != ExitFailed || !strings.Contains(lines[len(lines)-1], "deadlock detected (SQLSTATE 40P01) (under --commit run, sessions that update the same table deadlock") {
				t.Fatalf("exit %d, want 1 with the deadlock\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			mustContain(t, r.stdout, "session ended:", "deadlock detected (SQLSTATE 40P01); its transaction rolled back")
			run := readDoc(t, js).Runs[0]
			if v := run.Check.Values; v["failed_sessions"] < 1 || v["failed_sessions"] > 3 || v["update_statements"] == 0 {
				t.Errorf("%d sessions of 4 failed, %d updates", v["failed_sessions"], v["update_statements"])
			}
			// The other session ran to the end.
			if run.ElapsedSec < 2.9 {
				t.Errorf("the run's measured period is %.2fs", run.ElapsedSec)
			}
		})
	}
}

// Client mode where pg_stat_database is the only block counter (a role
// that may not create pg_stat_statements): each interval's LIOPS are its
// own statements' blocks, as every session flushes its statistics at the
// interval's end (a backend otherwise flushes at most once a second, and
// an interval's figure held part of another's): LIOPS over rows read is
// about 258.7/256 in every interval. The role is no superuser, as many
// users' are.
func TestPgioClientLIOPSPerInterval(t *testing.T) {
	t.Parallel()
	var b [4]byte
	_, _ = rand.Read(b[:])
	role := "pgio_" + hex.EncodeToString(b[:])
	admin := pgtest.Conn(t, srv.URL())
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+role) })
	url := srv.NewDatabase(t)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(context.Background(), fmt.Sprintf("CREATE ROLE %s LOGIN; ALTER DATABASE %s OWNER TO %s", role, strings.TrimPrefix(u.Path, "/"), role)); err != nil {
		t.Fatal(err)
	}
	u.User = neturl.User(role)
	url = u.String()
	r := txload(t.Context(), nil, "init", "pgio", "--url", url, "--scale", "2000")
	if r.code != 0 {
		t.Fatalf("init as %s: exit %d\n%s", role, r.code, r.stderr)
	}
	r, v, _ := pgioRun(t, url, "--mode", "client", "--duration", "3s", "--sessions-per-table", "2")
	mustContain(t, r.stdout, "statements' blocks: not measured")
	lines := pgioLine.FindAllStringSubmatch(r.stderr, -1)
	if len(lines) != 3 {
		t.Fatalf("%d pgio progress lines, want 3\n%s", len(lines), r.stderr)
	}
	for _, m := range lines {
		rows, _ := strconv.ParseFloat(m[4], 64)
		liops, _ := strconv.ParseFloat(m[5], 64)
		if ratio := liops / rows; rows == 0 || ratio < 0.95 || ratio > 1.1 {
			t.Errorf("LIOPS %.0f beside rows %.0f/s (%.3f), want about 258.7/256: %q", liops, rows, ratio, m[0])
		}
	}
	if v["db_liops"] == 0 {
		t.Errorf("no database LIOPS: %v", v)
	}
	// Server mode runs as this role too, its block counts from
	// pg_stat_database.
	r, v, _ = pgioRun(t, url, "--mode", "server", "--duration", "1s", "--update-pct", "10", "--progress", "0")
	if v["db_liops"] == 0 || v["update_statements"] == 0 {
		t.Errorf("server mode as %s: %v\n%s", role, v, r.stdout)
	}
}

// Where the server runs on this machine, the report gives the physical
// side as pgio's runit.sh records it: the /proc/diskstats counters of the
// device of the tables' file. With fsync on, every update's commit writes
// to it; what txload counts in its measured period lies within what the
// device did around the whole run, read here from outside.
func TestPgioDiskCounters(t *testing.T) {
	var dir string
	var disk *pgio.Disk
	var why []string
	for _, d := range []string{os.TempDir(), "/var/tmp", "/tmp"} {
		dd, w := pgio.LocateDisk(d, "/proc/diskstats")
		if dd != nil {
			dir, disk = d, dd
			break
		}
		why = append(why, w)
	}
	if disk == nil {
		t.Skipf("no directory of this machine on a block device for the server's data: %s", strings.Join(why, "; "))
	}
	t.Setenv("TMPDIR", dir)
	url := pgtest.OwnServer(t, "fsync=on", "synchronous_commit=on").URL()
	if r := txload(t.Context(), nil, "init", "pgio", "--url", url, "--scale", "2000"); r.code != 0 {
		t.Fatalf("init exit %d\n%s", r.code, r.stderr)
	}
	before, err := disk.Read()
	if err != nil {
		t.Fatal(err)
	}
	r, v, _ := pgioRun(t, url, "--update-pct", "20", "--duration", "2s", "--progress", "0")
	after, err := disk.Read()
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r.stdout, "disk:               "+disk.Name+" (the device of pgio1's file, /proc/diskstats): reads ")
	outer := map[string]int64{"disk_reads": after.Reads - before.Reads, "disk_writes": after.Writes - before.Writes,
		"disk_read_bytes": 512 * (after.ReadSectors - before.ReadSectors), "disk_write_bytes": 512 * (after.WriteSectors - before.WriteSectors)}
	for k, o := range outer {
		if v[k] < 0 || v[k] > o {
			t.Errorf("%s = %d; the device did %d around the whole run", k, v[k], o)
		}
	}
	if v["disk_writes"] == 0 || v["update_statements"] == 0 {
		t.Errorf("%d updates committed with fsync on, %d writes counted on %s", v["update_statements"], v["disk_writes"], disk.Name)
	}
}
