package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pgtest"
)

// appendRows is the number of rows and of elements the append tables hold.
func appendRows(t *testing.T, url string) (rows, elements int64) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	err = conn.QueryRow(t.Context(), `SELECT count(*), COALESCE(sum(array_length(string_to_array(val, ','), 1)), 0)
		FROM (SELECT val FROM txn0 UNION ALL SELECT val FROM txn1 UNION ALL SELECT val FROM txn2) v`).Scan(&rows, &elements)
	if err != nil {
		t.Fatal(err)
	}
	return rows, elements
}

// squeeze makes each run of spaces one: the report's labels are padded
// to the longest of the block.
func squeeze(s string) string { return regexp.MustCompile(` +`).ReplaceAllString(s, " ") }

// The run ends with Jepsen's final read: every key of the run read in one
// snapshot after the drain, and held to the history. A key changed behind
// the run after it retired (no attempt reads it again) is seen by the
// final read alone: a value appended that nobody appended is a garbage
// read, a row deleted lost appends, each with its example, exit 1. On the
// code before the final read, this run ended `check: ok`, exit 0.
func TestAppendFinalRead(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	tampered := make(chan []int64, 1)
	go func() {
		// --max-writes-per-key 1: a key retires when its one append is
		// drawn, so a row that exists is of a key no later attempt draws.
		conn := pgtest.Conn(t, url)
		done := []int64{}
		defer func() { tampered <- done }()
		for ctx.Err() == nil && len(done) < 2 {
			time.Sleep(50 * time.Millisecond)
			var id int64
			// Until the run has made the tables and rows, this fails.
			if conn.QueryRow(ctx, `SELECT id FROM (SELECT id FROM txn0 UNION ALL SELECT id FROM txn1 UNION ALL SELECT id FROM txn2) k
				WHERE id <> ALL($1::BIGINT[]) ORDER BY id LIMIT 1`, done).Scan(&id) != nil {
				continue
			}
			for _, table := range []string{"txn0", "txn1", "txn2"} {
				sql := "UPDATE " + table + " SET val = val || ',999999' WHERE id = $1"
				if len(done) == 1 {
					sql = "DELETE FROM " + table + " WHERE id = $1"
				}
				if _, err := conn.Exec(ctx, sql, id); err != nil {
					return
				}
			}
			done = append(done, id)
		}
	}()
	js := jsonPath(t)
	r := txload(t.Context(), nil, "run", "append", "--url", url, "--init", "keep", "--progress", "0", "--json", js,
		"--isolation", "rc", "--keys", "4", "--max-writes-per-key", "1", "--concurrency", "4", "--duration", "3s")
	stop()
	keys := <-tampered
	if len(keys) != 2 {
		t.Fatalf("tampered with %d keys, want 2\n%s%s", len(keys), r.stdout, r.stderr)
	}
	if r.code != ExitFailed {
		t.Fatalf("exit %d, want %d\n%s%s", r.code, ExitFailed, r.stdout, r.stderr)
	}
	key := strconv.FormatInt(keys[0], 10)
	mustContain(t, squeeze(r.stdout), "final: read ", " keys in one snapshot, ", ", 1 key with committed appends not found: ",
		"VIOLATION: garbage-read: ", "VIOLATION: lost-append: ",
		"T1 = the final read, in one snapshot after every attempt ended: [r "+key+" [1 999999]]",
		"T1 read key "+key+" as [1 999999], which holds 999999; no attempt in the history appended 999999 to key "+key,
		"the final read of key "+strconv.FormatInt(keys[1], 10)+" does not hold 1: the append was lost")
	values := readDoc(t, js).Runs[0].Check.Values
	rows, elements := appendRows(t, url)
	if values["final_read_anomalies"] != 2 || values["final_read_missing_keys"] != 1 ||
		values["final_read_keys"] != rows || values["final_read_elements"] != elements {
		t.Errorf("values %v; want the final read's 2 anomalies, 1 key missing, and the tables' %d rows, %d elements", values, rows, elements)
	}
}

// check append holds the tables to a history a run wrote, as the run's own
// final read did: clean data passes, a row deleted after the run is lost
// appends (exit 1), and a later run's keys, above the history's, are
// held to what the tables show alone: the history of each of two runs on the same
// tables passes, in JSON lines and in EDN. Without a history it reads the
// tables alone: a value twice and a row in the wrong table are caught.
func TestCheckAppend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := srv.NewDatabase(t)
	run := func(file string) {
		t.Helper()
		r := txload(t.Context(), nil, "run", "append", "--url", url, "--init", "keep", "--progress", "0", "--history", file,
			"--isolation", "rr", "--concurrency", "4", "--duration", "2s")
		if r.code != 0 {
			t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		mustContain(t, squeeze(r.stdout), "final: read ", " elements: ok\n")
	}
	check := func(url, file string) result {
		return txload(t.Context(), nil, "check", "append", "--url", url, "--history", file, "--isolation", "rr")
	}
	first, second := filepath.Join(dir, "first.jsonl"), filepath.Join(dir, "second.edn")
	run(first)
	rows, elements := appendRows(t, url)
	c := check(url, first)
	if c.code != 0 {
		t.Fatalf("check of the run's data: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	mustContain(t, squeeze(c.stdout), "read from "+first+" (JSON lines)", "final: read "+strconv.FormatInt(rows, 10)+" keys in one snapshot, "+
		strconv.FormatInt(elements, 10)+" elements: ok", "check: ok")

	copy := srv.CopyDatabase(t, url)
	if _, err := pgtest.Conn(t, copy).Exec(t.Context(), `DELETE FROM txn0 WHERE id = (SELECT min(id) FROM txn0)`); err != nil {
		t.Fatal(err)
	}
	if c := check(copy, first); c.code != ExitFailed || !strings.Contains(c.stdout, "VIOLATION: lost-append: ") {
		t.Fatalf("check of a row deleted after the run: exit %d, want 1 and lost appends\n%s%s", c.code, c.stdout, c.stderr)
	}

	// Without a history: what the tables show alone.
	alone := func(url string) result {
		return txload(t.Context(), nil, "check", "append", "--url", url)
	}
	if c := alone(url); c.code != 0 || !strings.Contains(c.stdout, "none given") || !strings.Contains(c.stdout, "check: ok") {
		t.Fatalf("check without a history: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	copy = srv.CopyDatabase(t, url)
	if _, err := pgtest.Conn(t, copy).Exec(t.Context(), `UPDATE txn1 SET val = val || ',' || split_part(val, ',', 1) WHERE id = (SELECT min(id) FROM txn1);
		INSERT INTO txn2 SELECT * FROM txn1 WHERE id = (SELECT min(id) FROM txn1)`); err != nil {
		t.Fatal(err)
	}
	if c := alone(copy); c.code != ExitFailed || !strings.Contains(c.stdout, "VIOLATION: duplicate-elements: 1 (") ||
		!strings.Contains(c.stdout, "has a row in txn2, where it does not live (its table is txn1)") {
		t.Fatalf("check without a history of a value twice and a row copied: exit %d, want 1 and both\n%s%s", c.code, c.stdout, c.stderr)
	}

	run(second)
	c = check(url, first)
	if c.code != 0 {
		t.Fatalf("check of the first history after a second run: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	mustContain(t, squeeze(c.stdout), "outside: 0 keys below the history's and ", " not held to the history, but to what the tables show alone: ok", "check: ok")
	if c := check(url, second); c.code != 0 || !strings.Contains(c.stdout, "read from "+second+" (EDN)") {
		t.Fatalf("check of the second history: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
}

// Bad input to check append: one line naming the flag, exit 2, before the
// database is touched (the URL is unreachable: exit 1 otherwise).
func TestCheckAppendBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.jsonl", `{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["append",1,1]]}`+"\n")
	bad := write("bad.jsonl", `{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"comitted","ops":[["r",9,[7]]]}`+"\n")
	twice := write("twice.jsonl", `{"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["append",1,1]]}`+"\n"+
		`{"client":1,"invoke_ns":6,"complete_ns":9,"outcome":"committed","ops":[["append",1,1]]}`+"\n")
	levels := write("levels.jsonl", `{"isolation":"read committed","client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["append",1,1]]}`+"\n"+
		`{"isolation":"serializable","client":1,"invoke_ns":6,"complete_ns":9,"outcome":"committed","ops":[["append",1,2]]}`+"\n")
	noClients := write("noclients.jsonl", `{"clients":0,"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["append",1,1]]}`+"\n")
	clientsTwice := write("clients.jsonl", `{"clients":2,"client":0,"invoke_ns":0,"complete_ns":5,"outcome":"committed","ops":[["append",1,1]]}`+"\n"+
		`{"clients":3,"client":1,"invoke_ns":6,"complete_ns":9,"outcome":"committed","ops":[["append",1,2]]}`+"\n")
	clientsEDN := write("clients.edn", `{:index 0, :time 0, :type :invoke, :process 0, :f :txn, :value [[:append 1 1]], :clients "two"}`+"\n")
	noLevel := write("nolevel.edn", `{:index 0, :time 0, :type :invoke, :process 0, :f :txn, :value [[:append 1 1]], :isolation "chaos"}`+"\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"history missing", []string{"--history", filepath.Join(dir, "none.jsonl")}, "--history: open " + filepath.Join(dir, "none.jsonl") + ": no such file or directory"},
		{"history a directory", []string{"--history", dir}, "--history: " + dir},
		{"history malformed", []string{"--history", bad}, "--history: " + bad + `, line 1: outcome "comitted" is not committed, failed or unknown`},
		{"a value appended twice", []string{"--history", twice}, "value 1 appended to key 1 twice, by line 1 and line 2"},
		{"history as EDN", []string{"--history", good, "--history-format", "edn"}, "--history: " + good},
		{"history format", []string{"--history", good, "--history-format", "csv"}, `--history-format "csv" is not allowed (allowed: jsonl, edn)`},
		{"isolation", []string{"--history", good, "--isolation", "snapshot"}, `--isolation: "snapshot" is not an isolation level`},
		{"two levels recorded", []string{"--history", levels}, "--history: " + levels + `, line 2: isolation "serializable", where line 1 recorded read committed: a history runs at one level`},
		{"no clients recorded", []string{"--history", noClients}, "--history: " + noClients + ", line 1: clients 0: a run has 1 to 2147483648 clients"},
		{"two numbers of clients recorded", []string{"--history", clientsTwice}, "--history: " + clientsTwice + ", line 2: clients 3, where line 1 recorded 2: a history is one run's"},
		{"clients not a number, EDN", []string{"--history", clientsEDN}, "--history: " + clientsEDN + `, line 1: :clients "two" is not a number`},
		{"a level recorded that is none", []string{"--history", noLevel}, "--history: " + noLevel + `, line 1: isolation "chaos": "chaos" is not an isolation level`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := txload(t.Context(), nil, append([]string{"check", "append", "--url", "postgres://nobody@127.0.0.1:1/none"}, tc.args...)...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != ExitUsage || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and one line containing %q", r.code, r.stderr, tc.want)
			}
		})
	}
}

// A history records the level its run ran at, and check append and check
// history judge it there unless --isolation is given (then they say the
// history records another, if it does); a history that records none (an
// older one) is judged at serializable, which they say they assumed.
func TestCheckAppendLevel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := srv.NewDatabase(t)
	runs := map[string]string{"rc": filepath.Join(dir, "rc.jsonl"), "rr": filepath.Join(dir, "rr.edn")}
	for level, file := range runs {
		r := txload(t.Context(), nil, "run", "append", "--url", url, "--init", "keep", "--progress", "0", "--history", file,
			"--isolation", level, "--concurrency", "4", "--duration", "1s")
		if r.code != 0 {
			t.Fatalf("run at %s: exit %d\n%s%s", level, r.code, r.stdout, r.stderr)
		}
	}
	// The JSON lines history as a history written before the level was.
	text, err := os.ReadFile(runs["rc"])
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.jsonl")
	if err := os.WriteFile(old, []byte(strings.Replace(string(text), `"isolation":"read committed",`, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	assumed := "level: serializable assumed: the history records no level (written before txload recorded it, or by another tool): give the run's with --isolation"
	// The same history recording read uncommitted, which no run writes,
	// with an aborted read added: judged at read committed, it fails.
	aborted := `{"client":0,"invoke_ns":900000000000,"complete_ns":900000000001,"outcome":"failed","ops":[["append",2000000000,1]]}` + "\n" +
		`{"client":1,"invoke_ns":900000000002,"complete_ns":900000000003,"outcome":"committed","ops":[["r",2000000000,[1]]]}` + "\n"
	ru := filepath.Join(dir, "ru.jsonl")
	if err := os.WriteFile(ru, []byte(strings.Replace(string(text), `"isolation":"read committed"`, `"isolation":"read uncommitted"`, 1)+aborted), 0o644); err != nil {
		t.Fatal(err)
	}
	ruNote := "level: read committed: the history records read uncommitted, which no txload run records (PostgreSQL runs it as read committed)"
	// An attempt by a client the run of 4 did not have, consistent with
	// every other (a read of a key no one appended to).
	if !strings.Contains(string(text), `"clients":4,`) {
		t.Fatalf("the history does not record its 4 clients:\n%.300s", text)
	}
	stranger := filepath.Join(dir, "stranger.jsonl")
	if err := os.WriteFile(stranger, append(text, `{"client":99,"invoke_ns":900000000000,"complete_ns":900000000001,"outcome":"committed","ops":[["r",2000000000,[]]]}`+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	beyond := "VIOLATION: history: attempts 1 by a client the run did not have (it recorded 4, numbered 0 to 3), the first at line "
	// A history as written before the clients were recorded: said.
	noClients := filepath.Join(dir, "noclients.jsonl")
	if err := os.WriteFile(noClients, []byte(strings.Replace(string(text), `"clients":4,`, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	clientsNote := "clients: not recorded (written before txload recorded them, or by another tool): every client number is taken as the run's"
	for _, tc := range []struct {
		name string
		args []string
		want []string // in stdout, spaces squeezed
		not  string   // not in stdout
	}{
		{"rc recorded", []string{"check", "append", "--url", url, "--history", runs["rc"]}, []string{"verdict: at read committed: ok"}, "level:"},
		{"rc recorded, no clients line", []string{"check", "append", "--url", url, "--history", runs["rc"]}, []string{"verdict: at read committed: ok"}, "clients:"},
		{"rr recorded, EDN, no clients line", []string{"check", "append", "--url", url, "--history", runs["rr"]}, []string{"verdict: at repeatable read: ok"}, "clients:"},
		{"rr recorded, EDN", []string{"check", "append", "--url", url, "--history", runs["rr"]}, []string{"verdict: at repeatable read: ok"}, "level:"},
		{"rc recorded, rr given", []string{"check", "append", "--url", url, "--history", runs["rc"], "--isolation", "rr"},
			[]string{"level: repeatable read, from --isolation: the history records read committed", "verdict: at repeatable read: "}, ""},
		{"rc given as recorded", []string{"check", "append", "--url", url, "--history", runs["rc"], "--isolation", "read-committed"},
			[]string{"verdict: at read committed: ok"}, "level:"},
		{"none recorded", []string{"check", "append", "--url", url, "--history", old}, []string{assumed, "verdict: at serializable: "}, ""},
		{"none recorded, rc given", []string{"check", "append", "--url", url, "--history", old, "--isolation", "rc"}, []string{"verdict: at read committed: ok"}, "level:"},
		{"check history, rc recorded", []string{"check", "history", runs["rc"]}, []string{"verdict at read committed: ok"}, "level:"},
		{"check history, none recorded", []string{"check", "history", old}, []string{assumed, "verdict at serializable: "}, ""},
		{"ru recorded", []string{"check", "append", "--url", url, "--history", ru}, []string{ruNote, "verdict: at read committed: VIOLATION: G1a is forbidden"}, ""},
		{"check history, ru recorded", []string{"check", "history", ru}, []string{ruNote, "verdict at read committed: VIOLATION: G1a is forbidden"}, ""},
		{"client beyond the run's", []string{"check", "append", "--url", url, "--history", stranger}, []string{"verdict: at read committed: ok", beyond}, ""},
		{"check history, client beyond the run's", []string{"check", "history", stranger}, []string{"verdict at read committed: ok", strings.Replace(beyond, "history: ", "", 1)}, ""},
		{"clients not recorded", []string{"check", "append", "--url", url, "--history", noClients}, []string{clientsNote, "verdict: at read committed: ok"}, ""},
		{"check history, ru recorded and given", []string{"check", "history", ru, "--isolation", "ru"}, []string{"verdict at read uncommitted: ok"}, "level:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := txload(t.Context(), nil, tc.args...)
			out := squeeze(r.stdout)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("exit %d; stdout lacks %q\n%s%s", r.code, w, r.stdout, r.stderr)
				}
			}
			if tc.not != "" && strings.Contains(out, tc.not) {
				t.Errorf("stdout holds %q\n%s", tc.not, r.stdout)
			}
			// A level the history records that allows what it holds passes.
			if strings.HasSuffix(tc.want[len(tc.want)-1], ": ok") && !strings.Contains(out, "VIOLATION") && r.code != 0 {
				t.Errorf("exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
			}
			if strings.Contains(strings.Join(tc.want, " "), "VIOLATION") && r.code != ExitFailed {
				t.Errorf("exit %d, want %d\n%s%s", r.code, ExitFailed, r.stdout, r.stderr)
			}
		})
	}
}
