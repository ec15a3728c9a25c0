package ycsb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/report"
	"github.com/txload/txload/workload"
	"github.com/txload/txload/workload/workloadtest"
	"github.com/txload/txload/workload/ycsb"
)

var srv *workloadtest.Server

func TestMain(m *testing.M) { workloadtest.Main(m, &srv) }

// ycsb through every command (workloadtest.Run), with workload D's
// inserts and its latest distribution, and with workload F's
// read-modify-writes.
func TestConformance(t *testing.T) {
	for _, w := range []string{"d", "f"} {
		t.Run(w, func(t *testing.T) {
			t.Parallel()
			workloadtest.Run(t, srv, ycsb.Meta(), workloadtest.Config{Flags: []string{"--records", "2000"}, RunFlags: []string{"--workload", w}})
		})
	}
}

func registry(t *testing.T) *workload.Registry {
	t.Helper()
	reg, err := workload.NewRegistry(ycsb.Meta())
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// ycsbCmd runs a command of ycsb on url.
func ycsbCmd(ctx context.Context, t *testing.T, url string, verb string, args ...string) workloadtest.Result {
	t.Helper()
	return workloadtest.Command(ctx, registry(t), append([]string{verb, "ycsb", "--url", url}, args...)...)
}

func initialized(t *testing.T, records string) string {
	t.Helper()
	url := srv.NewDatabase(t)
	if r := ycsbCmd(t.Context(), t, url, "init", "--records", records); r.Code != 0 {
		t.Fatalf("init: exit %d\n%s", r.Code, r.Stderr)
	}
	return url
}

func exec(t *testing.T, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// Each workload's mix in a real run: each kind of operation its share of
// the operations that ran, within 5σ; the run's audit passes.
func TestRunMix(t *testing.T) {
	mixes := map[string]map[string]float64{
		"a": {"read": 0.5, "update": 0.5},
		"b": {"read": 0.95, "update": 0.05},
		"c": {"read": 1},
		"d": {"read": 0.95, "insert": 0.05},
		"e": {"scan": 0.95, "insert": 0.05},
		"f": {"read": 0.5, "read-modify-write": 0.5},
	}
	url := initialized(t, "5000")
	for _, w := range []string{"a", "b", "c", "d", "e", "f"} {
		t.Run(w, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "run.json")
			r := ycsbCmd(t.Context(), t, url, "run", "--records", "5000", "--workload", w, "--transactions", "300", "--concurrency", "4",
				"--progress", "0", "--json", js)
			if r.Code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
			}
			if !strings.Contains(r.Stdout, "\ncheck: ok\n") {
				t.Fatalf("no audit, or not ok:\n%s", r.Stdout)
			}
			b, err := os.ReadFile(js)
			if err != nil {
				t.Fatal(err)
			}
			var doc report.Document
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			counts := map[string]int64{}
			var n int64
			for _, op := range doc.Runs[0].Ops {
				counts[op.Name] = op.OK
				n += op.OK
			}
			if n != 1200 {
				t.Fatalf("%d operations ran, want 300 for each of 4 clients", n)
			}
			for name := range counts {
				if _, ok := mixes[w][name]; !ok {
					t.Errorf("workload %s ran %s", w, name)
				}
			}
			for name, p := range mixes[w] {
				got := float64(counts[name]) / float64(n)
				if sigma := math.Sqrt(p * (1 - p) / float64(n)); math.Abs(got-p) > 5*sigma+1e-9 {
					t.Errorf("%s: %.4f of %d operations, want %.4f ± %.4f", name, got, n, p, 5*sigma)
				}
			}
		})
	}
}

// The check refuses data that is not what the workload wrote: a value of
// another length, torn, moved to another field or record; a key that is
// not its number's; a loaded record gone; a key number no run claimed.
// Each damage is found, named, and fails the check (exit 1); the data as
// loaded passes.
func TestCheckAttacked(t *testing.T) {
	form := "1 row has a field in characters txload never writes (a value opens with 8 lowercase hex digits, its checksum, then writes only A-Z, a-z, 0-9, - and _)"
	for _, tc := range []struct {
		name, damage, want string
	}{
		{"untouched", "", ""},
		{"a field one character short", "UPDATE usertable SET FIELD3 = left(FIELD3, 99) WHERE YCSB_KEYNUM = 7",
			"1 row has a field of another length than 100"},
		{"a character changed", "UPDATE usertable SET FIELD0 = overlay(FIELD0 PLACING '!' FROM 50 FOR 1) WHERE YCSB_KEYNUM = 8",
			"1 row has a field whose checksum is wrong"},
		{"a value moved to another field", "UPDATE usertable SET FIELD1 = FIELD2 WHERE YCSB_KEYNUM = 9",
			"1 row has a field whose checksum is wrong"},
		{"a value moved to another record", "UPDATE usertable SET FIELD0 = (SELECT FIELD0 FROM usertable WHERE YCSB_KEYNUM = 11) WHERE YCSB_KEYNUM = 10",
			"1 row has a field whose checksum is wrong"},
		{"a key changed", "UPDATE usertable SET YCSB_KEY = 'user1' WHERE YCSB_KEYNUM = 12",
			`1 row has a key that is not "user" and the hash of their key number: user1 (key number 12 is user`},
		{"a loaded record deleted", "DELETE FROM usertable WHERE YCSB_KEYNUM = 13", "1 of the 300 records init loaded are missing"},
		{"key numbers no run claimed", "UPDATE ycsb_meta SET next_keynum = 290", "10 rows have a key number no run claimed (below 0, or from 290)"},
		// The fourth retest's (issue 36, N4): the last loaded record
		// deleted, ycsb_meta and the marker saying init loaded one fewer.
		{"a loaded record deleted, the record count lowered to match", `DELETE FROM usertable WHERE YCSB_KEYNUM = 299; UPDATE ycsb_meta SET records = 299;
			UPDATE txload_init SET settings = replace(settings, 'records=300', 'records=299') WHERE workload = 'ycsb'`,
			"ycsb_meta's next_keynum 300 less its 299 records is 1, not a multiple of 2^40"},
		{"a row duplicated", "ALTER TABLE usertable DROP CONSTRAINT usertable_pkey; INSERT INTO usertable SELECT * FROM usertable WHERE YCSB_KEYNUM = 14",
			"1 row repeats another row's key"},
		// The sixth retest's (issue 36): fields of the right length in
		// characters txload never writes, their checksums recomputed.
		{"a field of spaces, resigned", resigned(15, 2, "repeat(' ', 92)"), form},
		{"a field with an é, resigned", resigned(16, 0, "'é' || repeat('x', 91)"), form},
		{"a field with a tab, resigned", resigned(17, 9, "E'\\t' || repeat('x', 91)"), form},
		{"a field with a quote, resigned", resigned(18, 4, `'"' || repeat('x', 91)`), form},
		{"a checksum in capitals", "UPDATE usertable SET FIELD1 = upper(left(FIELD1, 8)) || substr(FIELD1, 9) WHERE YCSB_KEYNUM = (SELECT min(YCSB_KEYNUM) FROM usertable WHERE left(FIELD1, 8) ~ '[a-f]')",
			"1 row has a field whose checksum is wrong"},
		// The fifth and sixth retests' (issue 36, (12)): YCSB_RMW at
		// bigint's top, whose sum no 64-bit integer holds; and counts
		// that add up beyond what runs write.
		{"YCSB_RMW at 2^63-1", "UPDATE usertable SET YCSB_RMW = 9223372036854775807 WHERE YCSB_KEYNUM IN (21, 20)",
			"2 rows have a YCSB_RMW of 2^50 or more, first key number 20 (user"},
		{"YCSB_RMW at 2^49 in four rows", "UPDATE usertable SET YCSB_RMW = 562949953421312 WHERE YCSB_KEYNUM < 4",
			"the rows' YCSB_RMW add up to 2^50 or more"},
		{"YCSB_RMW at -2^63 in two rows", "UPDATE usertable SET YCSB_RMW = -9223372036854775808 WHERE YCSB_KEYNUM < 2",
			"2 rows have a YCSB_RMW below 0 or NULL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := initialized(t, "300")
			if tc.damage != "" {
				exec(t, url, tc.damage)
			}
			r := ycsbCmd(t.Context(), t, url, "check")
			if tc.want == "" {
				if r.Code != 0 || !strings.Contains(r.Stdout, "check: ok") {
					t.Fatalf("exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
				}
				return
			}
			if r.Code != 1 || !strings.Contains(r.Stdout, "VIOLATION: "+tc.want) {
				t.Fatalf("exit %d, want 1 and VIOLATION: %s\n%s\n%s", r.Code, tc.want, r.Stdout, r.Stderr)
			}
		})
	}
}

// resigned is SQL that writes FIELDi of a record as rest (an SQL
// expression), opened by its checksum, as any client may.
func resigned(keynum, i int, rest string) string {
	return fmt.Sprintf("UPDATE usertable SET FIELD%d = left(md5(YCSB_KEY || ':%d:' || %s), 8) || %s WHERE YCSB_KEYNUM = %d", i, i, rest, rest, keynum)
}

// A run's audit finds what another hand did to the data under it:
// acknowledged inserts deleted (workload D), read-modify-writes undone
// (F), a loaded record gone (C, its hottest key, deleted before the run),
// an earlier run's record swapped for another (any workload). Each run
// exits 1 and names it.
func TestRunAttacked(t *testing.T) {
	// An earlier D run's first insert, set aside before the run (a gap
	// an insert that failed leaves too), put back during it, once the run
	// has claimed its key numbers (after it read the table), in place of
	// that run's next: every record whole and in a claim, the count kept.
	const (
		setAside = `CREATE TABLE stash AS SELECT * FROM usertable WHERE YCSB_KEYNUM = (SELECT min(YCSB_KEYNUM) FROM usertable WHERE YCSB_KEYNUM >= 2000);
DELETE FROM usertable WHERE YCSB_KEYNUM = (SELECT YCSB_KEYNUM FROM stash)`
		swap = `WITH back AS (DELETE FROM stash WHERE (SELECT next_keynum FROM ycsb_meta) > 2000 + 1099511627776 RETURNING *),
gone AS (DELETE FROM usertable WHERE EXISTS (SELECT 1 FROM back) AND YCSB_KEYNUM = (SELECT min(YCSB_KEYNUM) FROM usertable WHERE YCSB_KEYNUM >= 2000))
INSERT INTO usertable SELECT * FROM back`
		swapped = "records: the table holds other records than it held before the run and the run's own inserts"
	)
	for _, tc := range []struct {
		name, workload, before, during string
		want                           []string
		first                          string // the workload of a run before, if any
	}{
		{"inserts deleted", "d", "", "DELETE FROM usertable WHERE YCSB_KEYNUM >= 2000",
			[]string{"inserts whose commit was acknowledged are not in the table", "acknowledged inserts are missing"}, ""},
		{"read-modify-writes undone", "f", "", "UPDATE usertable SET YCSB_RMW = 0 WHERE YCSB_RMW > 0",
			[]string{"read-modify-writes: the server's YCSB_RMW grew by"}, ""},
		// A second writer moves one read-modify-write's count to a record
		// of the run's own, the sum kept: the counts are right, the rows
		// they are on wrong.
		{"read-modify-writes moved between records", "f", "", `WITH src AS (SELECT YCSB_KEYNUM AS k FROM usertable WHERE YCSB_RMW > 0 AND YCSB_KEYNUM <> 1999 LIMIT 1)
UPDATE usertable SET YCSB_RMW = YCSB_RMW + CASE WHEN YCSB_KEYNUM = 1999 THEN 1 ELSE -1 END
WHERE EXISTS (SELECT 1 FROM src) AND YCSB_KEYNUM IN ((SELECT k FROM src), 1999)`,
			[]string{"read-modify-writes: YCSB_RMW changed on other rows than those the run's read-modify-writes wrote"}, ""},
		{"the hottest record deleted", "c", "DELETE FROM usertable WHERE YCSB_KEYNUM = 6284781860667377211 % 2001", "",
			[]string{"operations found no record for a key that must be there", "1 of the 2000 records init loaded are missing"}, ""},
		// The retest's second writer, under a run that inserts and one
		// that does not.
		{name: "a record swapped under inserts", first: "d", workload: "d", before: setAside, during: swap, want: []string{swapped}},
		{name: "a record swapped under updates", first: "d", workload: "a", before: setAside, during: swap, want: []string{swapped}},
		// Another writer deletes an earlier run's record: the count says
		// other rows went, not the run's acknowledged inserts.
		{name: "an earlier run's record deleted", first: "d", workload: "d",
			during: `DELETE FROM usertable WHERE YCSB_KEYNUM = (SELECT min(YCSB_KEYNUM) FROM usertable WHERE YCSB_KEYNUM >= 2000 AND YCSB_KEYNUM < 2000 + 2^40)`,
			want:   []string{"though every one of them is in the table: ", swapped}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := initialized(t, "2000")
			if tc.first != "" {
				if r := ycsbCmd(t.Context(), t, url, "run", "--records", "2000", "--workload", tc.first, "--duration", "1s",
					"--concurrency", "4", "--progress", "0"); r.Code != 0 {
					t.Fatalf("the first run: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
				}
			}
			if tc.before != "" {
				exec(t, url, tc.before)
			}
			r := runUnder(t, url, 200*time.Millisecond, tc.during, "--workload", tc.workload, "--concurrency", "4")
			if r.Code != 1 {
				t.Fatalf("exit %d, want 1\n%s\n%s", r.Code, r.Stdout, r.Stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Stdout, w) {
					t.Errorf("the report lacks %q:\n%s", w, r.Stdout)
				}
			}
		})
	}
}

// The run's audit of the rows its read-modify-writes wrote accuses no
// clean run: workload F at each level, one run after another on the same
// table (with other workloads' between them), none of them fails.
func TestRunRowsClean(t *testing.T) {
	for _, level := range []string{"read committed", "repeatable read", "serializable"} {
		t.Run(level, func(t *testing.T) {
			t.Parallel()
			url := initialized(t, "2000")
			name := url[strings.LastIndex(url, "/")+1:]
			if i := strings.IndexByte(name, '?'); i >= 0 {
				name = name[:i]
			}
			exec(t, srv.URL(), fmt.Sprintf("ALTER DATABASE %s SET default_transaction_isolation = '%s'", name, level))
			for _, w := range []string{"f", "a", "f", "d", "f"} {
				r := ycsbCmd(t.Context(), t, url, "run", "--records", "2000", "--workload", w, "--duration", "1s",
					"--concurrency", "4", "--progress", "0", "--max-tries", "10")
				if r.Code != 0 {
					t.Fatalf("run --workload %s: exit %d\n%s\n%s", w, r.Code, r.Stdout, r.Stderr)
				}
			}
		})
	}
}

// Connections killed under workload F leave read-modify-writes whose
// COMMIT was in flight, and under D inserts: the audit of the rows they
// wrote explains the table by those that committed and some of those in
// doubt, the records the table holds by those before the run and the
// run's inserts there, and accuses nothing.
func TestRunRowsConnectionsKilled(t *testing.T) {
	for _, tc := range []struct{ workload, stmt, line string }{
		{"f", "%YCSB_RMW = $3%", "read-modify-writes: "},
		{"d", "INSERT INTO usertable%", "inserts: "},
	} {
		t.Run(tc.workload, func(t *testing.T) {
			t.Parallel()
			url := initialized(t, "2000")
			// The clients', once they run: not the run's setup.
			r := runUnder(t, url, 150*time.Millisecond,
				fmt.Sprintf("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%s'", tc.stmt),
				"--workload", tc.workload, "--concurrency", "8")
			if r.Code != 0 || !strings.Contains(r.Stdout, tc.line) {
				t.Fatalf("exit %d, want 0 and the %s reconciled\n%s\n%s", r.Code, tc.line, r.Stdout, r.Stderr)
			}
			t.Log(r.Stdout[strings.Index(r.Stdout, tc.line):])
		})
	}
}

// runUnder runs ycsb for 2 s on 2000 records at url with args, and
// executes sql ("" for none) every interval until the run ends.
func runUnder(t *testing.T, url string, every time.Duration, sql string, args ...string) workloadtest.Result {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan workloadtest.Result, 1)
	go func() {
		done <- ycsbCmd(ctx, t, url, "run", append([]string{"--records", "2000", "--duration", "2s", "--progress", "0"}, args...)...)
	}()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			return r
		case <-tick.C:
			if sql != "" {
				exec(t, url, sql)
			}
		}
	}
}

// YCSB_RMW is written by read-modify-writes alone: a run of a workload
// without them holds its sum and its rows to what they were before the
// run. A second writer adding 5 to one record during a workload-a run,
// and a column default of 3 that workload D's inserts take, are
// violations (the seventh outside retest, item 5).
func TestRunNoRMWHoldsYCSBRMW(t *testing.T) {
	for _, tc := range []struct{ name, workload, before, during string }{
		{"second writer under a", "a", "", "UPDATE usertable SET YCSB_RMW = YCSB_RMW + 5 WHERE YCSB_KEYNUM = 10"},
		{"default 3 under d", "d", "ALTER TABLE usertable ALTER YCSB_RMW SET DEFAULT 3", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := initialized(t, "2000")
			if tc.before != "" {
				exec(t, url, tc.before)
			}
			r := runUnder(t, url, 150*time.Millisecond, tc.during, "--workload", tc.workload, "--concurrency", "2")
			if r.Code != 1 || !strings.Contains(r.Stdout, "VIOLATION: YCSB_RMW: the rows' sum changed by +") {
				t.Fatalf("exit %d, want 1 and YCSB_RMW's sum held\n%s\n%s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
}
