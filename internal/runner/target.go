package runner

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// TargetOptions choose the database: URLs (the nodes of one database), or
// an embedded server.
type TargetOptions struct {
	URLs            []string
	EmbeddedVersion string
	// EmbeddedVersionSet: the version was asked for; with URLs that is a
	// usage error (it would be ignored).
	EmbeddedVersionSet bool
	// CacheDir holds the embedded server's binaries ("" = the default).
	CacheDir string
	// Pooler says what sits between txload and the server: auto (detect
	// a pooler), none, transaction or session (a pooler in that mode).
	Pooler string
	// Quiet leaves out the "server: ..." line Open prints (for a command
	// that prints its own banner).
	Quiet bool
	// ConnectTimeout bounds each step of a connection (TCP connect, startup
	// and authentication, the workload's setup statements) to the nodes
	// whose URL sets no connect_timeout: 0 = pg.DefaultConnectTimeout.
	// ConnectTimeoutSet: --connect-timeout was given, and must be positive.
	ConnectTimeout    time.Duration
	ConnectTimeoutSet bool
	// Env is the environment, for libpq's rule on the password file (one
	// its group or others can read is ignored, with a warning): nil, the
	// rule is not applied.
	Env pg.LookupEnv
}

// Resolved is a validated choice of target, not yet connected.
type Resolved struct {
	target   *pg.Target // the URLs, parsed; nil for the embedded server
	embedded *embedded.Version
	cacheDir string
	pooler   string
	quiet    bool
	timeout  time.Duration // see TargetOptions.ConnectTimeout
	warnings []string      // libpq's, on password files ignored
}

// Embedded says the run starts its own throwaway server.
func (r Resolved) Embedded() bool { return r.embedded != nil }

// CheckPooler validates --pooler.
func CheckPooler(p string) error {
	switch p {
	case "", "auto", "none", "transaction", "session":
		return nil
	}
	return Usagef("--pooler %q is not allowed (allowed: auto, none, transaction, session)", p)
}

// Resolve validates the choice of target without touching any server.
func (o TargetOptions) Resolve() (Resolved, error) {
	if err := CheckPooler(o.Pooler); err != nil {
		return Resolved{}, err
	}
	if o.ConnectTimeout < 0 || o.ConnectTimeoutSet && o.ConnectTimeout <= 0 {
		return Resolved{}, Usagef("--connect-timeout must be a positive duration, such as 10s (got %s)", o.ConnectTimeout)
	}
	for _, u := range o.URLs {
		if strings.TrimSpace(u) == "" {
			return Resolved{}, Usagef("--url is empty: give a database URL such as postgres://user@host:5432/db")
		}
	}
	if len(o.URLs) > 0 {
		if o.EmbeddedVersionSet {
			return Resolved{}, Usagef("--embedded-version applies only to the embedded server, not to --url or DATABASE_URL")
		}
		t, err := pg.NewTarget(o.URLs)
		if err != nil {
			return Resolved{}, Usage(err)
		}
		if o.ConnectTimeout > 0 {
			t.SetConnectTimeout(o.ConnectTimeout)
		}
		var warnings []string
		for i, u := range o.URLs {
			if w := pg.PassfileWarning(u, o.Env); w != "" && o.Env != nil {
				t.IgnorePassfile(i) // as libpq does
				warnings = append(warnings, w)
			}
		}
		return Resolved{target: t, pooler: o.Pooler, quiet: o.Quiet, timeout: o.ConnectTimeout, warnings: warnings}, nil
	}
	v, err := embedded.Lookup(o.EmbeddedVersion)
	if err != nil {
		return Resolved{}, Usagef("--embedded-version: %v", err)
	}
	return Resolved{embedded: &v, cacheDir: o.CacheDir, quiet: o.Quiet, timeout: o.ConnectTimeout}, nil
}

// Conn is an open target; Close stops the embedded server, if any.
type Conn struct {
	Target   *pg.Target
	Server   pg.Server
	Embedded bool
	// Pooler is the connection pooler the target is reached through, if
	// any; behind one that pools transactions, no session state is used.
	Pooler pg.Pooler
	close  func()
	log    io.Writer // progress and notes: Open's log
}

// Close releases the target.
func (c *Conn) Close() { c.close() }

// Open starts the embedded server if needed, connects to every node and
// identifies the server. Several URLs must be nodes of one database.
// Progress goes to log.
func (r Resolved) Open(ctx context.Context, log io.Writer) (*Conn, error) {
	c := &Conn{close: func() {}, Target: r.target, Embedded: r.embedded != nil, log: log}
	for _, w := range r.warnings {
		fmt.Fprintln(log, w)
	}
	where := ""
	if r.embedded != nil {
		srv, err := embedded.Start(ctx, embedded.Options{Major: r.embedded.Full, Log: log, CacheDir: r.cacheDir})
		if err != nil {
			return nil, fmt.Errorf("starting the embedded PostgreSQL: %w", err)
		}
		c.close = func() {
			if err := srv.Stop(); err != nil {
				fmt.Fprintf(log, "stopping the embedded PostgreSQL: %v\n", err)
			}
		}
		where = " (embedded)"
		if c.Target, err = pg.NewTarget([]string{srv.URL()}); err != nil {
			c.close()
			return nil, err
		}
		if r.timeout > 0 {
			c.Target.SetConnectTimeout(r.timeout)
		}
	}
	t := c.Target
	var first string
	var standby bool
	for i := 0; i < t.Nodes(); i++ {
		conn, err := t.ConnectNode(ctx, i)
		if err != nil {
			c.close()
			return nil, err
		}
		id, err := identify(ctx, conn)
		if err == nil && i == 0 {
			c.Server, err = pg.Detect(ctx, conn)
			first = id
			if err == nil {
				c.Pooler, err = pooler(ctx, r.pooler, t, conn)
			}
			c.Server.Embedded, c.Server.Settings = r.embedded != nil, settings(ctx, conn)
			standby = inRecovery(ctx, conn)
		}
		conn.Close(context.WithoutCancel(ctx))
		if err != nil {
			c.close()
			return nil, err
		}
		if id != first {
			c.close()
			return nil, Usagef("--url %s and --url %s are not nodes of one database (%s; %s): give the nodes of one cluster",
				t.URLs()[0], t.URLs()[i], first, id)
		}
	}
	if where == "" {
		where = " at " + t.URLs()[0]
		if t.Nodes() > 1 {
			where += fmt.Sprintf(" and %d more nodes", t.Nodes()-1)
		}
	}
	if standby {
		where += ", a standby in recovery: it holds what it has replayed"
	}
	if !r.quiet {
		fmt.Fprintf(log, "server: %s%s\n", c.Server, where)
	}
	if c.Pooler.Found {
		how := "session state is kept"
		if c.Pooler.TransactionPooling() {
			t.SetPooled()
			how = "statements are unnamed and no session state is used"
		}
		fmt.Fprintf(log, "through %s: %s (--pooler says otherwise)\n", c.Pooler, how)
	}
	return c, nil
}

// pooler finds the pooler on the way to the server, as --pooler says.
func pooler(ctx context.Context, mode string, t *pg.Target, conn *pgx.Conn) (pg.Pooler, error) {
	switch mode {
	case "none":
		return pg.Pooler{}, nil
	case "transaction", "session":
		p, err := pg.DetectPooler(ctx, t, 0, conn)
		if !p.Found {
			p = pg.Pooler{Found: true, Name: "a connection pooler"}
		}
		p.Mode = mode
		return p, err
	}
	return pg.DetectPooler(ctx, t, 0, conn)
}

// CheckSessionState refuses a workload that needs session state (named
// prepared statements) behind a pooler that loses it.
func (c *Conn) CheckSessionState(h workload.Hooks) error {
	if h.SessionState == nil || !c.Pooler.TransactionPooling() || c.Pooler.PreparedStatements {
		return nil
	}
	if need := h.SessionState(); need != "" {
		// need begins with the flag as the user typed it: "-M prepared".
		flag, _, _ := strings.Cut(need, " ")
		return Usagef("%s, but %s hands each transaction any server session and keeps no prepared statements (PgBouncer keeps them from 1.21 with max_prepared_statements): use %s extended or simple", need, c.Pooler, flag)
	}
	return nil
}

// settings reads the server settings pg.Settings records, as SHOW prints
// them; those the server does not have stay "" (they describe the run,
// they do not change it: an error reading them is no error of the run's).
func settings(ctx context.Context, conn *pgx.Conn) pg.Settings {
	var out pg.Settings
	rows, err := conn.Query(ctx, "SELECT name, current_setting(name) FROM pg_settings WHERE name IN "+
		"('default_transaction_isolation', 'synchronous_commit', 'fsync', 'full_page_writes', 'max_connections', 'shared_buffers')", simple)
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if rows.Scan(&k, &v) == nil {
			out.Set(k, v)
		}
	}
	return out
}

// simple runs a probe with the simple protocol: before a pooler is known,
// a named statement could meet one another client left in the session.
const simple = pgx.QueryExecModeSimpleProtocol

// identify names the database a connection reached: the cluster's identity
// where the dialect gives one (PostgreSQL's system identifier, CockroachDB's
// cluster id) and the database's name.
func identify(ctx context.Context, conn *pgx.Conn) (string, error) {
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()", simple).Scan(&db); err != nil {
		return "", fmt.Errorf("identifying the database: %w", err)
	}
	for _, q := range []string{
		"SELECT system_identifier::text FROM pg_control_system()",
		"SELECT crdb_internal.cluster_id()::text",
	} {
		var id string
		// Each probe in its own statement: an error (the function does not
		// exist, or is not granted) leaves the connection usable.
		if err := conn.QueryRow(ctx, q, simple).Scan(&id); err == nil {
			return fmt.Sprintf("cluster %s, database %s", id, db), nil
		}
	}
	return "database " + db, nil
}

// inRecovery says whether the server conn reaches is a standby (in
// recovery); false where the server cannot say (CockroachDB).
func inRecovery(ctx context.Context, conn *pgx.Conn) bool {
	var in bool
	if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&in); err != nil {
		return false
	}
	return in
}
