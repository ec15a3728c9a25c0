package pgbench

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/workload"
)

// newTPCB is `txload init tpcb` with flags: its generator, validated.
func newTPCB(t *testing.T, args ...string) (*tpcbGen, error) {
	t.Helper()
	g := tpcbMeta().New().(*tpcbGen)
	if err := g.Flags().Parse(args); err != nil {
		t.Fatalf("flags %v: %v", args, err)
	}
	return g, g.Hooks().Validate()
}

func initWith(t *testing.T, url string, drop bool, args ...string) (string, error) {
	t.Helper()
	g, err := newTPCB(t, args...)
	if err != nil {
		t.Fatalf("validate %v: %v", args, err)
	}
	var log bytes.Buffer
	err = g.Hooks().Init(testCtx(t), target(t, url), workload.InitOptions{Drop: drop, Log: &log})
	return log.String(), err
}

func branches(t *testing.T, url string) (n int) {
	t.Helper()
	if err := pgtest.Conn(t, url).QueryRow(context.Background(), "SELECT count(*) FROM pgbench_branches").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// init tpcb on tables that exist with other settings (made by pgbench -i
// or by txload) refuses, naming each difference and --drop, and changes
// nothing; the settings not given are not differences; --drop keeps the
// existing settings that are not given.
func TestInitTPCBOtherSettings(t *testing.T) {
	t.Parallel()
	for _, maker := range []string{"pgbench", "txload"} {
		t.Run(maker, func(t *testing.T) {
			url := srv.NewDatabase(t)
			if maker == "pgbench" {
				if out, code := runPgbench(t, url, "-i", "-s", "2", "-F", "90"); code != 0 {
					t.Fatalf("pgbench -i: %s", out)
				}
			} else if log, err := initWith(t, url, false, "--scale", "2", "--fillfactor", "90"); err != nil {
				t.Fatalf("init: %v\n%s", err, log)
			}
			for _, tc := range []struct {
				args []string
				want []string
			}{
				{[]string{"--scale", "3"}, []string{"scale 2 (asked 3)"}},
				{[]string{"--partitions", "4"}, []string{"partitions 0 (asked 4)"}},
				{[]string{"--fillfactor", "80", "--unlogged-tables"}, []string{"fillfactor 90 (asked 80)", "unlogged false (asked true)"}},
				{[]string{"--foreign-keys"}, []string{"foreign keys false (asked true)"}},
			} {
				_, err := initWith(t, url, false, tc.args...)
				var se *workload.SettingsError
				if !errors.As(err, &se) || !strings.HasSuffix(err.Error(), "; --drop recreates them") {
					t.Fatalf("%v: %v", tc.args, err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%v: %q does not say %q", tc.args, err, w)
					}
				}
				if n := branches(t, url); n != 2 {
					t.Fatalf("%v changed the tables: %d branches", tc.args, n)
				}
			}
			// The same settings, or none: kept.
			for _, args := range [][]string{nil, {"--scale", "2", "--fillfactor", "90"}} {
				log, err := initWith(t, url, false, args...)
				if err != nil || !strings.Contains(log, "already hold scale 2") {
					t.Fatalf("%v: %v\n%s", args, err, log)
				}
			}
			// --drop recreates with what was there, unless told.
			log, err := initWith(t, url, true, "--partitions", "2")
			if err != nil {
				t.Fatalf("--drop: %v\n%s", err, log)
			}
			have, err := detectSettings(testCtx(t), pgtest.Conn(t, url))
			if err != nil {
				t.Fatal(err)
			}
			if have.scale != 2 || have.fillfactor != 90 || have.partitions != 2 || have.method != "range" {
				t.Fatalf("after --drop: %s", have)
			}
		})
	}
}

// pgbench refuses --partition-method without --partitions; so does init
// tpcb (and the run workloads, which share its flags).
func TestPartitionMethodNeedsPartitions(t *testing.T) {
	t.Parallel()
	for _, g := range []func() error{
		func() error { _, err := newTPCB(t, "--partition-method", "hash"); return err },
		func() error {
			r := newRunGen("tpcb-like")
			if err := r.Flags().Parse([]string{"--partition-method", "range"}); err != nil {
				t.Fatal(err)
			}
			return r.Hooks().Validate()
		},
	} {
		if err := g(); err == nil || err.Error() != "--partition-method requires greater than zero --partitions" {
			t.Errorf("got %v", err)
		}
	}
	if _, err := newTPCB(t, "--partitions", "2", "--partition-method", "HASH"); err != nil {
		t.Errorf("--partitions 2 --partition-method HASH: %v", err)
	}
	if _, err := newTPCB(t, "--init-steps", "dtx"); err == nil || !strings.Contains(err.Error(), `unrecognized initialization step "x"`) {
		t.Errorf("--init-steps dtx: %v", err)
	}
	if _, err := newTPCB(t, "--init-steps", "dtG", "--generate", "client"); err == nil {
		t.Errorf("--init-steps with --generate accepted")
	}
}

// init tpcb takes pgbench's -I steps, -q, --tablespace and
// --index-tablespace.
func TestInitTPCBSteps(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	log, err := initWith(t, url, false, "-I", "dtGp", "-q", "--init-conns", "1")
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if !regexp.MustCompile(`generating data \(server-side\)\.\.\.\ncreating primary keys\.\.\.\ndone in [0-9.]+ s \(drop tables [0-9.]+ s, create tables [0-9.]+ s, server-side generate [0-9.]+ s, primary keys [0-9.]+ s\)\.\n$`).MatchString(log) {
		t.Errorf("log:\n%s", log)
	}
	if n := branches(t, url); n != 1 {
		t.Fatalf("%d branches", n)
	}
}

// check tpcb after pgbench truncated pgbench_history (as it does before
// each run): no violation, the balances checked among themselves, and a
// line saying the history no longer covers every change. Balances that
// disagree are still a violation.
func TestCheckAfterTruncatedHistory(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	if out, code := runPgbench(t, url, "-i"); code != 0 {
		t.Fatalf("pgbench -i: %s", out)
	}
	check := func() *workload.CheckResult {
		t.Helper()
		res, err := checkTPCB(testCtx(t), target(t, url))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// The first run starts from an empty history: all is covered.
	if out, code := runPgbench(t, url, "-c", "2", "-t", "30"); code != 0 {
		t.Fatalf("pgbench: %s", out)
	}
	if res := check(); len(res.Violations) != 0 || res.Values["history_complete"] != 1 {
		t.Fatalf("after one run: %+v", res)
	}
	// The second truncates the first one's history.
	if out, code := runPgbench(t, url, "-c", "2", "-t", "30"); code != 0 {
		t.Fatalf("pgbench: %s", out)
	}
	res := check()
	if len(res.Violations) != 0 || res.Values["history_complete"] != 0 || res.Values["history_rows"] != 60 {
		t.Fatalf("after a truncation: %+v", res)
	}
	var said bool
	for _, l := range res.Lines {
		if l.Label == "history" && strings.Contains(l.Value, "no longer covers every change") && strings.Contains(l.Value, "tellers and branches agree") {
			said = true
		}
	}
	if !said {
		t.Errorf("no line about the history: %+v", res.Lines)
	}
	if _, err := pgtest.Conn(t, url).Exec(context.Background(), "UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = 1"); err != nil {
		t.Fatal(err)
	}
	if res := check(); len(res.Violations) != 1 || !strings.Contains(res.Violations[0], "balances disagree") {
		t.Fatalf("after tampering: %+v", res)
	}
}

// The pre-run vacuum and truncation, printed as pgbench prints them, and
// its errors where pgbench's tables are missing.
func TestPreRunLikePgbench(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	if out, code := runPgbench(t, url, "-i"); code != 0 {
		t.Fatalf("pgbench -i: %s", out)
	}
	if out, code := runPgbench(t, url, "-n", "-t", "20"); code != 0 {
		t.Fatalf("pgbench: %s", out)
	}
	var log bytes.Buffer
	if err := PreRun(testCtx(t), target(t, url), true, "pgbench", &log); err != nil {
		t.Fatal(err)
	}
	if log.String() != "starting vacuum...end.\nstarting vacuum pgbench_accounts...end.\n" {
		t.Errorf("log %q", log.String())
	}
	var history int
	if err := pgtest.Conn(t, url).QueryRow(context.Background(), "SELECT count(*) FROM pgbench_history").Scan(&history); err != nil || history != 0 {
		t.Fatalf("history after the pre-run: %d rows (%v)", history, err)
	}
	// Without pgbench's tables: pgbench's lines, between its banner and
	// its report.
	dir := t.TempDir()
	script := dir + "/one.sql"
	if err := writeFile(script, "SELECT 1;\n"); err != nil {
		t.Fatal(err)
	}
	out, code := runPgbench(t, srv.NewDatabase(t), "-t", "1", "-f", script)
	if code != 0 {
		t.Fatalf("pgbench: %s", out)
	}
	_, rest, _ := strings.Cut(out, "\n")
	want, _, _ := strings.Cut(rest, "transaction type:")
	log.Reset()
	if err := PreRun(testCtx(t), target(t, srv.NewDatabase(t)), false, "pgbench", &log); err != nil {
		t.Fatal(err)
	}
	if log.String() != want {
		t.Errorf("without pgbench's tables:\n--- pgbench\n%s--- txload\n%s", want, log.String())
	}
}

// What pgbench reads of its tables before a builtin run: the scale and
// the partitioning, as its report prints them; on a database without
// them, its error and hint.
func TestReadTableInfoLikePgbench(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	if out, code := runPgbench(t, url, "-i", "-s", "2", "--partitions", "3", "--partition-method", "hash"); code != 0 {
		t.Fatalf("pgbench -i: %s", out)
	}
	info, err := ReadTableInfo(testCtx(t), pgtest.Conn(t, url), "pgbench", true)
	if err != nil || info.Scale != 2 || info.Partitions != 3 || info.PartitionMethod != "hash" {
		t.Fatalf("%+v %v", info, err)
	}
	out, code := runPgbench(t, url, "-n", "-t", "1", "-s", "5")
	if code != 0 || !strings.Contains(out, "scaling factor: 2\npartition method: hash\npartitions: 3\n") || !strings.Contains(out, info.Warning+"\n") {
		t.Fatalf("pgbench's report and warning (%q): %s", info.Warning, out)
	}
	empty := srv.NewDatabase(t)
	out, code = runPgbench(t, empty, "-n", "-t", "1")
	if code != 1 {
		t.Fatalf("pgbench on an empty database: exit %d", code)
	}
	_, want, _ := strings.Cut(out, "\n") // after the banner
	_, err = ReadTableInfo(testCtx(t), pgtest.Conn(t, empty), "pgbench", false)
	if err == nil || err.Error() != want {
		t.Errorf("on an empty database:\n--- pgbench\n%s--- txload\n%v", want, err)
	}
}

// pgbench -i's steps (txload pgbench -i) remake the tables: what `init
// tpcb` recorded of them, even an interrupted load, no longer holds.
func TestInitStepsForgetTheMarker(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	if log, err := initWith(t, url, false, "--scale", "1"); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	conn := pgtest.Conn(t, url)
	// An interrupted `init tpcb` leaves its marker "loading".
	if err := workload.BeginLoad(context.Background(), conn, tpcbMarker, "scale=1"); err != nil {
		t.Fatal(err)
	}
	if err := requireTables(context.Background(), conn); err == nil {
		t.Fatal("an interrupted init is accepted")
	}
	if err := RunInitSteps(testCtx(t), target(t, url), InitConfig{Steps: "dtgvp", Scale: 2, Fillfactor: 100}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if err := requireTables(context.Background(), conn); err != nil {
		t.Fatalf("after pgbench's steps: %v", err)
	}
	log, err := initWith(t, url, false)
	if err != nil || !strings.Contains(log, "already hold scale 2") {
		t.Fatalf("init tpcb after pgbench's steps: %v\n%s", err, log)
	}
}
