package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// tpccDB returns a copy of a database loaded once with one warehouse (20 s
// on a loaded 2-core machine), dropped when t ends.
func tpccDB(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("loads a TPC-C warehouse")
	}
	return srv.NewDatabaseLoaded(t, "tpcc", func(url string) error {
		if r := txload(context.Background(), nil, "init", "tpcc", "--url", url); r.code != 0 {
			return fmt.Errorf("init tpcc: exit %d\n%s", r.code, r.stderr)
		}
		return nil
	})
}

// tpccState is what a run could have written: the districts' order ids,
// the history's rows, and the init marker.
func tpccState(t *testing.T, url string) string {
	t.Helper()
	var s string
	err := pgtest.Conn(t, url).QueryRow(t.Context(), `SELECT (SELECT sum(d_next_o_id) FROM district) || ' ' ||
		(SELECT count(*) FROM history) || ' ' || (SELECT settings || ' ' || updated_at FROM txload_init WHERE workload = 'tpcc')`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Bad input gets one line and exit 2 before anything is written: values
// out of range, --wait with fewer clients than its terminals, and a
// database that holds another number of warehouses than asked (but to
// check, which ignores --warehouses).
func TestTPCCBadInput(t *testing.T) {
	t.Parallel()
	empty := srv.NewDatabase(t)
	loaded := tpccDB(t)
	before := tpccState(t, loaded)
	for _, tc := range []struct {
		url  string
		args []string
		want string
	}{
		{empty, []string{"init", "tpcc", "--warehouses", "0"}, "txload: --warehouses must be between 1 and 100000, got 0\n"},
		{empty, []string{"run", "tpcc", "--wait", "-1"}, "txload: --wait must be 0 (no wait times) or a factor of the spec's keying and think times up to 100 (1: as the spec), got -1\n"},
		{empty, []string{"run", "tpcc", "--wait", "NaN"}, "txload: --wait must be 0 (no wait times) or a factor of the spec's keying and think times up to 100 (1: as the spec), got NaN\n"},
		{empty, []string{"run", "tpcc", "--wait", "1", "--warehouses", "2", "-c", "8"},
			"txload: --wait runs 10 terminals per warehouse, 20 for --warehouses 2: --concurrency 8 is not that (leave it out)\n"},
		{empty, []string{"run", "tpcc", "--wait", "0.1", "--rate", "10"}, "txload: --wait runs terminals that wait their keying and think times, a closed loop: not with --rate\n"},
		{empty, []string{"init", "tpcc", "--partitions", "2"}, "txload: --partitions must be between 0 (none) and --warehouses (1), got 2\n"},
		{empty, []string{"check", "tpcc", "--wait", "1"}, "txload: --wait is not a flag of txload check tpcc (only of txload run tpcc and txload sweep tpcc and txload failover tpcc)\n"},
		{loaded, []string{"run", "tpcc", "--warehouses", "2", "-d", "1s"},
			"txload: the database holds the tpcc schema of 1 warehouse (not partitioned, no foreign keys), not the --warehouses 2 asked: give its values, or recreate it with `txload init tpcc --drop` (in a run: --init fresh)\n"},
		{loaded, []string{"run", "tpcc", "--warehouses", "2", "--init", "skip", "-d", "1s"},
			"txload: the database holds the tpcc schema of 1 warehouse (not partitioned, no foreign keys), not the --warehouses 2 asked: give its values, or recreate it with `txload init tpcc --drop` (in a run: --init fresh)\n"},
		{loaded, []string{"init", "tpcc", "--warehouses", "3"},
			"txload: the database holds the tpcc schema of 1 warehouse (not partitioned, no foreign keys), not the --warehouses 3 asked: give its values, or recreate it with `txload init tpcc --drop`\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := txload(t.Context(), nil, append(tc.args, "--url", tc.url)...)
			// The server's line may come first: the refusals of the
			// database's own state need it.
			if r.code != ExitUsage || !strings.HasSuffix(r.stderr, tc.want) || strings.Count(r.stderr, "txload:") != 1 || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit 2 and:\n%s", r.code, r.stdout, r.stderr, tc.want)
			}
		})
	}
	// check, as the other workloads' checks, audits what init recorded
	// and says in one line that it ignores the setting.
	r := txload(t.Context(), nil, "check", "tpcc", "--warehouses", "2", "--url", loaded)
	if r.code != 0 || !strings.HasPrefix(r.stderr, "txload: txload check tpcc ignores --warehouses: it reads the settings init recorded in the database\n") ||
		strings.Count(r.stderr, "txload:") != 1 {
		t.Errorf("check tpcc --warehouses 2 on 1 warehouse: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, r.stdout, "1 warehouse, 10 districts", "check: ok")
	if n := tpccTables(t, empty); n != 0 {
		t.Errorf("the empty database holds %d tables after bad input", n)
	}
	if after := tpccState(t, loaded); after != before {
		t.Errorf("the loaded database changed: %s, was %s", after, before)
	}
}

func tpccTables(t *testing.T, url string) int {
	t.Helper()
	var n int
	if err := pgtest.Conn(t, url).QueryRow(t.Context(), `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = 'public'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// tpccDoc is the part of a run's --json the tests read.
type tpccDoc struct {
	Runs []struct {
		Operations []struct {
			Name    string `json:"name"`
			OK      int64  `json:"ok"`
			Retries int64  `json:"retries"`
		} `json:"operations"`
		Check *struct {
			Values     map[string]int64 `json:"values"`
			Violations []string         `json:"violations"`
		} `json:"check"`
	} `json:"runs"`
}

func readTPCCDoc(t *testing.T, path string) tpccDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d tpccDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Runs) != 1 || d.Runs[0].Check == nil {
		t.Fatalf("document without its run's check:\n%s", b)
	}
	return d
}

var serverLine = regexp.MustCompile(`(new orders|payments) \(server\): +\S.* by (\d+) = (\d+) txload saw commit(.*)`)

// checkServerLines checks that the server's counts match what txload saw
// commit, and returns the new orders the server counted.
func checkServerLines(t *testing.T, out string) int64 {
	t.Helper()
	ms := serverLine.FindAllStringSubmatch(out, -1)
	if len(ms) != 2 {
		t.Fatalf("want the new orders' and payments' lines against the server:\n%s", out)
	}
	for _, m := range ms {
		if m[2] != m[3] && !strings.Contains(m[4], "with an unknown outcome") || strings.Contains(m[4], "MISSING") || strings.Contains(m[4], "UNEXPLAINED") {
			t.Errorf("the server's count disagrees: %s", m[0])
		}
	}
	n, _ := strconv.ParseInt(ms[0][2], 10, 64)
	return n
}

// A run: tpmC from the window's New-Orders, the per-type table, the mix
// as dealt, the server's counts matching txload's, and the twelve
// conditions checked at the end; the same figures in --json.
func TestTPCCRun(t *testing.T) {
	t.Parallel()
	url := tpccDB(t)
	js := filepath.Join(t.TempDir(), "tpcc.json")
	r := txload(t.Context(), nil, "run", "tpcc", "--url", url, "-c", "8", "-d", "6s", "--json", js)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "tpmC:", "tpmTotal:", "transactions:", "  new-order:", "  stock-level:", "response times:      pass",
		"mix (dealt):", "condition 12:", "check: ok", "isolation (server):  read committed")
	mustContain(t, r.stderr, "NURand's C values of the run")
	if strings.Contains(r.stdout, "efficiency") {
		t.Errorf("efficiency printed without --wait:\n%s", r.stdout)
	}
	checkServerLines(t, r.stdout)
	d := readTPCCDoc(t, js)
	v := d.Runs[0].Check.Values
	var newOrders int64
	for _, op := range d.Runs[0].Operations {
		if op.Name == "new-order" {
			newOrders = op.OK
		}
	}
	// 6 s measured: tpmC is 10 × the window's New-Orders.
	if newOrders == 0 || v["new_order_ok"] != newOrders || v["tpmc"] != newOrders*10 {
		t.Errorf("tpmc %d, new_order_ok %d, window's New-Orders %d: want 10 × them", v["tpmc"], v["new_order_ok"], newOrders)
	}
	for _, k := range []string{"condition_1_violations", "condition_12_violations", "payment_p90_us", "delivery_mix_pct_x100"} {
		if _, ok := v[k]; !ok {
			t.Errorf("--json lacks %s", k)
		}
	}
}

// At serializable with 32 clients on one warehouse: serialization failures
// retried and counted per type, every client alive at the end, and the
// data consistent.
func TestTPCCSerializable(t *testing.T) {
	t.Parallel()
	url := tpccDB(t)
	r := txload(t.Context(), nil, "run", "tpcc", "--url", url, "-c", "32", "-d", "8s", "--isolation", "serializable")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "isolation (server):  serializable", "check: ok")
	if strings.Contains(r.stdout, "ABORTED") {
		t.Fatalf("clients ended:\n%s", r.stdout)
	}
	checkServerLines(t, r.stdout)
	// Retries show per type, in the table and under each operation.
	m := regexp.MustCompile(`(?m)^  payment: +\d+ +\d+ +(\d+)`).FindStringSubmatch(r.stdout)
	if m == nil || m[1] == "0" {
		t.Errorf("no Payment retried at serializable with 32 clients on one warehouse:\n%s", r.stdout)
	}
}

// --wait: 10 terminals for the warehouse, each pausing its keying and think
// times, which are in no latency; the efficiency is printed.
func TestTPCCWait(t *testing.T) {
	t.Parallel()
	url := tpccDB(t)
	// New-Order's keying time is 18 s × 0.02 = 360 ms: a latency that
	// held it would be above it.
	r := txload(t.Context(), nil, "run", "tpcc", "--url", url, "--wait", "0.02", "-d", "8s")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "closed loop, 10 workers", "efficiency:", "check: ok")
	m := regexp.MustCompile(`(?m)^  new-order: +(\d+) .*?(\S+ms|\S+µs|\S+s)$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no new-order row:\n%s", r.stdout)
	}
	// The terminals' cycle is about 0.02 × (18 + 12) s a New-Order: 10
	// terminals × 8 s make tens of them, not the hundreds of a closed loop.
	if n, _ := strconv.Atoi(m[1]); n == 0 || n > 300 {
		t.Errorf("%d New-Orders in 8 s with 10 terminals at --wait 0.02", n)
	}
	max := regexp.MustCompile(`(?m)^  new-order: .* (\S+)$`).FindStringSubmatch(r.stdout)[1]
	if d, err := time.ParseDuration(strings.ReplaceAll(max, "µ", "u")); err != nil || d >= 360*time.Millisecond {
		t.Errorf("New-Order's max response time %s (%v): the keying time is in it", max, err)
	}
}

// An interrupted check stops its queries on the server before txload
// exits: none is left running (pgx sends the cancel request from a
// goroutine of its own after closing the socket, which a process that
// exits at once may never run).
func TestTPCCCheckInterrupt(t *testing.T) {
	t.Parallel()
	url := tpccDB(t)
	bin := buildTxload(t)
	conn := pgtest.Conn(t, url)
	for i := range 3 {
		cmd := exec.Command(bin, "check", "tpcc", "--url", url)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Once the check's first query runs, interrupt it.
		deadline := time.Now().Add(30 * time.Second)
		for {
			var n int
			if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
				AND state = 'active' AND query LIKE '%FILTER%' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the check's queries never showed")
			}
			time.Sleep(time.Duration(10+50*i) * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stderr)
		var lines []string
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		_ = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted {
			t.Errorf("exit %d, want %d:\n%s", code, ExitInterrupted, strings.Join(lines, "\n"))
		}
		var n int
		var q *string
		if err := conn.QueryRow(t.Context(), `SELECT count(*), min(query) FROM pg_stat_activity WHERE datname = current_database()
			AND state = 'active' AND pid <> pg_backend_pid()`).Scan(&n, &q); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			t.Fatalf("after the interrupted check exited, %d backends still run its queries: %.60s", n, *q)
		}
	}
}

// Two warehouses, partitioned by warehouse, with the spec's foreign keys:
// the partitions and keys are there, and a run draws remote order lines
// and payments (a warehouse of their own needs another) and keeps the data
// consistent.
func TestTPCCPartitionsForeignKeys(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("loads two TPC-C warehouses")
	}
	url := srv.NewDatabase(t)
	r := txload(t.Context(), nil, "init", "tpcc", "--url", url, "--warehouses", "2", "--partitions", "2", "--fks")
	if r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	mustContain(t, r.stderr, "for 2 warehouses (2 partitions by warehouse, foreign keys)", "keys, indexes and foreign keys built", "the 12 consistency conditions hold")
	var parts, fks int
	conn := pgtest.Conn(t, url)
	if err := conn.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM pg_inherits WHERE inhparent = 'stock'::regclass),
		(SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conparentid = 0 AND conrelid IN (SELECT oid FROM pg_class WHERE relname IN
		('district', 'customer', 'history', 'new_order', 'orders', 'order_line', 'stock')))`).Scan(&parts, &fks); err != nil {
		t.Fatal(err)
	}
	if parts != 2 || fks != 10 {
		t.Errorf("stock has %d partitions, the tables %d foreign keys: want 2 and 10", parts, fks)
	}
	r = txload(t.Context(), nil, "run", "tpcc", "--url", url, "-c", "4", "-d", "6s")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "check: ok")
	checkServerLines(t, r.stdout)
	m := regexp.MustCompile(`inputs: +([\d.]+)% of (\d+) order lines from a remote warehouse \(spec 1%\), ([\d.]+)% of (\d+) payments to a remote customer`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no inputs line:\n%s", r.stdout)
	}
	if lines, _ := strconv.ParseFloat(m[1], 64); lines <= 0 || lines > 3 {
		t.Errorf("%s%% remote order lines, want about 1%%", m[1])
	}
	if pays, _ := strconv.ParseFloat(m[3], 64); pays < 5 || pays > 25 {
		t.Errorf("%s%% remote payments, want about 15%%", m[3])
	}
}

// failover tpcc on the embedded pair: the warehouse loaded on the primary,
// the fault under load, the commits the new primary lacks counted, and the
// twelve conditions checked on the new primary.
func TestTPCCFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded pair and loads a TPC-C warehouse")
	}
	r := txload(t.Context(), nil, "failover", "tpcc", "--replication", "sync", "--duration", "8s", "--at", "3s", "-c", "4", "--progress", "0")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "failover: embedded primary and standby, sync replication", "write unavailability",
		"condition 12:", "check: ok", "new orders (server):")
	if m := regexp.MustCompile(`(?m)^  lost +(\d+)`).FindStringSubmatch(r.stdout); m == nil || m[1] != "0" {
		t.Errorf("sync replication lost commits (%v):\n%s", m, r.stdout)
	}
	checkServerLines(t, r.stdout)
}

// The audits beyond the twelve conditions never accuse clean data: runs
// at every level one after another on the same data (--init keep), then
// two at once (whose audits only count the other's commits); each run's
// own audit and check tpcc after them all ok, every audit on its line.
func TestTPCCAuditsCleanRuns(t *testing.T) {
	t.Parallel()
	url := tpccDB(t)
	run := func(level string) result {
		return txload(t.Context(), nil, "run", "tpcc", "--url", url, "--init", "keep", "--isolation", level, "-c", "4", "-d", "2s", "--progress", "0")
	}
	for _, level := range []string{"rc", "rr", "serializable"} {
		if r := run(level); r.code != 0 || !strings.Contains(r.stdout, "check: ok") {
			t.Fatalf("run at %s: exit %d\n%s\n%s", level, r.code, r.stdout, r.stderr)
		}
	}
	var wg sync.WaitGroup
	rs := make([]result, 2)
	for i, level := range []string{"rc", "serializable"} {
		wg.Add(1)
		go func() { defer wg.Done(); rs[i] = run(level) }()
	}
	wg.Wait()
	// Two runs at once each see the other's commits in the server's
	// counts (the run's count audit says so): no other line may accuse.
	for _, r := range rs {
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, "VIOLATION: ") && !strings.Contains(l, " against the server: ") {
				t.Errorf("concurrent run: %s\n%s", l, r.stdout)
			}
		}
	}
	r := txload(t.Context(), nil, "check", "tpcc", "--url", url)
	if r.code != 0 {
		t.Fatalf("check tpcc after the runs: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "S_DATA of 26..50 characters, no space: ok (100000 stock rows)", "I_DATA of 26..50 characters, no space: ok (100000 items)",
		"OL_I_ID names an item: ok (", "(delivered) or 0.01..9999.99: ok (", "ok (no NULL in the 90 columns the workload always writes)",
		"xx its district): ok (", "500 characters at most: ok (", "check: ok")
}
