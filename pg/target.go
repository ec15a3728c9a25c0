package pg

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Target is the database a run drives: one URL, or the nodes of a cluster,
// used round-robin so connections spread evenly over them.
type Target struct {
	urls    []string
	configs []*pgx.ConnConfig
	// encodings are the client_encoding each URL asks for, for the
	// workload's own connections ("" = the database's): see encoding.go.
	encodings []string
	secrets   []string
	next      atomic.Uint64
	pooled    bool
	orphans   orphans
	// direct: the process ids the server gives txload's connections are
	// their backends' own (no pooler made them up): see DetectPooler.
	direct atomic.Bool
	// plain marks the nodes that refused TLS under sslmode=prefer: see
	// preferPlain.
	plain []atomic.Bool
	// ownRefused marks the nodes that refused the settings of txload's own
	// sessions (see own.go).
	ownRefused []atomic.Bool
	// urlTimeout marks the nodes whose URL (or PGCONNECT_TIMEOUT) sets
	// connect_timeout: SetConnectTimeout leaves them be.
	urlTimeout []bool
	// pinned, when set, is the one host every connection goes to: see
	// Pin.
	pinned atomic.Pointer[pin]
	// settings, when set, are startup parameters every connection sends:
	// see PinSetting.
	settings atomic.Pointer[map[string]string]
}

// pin is a host of the target: URL url's host addr.
type pin struct {
	url  int
	addr string
}

// DefaultConnectTimeout bounds each step of a connection (TCP connect,
// startup and authentication; the workload's setup statements) when
// neither the URL's connect_timeout nor SetConnectTimeout says otherwise.
const DefaultConnectTimeout = 10 * time.Second

// ErrEmptyURL: no URL, or an empty one. pgx would read "" as libpq's
// defaults (a Unix socket, the OS user's name), which is never what an empty
// --url meant. It is bad input: the CLI exits 2.
var ErrEmptyURL = errors.New("--url is empty: give a database URL such as postgres://user@host:5432/db")

// NewTarget parses urls. It touches no server: a bad URL is a usage error.
// An empty URL (or none) is ErrEmptyURL.
func NewTarget(urls []string) (*Target, error) {
	if len(urls) == 0 {
		return nil, ErrEmptyURL
	}
	for _, u := range urls {
		if strings.TrimSpace(u) == "" {
			return nil, ErrEmptyURL
		}
	}
	t := &Target{urls: append([]string(nil), urls...), secrets: passwords(urls), plain: make([]atomic.Bool, len(urls)), ownRefused: make([]atomic.Bool, len(urls))}
	for _, u := range urls {
		if err := cleanURL("--url ", u); err != nil {
			return nil, err
		}
		cfg, err := pgx.ParseConfig(u)
		if err != nil {
			return nil, fmt.Errorf("parsing --url %s: %s", Redact(u), t.Scrub(err.Error()))
		}
		t.urlTimeout = append(t.urlTimeout, cfg.ConnectTimeout > 0)
		if cfg.ConnectTimeout == 0 {
			cfg.ConnectTimeout = DefaultConnectTimeout
		}
		if cfg.RuntimeParams["application_name"] == "" {
			cfg.RuntimeParams["application_name"] = "txload"
		}
		t.encodings = append(t.encodings, clientEncoding(cfg))
		t.configs = append(t.configs, cfg)
	}
	return t, nil
}

// SetConnectTimeout makes d the bound of each step of a connection to the
// nodes whose URL sets no connect_timeout (nor PGCONNECT_TIMEOUT): a URL's
// own setting wins for it, as in libpq. d must be positive.
func (t *Target) SetConnectTimeout(d time.Duration) {
	for i, c := range t.configs {
		if !t.urlTimeout[i] {
			c.ConnectTimeout = d
		}
	}
}

// URLs returns the URLs with passwords redacted.
func (t *Target) URLs() []string {
	out := make([]string, len(t.urls))
	for i, u := range t.urls {
		out[i] = Redact(u)
	}
	return out
}

// Nodes is the number of URLs.
func (t *Target) Nodes() int { return len(t.urls) }

// Scrub removes the target's passwords from msg.
func (t *Target) Scrub(msg string) string { return Scrub(msg, t.secrets) }

// Connect opens one of txload's own sessions (not a workload's client:
// see own.go) to the next node in round-robin order.
func (t *Target) Connect(ctx context.Context) (*pgx.Conn, error) {
	i := int((t.next.Add(1) - 1) % uint64(len(t.configs)))
	return t.ConnectNode(ctx, i)
}

// Address is a host and port as "host:port" ("[::1]:5432"; a Unix
// socket's directory and port as "/dir:5432").
func Address(host string, port uint16) string {
	if strings.HasPrefix(host, "/") {
		return host + ":" + strconv.Itoa(int(port))
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// Pin sends every connection opened from now on, of every kind, to one
// host of the target: addr, "host:port" (Address), as one of its URLs
// names it (a multi-host URL names several). The URL's other hosts and
// the other URLs are no longer tried, whatever target_session_attrs would
// choose; the URL's other settings hold. A failover's audit reads the
// node the report names as the new primary so, even when another node
// takes writes too. Pin("") undoes it. No URL naming addr is an error.
func (t *Target) Pin(addr string) error {
	if addr == "" {
		t.pinned.Store(nil)
		return nil
	}
	for i, cfg := range t.configs {
		for _, h := range hosts(&cfg.Config) {
			if Address(h.Host, h.Port) == addr {
				t.pinned.Store(&pin{url: i, addr: addr})
				return nil
			}
		}
	}
	return fmt.Errorf("pinning the target to %s: none of its URLs names that host", addr)
}

// PinSetting makes every session opened from now on, txload's own and the
// workload's clients, send name = value as a startup parameter, which wins
// over the database's and the role's settings (ALTER DATABASE ... SET) and
// over the URL's options and the environment's (PGTZ sets timezone; a
// value of name in any case gives way): a setting changed on the server
// during a run then reaches none of the run's later sessions (its
// reconnections, its audit). A builtin run pins TimeZone to the zone its
// first session saw (workload/pgbench).
func (t *Target) PinSetting(name, value string) {
	for {
		old := t.settings.Load()
		next := map[string]string{}
		if old != nil {
			maps.Copy(next, *old)
		}
		next[name] = value
		if t.settings.CompareAndSwap(old, &next) {
			return
		}
	}
}

// pinSettings sets PinSetting's settings in params, a copy's
// RuntimeParams.
func (t *Target) pinSettings(params map[string]string) {
	s := t.settings.Load()
	if s == nil {
		return
	}
	for name, v := range *s {
		for k := range params {
			if strings.EqualFold(k, name) {
				delete(params, k)
			}
		}
		params[name] = v
	}
}

// hosts are the hosts cfg tries in order (pgx's fallbacks: a host once
// with TLS and once without under sslmode=prefer).
func hosts(cfg *pgconn.Config) []*pgconn.FallbackConfig {
	out := []*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}
	return append(out, cfg.Fallbacks...)
}

// pinTo returns the node a connection to node i goes to, and restricts
// cfg, a copy of its configuration, to the pinned host, if Pin set one.
func (t *Target) pinTo(i int, cfg func(int) *pgconn.Config) (int, *pgconn.Config) {
	p := t.pinned.Load()
	if p == nil {
		return i, cfg(i)
	}
	c := cfg(p.url)
	var keep []*pgconn.FallbackConfig
	for _, h := range hosts(c) {
		if Address(h.Host, h.Port) == p.addr {
			keep = append(keep, h)
		}
	}
	c.Host, c.Port, c.TLSConfig, c.Fallbacks = keep[0].Host, keep[0].Port, keep[0].TLSConfig, keep[1:]
	return p.url, c
}

// ConnectNode opens one of txload's own sessions to node i.
func (t *Target) ConnectNode(ctx context.Context, i int) (*pgx.Conn, error) {
	return t.connectOwn(ctx, i, nil)
}

// ConnectWith opens one of txload's own sessions to the next node with its
// configuration changed by adjust: a DialFunc, say.
func (t *Target) ConnectWith(ctx context.Context, adjust func(*pgx.ConnConfig)) (*pgx.Conn, error) {
	i := int((t.next.Add(1) - 1) % uint64(len(t.configs)))
	return t.connectOwn(ctx, i, adjust)
}

// ConnectClient opens a workload client's session with pgx (one the
// executor does not drive: pgio's server-side sessions) to the next node,
// its configuration changed by adjust: the URL's settings apply as they
// are, the server's timeouts included.
func (t *Target) ConnectClient(ctx context.Context, adjust func(*pgx.ConnConfig)) (*pgx.Conn, error) {
	i := int((t.next.Add(1) - 1) % uint64(len(t.configs)))
	return t.connect(ctx, i, adjust)
}

func (t *Target) connect(ctx context.Context, i int, adjust func(*pgx.ConnConfig)) (*pgx.Conn, error) {
	var cfg *pgx.ConnConfig
	i, _ = t.pinTo(i, func(i int) *pgconn.Config {
		cfg = t.configs[i].Copy()
		return &cfg.Config
	})
	t.pinSettings(cfg.RuntimeParams)
	if adjust != nil {
		adjust(cfg)
	}
	t.preferPlain(i, &cfg.Config)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, t.connectError(ctx, i, cfg.ConnectTimeout, err)
	}
	t.notePlain(i, &cfg.Config, conn.PgConn())
	return conn, nil
}

// connectError is err, a failed connection to node i, as a ConnectError:
// when the connect timeout (bound) ran out while ctx goes on, its message
// names the step the server did not answer.
func (t *Target) connectError(ctx context.Context, i int, bound time.Duration, err error) *ConnectError {
	e := &ConnectError{URL: Redact(t.urls[i]), msg: t.Scrub(err.Error()), err: err}
	if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		e.bound = bound
	}
	return e
}

// ConnectError is a failed connection attempt; its message carries the
// redacted URL and never a password.
type ConnectError struct {
	URL string
	msg string
	err error
	// bound is the connect timeout that ran out (0: another failure).
	bound time.Duration
}

func (e *ConnectError) Error() string {
	msg := connectDetail(e.msg)
	if e.bound > 0 {
		msg = stalledStep.ReplaceAllStringFunc(msg, func(m string) string {
			step := stepName(stalledStep.FindStringSubmatch(m)[1])
			return fmt.Sprintf("%s: no answer in %s (the connect timeout)", step, e.bound)
		})
	}
	return fmt.Sprintf("connecting to %s: %s", e.URL, msg)
}

// stepName is pgx's name of a step of a connection, as txload says it
// when the server stopped answering in one.
func stepName(pgxStep string) string {
	switch pgxStep {
	case "dial error":
		return "TCP connect"
	case "tls error":
		return "TLS handshake"
	}
	return "startup and authentication"
}

// stalledStep is pgx's account of a step cut by the connect timeout.
var stalledStep = regexp.MustCompile(`(dial error|tls error|failed to write startup message|failed to receive message|failed to write password message|failed SASL auth): [^;]*(timeout|deadline exceeded)[^;]*`)

var (
	// pgx's prefix: the URL in the message names the user and database.
	pgxConnectPrefix = regexp.MustCompile("^failed to connect to `[^`]*`:\\s*")
	// "127.0.0.1:1 (127.0.0.1): dial error: dial tcp 127.0.0.1:1: connect: …"
	// names the address twice.
	dialRepeat = regexp.MustCompile(`^(\S+) (\([^)]*\)): dial error: dial \w+ (\S+): `)
)

// connectDetail makes pgx's account of a failed connection one line that
// says each thing once. pgx lists every attempt on its own line: with
// sslmode=prefer it tries each address twice (TLS, then plain) and gets the
// same refusal twice, and a name that does not resolve is reported as
// "hostname resolving error: X" followed by X.
func connectDetail(msg string) string {
	msg = pgxConnectPrefix.ReplaceAllString(msg, "")
	var lines []string
	for _, l := range strings.Split(msg, "\n") {
		l = strings.Join(strings.Fields(l), " ")
		if m := dialRepeat.FindStringSubmatch(l); m != nil && m[1] == m[3] {
			l = m[1] + " " + m[2] + ": " + l[len(m[0]):]
		}
		if l != "" {
			lines = append(lines, l)
		}
	}
	var out []string
	for i, l := range lines {
		if slices.Contains(out, l) || tlsFallback(l, lines[i+1:]) {
			continue
		}
		dup := false
		for j, other := range lines {
			// A line that another, longer one repeats in full adds nothing.
			if j != i && len(other) > len(l) && strings.Contains(other, l) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}

// tlsFallback says l is pgx's TLS attempt that the server refused, under
// sslmode=prefer, before its plain attempt to the same address (one of
// rest): libpq says nothing of it, and neither does txload.
func tlsFallback(l string, rest []string) bool {
	addr, _, ok := strings.Cut(l, " ")
	if !ok || !strings.Contains(l, "tls error: server refused TLS connection") {
		return false
	}
	for _, r := range rest {
		if strings.HasPrefix(r, addr+" ") {
			return true
		}
	}
	return false
}

func (e *ConnectError) Unwrap() error { return e.err }

// ConnectRaw opens a protocol-level connection (pgconn) to the next node in
// round-robin order, for executors that speak the protocol themselves. Its
// client_encoding is the URL's, else the database's (see encoding.go).
//
// The connection is ready to be hijacked: pgx holds none of its bytes and
// reads none. A write of pgx's that takes over 15 ms (the startup message
// on a loaded machine) starts its background reader, which may still wait
// in a read of the socket when the connection is handed over, and would
// take the answer to the first statement sent on the hijacked socket:
// SyncConn stops it (with a ping when it must).
func (t *Target) ConnectRaw(ctx context.Context) (*pgconn.PgConn, error) {
	i, cfg := t.pinTo(int((t.next.Add(1)-1)%uint64(len(t.configs))), func(i int) *pgconn.Config { return t.configs[i].Config.Copy() })
	if enc := t.encodings[i]; enc != "" {
		cfg.RuntimeParams["client_encoding"] = enc
	} else {
		delete(cfg.RuntimeParams, "client_encoding") // the database's, as libpq
	}
	t.pinSettings(cfg.RuntimeParams)
	t.preferPlain(i, cfg)
	pc, err := pgconn.ConnectConfig(ctx, cfg)
	if err == nil {
		sctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
		if err = pc.SyncConn(sctx); err != nil {
			pc.Close(context.WithoutCancel(ctx))
		}
		cancel()
	}
	if err != nil {
		return nil, t.connectError(ctx, i, cfg.ConnectTimeout, err)
	}
	t.notePlain(i, cfg, pc)
	return pc, nil
}
