package pg

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Pooler describes a connection pooler between txload and the server
// (pgbouncer, say).
type Pooler struct {
	// Found: the connection does not reach a backend of its own.
	Found bool
	// Name is what it is, as far as it said: "PgBouncer 1.18.0", or "a
	// connection pooler" when its admin console did not answer.
	Name string
	// Mode is its pool mode when known: "session", "transaction",
	// "statement"; "" when unknown.
	Mode string
	// PreparedStatements: it keeps protocol-level prepared statements
	// across the server connections it hands out (PgBouncer 1.21 and later
	// with max_prepared_statements > 0).
	PreparedStatements bool
	// MaxClients is how many client connections it accepts (PgBouncer's
	// max_client_conn), Clients how many it has (its used and logging-in
	// clients); MaxClients is 0 when its admin console did not say.
	MaxClients, Clients int
}

// TransactionPooling says whether session state (prepared statements,
// session settings) may be lost between transactions: the pool mode is
// transaction or statement, or unknown.
func (p Pooler) TransactionPooling() bool { return p.Found && p.Mode != "session" }

func (p Pooler) String() string {
	if !p.Found {
		return "no pooler"
	}
	s := p.Name
	if p.Mode != "" {
		s += ", " + p.Mode + " pooling"
	}
	return s
}

// DetectPooler tells whether conn, a connection to node i of t, goes
// through a connection pooler: the process id the server gave at startup
// (the key of cancel requests) is not the backend's own when a pooler made
// it up. Then it asks the pooler's admin console (PgBouncer's) what it is;
// a console that does not answer leaves the name and mode unknown. Servers
// without pg_backend_pid() (CockroachDB) are taken as direct.
func DetectPooler(ctx context.Context, t *Target, i int, conn *pgx.Conn) (Pooler, error) {
	var pid uint32
	if err := conn.QueryRow(ctx, "SELECT pg_catalog.pg_backend_pid()", pgx.QueryExecModeSimpleProtocol).Scan(&pid); err != nil {
		return Pooler{}, nil
	}
	if pid == conn.PgConn().PID() {
		if len(t.configs) == 1 && oneHost(t.configs[0]) {
			t.direct.Store(true)
		}
		return Pooler{}, nil
	}
	p := Pooler{Found: true, Name: "a connection pooler"}
	cfg := t.configs[i].Copy()
	cfg.Database = "pgbouncer"
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	admin, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return p, nil // not PgBouncer, or not allowed to its console
	}
	defer admin.Close(context.WithoutCancel(ctx))
	var version string
	if err := admin.QueryRow(ctx, "SHOW VERSION").Scan(&version); err == nil {
		p.Name = version
	}
	settings := map[string]string{}
	if rows, err := admin.Query(ctx, "SHOW CONFIG"); err == nil {
		for rows.Next() {
			vals, err := rows.Values()
			if err == nil && len(vals) >= 2 {
				settings[fmt.Sprint(vals[0])] = fmt.Sprint(vals[1])
			}
		}
		rows.Close()
	}
	p.Mode = settings["pool_mode"]
	if n, err := strconv.Atoi(settings["max_client_conn"]); err == nil && n > 0 {
		lists := map[string]int{}
		if rows, err := admin.Query(ctx, "SHOW LISTS"); err == nil {
			for rows.Next() {
				var name string
				var n int
				if rows.Scan(&name, &n) == nil {
					lists[name] = n
				}
			}
			rows.Close()
		}
		if used, ok := lists["used_clients"]; ok {
			p.MaxClients, p.Clients = n, used+lists["login_clients"]
		}
	}
	if n, err := strconv.Atoi(settings["max_prepared_statements"]); err == nil && n > 0 {
		p.PreparedStatements = true
	}
	return p, nil
}

// SetPooled makes every connection of t safe behind a transaction-pooling
// pooler: statements are unnamed (parsed anew in each exchange, their
// descriptions cached on the client), and no session state is relied on.
func (t *Target) SetPooled() {
	t.pooled = true
	for _, c := range t.configs {
		c.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
}

// Pooled says connections go through a transaction-pooling pooler: no
// session state (SET, named prepared statements) survives a transaction.
func (t *Target) Pooled() bool { return t.pooled }

// PoolerHint explains an error that transaction pooling causes: a named
// prepared statement that exists or vanished because another client used
// the same server session.
func PoolerHint(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if strings.Contains(msg, "SQLSTATE 42P05") || strings.Contains(msg, "SQLSTATE 26000") {
		return "the server session changed under this connection: through a connection pooler in transaction mode? give --pooler transaction"
	}
	return ""
}

// Direct says whether DetectPooler found that the process ids the server
// gives connections to t are their backends' own, so that a backend can
// be found by it in pg_stat_activity: t has one URL, of one host (its
// fallbacks, TLS and plain, to the same host and port), and no pooler on
// the way.
func (t *Target) Direct() bool { return t.direct.Load() }

// oneHost says whether every host cfg may connect to is its first.
func oneHost(cfg *pgx.ConnConfig) bool {
	for _, f := range cfg.Fallbacks {
		if f.Host != cfg.Host || f.Port != cfg.Port {
			return false
		}
	}
	return true
}
