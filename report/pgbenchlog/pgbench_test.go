package pgbenchlog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/report/pgbenchlog"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

func pgbenchPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("pgbench")
	if err != nil {
		t.Skip("pgbench is not installed (apt-get install postgresql-client): the comparison needs the real program")
	}
	return p
}

// pgbench runs the real pgbench in dir on the database url; it returns
// the pid its log files are named after.
func pgbench(t *testing.T, dir, url string, args ...string) int {
	t.Helper()
	cmd := exec.Command(pgbenchPath(t), append(args, url)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		// Exit 2 is a client aborted; the failures tests expect none.
		if !errors.As(err, &ee) {
			t.Fatalf("pgbench %v: %v\n%s", args, err, out.String())
		}
		t.Fatalf("pgbench %v: exit %d\n%s", args, ee.ExitCode(), out.String())
	}
	return cmd.Process.Pid
}

// initDB makes a database with pgbench's tables (scale 1).
func initDB(t *testing.T) string {
	t.Helper()
	url := srv.NewDatabase(t)
	pgbench(t, t.TempDir(), url, "-i", "-q")
	return url
}

// readLogs reads the files PREFIX.PID[.THREAD] of threads, in thread order,
// and fails if any other file is in dir.
func readLogs(t *testing.T, dir, prefix string, pid, threads int) [][][]string {
	t.Helper()
	var out [][][]string
	want := map[string]bool{}
	for th := 0; th < threads; th++ {
		name := pgbenchlog.FileName(prefix, pid, th)
		want[name] = true
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("log of thread %d: %v", th, err)
		}
		var lines [][]string
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if l != "" {
				lines = append(lines, strings.Split(l, " "))
			}
		}
		out = append(out, lines)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && !want[e.Name()] {
			t.Errorf("unexpected log file %s", e.Name())
		}
	}
	return out
}

func num(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%q is not an integer", s)
	}
	return v
}

// txnShape says what each column of a per-transaction log means, and checks
// every line of both programs against it.
type txnShape struct {
	clients, threads int
	rate             bool
	maxTries         int // 1 = no retries column
	results          map[string]bool
	from, to         time.Time
}

func (s txnShape) cols() int {
	n := 6
	if s.rate {
		n++
	}
	if s.maxTries != 1 {
		n++
	}
	return n
}

// floor is the least latency a log line may hold. Ours is measured on
// every transaction and is never 0. pgbench reads its clock once per pass
// of a client's state machine and reuses it, and CI once saw it log a
// successful transaction with latency 0 under load (not reproduced in 15
// runs here): its lines are held only to "not negative".
func floor(who string) int64 {
	if who == "pgbench" {
		return 0
	}
	return 1
}

// check returns the column counts and the words seen in column 3.
func (s txnShape) check(t *testing.T, who string, files [][][]string) (map[int]int, map[string]int) {
	t.Helper()
	counts, words := map[int]int{}, map[string]int{}
	next := map[int64]int64{}
	per := (s.clients + s.threads - 1) / s.threads
	for th, lines := range files {
		var last int64
		for _, f := range lines {
			counts[len(f)]++
			if len(f) != s.cols() {
				t.Fatalf("%s: %d columns, want %d: %q", who, len(f), s.cols(), f)
			}
			client := num(t, f[0])
			if client < 0 || client >= int64(s.clients) || int(client)/per != th {
				t.Errorf("%s: client %d in the log of thread %d", who, client, th)
			}
			if n := num(t, f[1]); n != next[client]+1 {
				t.Errorf("%s: client %d transaction %d after %d", who, client, n, next[client])
			}
			next[client]++
			if s.results[f[2]] {
				words[f[2]]++
			} else if v := num(t, f[2]); v < floor(who) || v > int64(time.Minute/time.Microsecond) {
				t.Errorf("%s: latency %d µs", who, v)
			}
			if num(t, f[3]) != 0 {
				t.Errorf("%s: script %s", who, f[3])
			}
			sec, us := num(t, f[4]), num(t, f[5])
			when := time.Unix(sec, us*1000)
			if us < 0 || us >= 1e6 || when.Before(s.from.Add(-time.Second)) || when.After(s.to.Add(time.Second)) {
				t.Errorf("%s: time %d.%06d outside the run %v..%v", who, sec, us, s.from, s.to)
			}
			if ts := sec*1e6 + us; ts < last {
				t.Errorf("%s: time goes back in thread %d", who, th)
			} else {
				last = ts
			}
			i := 6
			if s.rate {
				if v := num(t, f[i]); v < 0 || (f[2] != "skipped" && s.results[f[2]] && v != 0) {
					t.Errorf("%s: lag %d for %s", who, v, f[2])
				}
				i++
			}
			if s.maxTries != 1 {
				if v := num(t, f[i]); v < 0 || s.maxTries > 0 && v >= int64(s.maxTries) {
					t.Errorf("%s: %d retries with --max-tries %d", who, v, s.maxTries)
				}
			}
		}
	}
	return counts, words
}

// client is one of our clients: a connection and its schedule.
type client struct {
	id    int
	conn  *pgx.Conn
	n     int64
	sched time.Time
}

// result is one transaction our driver ran, for its thread's writer.
// drive runs sql as each client's transaction, as pgbench would: clients
// in blocks per thread, one writer per thread fed by one goroutine, each
// client scheduled every interval (0 = no schedule) until count
// transactions or until the deadline.
func drive(t *testing.T, url string, w []*pgbenchlog.Writer, clients int, sql string, interval time.Duration, count int64, until time.Time, tries int) time.Time {
	t.Helper()
	ctx := context.Background()
	// One lock per thread's log: the end time is taken under it, so each
	// log is in time order, as a pgbench thread writes it.
	locks := make([]sync.Mutex, len(w))
	var wg sync.WaitGroup
	per := (clients + len(w) - 1) / len(w)
	for c := 0; c < clients; c++ {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		cl := &client{id: c, conn: conn, sched: time.Now()}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for (count == 0 || cl.n < count) && (until.IsZero() || time.Now().Before(until)) {
				if interval > 0 {
					cl.sched = cl.sched.Add(interval)
					time.Sleep(time.Until(cl.sched))
				} else {
					cl.sched = time.Now()
				}
				begin := time.Now()
				txn := pgbenchlog.Txn{Client: cl.id, Tries: 1}
				for {
					_, err := cl.conn.Exec(ctx, sql)
					var pe *pgconn.PgError
					if err == nil {
						break
					}
					if !errors.As(err, &pe) || pe.Code != "40001" {
						t.Errorf("client %d: %v", cl.id, err)
						return
					}
					_, _ = cl.conn.Exec(ctx, "ROLLBACK")
					if txn.Tries >= tries {
						txn.Outcome = pgbenchlog.Serialization
						break
					}
					txn.Tries++
				}
				th := cl.id / per
				locks[th].Lock()
				end := time.Now()
				cl.n++
				txn.Number, txn.End = cl.n, end
				if txn.Outcome == pgbenchlog.OK {
					txn.Latency, txn.Lag = end.Sub(cl.sched), begin.Sub(cl.sched)
				}
				err := w[th].Log(txn)
				locks[th].Unlock()
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Now()
}

// widths are the line widths (columns) seen, sorted.
func widths(m map[int]int) []int {
	var k []int
	for c := range m {
		k = append(k, c)
	}
	sort.Ints(k)
	return k
}

func create(t *testing.T, cfg pgbenchlog.Config, threads int, start time.Time) []*pgbenchlog.Writer {
	t.Helper()
	var ws []*pgbenchlog.Writer
	for th := 0; th < threads; th++ {
		w, err := pgbenchlog.Create(cfg, th, start)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	return ws
}

func closeAll(t *testing.T, ws []*pgbenchlog.Writer, at time.Time) {
	t.Helper()
	for _, w := range ws {
		if err := w.Close(at); err != nil {
			t.Fatal(err)
		}
	}
}

const selectOnly = "SELECT abalance FROM pgbench_accounts WHERE aid = 1 + (random() * 99999)::int"

// -l with --rate and --max-tries: pgbench's files and ours have the same
// names, the same columns, and every column means the same.
func TestTransactionLogLikePgbench(t *testing.T) {
	url := initDB(t)
	shape := txnShape{clients: 2, threads: 2, rate: true, maxTries: 3, results: map[string]bool{"failed": true, "skipped": true}}

	theirs := t.TempDir()
	shape.from = time.Now()
	pid := pgbench(t, theirs, url, "-n", "-S", "-l", "--log-prefix=run", "-c", "2", "-j", "2", "-t", "20", "-R", "400", "--max-tries", "3")
	shape.to = time.Now()
	pc, _ := shape.check(t, "pgbench", readLogs(t, theirs, "run", pid, 2))

	ours := t.TempDir()
	cfg := pgbenchlog.Config{Prefix: filepath.Join(ours, "run"), PID: os.Getpid(), Throttled: true, MaxTries: 3}
	shape.from = time.Now()
	ws := create(t, cfg, 2, shape.from)
	end := drive(t, url, ws, 2, selectOnly, 5*time.Millisecond, 20, time.Time{}, 3)
	closeAll(t, ws, end)
	shape.to = time.Now()
	oc, _ := shape.check(t, "txload", readLogs(t, ours, "run", os.Getpid(), 2))
	if fmt.Sprint(widths(pc)) != fmt.Sprint(widths(oc)) {
		t.Errorf("column counts: pgbench %v, txload %v", pc, oc)
	}
}

// Serialization failures: the line says how the transaction ended where
// the latency would be, the same way in both programs.
func TestFailureLogLikePgbench(t *testing.T) {
	url := initDB(t)
	conflict := "BEGIN ISOLATION LEVEL REPEATABLE READ; UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1; SELECT pg_sleep(0.002); END;"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "conflict.sql"), []byte(strings.ReplaceAll(conflict, "; ", ";\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shape := txnShape{clients: 4, threads: 1, maxTries: 1, results: map[string]bool{"serialization": true, "deadlock": true}}
	shape.from = time.Now()
	pid := pgbench(t, dir, url, "-n", "-f", "conflict.sql", "-l", "-c", "4", "-j", "1", "-T", "2", "--failures-detailed")
	shape.to = time.Now()
	pc, pw := shape.check(t, "pgbench", readLogs(t, dir, "pgbench_log", pid, 1))

	ours := t.TempDir()
	cfg := pgbenchlog.Config{Prefix: filepath.Join(ours, "pgbench_log"), PID: 1, MaxTries: 1, FailuresDetailed: true}
	shape.from = time.Now()
	ws := create(t, cfg, 1, shape.from)
	end := drive(t, url, ws, 4, conflict, 0, 0, time.Now().Add(2*time.Second), 1)
	closeAll(t, ws, end)
	shape.to = time.Now()
	oc, ow := shape.check(t, "txload", readLogs(t, ours, "pgbench_log", 1, 1))
	if fmt.Sprint(widths(pc)) != fmt.Sprint(widths(oc)) {
		t.Errorf("column counts: pgbench %v, txload %v", pc, oc)
	}
	if pw["serialization"] == 0 || ow["serialization"] == 0 {
		t.Errorf("serialization failures logged: pgbench %d, txload %d (the conflict should produce some)", pw["serialization"], ow["serialization"])
	}
}

// aggShape checks an aggregate log: 15 columns, consecutive intervals,
// statistics that hold together.
func aggCheck(t *testing.T, who string, lines [][]string, interval int64, rate bool) (cols map[int]int, total int64) {
	t.Helper()
	cols = map[int]int{}
	var prev int64
	for i, f := range lines {
		cols[len(f)]++
		if len(f) != 15 {
			t.Fatalf("%s: %d columns, want 15: %q", who, len(f), f)
		}
		v := make([]int64, 15)
		for j := range f {
			v[j] = num(t, f[j])
		}
		if i > 0 && v[0] != prev+interval {
			t.Errorf("%s: interval %d after %d", who, v[0], prev)
		}
		prev = v[0]
		cnt, sum, sum2, lo, hi := v[1], float64(v[2]), float64(v[3]), v[4], v[5]
		total += cnt
		if cnt > 0 && (lo < floor(who) || lo > hi || sum < float64(lo*cnt)-1 || sum > float64(hi*cnt)+1 || sum2*float64(cnt) < sum*sum*0.999) {
			t.Errorf("%s: latency columns do not hold together: %q", who, f)
		}
		lcnt, lsum, lsum2, llo, lhi := cnt, float64(v[6]), float64(v[7]), v[8], v[9]
		if rate && lcnt > 0 && (llo < 0 || llo > lhi || lsum < float64(llo*lcnt)-1 || lsum > float64(lhi*lcnt)+1 || lsum2*float64(lcnt) < lsum*lsum*0.999) {
			t.Errorf("%s: lag columns do not hold together: %q", who, f)
		}
		if !rate && (v[6] != 0 || v[7] != 0 || v[8] != 0 || v[9] != 0) {
			t.Errorf("%s: lag without --rate: %q", who, f)
		}
		for j := 10; j < 15; j++ {
			if v[j] < 0 {
				t.Errorf("%s: negative count: %q", who, f)
			}
		}
	}
	return cols, total
}

// --aggregate-interval: the same 15 columns, an interval per line, the
// last incomplete one dropped, in both programs.
func TestAggregateLogLikePgbench(t *testing.T) {
	url := initDB(t)
	args := []string{"-n", "-S", "-l", "-c", "2", "-j", "1", "-T", "3", "--aggregate-interval", "1", "-R", "200", "-L", "50", "--max-tries", "2", "--failures-detailed"}
	theirs := t.TempDir()
	pid := pgbench(t, theirs, url, args...)
	pl := readLogs(t, theirs, "pgbench_log", pid, 1)[0]
	pc, _ := aggCheck(t, "pgbench", pl, 1, true)

	ours := t.TempDir()
	cfg := pgbenchlog.Config{Prefix: filepath.Join(ours, "pgbench_log"), PID: 7, AggregateInterval: 1, Throttled: true, LatencyLimit: true, MaxTries: 2, FailuresDetailed: true}
	start := time.Now()
	ws := create(t, cfg, 1, start)
	end := drive(t, url, ws, 2, selectOnly, 10*time.Millisecond, 0, start.Add(3*time.Second), 2)
	closeAll(t, ws, end)
	ol := readLogs(t, ours, "pgbench_log", 7, 1)[0]
	oc, total := aggCheck(t, "txload", ol, 1, true)
	if fmt.Sprint(widths(pc)) != fmt.Sprint(widths(oc)) {
		t.Errorf("columns: pgbench %v, txload %v", pc, oc)
	}
	// Intervals are whole seconds from the start's second, and the last
	// one the run did not complete is dropped: a 3 s run starting a
	// fraction f into a second ends f + 3 s (and the time its last
	// transactions took) after that second, so it logs 3 whole intervals,
	// or 4 when f is near 1 and the last transactions end past the 4th
	// second. Ours: exactly the whole seconds from the start's second to
	// the end; pgbench's, whose end we do not know: 3 or 4 (2 if the
	// machine is slow to start it).
	if want := int(end.Sub(time.Unix(start.Unix(), 0)) / time.Second); len(ol) != want {
		t.Errorf("txload: %d intervals from %v to %v, want %d", len(ol), start, end, want)
	}
	if len(pl) < 2 || len(pl) > 4 {
		t.Errorf("pgbench: %d intervals in a 3 s run", len(pl))
	}
	// At most the 600 scheduled; a loaded machine drives fewer, and -L 50
	// skips those that start late (44 were logged once while other tests
	// held both cores), so the floor is only "some".
	if total < 1 || total > 600 {
		t.Errorf("txload logged %d transactions in whole intervals", total)
	}
	first := num(t, ol[0][0])
	if first != start.Unix() {
		t.Errorf("first interval %d, want the start second %d", first, start.Unix())
	}
}

// A log that cannot be created fails with pgbench's message.
func TestCreateError(t *testing.T) {
	_, err := pgbenchlog.Create(pgbenchlog.Config{Prefix: "/nonexistent/dir/log", PID: 12}, 1, time.Now())
	if err == nil || err.Error() != `could not open logfile "/nonexistent/dir/log.12.1": No such file or directory` {
		t.Fatalf("got %v", err)
	}
}

// --sampling-rate keeps about that fraction.
func TestSampling(t *testing.T) {
	var buf bytes.Buffer
	w := pgbenchlog.New(&buf, pgbenchlog.Config{SamplingRate: 0.1, MaxTries: 1}, time.Now())
	for i := 1; i <= 10000; i++ {
		if err := w.Log(pgbenchlog.Txn{Client: 0, Number: int64(i), Latency: time.Millisecond, Tries: 1, End: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n < 800 || n > 1200 {
		t.Fatalf("logged %d of 10000 at a 0.1 sampling rate", n)
	}
}

// A seeded run samples the same transactions again (pgbench draws them from
// its --random-seed); another seed samples others.
func TestSamplingFollowsTheSeed(t *testing.T) {
	logged := func(seed uint64) string {
		dir := t.TempDir()
		w, err := pgbenchlog.Create(pgbenchlog.Config{Prefix: filepath.Join(dir, "log"), PID: 7, SamplingRate: 0.5, MaxTries: 1, Seed: seed}, 0, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 200; i++ {
			if err := w.Log(pgbenchlog.Txn{Client: 0, Number: int64(i), Latency: time.Millisecond, Tries: 1, End: time.Unix(1, 0)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(time.Unix(2, 0)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "log.7"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if a, b := logged(1), logged(1); a != b {
		t.Errorf("two runs with --random-seed 1 logged different transactions:\n%s\n%s", a, b)
	}
	if logged(1) == logged(2) {
		t.Errorf("--random-seed 1 and 2 logged the same transactions")
	}
}
