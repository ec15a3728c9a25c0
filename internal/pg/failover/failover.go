// Package failover tells, from the client side, which node of a cluster is
// its primary and when that changes: each node's pg_is_in_recovery(),
// transaction_read_only, system identifier and timeline, for a run that
// causes a failover or waits for an HA manager to make one.
package failover

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/pg"
)

// DefaultProbeTimeout bounds the probe of one node (connecting and the
// query) when the URL sets no connect_timeout shorter.
const DefaultProbeTimeout = 2 * time.Second

// Node is what one server said when probed.
type Node struct {
	Addr string // host:port, as the URL names it
	// Err is why the probe failed (the server is down, refuses, is no
	// PostgreSQL): the fields below are then zero.
	Err error
	// Recovery is pg_is_in_recovery(): a standby.
	Recovery bool
	// ReadOnly is transaction_read_only: a standby, or a server set
	// read-only (libpq's target_session_attrs=read-write passes over it).
	ReadOnly bool
	// SystemID is pg_control_system()'s system_identifier, the cluster's
	// (a standby built from a base backup shares its primary's).
	SystemID uint64
	// Timeline is a primary's current timeline (of the WAL it writes,
	// pg_walfile_name(pg_current_wal_lsn())), a standby's at its last
	// restartpoint (pg_control_checkpoint()). A promotion starts a new one.
	Timeline uint32
	Started  time.Time // pg_postmaster_start_time(): a restart changes it
	At       time.Time // when the answer came
}

// Writable says the node takes writes: a primary, not read-only.
func (n Node) Writable() bool { return n.Err == nil && !n.Recovery && !n.ReadOnly }

func (n Node) String() string {
	if n.Err != nil {
		return n.Addr + ": " + n.Err.Error()
	}
	role := "primary"
	switch {
	case n.Recovery:
		role = "standby"
	case n.ReadOnly:
		role = "primary (read-only)"
	}
	return fmt.Sprintf("%s: %s, system %d, timeline %d", n.Addr, role, n.SystemID, n.Timeline)
}

// State is a probe of every node of a target.
type State struct {
	Nodes []Node
	At    time.Time // when the last answer came
}

// Primaries are the writable nodes: one in a healthy cluster, none during
// a failover, two after a split brain.
func (s State) Primaries() []Node {
	var out []Node
	for _, n := range s.Nodes {
		if n.Writable() {
			out = append(out, n)
		}
	}
	return out
}

// Primary is the writable node, if exactly one is.
func (s State) Primary() (Node, bool) {
	p := s.Primaries()
	if len(p) != 1 {
		return Node{}, false
	}
	return p[0], true
}

func (s State) String() string {
	parts := make([]string, len(s.Nodes))
	for i, n := range s.Nodes {
		parts[i] = n.String()
	}
	return strings.Join(parts, "; ")
}

// identity is what names a primary across probes: where it is, which
// cluster, which timeline. A proxy or a virtual IP keeps the address
// through a failover; the timeline still moves on.
type identity struct {
	addr     string
	system   uint64
	timeline uint32
}

func (n Node) identity() identity { return identity{n.Addr, n.SystemID, n.Timeline} }

// Changed says now has a new primary (NewPrimary).
func Changed(before, now State) bool {
	_, ok := NewPrimary(before, now)
	return ok
}

// NewPrimary is the one writable node of now that is none of before's
// primaries: another node, another cluster or another timeline. No primary
// (yet) is none; neither is a restart of the same primary (only Started
// moves), nor two new writable nodes. A primary of before writable again
// beside a new one (a split brain: the old primary restarted writable) is
// not new: the other is the new primary.
func NewPrimary(before, now State) (Node, bool) {
	var found []Node
	for _, p := range now.Primaries() {
		old := false
		for _, b := range before.Primaries() {
			old = old || b.identity() == p.identity()
		}
		if !old {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		return Node{}, false
	}
	return found[0], true
}

// node is how to reach one server of the target.
type node struct {
	addr string
	// cfg connects as txload's own sessions do, the server's timeouts
	// off (pg.SetOwnSettings); bare without that, for a server or pooler
	// that refuses it.
	cfg, bare *pgx.ConnConfig
	secrets   []string
}

// connect opens a connection to n: with txload's own settings, else, when
// they are refused, without.
func (n node) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, n.cfg)
	if err != nil && pg.RefusedOwnSettings(err) {
		conn, err = pgx.ConnectConfig(ctx, n.bare)
	}
	return conn, err
}

// Prober probes the nodes of a target: each host of each URL (a multi-host
// URL names several), one connection each, in parallel.
type Prober struct {
	nodes []node
}

// NewProber parses urls, libpq's URLs or keyword strings, multi-host ones
// included (postgres://h1:p1,h2:p2/db, host=a,b port=p,q). It touches no
// server. target_session_attrs is ignored: the prober talks to standbys too.
func NewProber(urls []string) (*Prober, error) {
	if len(urls) == 0 {
		return nil, pg.ErrEmptyURL
	}
	p := &Prober{}
	seen := map[string]bool{}
	for _, u := range urls {
		if strings.TrimSpace(u) == "" {
			return nil, pg.ErrEmptyURL
		}
		cfg, err := pg.ParseConfig(u)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %s", pg.Redact(u), pg.Scrub(err.Error(), []string{password(u)}))
		}
		var secrets []string
		if cfg.Password != "" {
			secrets = []string{cfg.Password}
		}
		// The primary host first, then pgx's fallbacks: each host once
		// with TLS, once plain under sslmode=prefer.
		type attempt struct {
			host string
			port uint16
			f    *pgconn.FallbackConfig
		}
		all := []attempt{{cfg.Host, cfg.Port, &pgconn.FallbackConfig{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}}
		for _, f := range cfg.Fallbacks {
			all = append(all, attempt{f.Host, f.Port, f})
		}
		for _, a := range all {
			addr := pg.Address(a.host, a.port)
			if seen[addr] {
				continue
			}
			seen[addr] = true
			c := cfg.Copy()
			c.Host, c.Port, c.TLSConfig = a.host, a.port, a.f.TLSConfig
			c.Fallbacks = nil
			for _, b := range all {
				if b.f != a.f && pg.Address(b.host, b.port) == addr {
					c.Fallbacks = append(c.Fallbacks, b.f)
				}
			}
			c.ValidateConnect = nil
			if c.ConnectTimeout == 0 || c.ConnectTimeout > DefaultProbeTimeout {
				c.ConnectTimeout = DefaultProbeTimeout
			}
			c.RuntimeParams["application_name"] = "txload probe"
			bare := c.Copy()
			pg.SetOwnSettings(&c.Config)
			p.nodes = append(p.nodes, node{addr: addr, cfg: c, bare: bare, secrets: secrets})
		}
	}
	return p, nil
}

// IgnorePassfile drops the password pgx read from the password file,
// which pg.PassfileWarning said libpq would ignore (open to its group or to
// others): the probes then send none, as libpq would.
func (p *Prober) IgnorePassfile() {
	for i := range p.nodes {
		p.nodes[i].cfg.Password, p.nodes[i].bare.Password = "", ""
	}
}

// password is the password in a URL or keyword string, for scrubbing a
// parse error ("" when none can be read).
func password(u string) string {
	cfg, err := pgconn.ParseConfig(u)
	if err != nil {
		return ""
	}
	return cfg.Password
}

// Addrs are the nodes' addresses, in the order the URLs name them.
func (p *Prober) Addrs() []string {
	out := make([]string, len(p.nodes))
	for i, n := range p.nodes {
		out[i] = n.addr
	}
	return out
}

// Connect opens a connection to the node at addr (one of Addrs), whatever
// its role, with the probe's timeout to connect.
func (p *Prober) Connect(ctx context.Context, addr string) (*pgx.Conn, error) {
	for _, n := range p.nodes {
		if n.addr == addr {
			conn, err := n.connect(ctx)
			if err != nil {
				return nil, errors.New("connecting to " + addr + ": " + pg.ConnectMessage(err, n.secrets))
			}
			return conn, nil
		}
	}
	return nil, fmt.Errorf("connecting to %s: not a node of the target (%s)", addr, strings.Join(p.Addrs(), ", "))
}

// probeSQL reads a node's role and identity in one round trip.
const probeSQL = `SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on',
	(SELECT system_identifier FROM pg_control_system()),
	CASE WHEN pg_is_in_recovery() THEN (SELECT timeline_id FROM pg_control_checkpoint())::bigint
	     ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint END,
	pg_postmaster_start_time()`

// Probe asks every node, in parallel, what it is now.
func (p *Prober) Probe(ctx context.Context) State {
	s := State{Nodes: make([]Node, len(p.nodes))}
	var wg sync.WaitGroup
	for i, n := range p.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Nodes[i] = n.probe(ctx)
		}()
	}
	wg.Wait()
	for _, n := range s.Nodes {
		if n.At.After(s.At) {
			s.At = n.At
		}
	}
	return s
}

func (n node) probe(ctx context.Context) Node {
	out := Node{Addr: n.addr}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.ConnectTimeout)
	defer cancel()
	fail := func(what string, err error) Node {
		out.Err = fmt.Errorf("%s: %s", what, pg.Scrub(err.Error(), n.secrets))
		out.At = time.Now()
		return out
	}
	conn, err := n.connect(ctx)
	if err != nil {
		out.Err = errors.New("connecting: " + pg.ConnectMessage(err, n.secrets))
		out.At = time.Now()
		return out
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var system, timeline int64
	if err := conn.QueryRow(ctx, probeSQL, pgx.QueryExecModeSimpleProtocol).Scan(
		&out.Recovery, &out.ReadOnly, &system, &timeline, &out.Started); err != nil {
		return fail("probing", err)
	}
	out.SystemID, out.Timeline = uint64(system), uint32(timeline)
	out.At = time.Now()
	return out
}

// Wait probes every interval until the primary is another than before's
// (see Changed), and returns the state that shows it; its At is when the
// change was seen. It returns ctx's error, with the last state, if the
// change does not come.
func (p *Prober) Wait(ctx context.Context, before State, interval time.Duration) (State, error) {
	if interval <= 0 {
		return State{}, fmt.Errorf("probe interval %s: want more than 0", interval)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		now := p.Probe(ctx)
		if Changed(before, now) {
			return now, nil
		}
		select {
		case <-ctx.Done():
			return now, fmt.Errorf("waiting for a new primary (last seen: %s): %w", now, context.Cause(ctx))
		case <-tick.C:
		}
	}
}
