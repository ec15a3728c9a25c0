package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/tcpproxy"
	"github.com/txload/txload/pg"
)

// Replication says when a commit on a Pair's primary returns.
type Replication int

const (
	// Async: once the commit's WAL is written on the primary
	// (synchronous_commit=on); the standby follows when it can, and a
	// failover loses what it had not received.
	Async Replication = iota
	// Sync: once the standby has flushed the commit's WAL too
	// (synchronous_standby_names names it, with synchronous_commit=on): a
	// failover loses no acknowledged commit, since a promotion replays all
	// the WAL the standby has before it accepts writes. remote_apply would
	// also wait for the replay, which only reads on the standby need.
	Sync
)

var replications = []string{"async", "sync"}

func (r Replication) String() string { return name(replications, int(r), "replication") }

// ParseReplication reads "async" or "sync".
func ParseReplication(s string) (Replication, error) {
	i, err := parseName(replications, s, "replication")
	return Replication(i), err
}

// name is names[i], or what(i) for an i it lacks.
func name(names []string, i int, what string) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return what + "(" + strconv.Itoa(i) + ")"
}

// parseName is the index of s in names, or an error that lists them.
func parseName(names []string, s, what string) (int, error) {
	for i, n := range names {
		if s == n {
			return i, nil
		}
	}
	want := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	return 0, fmt.Errorf("%s %q: want %s", what, s, want)
}

// Fault is how a Pair's primary goes down.
type Fault int

const (
	// Immediate is `pg_ctl stop -m immediate`: SIGQUIT; the postmaster
	// ends its children and exits without a checkpoint, and the next start
	// recovers from a crash. Nothing more is sent to the standby.
	Immediate Fault = iota
	// Kill is SIGKILL of the postmaster and its children: nothing is
	// logged, nothing more sent.
	Kill
	// Fast is `pg_ctl stop -m fast`: SIGINT; sessions are aborted, and the
	// primary sends the standby all its WAL, up to a shutdown checkpoint,
	// before it exits.
	Fast
)

var faults = []string{"immediate", "kill", "fast"}

func (f Fault) String() string { return name(faults, int(f), "fault") }

// ParseFault reads "immediate", "kill" or "fast".
func ParseFault(s string) (Fault, error) {
	i, err := parseName(faults, s, "fault")
	return Fault(i), err
}

// pairSettings are the settings of both servers of a Pair: a commit
// returns once its WAL is written (the embedded default, off, would let a
// crash lose commits the primary acknowledged: then the primary itself
// lost them, not the failover), and log lines stamped in milliseconds,
// UTC, which FaultEvent and Promotion read.
var pairSettings = []string{"synchronous_commit=on", "log_line_prefix=%m [%p] ", "log_timezone=UTC"}

// DefaultStandbyName is a Pair's standby's application_name and slot.
const DefaultStandbyName = "txload_standby"

// PairOptions configure StartPair.
type PairOptions struct {
	// Server configures both servers; its Settings come after the pair's
	// own (leave log_line_prefix and log_timezone alone: the times are
	// read from the logs). Its Log gets each server's lines prefixed with
	// "primary: " or "standby: ".
	Server      embedded.Options
	Replication Replication
	// Proxy makes the standby stream through a TCP proxy, Pair.Link, that
	// can hold it back (Pause) or cut it.
	Proxy bool
	// Name is the standby's application_name and replication slot; "" is
	// DefaultStandbyName.
	Name string
}

// Pair is an embedded primary and its streaming standby, with a fault to
// cause on the primary and a promotion of the standby: a failover.
type Pair struct {
	// Primary and Standby are the servers as they started: after Promote,
	// Standby is the primary.
	Primary, Standby *embedded.Server
	Replication      Replication
	// Link is the proxy the standby streams through (nil without
	// PairOptions.Proxy).
	Link *tcpproxy.Proxy
	Name string

	failed   bool
	promoted bool
}

// StartPair starts two embedded servers (at once), makes the second a
// streaming standby of the first (through Link with opts.Proxy), and with
// Sync names it in the primary's synchronous_standby_names. It returns
// once the standby streams (and, with Sync, is the synchronous one). The
// standby's synchronous_standby_names stays empty: promoted, it must not
// wait for a standby it does not have.
func StartPair(ctx context.Context, opts PairOptions) (_ *Pair, err error) {
	if opts.Replication != Async && opts.Replication != Sync {
		return nil, fmt.Errorf("replication %d: want Async or Sync", opts.Replication)
	}
	p := &Pair{Replication: opts.Replication, Name: opts.Name}
	if p.Name == "" {
		p.Name = DefaultStandbyName
	}
	defer func() {
		if err != nil {
			_ = p.Stop()
		}
	}()
	var wg sync.WaitGroup
	var errs [2]error
	for i, role := range []string{"primary", "standby"} {
		o := opts.Server
		o.Settings = append(append([]string(nil), pairSettings...), opts.Server.Settings...)
		if o.Log != nil {
			o.Log = prefixed{o.Log, role + ": "}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := embedded.Start(ctx, o)
			if err != nil {
				errs[i] = fmt.Errorf("starting the %s: %w", role, err)
				return
			}
			if i == 0 {
				p.Primary = s
			} else {
				p.Standby = s
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	from := ""
	if opts.Proxy {
		if p.Link, err = tcpproxy.Listen(net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Primary.Port()))); err != nil {
			return nil, err
		}
		from = p.Link.Addr()
	}
	if err := standby(ctx, p.Primary, p.Standby, p.Name, from); err != nil {
		return nil, err
	}
	if p.Replication == Sync {
		if err := p.synchronous(ctx); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// synchronous names the standby in the primary's synchronous_standby_names
// and waits until the primary sees it as synchronous.
func (p *Pair) synchronous(ctx context.Context) error {
	conn, err := pg.Connect(ctx, p.Primary.URL())
	if err != nil {
		return fmt.Errorf("connecting to the primary: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	set := "ALTER SYSTEM SET synchronous_standby_names = " + quoteLiteral(pgx.Identifier{p.Name}.Sanitize())
	if _, err := conn.Exec(ctx, set); err != nil {
		return fmt.Errorf("making the standby synchronous: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("making the standby synchronous: %w", err)
	}
	for {
		var state string
		err := conn.QueryRow(ctx, "SELECT sync_state FROM pg_stat_replication WHERE application_name = $1", p.Name).Scan(&state)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("waiting for the standby to be synchronous: %w", err)
		}
		if state == "sync" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the standby to be synchronous (sync_state %q): %w", state, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// URL is libpq's multi-host URL of the pair, primary first, with
// target_session_attrs=read-write: a client connecting with it lands on
// whichever server takes writes, the new primary after a failover.
func (p *Pair) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		p.Primary.Port(), p.Standby.Port())
}

// ConnString is URL in libpq's keyword form (host=a,b port=p,q).
func (p *Pair) ConnString() string {
	return fmt.Sprintf("host=127.0.0.1,127.0.0.1 port=%d,%d user=postgres dbname=postgres sslmode=disable target_session_attrs=read-write",
		p.Primary.Port(), p.Standby.Port())
}

// FaultEvent is when the primary went down. The times are this machine's
// clock: Sent read by txload, Logged and Down from the primary's log
// (milliseconds) where it says them.
type FaultEvent struct {
	Fault Fault
	Sent  time.Time // the signal was sent
	// Logged is the primary's log line "received immediate (fast)
	// shutdown request"; zero for Kill, which leaves no line.
	Logged time.Time
	// Down is when the postmaster had gone: its log line "database system
	// is shut down", or for Kill the moment Kill returned, the postmaster
	// and its children reaped (SIGKILL leaves no line; the server refuses
	// connections from the postmaster's death, at once after Sent).
	Down time.Time
}

// Fail brings the primary down with f and keeps its data directory (see
// RestartOld). A fast shutdown waits for the standby to receive all the
// WAL, so it is refused while Link is paused.
func (p *Pair) Fail(ctx context.Context, f Fault) (FaultEvent, error) {
	ev := FaultEvent{Fault: f}
	if p.failed {
		return ev, errors.New("failing the primary: it is down already")
	}
	if f == Fast && p.Link != nil && p.Link.Paused() {
		return ev, errors.New("failing the primary with a fast shutdown while the standby is held back: it would wait for the standby to receive all the WAL (wal_sender_timeout); resume Link first or use immediate or kill")
	}
	from := fileSize(p.Primary.LogPath())
	ev.Sent = time.Now()
	var err error
	switch f {
	case Immediate:
		err = p.Primary.Halt(true)
	case Fast:
		err = p.Primary.Halt(false)
	case Kill:
		err = p.Primary.Kill()
	default:
		return ev, fmt.Errorf("fault %d: want Immediate, Kill or Fast", f)
	}
	exited := time.Now()
	if err != nil {
		return ev, fmt.Errorf("failing the primary (%s): %w", f, err)
	}
	p.failed = true
	if f == Kill {
		ev.Down = exited
		return ev, nil
	}
	log := readLog(p.Primary.LogPath(), from)
	if l, ok := log.find("received " + f.String() + " shutdown request"); ok {
		ev.Logged = l.at
	} else {
		return ev, fmt.Errorf("failing the primary (%s): its log has no shutdown request:\n%s", f, log.text())
	}
	if l, ok := log.find("database system is shut down"); ok {
		ev.Down = l.at
	} else {
		ev.Down = exited // an immediate shutdown may end before saying so
	}
	return ev, nil
}

// Promotion is when the standby became the primary, from its log
// (milliseconds, this machine's clock) but for Sent.
type Promotion struct {
	Sent time.Time // pg_promote() was called
	// Requested is the standby's log line "received promote request".
	Requested time.Time
	// Ready is its line "database system is ready to accept connections"
	// that ends the promotion: writes are accepted from then on.
	Ready    time.Time
	Timeline uint32 // "selected new timeline ID: N"
}

// Promote makes the standby the primary, with pg_promote(), and returns
// once it takes writes.
func (p *Pair) Promote(ctx context.Context) (Promotion, error) {
	var ev Promotion
	if p.promoted {
		return ev, errors.New("promoting the standby: it is the primary already")
	}
	if !p.failed {
		return ev, errors.New("promoting the standby while the primary runs: there would be two primaries (Fail first)")
	}
	conn, err := pg.Connect(ctx, p.Standby.URL())
	if err != nil {
		return ev, fmt.Errorf("promoting the standby: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	from := fileSize(p.Standby.LogPath())
	ev.Sent = time.Now()
	var done bool
	if err := conn.QueryRow(ctx, "SELECT pg_promote(true, 60)").Scan(&done); err != nil {
		return ev, fmt.Errorf("promoting the standby: %w", err)
	}
	if !done {
		return ev, fmt.Errorf("promoting the standby: still in recovery 60 s after pg_promote()\n%s", readLog(p.Standby.LogPath(), from).text())
	}
	p.promoted = true
	// pg_promote returns once recovery has ended; the line that says the
	// server takes connections as a primary may follow a moment later.
	deadline := time.Now().Add(10 * time.Second)
	for {
		log := readLog(p.Standby.LogPath(), from)
		req, ok1 := log.find("received promote request")
		tl, ok2 := log.find("selected new timeline ID: ")
		ready, ok3 := log.find("database system is ready to accept connections")
		if ok1 && ok2 && ok3 {
			ev.Requested, ev.Ready = req.at, ready.at
			id, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(tl.msg, "selected new timeline ID: ")), 10, 32)
			ev.Timeline = uint32(id)
			return ev, nil
		}
		if time.Now().After(deadline) {
			return ev, fmt.Errorf("promoting the standby: its log does not show the promotion:\n%s", log.text())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// RestartOld starts the failed primary again on its own (not as a
// standby: it recovers what its WAL holds, commits the standby never got
// included), read-only (default_transaction_read_only), so that a client
// of URL never lands on it, and its contents can be compared with the new
// primary's. It is reached at Primary.URL().
func (p *Pair) RestartOld(ctx context.Context) error {
	if !p.failed {
		return errors.New("restarting the old primary: it has not failed")
	}
	dir := p.Primary.DataDir()
	o, err := ownerOf(dir)
	if err != nil {
		return err
	}
	conf := "\n# txload: the old primary after a failover, restarted to be read\ndefault_transaction_read_only = on\n"
	if err := writeOwned(filepath.Join(dir, "postgresql.auto.conf"), conf, o, true); err != nil {
		return err
	}
	if err := p.Primary.Restart(ctx); err != nil {
		return fmt.Errorf("restarting the old primary: %w", err)
	}
	return nil
}

// Stop stops both servers and the proxy.
func (p *Pair) Stop() error {
	var errs []error
	if p.Link != nil {
		errs = append(errs, p.Link.Close())
	}
	for _, s := range []*embedded.Server{p.Standby, p.Primary} {
		if s != nil {
			errs = append(errs, s.Stop())
		}
	}
	return errors.Join(errs...)
}

// prefixed writes each write (a line) to w after a prefix.
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logLine is a line of a server log written with pairSettings' prefix.
type logLine struct {
	at    time.Time
	pid   int
	level string // LOG, FATAL, ...
	msg   string
}

type serverLog []logLine

// logPrefix matches log_line_prefix '%m [%p] ' with log_timezone UTC.
var logPrefix = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC \[(\d+)\] ([A-Z0-9]+):  (.*)$`)

// readLog reads the lines of the log at path from byte offset from on.
func readLog(path string, from int64) serverLog {
	b, err := os.ReadFile(path)
	if err != nil || from > int64(len(b)) {
		return nil
	}
	return parseLog(b[from:])
}

func parseLog(b []byte) serverLog {
	var out serverLog
	for _, line := range bytes.Split(b, []byte("\n")) {
		m := logPrefix.FindSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02 15:04:05.000", string(m[1]), time.UTC)
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(string(m[2]))
		out = append(out, logLine{at: at, pid: pid, level: string(m[3]), msg: string(m[4])})
	}
	return out
}

// find returns the first line whose message starts with msg.
func (l serverLog) find(msg string) (logLine, bool) {
	for _, line := range l {
		if strings.HasPrefix(line.msg, msg) {
			return line, true
		}
	}
	return logLine{}, false
}

func (l serverLog) text() string {
	var b strings.Builder
	for _, line := range l {
		fmt.Fprintf(&b, "%s [%d] %s:  %s\n", line.at.Format("15:04:05.000"), line.pid, line.level, line.msg)
	}
	return b.String()
}
