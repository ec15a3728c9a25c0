package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/workload"
	"github.com/txload/txload/workload/all"
)

// Bad input gets one line naming the flag, exit 2, and the database is not
// touched.
func TestBadInput(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"run", "bank", "--nope"}, "unknown flag: --nope"},
		{"unknown workload", []string{"run", "nosuch"}, `unknown workload "nosuch" for txload run (known: ` + registered(func(h workload.Hooks) bool { return h.Ops != nil }) + ")"},
		{"isolation", []string{"run", "bank", "--isolation", "foo"}, `--isolation: "foo" is not an isolation level`},
		{"isolation in a list", []string{"run", "bank", "--isolation", "rc,foo"}, `"foo" is not an isolation level`},
		{"accounts zero", []string{"run", "bank", "--accounts", "0"}, "--accounts must be between 2 and 2147483647 (an INT column), got 0"},
		{"selection above accounts", []string{"run", "bank", "--accounts", "100", "--selection", "200"}, "--selection must be between 2 and --accounts (100)"},
		{"selection not a number", []string{"run", "bank", "--selection", "ten"}, `--selection "ten" is not a whole number`},
		{"rate negative", []string{"run", "bank", "--rate", "-1"}, "--rate must be 0"},
		{"duration zero", []string{"run", "bank", "--duration", "0"}, "--duration must be positive"},
		{"duration malformed", []string{"run", "bank", "--duration", "ten"}, `--duration takes a duration such as 500ms, 30s, 5m or 1h30m, at most 2562047h, not "ten"`},
		{"transactions zero", []string{"run", "bank", "--transactions", "0"}, "--transactions must be a positive number of operations per client, got 0"},
		{"transactions negative", []string{"run", "bank", "-t", "-3"}, "--transactions must be a positive number of operations per client, got -3"},
		{"transactions malformed", []string{"run", "bank", "-t", "1e3"}, `--transactions takes a whole number, in digits (1000000, not 1e6), not "1e3"`},
		{"concurrency overflow", []string{"run", "bank", "-c", "99999999999999999999"}, `--concurrency: 99999999999999999999 is too large a number`},
		{"rate malformed", []string{"run", "bank", "--rate", "fast"}, `--rate takes a number, not "fast"`},
		{"flag of another type", []string{"run", "bank", "--progress", "often"}, `--progress takes a duration such as 500ms`},
		{"transactions and duration", []string{"run", "bank", "-t", "10", "--duration", "5s"}, "give --duration or --transactions, not both"},
		{"transactions overflow", []string{"run", "bank", "-t", "9007199254740993", "-c", "2"}, "--transactions 9007199254740993 for each of 2 clients is more than txload can count (2^53)"},
		{"transactions with warm-up", []string{"run", "bank", "-t", "10", "--warmup", "1s"}, "--warmup cannot be used with --transactions"},
		{"transactions of a timed workload", []string{"run", "pgio", "-t", "10"}, "pgio runs for a --duration, not a number of --transactions"},
		{"transfer", []string{"run", "bank", "--transfer", "steal"}, "--transfer \"steal\" is not allowed"},
		{"arrival", []string{"run", "bank", "--rate", "10", "--arrival", "bursty"}, "--arrival"},
		{"max tries", []string{"run", "bank", "--max-tries", "0"}, "--max-tries must be at least 1"},
		{"init mode", []string{"run", "bank", "--init", "maybe"}, "--init \"maybe\" is not allowed"},
		{"per statement without statements", []string{"run", "bank", "-r"}, "--report-per-statement (-r): workload bank does not time its statements one by one; its report is per operation"},
		{"json dir", []string{"run", "bank", "--json", "/no/such/dir/x.json"}, "--json /no/such/dir/x.json"},
		{"init accounts", []string{"init", "bank", "--accounts", "-5"}, "--accounts must be between 2 and 2147483647 (an INT column), got -5"},
		{"check extra arg", []string{"check", "bank", "extra"}, "unknown command \"extra\""},
		{"embedded version", []string{"run", "bank", "--embedded-version", "9"}, "--embedded-version"},
		{"rate NaN", []string{"run", "bank", "--rate", "NaN"}, "--rate must be 0 (closed loop) or a positive, finite number"},
		{"rate infinite", []string{"run", "bank", "--rate", "Inf"}, "--rate must be 0 (closed loop) or a positive, finite number"},
		{"rate overflows", []string{"run", "bank", "--rate", "1e9", "--duration", "500000h"}, "more than txload can count"},
		{"rate beyond a nanosecond", []string{"run", "bank", "--rate", "1e12", "--duration", "1s"}, "--rate 1e+12 is more than one operation per nanosecond, the schedule's resolution (at most 1e9)"},
		{"isolation snapshot", []string{"run", "bank", "--isolation", "snapshot"}, `--isolation: "snapshot" is not an isolation level (allowed: read committed, repeatable read, serializable, or rc, rr, ser; PostgreSQL's repeatable read is snapshot isolation)`},
		{"total balance overflows", []string{"run", "bank", "--initial-balance", "1000000000000000000"}, "--initial-balance 1000000000000000000 × --accounts 100000 overflows the total balance (at most 9223372036854775807)"},
		{"read batch above articles", []string{"run", "vote", "--read-batch", "1000000", "--articles", "1000"}, "--read-batch must be between 1 and --articles (1000), got 1000000"},
		{"zipf exponent NaN", []string{"run", "vote", "--distribution", "zipf", "--zipf-exponent", "NaN"}, "--zipf-exponent must be a finite number greater than 0, got NaN"},
		{"binary script", []string{"run", "script", "--file", "/bin/sh"}, "/bin/sh:1: not "},
		{"url with an unescaped password", []string{"run", "bank", "--url", "postgres://alice:p#ss@ss/w0rd@127.0.0.1:1/shop"},
			"--url postgres://xxxxx@127.0.0.1:1/shop does not parse cleanly: a password with @, /, ? or # must be percent-encoded"},
		{"duration beyond a century", []string{"run", "bank", "--duration", "1000000h"}, "--duration must be positive and at most 100 years"},
		{"drain timeout", []string{"run", "bank", "--drain-timeout", "-1s"}, "--drain-timeout must not be negative"},
		{"history over json", []string{"run", "append", "--history", "out.x", "--json", "out.x"}, "--json out.x and --history out.x are the same file: one would overwrite the other; give each output its own path"},
		{"history over html", []string{"run", "append", "--history", "/dev/stdout", "--html", "/dev/fd/1"}, "--html /dev/fd/1 and --history /dev/stdout are the same file"},
		{"connect timeout zero", []string{"run", "bank", "--connect-timeout", "0"}, "--connect-timeout must be a positive duration, such as 10s (got 0s)"},
		{"connect timeout negative", []string{"check", "bank", "--connect-timeout", "-2s"}, "--connect-timeout must be a positive duration, such as 10s (got -2s)"},
		{"json is a directory", []string{"run", "bank", "--json", os.TempDir()}, "is a directory"},
		{"json not writable", []string{"run", "bank", "--json", "/proc/run.json"}, "--json /proc/run.json: cannot create a file in /proc"},
		{"html dir", []string{"sweep", "bank", "--slo", "p99<=1s", "--html", "/no/such/dir/x.html"}, "--html /no/such/dir/x.html: directory /no/such/dir does not exist"},
		{"histogram dir", []string{"run", "bank", "--histogram", "/no/such/dir/x.hlog"}, "--histogram /no/such/dir/x.hlog: directory /no/such/dir does not exist"},
		{"sweep csv dir", []string{"sweep", "bank", "--slo", "p99<=1s", "--csv", "/no/such/x.csv"}, "--csv /no/such/x.csv"},
		{"empty url", []string{"run", "bank", "--url", ""}, "--url is empty"},
		{"embedded version with url", []string{"run", "bank", "--embedded-version", "17"}, "--embedded-version applies only to the embedded server"},
		{"init of a workload without init", []string{"init", "script"}, "workload script has no init (it has: run, sweep; init works for: " + registered(func(h workload.Hooks) bool { return h.Init != nil }) + ")"},
		{"check of a workload without check", []string{"check", "script"}, "workload script has no check"},
		{"instance beyond N", []string{"run", "bank", "--instance", "3/2"}, `--instance "3/2": want i/N, instance i of N counted from 0`},
		{"instance of none", []string{"run", "bank", "--instance", "0/0"}, `--instance "0/0": want i/N`},
		{"instances without an index", []string{"run", "bank", "--instances", "3"}, "--instances 3 needs $JOB_COMPLETION_INDEX"},
		{"instances and fresh init", []string{"run", "bank", "--instance", "0/2", "--init", "fresh"}, "--init fresh with --instance: the instances would load the schema at once"},
		{"fewer clients than instances", []string{"run", "bank", "--instance", "0/4", "--concurrency", "2"}, "--concurrency 2 is the clients of all 4 instances together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			switch tc.name {
			case "embedded version", "empty url", "url with an unescaped password":
			default:
				args = append(args, "--url", url)
			}
			r := txload(t.Context(), nil, args...)
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("stderr = %q, want one line containing %q", r.stderr, tc.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
	if n := tables(t, url); n != 0 {
		t.Fatalf("bad input created %d bank tables", n)
	}
}

// registered lists the registered workloads whose hooks have what a
// command needs, as its refusals name them: derived, so that a new
// workload does not break TestBadInput.
func registered(has func(workload.Hooks) bool) string {
	var out []string
	for _, m := range all.Registry().All() {
		if has(m.New().Hooks()) {
			out = append(out, m.Name)
		}
	}
	return strings.Join(out, ", ")
}

func TestUnreachableURL(t *testing.T) {
	t.Parallel()
	start := time.Now()
	r := txload(t.Context(), nil, "run", "bank", "--url", "postgres://alice:s3cr3t-pw@127.0.0.1:1/bank?connect_timeout=5")
	if r.code != ExitFailed {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr+r.stdout, "s3cr3t-pw") {
		t.Fatalf("the password leaked:\n%s", r.stderr)
	}
	mustContain(t, r.stderr, "connecting to postgres://alice:xxxxx@127.0.0.1:1/bank")
	if n := strings.Count(r.stderr, "connection refused"); n != 1 {
		t.Errorf("the refusal is told %d times, want once:\n%s", n, r.stderr)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("gave up after %s", d)
	}
	// DATABASE_URL is used when --url is absent, and redacted just the same.
	r = txload(t.Context(), map[string]string{"DATABASE_URL": "postgres://bob:hunter2@127.0.0.1:1/x"}, "check", "bank")
	if r.code != ExitFailed || strings.Contains(r.stderr, "hunter2") || !strings.Contains(r.stderr, "bob:xxxxx@127.0.0.1:1") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
}

// A server that accepts the connection and never answers its startup
// fails the run within the connect timeout, and says so: --connect-timeout
// for a URL that sets no connect_timeout, the URL's own where it sets one
// (as in libpq).
func TestConnectTimeout(t *testing.T) {
	t.Parallel()
	base := "postgres://u@" + pgtest.Mute(t) + "/db?sslmode=disable"
	for _, tc := range []struct {
		name, url, flag, want string
	}{
		{"the flag", base, "1s", "startup and authentication: no answer in 1s (the connect timeout)"},
		{"the URL's", base + "&connect_timeout=3", "1s", "startup and authentication: no answer in 3s (the connect timeout)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := txload(t.Context(), nil, "run", "bank", "--url", tc.url, "--connect-timeout", tc.flag)
			if r.code != ExitFailed {
				t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
			}
			mustContain(t, r.stderr, tc.want)
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("gave up after %s", d)
			}
		})
	}
}

// binDir holds the command compiled once for the package's tests (built);
// TestMain removes it.
var binDir = sync.OnceValues(func() (string, error) { return os.MkdirTemp("", "txload-bin-") })

var built = sync.OnceValues(func() (string, error) {
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "txload")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/txload/txload/cmd/txload").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// buildTxload compiles the command once for tests that need a real process
// (-short skips them).
func buildTxload(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the txload binary")
	}
	bin, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Ctrl-C prints the summary of what ran, stops the embedded server and
// leaves no postgres process behind.
func TestInterruptStopsEmbedded(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts its own embedded server")
	}
	bin := buildTxload(t)
	cmd := exec.Command(bin, "run", "bank", "--accounts", "1000", "--duration", "1m", "--isolation", "rc")
	cmd.Env = append(os.Environ(), "DATABASE_URL=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	outc := make(chan string, 1)
	go func() { b, _ := io.ReadAll(stdout); outc <- string(b) }()
	dataDir := ""
	re := regexp.MustCompile(`data in (\S+)\)`)
	sc := bufio.NewScanner(stderr)
	var errLines []string
	for sc.Scan() {
		line := sc.Text()
		errLines = append(errLines, line)
		if m := re.FindStringSubmatch(line); m != nil {
			dataDir = m[1]
		}
		if strings.Contains(line, "ops/s") { // first progress line: the run is under way
			break
		}
	}
	if dataDir == "" {
		t.Fatalf("no data dir announced:\n%s", strings.Join(errLines, "\n"))
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("txload did not exit within 60s of Ctrl-C")
	}
	if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted {
		t.Errorf("exit %d (%v), want %d", code, err, ExitInterrupted)
	}
	out := <-outc
	mustContain(t, out, "INTERRUPTED", "transfer: ", "avg latency:", "act total balance:")
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("data dir %s still exists (%v)", dataDir, err)
	}
	if pids := postgresUsing(filepath.Dir(dataDir)); len(pids) > 0 {
		t.Errorf("postgres processes left behind: %v", pids)
	}
}

// postgresUsing lists processes whose command line or working directory
// mentions dir (backends rewrite their command line, so both are looked at).
func postgresUsing(dir string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join("/proc", e.Name(), "cmdline")); err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if strings.Contains(string(cmdline), dir) || strings.HasPrefix(cwd, dir) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// Refusals that need the server's answer come after connecting but before
// anything is written: URLs that are not nodes of one database, and more
// connections than the server has free.
func TestPreflightRefusals(t *testing.T) {
	t.Parallel()
	a, b := srv.NewDatabase(t), srv.NewDatabase(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"two databases", []string{"run", "bank", "--url", a, "--url", b}, "are not nodes of one database"},
		{"connections", []string{"run", "bank", "--url", a, "--concurrency", "100000"}, "the run needs 100002 connections but "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := txload(t.Context(), nil, append(tc.args, "--duration", "1s")...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, want 2 and %q\n%s", r.code, tc.want, r.stderr)
			}
		})
	}
	if n := tables(t, a) + tables(t, b); n != 0 {
		t.Fatalf("refused runs created %d bank tables", n)
	}
	// pgio sets its clients itself (tables × sessions per table): the
	// check names its flags, before its table is loaded.
	c := srv.NewDatabase(t)
	r := txload(t.Context(), nil, "run", "pgio", "--url", c, "--init", "keep", "--scale", "2000", "--sessions-per-table", "1000", "--duration", "1s")
	if want := " can be made ("; r.code != ExitUsage || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "lower --tables or --sessions-per-table") {
		t.Fatalf("pgio: exit %d, want 2 and %q naming pgio's flags\n%s", r.code, want, r.stderr)
	}
	if strings.Contains(r.stderr, "too many clients") {
		t.Errorf("sessions connected before the refusal:\n%s", r.stderr)
	}
	if n := count(t, c, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'pgio%'"); n != 0 {
		t.Errorf("the refused pgio run created %d tables", n)
	}
}

// An init interrupted before it completed leaves the schema marked
// incomplete: a run on it and a check refuse it with one line that says to
// run init again; init then rebuilds it.
func TestInterruptedInitRefused(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	ctx, cancel := context.WithCancel(t.Context())
	var stderr syncBuffer
	go func() {
		// Cancel once the accounts are being generated.
		for !strings.Contains(stderr.String(), "generating data") {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	ran := false
	root := Root(Env{Stdout: io.Discard, Stderr: &stderr, Registry: all.Registry(), Version: "test", Getenv: func(string) string { return "" }}, &ran)
	root.SetArgs([]string{"init", "tpcb", "--scale", "20", "--url", url})
	if err := root.ExecuteContext(ctx); err == nil {
		t.Fatalf("the interrupted init succeeded:\n%s", stderr.String())
	}
	for _, args := range [][]string{
		{"run", "tpcb-like", "--url", url, "--duration", "1s"},
		{"run", "tpcb-like", "--url", url, "--duration", "1s", "--init", "skip"},
		{"check", "tpcb", "--url", url},
	} {
		r := txload(t.Context(), nil, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "the tpcb schema is incomplete (an init was interrupted): run `txload init tpcb --drop`") {
			t.Fatalf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	if r := txload(t.Context(), nil, "init", "tpcb", "--url", url); r.code != 0 {
		t.Fatalf("init after the interruption: exit %d\n%s", r.code, r.stderr)
	}
	if r := txload(t.Context(), nil, "run", "select-only", "--url", url, "--duration", "1s", "--progress", "0"); r.code != 0 {
		t.Fatalf("run after a complete init: exit %d\n%s", r.code, r.stderr)
	}
}
