package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// logRun is the transaction logs of one run: per file (thread 0 first),
// its lines split into columns.
type logRun struct {
	who   string
	files [][][]string
}

// readLogRun reads the files prefix.pid and prefix.pid.N in dir, and
// fails if any other file begins with prefix.
func readLogRun(t *testing.T, who, dir, prefix string, pid int) logRun {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := prefix + "." + strconv.Itoa(pid)
	byThread := map[int][][]string{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		th := 0
		if name != base {
			rest, ok := strings.CutPrefix(name, base+".")
			n, err := strconv.Atoi(rest)
			if !ok || err != nil || n < 1 {
				t.Fatalf("%s: unexpected log file %s (want %s or %s.N)", who, name, base, base)
			}
			th = n
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var lines [][]string
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if l != "" {
				lines = append(lines, strings.Split(l, " "))
			}
		}
		byThread[th] = lines
	}
	r := logRun{who: who}
	for th := 0; th < len(byThread); th++ {
		lines, ok := byThread[th]
		if !ok {
			t.Fatalf("%s: no log of thread %d among %d files", who, th, len(byThread))
		}
		r.files = append(r.files, lines)
	}
	return r
}

func atoi(t *testing.T, who, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s: %q is not an integer", who, s)
	}
	return v
}

// txnLogShape is what a per-transaction log holds, checked line by line:
// columns client, transaction number, latency (or a word), script, time
// (s, µs), then the lag under -R and the retries unless --max-tries 1.
type txnLogShape struct {
	clients, threads int
	cols             int
	words            map[string]bool // allowed in place of the latency
	sampled          bool            // --sampling-rate: numbers increase with gaps
}

// check returns how many lines each client has, and the words seen.
func (s txnLogShape) check(t *testing.T, r logRun) (map[int64]int64, map[string]int) {
	t.Helper()
	if len(r.files) != s.threads {
		t.Fatalf("%s: %d log files, want one per thread: %d", r.who, len(r.files), s.threads)
	}
	per := s.clients / s.threads
	counts, words := map[int64]int64{}, map[string]int{}
	last := map[int64]int64{}
	for th, lines := range r.files {
		var lastTime int64
		for _, f := range lines {
			if len(f) != s.cols {
				t.Fatalf("%s: %d columns, want %d: %q", r.who, len(f), s.cols, f)
			}
			c := atoi(t, r.who, f[0])
			if c < 0 || int(c)/per != th {
				t.Errorf("%s: client %d in the log of thread %d", r.who, c, th)
			}
			n := atoi(t, r.who, f[1])
			if (!s.sampled && n != last[c]+1) || n <= last[c] {
				t.Errorf("%s: client %d: transaction %d after %d", r.who, c, n, last[c])
			}
			last[c] = n
			counts[c]++
			if s.words[f[2]] {
				words[f[2]]++
			} else if v := atoi(t, r.who, f[2]); v < leastLatency(r.who) || v > 60e6 {
				t.Errorf("%s: latency %d µs", r.who, v)
			}
			if f[3] != "0" {
				t.Errorf("%s: script %s", r.who, f[3])
			}
			sec, us := atoi(t, r.who, f[4]), atoi(t, r.who, f[5])
			if us < 0 || us >= 1e6 || sec < 1e9 {
				t.Errorf("%s: time %s %s", r.who, f[4], f[5])
			}
			if ts := sec*1e6 + us; ts < lastTime {
				t.Errorf("%s: time goes back in the log of thread %d", r.who, th)
			} else {
				lastTime = ts
			}
			for _, col := range f[6:] {
				if atoi(t, r.who, col) < 0 {
					t.Errorf("%s: negative lag or retries: %q", r.who, f)
				}
			}
		}
	}
	return counts, words
}

// runBoth runs args with -l into a fresh directory, by txload pgbench and,
// when it is installed, by the real pgbench, one after the other; it
// returns txload's logs and pgbench's (nil without it), and txload's
// stdout.
func runBoth(t *testing.T, db string, args ...string) (ours, theirs *logRun, stdout string) {
	t.Helper()
	return runLogged(t, false, db, args...)
}

// runBothAtOnce is runBoth with the two programs running at the same time:
// for runs whose clients do not interact through the database (a read-only
// script), where a duration-bound run then holds the machine for its
// duration once instead of twice.
func runBothAtOnce(t *testing.T, db string, args ...string) (ours, theirs *logRun, stdout string) {
	t.Helper()
	return runLogged(t, true, db, args...)
}

func runLogged(t *testing.T, together bool, db string, args ...string) (ours, theirs *logRun, stdout string) {
	t.Helper()
	const prefix = "lg"
	pdir := t.TempDir()
	var cmd *exec.Cmd
	var theirOut []byte
	wait := func() error { return nil }
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		t.Log("pgbench is not installed: txload's logs are not compared with its")
	} else {
		cmd = exec.Command(pgbench, append(append([]string{"-l", "--log-prefix", prefix}, args...), db)...)
		cmd.Dir = pdir
		run := func() (err error) {
			theirOut, err = cmd.CombinedOutput()
			return err
		}
		if together {
			wait = started(run)
		} else {
			err := run()
			wait = func() error { return err }
		}
	}
	waited := false
	defer func() {
		if !waited { // txload's run failed the test: pgbench ends first
			_ = wait()
		}
	}()
	dir := t.TempDir()
	r := pgbenchOK(t, nil, append(append([]string{"-l", "--log-prefix", filepath.Join(dir, prefix)}, args...), db)...)
	o := readLogRun(t, "txload", dir, prefix, os.Getpid())
	waited = true
	if err := wait(); err != nil {
		t.Fatalf("pgbench %v: %v\n%s", args, err, theirOut)
	}
	if cmd == nil {
		return &o, nil, r.stdout
	}
	p := readLogRun(t, "pgbench", pdir, prefix, cmd.Process.Pid)
	return &o, &p, r.stdout
}

// -l writes pgbench's per-transaction logs: one file per thread (-j),
// named as pgbench names them, each client's transactions numbered from 1
// in order, in time order per file, as many lines as transactions; the
// same shape as the real pgbench's logs of the same run.
func TestPgbenchCommandLog(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	pgbenchOK(t, nil, "-i", "-q", db)
	shape := txnLogShape{clients: 4, threads: 2, cols: 6}
	ours, theirs, _ := runBoth(t, db, "-n", "-t", "20", "-c", "4", "-j", "2")
	for _, r := range []*logRun{ours, theirs} {
		if r == nil {
			continue
		}
		counts, words := shape.check(t, *r)
		if len(words) != 0 || len(counts) != 4 {
			t.Errorf("%s: words %v, clients %v", r.who, words, counts)
		}
		for c, n := range counts {
			if n != 20 {
				t.Errorf("%s: client %d logged %d transactions, want 20", r.who, c, n)
			}
		}
	}
}

// -l with -R adds the schedule lag; --max-tries other than 1 the retries;
// with --failures-detailed a failure is logged as serialization or
// deadlock, and without it as failed.
func TestPgbenchCommandLogColumns(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	pgbenchOK(t, nil, "-i", "-q", db)
	// Every transaction updates the same row under REPEATABLE READ: the
	// clients collide on serialization failures.
	script := filepath.Join(t.TempDir(), "conflict.sql")
	if err := os.WriteFile(script, []byte("BEGIN ISOLATION LEVEL REPEATABLE READ;\nUPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;\nSELECT pg_sleep(0.001);\nEND;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		shape txnLogShape
		word  string // seen in both logs
	}{
		{"rate", []string{"-n", "-t", "20", "-c", "2", "-R", "500"}, txnLogShape{clients: 2, threads: 1, cols: 7}, ""},
		{"rate and latency limit", []string{"-n", "-t", "20", "-c", "2", "-j", "2", "-R", "500", "-L", "100"},
			txnLogShape{clients: 2, threads: 2, cols: 7, words: map[string]bool{"skipped": true}}, ""},
		{"failures detailed", []string{"-n", "-t", "30", "-c", "4", "--max-tries", "2", "--failures-detailed", "-f", script},
			txnLogShape{clients: 4, threads: 1, cols: 7, words: map[string]bool{"serialization": true}}, "serialization"},
		{"failures", []string{"-n", "-t", "30", "-c", "4", "-j", "2", "-f", script},
			txnLogShape{clients: 4, threads: 2, cols: 6, words: map[string]bool{"failed": true}}, "failed"},
		// Retried without a limit of tries, a transaction still fails once
		// its tries outlast -L: on a busy machine pgbench logs "failed".
		{"failures, rate and tries", []string{"-n", "-t", "30", "-c", "4", "-R", "1000", "--max-tries", "0", "-L", "1000", "-f", script},
			txnLogShape{clients: 4, threads: 1, cols: 8, words: map[string]bool{"skipped": true, "failed": true}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours, theirs, _ := runBoth(t, db, tc.args...)
			for _, r := range []*logRun{ours, theirs} {
				if r == nil {
					continue
				}
				_, words := tc.shape.check(t, *r)
				if tc.word != "" && words[tc.word] == 0 {
					t.Errorf("%s: no transaction logged as %s", r.who, tc.word)
				}
			}
		})
	}
}

// --aggregate-interval writes a line per interval in pgbench's format:
// the interval's start (whole seconds, one apart), the transactions in it,
// latency sums, min and max, lag columns, skipped, retried, retries,
// serialization and deadlock failures; --sampling-rate logs a share of the
// transactions.
func TestPgbenchCommandLogAggregateAndSampling(t *testing.T) {
	t.Parallel()
	db := srv.NewDatabase(t)
	pgbenchOK(t, nil, "-i", "-q", db)
	t.Run("aggregate", func(t *testing.T) {
		ours, theirs, stdout := runBothAtOnce(t, db, "-n", "-T", "3", "-c", "2", "-j", "2", "-S", "--aggregate-interval", "1")
		for _, r := range []*logRun{ours, theirs} {
			if r == nil {
				continue
			}
			if len(r.files) != 2 {
				t.Fatalf("%s: %d files, want 2", r.who, len(r.files))
			}
			for th, lines := range r.files {
				if len(lines) < 2 || len(lines) > 4 {
					t.Errorf("%s: thread %d: %d intervals in a 3 s run", r.who, th, len(lines))
				}
				for i, f := range lines {
					if len(f) != 15 {
						t.Fatalf("%s: %d columns, want 15: %q", r.who, len(f), f)
					}
					v := make([]int64, len(f))
					for j := range f {
						v[j] = atoi(t, r.who, f[j])
					}
					if i > 0 && v[0] != atoi(t, r.who, lines[i-1][0])+1 {
						t.Errorf("%s: interval %d starts at %d after %s", r.who, i, v[0], lines[i-1][0])
					}
					// count > 0, sum ≥ min·count, max ≥ min > 0; no lag, skips,
					// retries or failures in this run. An interval may be empty
					// (all zeros), as pgbench writes one: the first, when the
					// run starts near a second's end (intervals start at the
					// whole second) and its first transaction ends in the next,
					// or any second a loaded machine gave the run no CPU.
					empty := v[1] == 0 && v[2] == 0 && v[3] == 0 && v[4] == 0 && v[5] == 0
					if !empty && (v[1] <= 0 || v[4] < leastLatency(r.who) || v[5] < v[4] || v[2] < v[4]*v[1] || v[3] < v[2]) {
						t.Errorf("%s: interval %q", r.who, f)
					}
					for j := 6; j < 15; j++ {
						if v[j] != 0 {
							t.Errorf("%s: column %d of %q", r.who, j+1, f)
						}
					}
				}
			}
		}
		// The intervals hold the run's transactions but for the last,
		// incomplete one, which pgbench drops.
		var logged int64
		for _, lines := range ours.files {
			for _, f := range lines {
				logged += atoi(t, "txload", f[1])
			}
		}
		processed := processedCount(t, stdout)
		if logged <= processed/3 || logged > processed {
			t.Errorf("the intervals hold %d transactions of %d", logged, processed)
		}
	})
	t.Run("sampling", func(t *testing.T) {
		shape := txnLogShape{clients: 2, threads: 1, cols: 6, sampled: true}
		ours, theirs, _ := runBoth(t, db, "-n", "-t", "200", "-c", "2", "-S", "--sampling-rate", "0.5")
		for _, r := range []*logRun{ours, theirs} {
			if r == nil {
				continue
			}
			counts, _ := shape.check(t, *r)
			var n int64
			for _, c := range counts {
				n += c
			}
			if n < 120 || n > 280 {
				t.Errorf("%s: %d of 400 transactions logged at a sampling rate of 0.5", r.who, n)
			}
		}
	})
}

// processedCount reads "number of transactions actually processed: N".
func processedCount(t *testing.T, stdout string) int64 {
	t.Helper()
	for _, l := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(l, "number of transactions actually processed: "); ok {
			n, _, _ := strings.Cut(rest, "/")
			return atoi(t, "report", n)
		}
	}
	t.Fatalf("no count of transactions processed:\n%s", stdout)
	return 0
}

// Without --log-prefix the logs are pgbench_log.PID[.N] in the current
// directory; a directory that does not exist is pgbench's error, exit 1.
func TestPgbenchCommandLogDefaultName(t *testing.T) {
	db := srv.NewDatabase(t)
	pgbenchOK(t, nil, "-i", "-q", db)
	dir := t.TempDir()
	t.Chdir(dir)
	pgbenchOK(t, nil, "-n", "-l", "-t", "3", "-c", "3", "-j", "3", "-S", db)
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	pid := strconv.Itoa(os.Getpid())
	if want := []string{"pgbench_log." + pid, "pgbench_log." + pid + ".1", "pgbench_log." + pid + ".2"}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("files %v, want %v", names, want)
	}
	bad := filepath.Join(dir, "missing", "lg")
	r := txload(t.Context(), nil, "pgbench", "-n", "-l", "--log-prefix", bad, "-t", "1", "-S", db)
	if want := "pgbench: error: could not open logfile \"" + bad + "." + pid + "\": No such file or directory"; r.code != 1 || !strings.Contains(r.stderr, want+"\n") {
		t.Errorf("exit %d, stderr:\n%s\nwant %q", r.code, r.stderr, want)
	}
}

// leastLatency is the least latency in µs a log line may hold. Ours is
// measured on every transaction and is never 0; pgbench reuses a clock
// reading within one pass of a client's state machine and has been seen
// to log 0 for a successful transaction, so its lines are held to "not
// negative".
func leastLatency(who string) int64 {
	if who == "pgbench" {
		return 0
	}
	return 1
}
