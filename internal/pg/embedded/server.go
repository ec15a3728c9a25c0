package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	defaultStartTimeout = 60 * time.Second
	stopTimeout         = 30 * time.Second
	portAttempts        = 3
)

// Options configure Start. The zero value starts DefaultMajor().
type Options struct {
	Major        string        // "18" or "18.3.0"; "" = DefaultMajor()
	CacheDir     string        // "" = /var/cache/txload/postgres as root, else os.UserCacheDir()/txload/postgres
	Log          io.Writer     // progress lines; nil = discard
	StartTimeout time.Duration // initdb plus waiting for connections; 0 = 60s
	// Settings are extra server settings, "name=value", applied after
	// txload's own (which they override): wal_level=logical, say.
	Settings []string
}

// Server is a running PostgreSQL postmaster with its own temporary data dir.
type Server struct {
	version Version
	port    int
	dir     string   // temp dir holding data/, postgres.log and the owner file
	owner   *os.File // the owner file, locked while the dir is ours
	logPath string
	logFile *os.File
	rt      string   // the binaries
	as      *account // the user the server runs as; nil: ours
	extra   []string // Options.Settings

	proc    *os.Process
	exited  chan struct{} // closed once proc has been reaped
	waitErr error         // set before exited is closed

	stopOnce sync.Once
	stopErr  error
}

// account is the unprivileged user the server runs as when txload is root.
type account struct {
	name     string
	uid, gid uint32
}

var errPortTaken = errors.New("port already in use")

// interruptedError is Start's error when its ctx was canceled: the logs of
// the steps it cut short say nothing the user needs.
type interruptedError struct{ cause error }

func (e *interruptedError) Error() string   { return "interrupted" }
func (e *interruptedError) Unwrap() []error { return []error{context.Canceled, e.cause} }

// Start fetches the binaries if needed, makes a cluster in a fresh temp dir
// (a copy of the one kept in the cache from the first start's initdb, else
// initdb, whose cluster is then kept) and starts postgres on a free
// loopback port, returning once it accepts connections. ctx bounds only
// Start, not the server's lifetime; call Stop.
//
// The server trusts every local connection and is tuned for throughput on a
// throwaway cluster: fsync, synchronous_commit and full_page_writes are off,
// so an OS crash may corrupt it. See serverArgs for the settings.
//
// A ctx canceled during Start (Ctrl-C) makes it clean up and return an
// error that says only "interrupted" and wraps context.Canceled. Start
// first removes the temp dirs of servers whose txload process is gone.
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	defer func() {
		if err != nil && errors.Is(ctx.Err(), context.Canceled) {
			err = &interruptedError{cause: context.Cause(ctx)}
		}
	}()
	major := opts.Major
	if major == "" {
		major = DefaultMajor()
	}
	v, err := Lookup(major)
	if err != nil {
		return nil, err
	}
	for _, kv := range opts.Settings {
		if name, _, ok := strings.Cut(kv, "="); !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("server setting %q: want name=value", kv)
		}
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = defaultStartTimeout
	}
	cacheDir := opts.CacheDir
	if cacheDir == "" {
		if cacheDir, err = defaultCacheDir(); err != nil {
			return nil, err
		}
	}

	var as *account
	if os.Geteuid() == 0 {
		as = unprivileged()
	}
	removeStale(os.TempDir(), logw)
	useTemplate := true
	for attempt := 1; ; attempt++ {
		// The second time, every file of the binaries is checked (and
		// extracted again where damaged): the first start failed.
		rt, err := ensureRuntime(ctx, cacheDir, v, logw, as != nil, attempt > 1)
		if err != nil {
			return nil, fmt.Errorf("preparing PostgreSQL %s binaries: %w", v.Full, err)
		}
		if as != nil {
			if err := reachable(rt, as); err != nil {
				return nil, err
			}
		}
		tpl := ""
		if useTemplate {
			tpl = templateDir(rt)
		}
		s, copied, err := start(ctx, v, rt, as, timeout, opts.Settings, tpl, logw)
		if err == nil {
			fmt.Fprintf(logw, "started PostgreSQL %s on 127.0.0.1:%d (data in %s)\n", v.Full, s.port, s.DataDir())
			return s, nil
		}
		if attempt > 1 || ctx.Err() != nil {
			return nil, err
		}
		first, _, _ := strings.Cut(err.Error(), "\n")
		switch {
		case damaged(rt):
			fmt.Fprintf(logw, "PostgreSQL did not start (%s); its binaries differ from what was extracted\n", first)
		case copied:
			// The kept cluster may be what is damaged: initdb makes a new one.
			fmt.Fprintf(logw, "PostgreSQL did not start from the cluster kept from an earlier initdb (%s): removing it and running initdb\n", first)
			if err := os.RemoveAll(tpl); err != nil {
				useTemplate = false
			}
		default:
			return nil, err
		}
	}
}

// damaged reports whether the binaries in rt differ from their manifest,
// every file's contents checked.
func damaged(rt string) bool {
	m, err := readManifest(rt)
	return err == nil && m.check(rt, true) != ""
}

// start makes a cluster in a fresh temp dir and starts postgres on a free
// port. With tpl set, the cluster is a copy of the one kept there when
// there is one (copied reports it), else initdb makes it and a copy is kept
// there for the next starts.
func start(ctx context.Context, v Version, rt string, as *account, timeout time.Duration, settings []string, tpl string, logw io.Writer) (_ *Server, copied bool, err error) {
	dir, err := os.MkdirTemp("", tempPrefix)
	if err != nil {
		return nil, false, fmt.Errorf("creating temp dir: %w", err)
	}
	s := &Server{version: v, dir: dir, logPath: filepath.Join(dir, "postgres.log"), rt: rt, as: as, extra: settings}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()
	if s.owner, err = own(dir); err != nil {
		return nil, false, err
	}
	if s.logFile, err = os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, false, fmt.Errorf("creating server log: %w", err)
	}
	if as != nil {
		if err := reachable(filepath.Dir(dir), as); err != nil {
			return nil, false, err
		}
		for _, p := range []string{dir, s.logPath} {
			if err := os.Chown(p, int(as.uid), int(as.gid)); err != nil {
				return nil, false, fmt.Errorf("handing %s to user %s: %w", p, as.name, err)
			}
		}
	}

	ctx, cancel := context.WithTimeoutCause(ctx, timeout,
		fmt.Errorf("start timeout of %s exceeded: %w", timeout, context.DeadlineExceeded))
	defer cancel()
	if tpl != "" && fromTemplate(tpl, s.DataDir(), as) {
		copied = true
	} else {
		if err := s.initdb(ctx, rt, as); err != nil {
			return nil, false, err
		}
		if tpl != "" {
			if kept, err := keepTemplate(s.DataDir(), tpl); err != nil {
				fmt.Fprintf(logw, "keeping the new cluster for the next starts: %v\n", err)
			} else if kept {
				fmt.Fprintf(logw, "kept a copy of initdb's cluster in %s: the next starts copy it instead of running initdb\n", tpl)
			}
		}
	}
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, copied, err
		}
		err = s.launch(ctx, rt, as, port)
		if err == nil {
			return s, copied, nil
		}
		if !errors.Is(err, errPortTaken) || attempt == portAttempts {
			return nil, copied, err
		}
	}
}

// URL is a connection string for the postgres superuser and database.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Version is the PostgreSQL version the server runs.
func (s *Server) Version() Version { return s.version }

// DataDir is the cluster's data directory; it is removed by Stop.
func (s *Server) DataDir() string { return filepath.Join(s.dir, "data") }

// Stop shuts the server down (fast shutdown, SIGKILL after 30s), waits for
// the postmaster to exit and removes the temp dir. It is idempotent and safe
// to call concurrently, e.g. from a signal handler.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

func (s *Server) stop() error {
	var errs []error
	if err := s.shutdown(); err != nil {
		errs = append(errs, err)
	}
	if s.logFile != nil {
		s.logFile.Close()
	}
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, fmt.Errorf("removing temp dir: %w", err))
	}
	if s.owner != nil {
		s.owner.Close() // after the removal: until then the dir is ours
	}
	return errors.Join(errs...)
}

// shutdown stops the postmaster, if one is running, and reaps it.
func (s *Server) shutdown() error {
	if !s.Running() {
		return nil
	}
	_ = s.proc.Signal(os.Interrupt) // fast shutdown: abort sessions, checkpoint, exit
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-s.exited:
		return nil
	case <-timer.C:
	}
	// Backends call setsid, so kill them by pid rather than process group.
	kids := childPIDs(s.proc.Pid)
	_ = s.proc.Kill()
	killPIDs(kids)
	<-s.exited
	return fmt.Errorf("stopping postgres: no exit within %s of SIGINT, killed it", stopTimeout)
}

func (s *Server) initdb(ctx context.Context, rt string, as *account) error {
	cmd := exec.CommandContext(ctx, filepath.Join(rt, "bin", "initdb"), append([]string{"-D", s.DataDir()}, initdbArgs...)...)
	s.setup(cmd, rt, as, syscall.SIGKILL)
	// Canceled, initdb is killed with the processes it started (the
	// bootstrap postgres, in its process group), which would otherwise
	// write on into a dir being removed.
	cmd.Cancel = func() error {
		killGroup(cmd.Process.Pid)
		return nil
	}
	// From a locked thread, as the postmaster (see launch), so that initdb
	// dies with txload instead of writing on into a dir nobody owns.
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- cmd.Run()
	}()
	if err := <-done; err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return fmt.Errorf("running initdb: %w\n%s", err, s.logTail())
	}
	return nil
}

// serverArgs are the postgres flags: loopback TCP only, no Unix socket, and
// settings for a load-test box (2 cores, 24 GiB) that trade durability for speed,
// then the extra settings (a later -c of a setting wins).
func serverArgs(dataDir string, port int, extra []string) []string {
	args := []string{"-D", dataDir, "-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", ""}
	for _, kv := range []string{
		"fsync=off", // throwaway cluster: never wait for the disk
		"synchronous_commit=off",
		"full_page_writes=off",
		"max_connections=300",
		"shared_buffers=1GB",
		"effective_cache_size=8GB",
		"max_wal_size=4GB", // keep checkpoints from dominating write-heavy runs
		"checkpoint_timeout=30min",
		// Per-statement block counts (shared_blks_hit/read) for workloads
		// that report them, pgio's LIOPS: the view needs the library loaded
		// at start; CREATE EXTENSION in a database then exposes it.
		"shared_preload_libraries=pg_stat_statements",
	} {
		args = append(args, "-c", kv)
	}
	for _, kv := range extra {
		args = append(args, "-c", kv)
	}
	return args
}

// launch starts postgres on port and waits until it accepts connections.
// It returns errPortTaken if another process grabbed the port first.
func (s *Server) launch(ctx context.Context, rt string, as *account, port int) error {
	logStart := s.logSize()
	cmd := exec.Command(filepath.Join(rt, "bin", "postgres"), serverArgs(s.DataDir(), port, s.extra)...)
	s.setup(cmd, rt, as, syscall.SIGQUIT)

	// Pdeathsig is tied to the thread that forks the child, so fork from a
	// locked thread that lives as long as the server. The goroutine returns
	// locked, which makes the runtime discard the thread after the postmaster exits.
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.waitErr = cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	s.proc, s.exited, s.port = cmd.Process, exited, port

	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.ready(ctx) {
			return nil
		}
		select {
		case <-exited:
			s.proc = nil
			if bytes.Contains(s.logSince(logStart), []byte("Address already in use")) {
				return errPortTaken
			}
			return fmt.Errorf("postgres exited during startup (%v)\n%s", s.waitErr, s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("waiting for postgres to accept connections on port %d: %w\n%s",
				port, context.Cause(ctx), s.logTail())
		case <-tick.C:
		}
	}
}

// ready reports whether our server answers; checking data_directory ensures
// a stranger that grabbed the port is not mistaken for it.
func (s *Server) ready(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		return false
	}
	defer conn.Close(ctx)
	var dd string
	if err := conn.QueryRow(ctx, "SELECT current_setting('data_directory')").Scan(&dd); err != nil {
		return false
	}
	return dd == s.DataDir()
}

// setup runs cmd in the temp dir, logging to the server log; the kernel
// sends it deathSig if the thread that forked it (see launch) exits.
func (s *Server) setup(cmd *exec.Cmd, rt string, as *account, deathSig syscall.Signal) {
	cmd.Dir = s.dir // the server user may not be able to enter our cwd
	cmd.Env = childEnv(filepath.Join(rt, "lib"))
	cmd.Stdout, cmd.Stderr = s.logFile, s.logFile
	cmd.SysProcAttr = procAttr(as, deathSig)
}

// childEnv is our environment minus PG* and locale variables, with the
// bundled libraries first on the search path. The binaries carry a RUNPATH of
// $ORIGIN/../lib, but an inherited LD_LIBRARY_PATH would take precedence.
func childEnv(lib string) []string {
	var env []string
	ldPath := lib
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "LD_LIBRARY_PATH":
			if v != "" {
				ldPath += ":" + v
			}
		case strings.HasPrefix(k, "PG"), strings.HasPrefix(k, "LC_"), k == "LANG", k == "LANGUAGE":
		default:
			env = append(env, kv)
		}
	}
	return append(env, "LD_LIBRARY_PATH="+ldPath, "LANG=C", "LC_ALL=C")
}

// unprivileged is the user the server runs as when we are root: nobody,
// falling back to uid/gid 65534.
func unprivileged() *account {
	a := &account{name: "nobody", uid: 65534, gid: 65534}
	u, err := user.Lookup("nobody")
	if err != nil {
		return a
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 == nil && err2 == nil {
		a.uid, a.gid = uint32(uid), uint32(gid)
	}
	return a
}

// reachable checks that every directory from dir up to / is searchable by
// others, so the server user can get at dir.
func reachable(dir string, as *account) error {
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("checking access to %s: %w", dir, err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("user %s cannot reach %s: %s has mode %v (running as root, the server runs as %s; use a world-readable cache dir or TMPDIR)",
				as.name, dir, p, fi.Mode().Perm(), as.name)
		}
		if parent := filepath.Dir(p); parent == p {
			return nil
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) logSize() int64 {
	fi, err := os.Stat(s.logPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func (s *Server) logSince(off int64) []byte {
	b, _ := os.ReadFile(s.logPath)
	if off > int64(len(b)) {
		return nil
	}
	return b[off:]
}

// logTail returns the last lines of the server log for error messages.
func (s *Server) logTail() string {
	const lines = 20
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return "(no server log: " + err.Error() + ")"
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return "server log (last lines):\n" + strings.Join(all, "\n")
}
