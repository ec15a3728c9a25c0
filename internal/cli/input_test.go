package cli

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Bad input gets one line naming the flag, exit 2, and the database is not
// touched.
func TestBadInput(t *testing.T) {
	url := srv.NewDatabase(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"run", "bank", "--nope"}, "unknown flag: --nope"},
		{"unknown workload", []string{"run", "nosuch"}, `unknown workload "nosuch" for txload run (known: bank, script, select-only`},
		{"isolation", []string{"run", "bank", "--isolation", "foo"}, `--isolation: "foo" is not an isolation level`},
		{"isolation in a list", []string{"run", "bank", "--isolation", "rc,foo"}, `"foo" is not an isolation level`},
		{"accounts zero", []string{"run", "bank", "--accounts", "0"}, "--accounts must be at least 2"},
		{"selection above accounts", []string{"run", "bank", "--accounts", "100", "--selection", "200"}, "--selection must be between 2 and --accounts (100)"},
		{"selection not a number", []string{"run", "bank", "--selection", "ten"}, `--selection "ten" is not a whole number`},
		{"rate negative", []string{"run", "bank", "--rate", "-1"}, "--rate must be 0"},
		{"duration zero", []string{"run", "bank", "--duration", "0"}, "--duration must be positive"},
		{"duration malformed", []string{"run", "bank", "--duration", "ten"}, `invalid argument "ten" for "-d, --duration"`},
		{"transfer", []string{"run", "bank", "--transfer", "steal"}, "--transfer \"steal\" is not allowed"},
		{"arrival", []string{"run", "bank", "--rate", "10", "--arrival", "bursty"}, "--arrival"},
		{"max tries", []string{"run", "bank", "--max-tries", "0"}, "--max-tries must be at least 1"},
		{"init mode", []string{"run", "bank", "--init", "maybe"}, "--init \"maybe\" is not allowed"},
		{"json dir", []string{"run", "bank", "--json", "/no/such/dir/x.json"}, "--json /no/such/dir/x.json"},
		{"init accounts", []string{"init", "bank", "--accounts", "-5"}, "--accounts must be at least 2"},
		{"check extra arg", []string{"check", "bank", "extra"}, "unknown command \"extra\""},
		{"embedded version", []string{"run", "bank", "--embedded-version", "9"}, "--embedded-version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.name != "embedded version" {
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

func TestUnreachableURL(t *testing.T) {
	start := time.Now()
	r := txload(t.Context(), nil, "run", "bank", "--url", "postgres://alice:s3cr3t-pw@127.0.0.1:1/bank?connect_timeout=5")
	if r.code != ExitFailed {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr+r.stdout, "s3cr3t-pw") {
		t.Fatalf("the password leaked:\n%s", r.stderr)
	}
	mustContain(t, r.stderr, "connecting to postgres://alice:xxxxx@127.0.0.1:1/bank")
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("gave up after %s", d)
	}
	// DATABASE_URL is used when --url is absent, and redacted just the same.
	r = txload(t.Context(), map[string]string{"DATABASE_URL": "postgres://bob:hunter2@127.0.0.1:1/x"}, "check", "bank")
	if r.code != ExitFailed || strings.Contains(r.stderr, "hunter2") || !strings.Contains(r.stderr, "bob:xxxxx@127.0.0.1:1") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
}

// buildTxload compiles the command once for tests that need a real process.
func buildTxload(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "txload")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/txload/txload/cmd/txload")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// Ctrl-C prints the summary of what ran, stops the embedded server and
// leaves no postgres process behind.
func TestInterruptStopsEmbedded(t *testing.T) {
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
