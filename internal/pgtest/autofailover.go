//go:build unix

package pgtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Debian's PostgreSQL 15, which pg_auto_failover's Debian packages serve.
const (
	autoFailoverBin = "/usr/lib/postgresql/15/bin"
	autoFailoverExt = "/usr/share/postgresql/15/extension/pgautofailover.control"
	// autoFailoverHint says how to get what a skipped test needs.
	autoFailoverHint = "Debian: apt-get install postgresql-15-auto-failover pg-auto-failover-cli; .ci/run installs them"
	// formationTimeout bounds the formation's start and each failover.
	formationTimeout = 90 * time.Second
)

// AutoFailover is a pg_auto_failover formation on this machine: a monitor
// and two PostgreSQL 15 nodes, each run by a pg_autoctl process of its
// own, as an unprivileged user (nobody) when the test runs as root.
type AutoFailover struct {
	// URL is the formation's multi-host URL, as `pg_autoctl show uri`
	// gives it (postgres://h1:p1,h2:p2/postgres?target_session_attrs=read-write),
	// with the user the servers run as (their superuser).
	URL string
	// Nodes are each node's own URL, in the order the nodes were made
	// (the first started as the primary).
	Nodes []string
	// Monitor is the monitor's URL.
	Monitor string

	dir     string
	monitor string // the monitor's data directory
	env     []string
	cred    *syscall.Credential
	procs   []*osexec.Cmd
	logs    []string
}

// NodeState is a node as `pg_autoctl show state --json` shows it.
type NodeState struct {
	Name     string `json:"nodename"`
	Host     string `json:"nodehost"`
	Port     int    `json:"nodeport"`
	Reported string `json:"current_group_state"`
	Assigned string `json:"assigned_group_state"`
	Timeline int    `json:"reported_tli"`
	LSN      string `json:"reported_lsn"`
}

// StartAutoFailover creates a monitor and two nodes with pg_autoctl
// (trust authentication, no TLS, loopback only), waits until one node is
// primary and the other secondary, and stops them all when t ends. A
// formation is a long suite (Long: three servers and their failover, 15
// to 20 s before the test's own load); it skips t without LongEnv, under
// -short, and where pg_autoctl, pg_auto_failover's extension or PostgreSQL
// 15 is missing, saying which; it installs nothing.
func StartAutoFailover(t testing.TB) *AutoFailover {
	t.Helper()
	Long(t, "starts a pg_auto_failover formation (three servers)")
	if _, err := osexec.LookPath("pg_autoctl"); err != nil {
		t.Skipf("pg_autoctl is not installed (%s)", autoFailoverHint)
	}
	for _, need := range []string{filepath.Join(autoFailoverBin, "pg_ctl"), autoFailoverExt} {
		if _, err := os.Stat(need); err != nil {
			t.Skipf("pg_auto_failover needs %s, which is missing (%s)", need, autoFailoverHint)
		}
	}
	f := &AutoFailover{}
	var err error
	// Short: the Unix socket's path must fit in 107 bytes.
	if f.dir, err = os.MkdirTemp("", "txload-paf-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(f.dir) })
	superuser := ""
	if os.Geteuid() == 0 {
		// PostgreSQL and pg_autoctl refuse to run as root.
		if f.cred, superuser, err = nobody(); err != nil {
			t.Skipf("pg_auto_failover needs an unprivileged user when the tests run as root: %v", err)
		}
		if err := os.Chown(f.dir, int(f.cred.Uid), int(f.cred.Gid)); err != nil {
			t.Fatal(err)
		}
		if err := reachableBy(f.dir); err != nil {
			t.Fatal(err)
		}
	} else {
		me, err := user.Current()
		if err != nil {
			t.Fatal(err)
		}
		superuser = me.Username
	}
	if err := os.Chmod(f.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(f.dir, "sock")
	// A clean environment: pg_autoctl looks for pg_ctl along PATH (and
	// complains of every directory it may not read), keeps its state under
	// the XDG directories, and PG_REGRESS_SOCK_DIR is its way to put the
	// servers' Unix sockets elsewhere than /var/run/postgresql.
	f.env = []string{
		"PATH=" + autoFailoverBin + ":/usr/bin:/bin",
		"HOME=" + f.dir,
		"XDG_CONFIG_HOME=" + filepath.Join(f.dir, "config"),
		"XDG_DATA_HOME=" + filepath.Join(f.dir, "share"),
		"XDG_RUNTIME_DIR=" + filepath.Join(f.dir, "run"),
		"PGHOST=" + sock,
		"PG_REGRESS_SOCK_DIR=" + sock,
		"LANG=C",
	}
	if err := f.mkdir(sock); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), formationTimeout)
	defer cancel()
	t.Cleanup(f.stop)

	f.monitor = filepath.Join(f.dir, "monitor")
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			t.Fatal(err)
		}
	}
	common := []string{"--pgctl", filepath.Join(autoFailoverBin, "pg_ctl"), "--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl"}
	// The monitor: made, set to listen on loopback only, then run.
	if out, err := f.autoctl(ctx, append([]string{"create", "monitor", "--pgdata", f.monitor, "--pgport", strconv.Itoa(ports[0])}, common...)...); err != nil {
		t.Fatalf("pg_autoctl create monitor: %v\n%s", err, out)
	}
	if out, err := f.autoctl(ctx, "config", "set", "--pgdata", f.monitor, "postgresql.listen_addresses", "127.0.0.1"); err != nil {
		t.Fatalf("pg_autoctl config set: %v\n%s", err, out)
	}
	if err := f.start("monitor", "run", "--pgdata", f.monitor); err != nil {
		t.Fatal(err)
	}
	f.Monitor = fmt.Sprintf("postgres://autoctl_node@127.0.0.1:%d/pg_auto_failover?sslmode=disable", ports[0])
	if err := waitListening(ctx, ports[0]); err != nil {
		t.Fatalf("the monitor: %v\n%s", err, f.tails())
	}
	// The nodes, one after the other: the first registered is the primary.
	for i, port := range ports[1:] {
		name := fmt.Sprintf("node%d", i+1)
		args := append([]string{"create", "postgres", "--pgdata", filepath.Join(f.dir, name), "--pgport", strconv.Itoa(port),
			"--name", name, "--listen", "127.0.0.1", "--monitor", f.Monitor, "--run"}, common...)
		if err := f.start(name, args...); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := f.waitStates(ctx, "single"); err != nil {
				t.Fatalf("the first node: %v\n%s", err, f.tails())
			}
		}
		f.Nodes = append(f.Nodes, fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", superuser, port))
	}
	if _, err := f.waitStates(ctx, "primary", "secondary"); err != nil {
		t.Fatalf("the formation: %v\n%s", err, f.tails())
	}
	out, err := f.autoctl(ctx, "show", "uri", "--pgdata", f.monitor, "--formation", "default")
	if err != nil {
		t.Fatalf("pg_autoctl show uri: %v\n%s", err, out)
	}
	u, err := url.Parse(strings.TrimSpace(string(out)))
	if err != nil || u.Scheme != "postgres" {
		t.Fatalf("pg_autoctl show uri said %q (%v)", out, err)
	}
	u.User = url.User(superuser)
	f.URL = u.String()
	return f
}

// reachableBy checks that every directory above dir lets others through,
// so that the unprivileged user reaches dir.
func reachableBy(dir string) error {
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("pg_auto_failover runs as nobody, who cannot reach %s: %s has mode %v (set TMPDIR to a directory others can enter, /dev/shm say)", dir, p, fi.Mode().Perm())
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

func (f *AutoFailover) mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if f.cred != nil {
		return os.Chown(dir, int(f.cred.Uid), int(f.cred.Gid))
	}
	return nil
}

// command is pg_autoctl with args, as the formation's user, in its
// environment.
func (f *AutoFailover) command(ctx context.Context, args ...string) *osexec.Cmd {
	cmd := osexec.CommandContext(ctx, "pg_autoctl", args...)
	cmd.Dir, cmd.Env = f.dir, f.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: f.cred}
	return cmd
}

// autoctl runs pg_autoctl with args to its end.
func (f *AutoFailover) autoctl(ctx context.Context, args ...string) ([]byte, error) {
	return f.command(ctx, args...).CombinedOutput()
}

// start runs pg_autoctl with args in the background, its output to
// name.log, until stop.
func (f *AutoFailover) start(name string, args ...string) error {
	log := filepath.Join(f.dir, name+".log")
	out, err := os.Create(log)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := f.command(context.Background(), args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting pg_autoctl %s: %w", strings.Join(args, " "), err)
	}
	f.procs = append(f.procs, cmd)
	f.logs = append(f.logs, log)
	return nil
}

// stop ends the pg_autoctl processes, nodes first (each stops its
// PostgreSQL with a fast shutdown), then kills what is left.
func (f *AutoFailover) stop() {
	for i := len(f.procs) - 1; i >= 0; i-- {
		_ = f.procs[i].Process.Signal(syscall.SIGTERM)
	}
	for i := len(f.procs) - 1; i >= 0; i-- {
		cmd := f.procs[i]
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	// A postmaster left behind (its pg_autoctl killed): an immediate stop.
	pids, _ := filepath.Glob(filepath.Join(f.dir, "*", "postmaster.pid"))
	for _, p := range pids {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		first, _, _ := strings.Cut(string(b), "\n")
		if pid, err := strconv.Atoi(strings.TrimSpace(first)); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGQUIT)
		}
	}
}

// tails is the end of each pg_autoctl process's output, for a failure.
func (f *AutoFailover) tails() string {
	var b strings.Builder
	for _, log := range f.logs {
		data, _ := os.ReadFile(log)
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(log), strings.Join(lines, "\n"))
	}
	return b.String()
}

// State is the formation's nodes as the monitor sees them.
func (f *AutoFailover) State(ctx context.Context) ([]NodeState, error) {
	out, err := f.command(ctx, "show", "state", "--pgdata", f.monitor, "--json").Output()
	if err != nil {
		return nil, fmt.Errorf("pg_autoctl show state: %w", err)
	}
	var nodes []NodeState
	if err := json.Unmarshal(bytes.TrimSpace(out), &nodes); err != nil {
		return nil, fmt.Errorf("pg_autoctl show state: %w\n%s", err, out)
	}
	return nodes, nil
}

// waitStates waits until the nodes are as many as the states wanted and
// have reached them, in any order (each reported and assigned alike), and
// returns them.
func (f *AutoFailover) waitStates(ctx context.Context, want ...string) ([]NodeState, error) {
	var last []NodeState
	for {
		nodes, err := f.State(ctx)
		if err == nil {
			last = nodes
			got := map[string]int{}
			for _, n := range nodes {
				if n.Reported == n.Assigned {
					got[n.Reported]++
				}
			}
			ok := len(nodes) == len(want)
			for _, w := range want {
				if got[w] == 0 {
					ok = false
				}
				got[w]--
			}
			if ok {
				return nodes, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("waiting for the states %v (now %+v): %w", want, last, context.Cause(ctx))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Primary is the node the monitor sees as primary (host:port), once the
// formation has a primary and a secondary.
func (f *AutoFailover) Primary(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, formationTimeout)
	defer cancel()
	nodes, err := f.waitStates(ctx, "primary", "secondary")
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		if n.Reported == "primary" {
			return net.JoinHostPort(n.Host, strconv.Itoa(n.Port)), nil
		}
	}
	return "", errors.New("no primary")
}

// FailoverCommand is the command line that makes the formation fail over
// (`pg_autoctl perform failover`, as the formation's user, in its
// environment): what a user gives txload's --failover-command. It waits
// until the failover is done.
func (f *AutoFailover) FailoverCommand() []string {
	args := []string{"env", "-i"}
	args = append(args, f.env...)
	args = append(args, "pg_autoctl", "perform", "failover", "--pgdata", f.monitor, "--wait", strconv.Itoa(int(formationTimeout.Seconds())))
	if f.cred != nil {
		args = append([]string{"setpriv", "--reuid", strconv.Itoa(int(f.cred.Uid)), "--regid", strconv.Itoa(int(f.cred.Gid)), "--clear-groups"}, args...)
	}
	return args
}

// Failover runs FailoverCommand, then waits until the formation has a
// primary and a secondary again, and returns the new primary (host:port).
func (f *AutoFailover) Failover(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, formationTimeout)
	defer cancel()
	c := f.FailoverCommand()
	out, err := osexec.CommandContext(ctx, c[0], c[1:]...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("pg_autoctl perform failover: %w\n%s\n%s", err, out, f.tails())
	}
	return f.Primary(ctx)
}

func waitListening(ctx context.Context, port int) error {
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nothing listens on port %d: %w", port, context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
