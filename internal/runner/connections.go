package runner

import (
	"context"
	"fmt"
	"strings"
)

// CheckConnections refuses, before anything is written, a run that needs
// more connections than it can make. lower names the flags that set the
// number ("" = --concurrency).
//
// Through a pooler, the limit is the pooler's own (PgBouncer's
// max_client_conn, less the clients it has): a pooler exists to serve more
// clients than the server has connections. A pooler whose limit cannot be
// read is not checked, and that is said.
//
// Straight to the server, the connections the run's role can make: the
// server's max_connections less those in use (the client backends in
// pg_stat_activity; for a role without pg_read_all_stats, which sees no
// other role's backend type there, pg_stat_database's backends, which
// may count an autovacuum worker too),
// less the slots reserved for superusers (and, from PostgreSQL 16, for
// pg_use_reserved_connections) unless the role may use them, within the
// role's and the database's connection limits.
func (c *Conn) CheckConnections(ctx context.Context, need int, lower string) error {
	if lower == "" {
		lower = "--concurrency"
	}
	if p := c.Pooler; p.Found {
		if p.MaxClients == 0 {
			if c.log != nil {
				fmt.Fprintf(c.log, "through %s, whose client limit its admin console did not give: the run's %d connections are not checked against it\n", p.Name, need)
			}
			return nil
		}
		// The connection that read the figures is among its clients; it
		// closes before the run.
		if free := p.MaxClients - p.Clients + 1; need > free*c.Target.Nodes() {
			return Usagef("the run needs %d connections but %s accepts %d more clients (max_client_conn %d, %d connected): lower %s or raise max_client_conn",
				need, p.Name, free, p.MaxClients, p.Clients, lower)
		}
		return nil
	}
	conn, err := c.Target.ConnectNode(ctx, 0)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var maxConns, superReserved, inUse, roleLimit, roleUsed, dbLimit, dbUsed int
	var super bool
	err = conn.QueryRow(ctx, `SELECT current_setting('max_connections')::int,
		current_setting('superuser_reserved_connections')::int,
		CASE WHEN r.rolsuper OR pg_has_role('pg_read_all_stats', 'member')
			THEN (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')
			ELSE (SELECT COALESCE(sum(numbackends), 0) FROM pg_stat_database WHERE datname IS NOT NULL) END::int,
		r.rolsuper, r.rolconnlimit,
		(SELECT count(*) FROM pg_stat_activity WHERE usename = current_user AND backend_type = 'client backend')::int,
		d.datconnlimit,
		(SELECT numbackends FROM pg_stat_database WHERE datname = current_database())::int
		FROM pg_roles r, pg_database d WHERE r.rolname = current_user AND d.datname = current_database()`, simple).
		Scan(&maxConns, &superReserved, &inUse, &super, &roleLimit, &roleUsed, &dbLimit, &dbUsed)
	if err != nil {
		return nil // not PostgreSQL's catalogs (CockroachDB): nothing to compare with
	}
	// PostgreSQL 16's reserved_connections, for members of
	// pg_use_reserved_connections.
	var reserved int
	var mayReserved bool
	if conn.QueryRow(ctx, `SELECT current_setting('reserved_connections')::int, pg_has_role('pg_use_reserved_connections', 'member')`, simple).
		Scan(&reserved, &mayReserved) != nil {
		reserved = 0
	}
	// Our own connection is counted in use everywhere; it closes before the
	// run.
	free := maxConns - inUse + 1
	why := []string{fmt.Sprintf("max_connections %d", maxConns)}
	if !super {
		free -= superReserved
		why = append(why, fmt.Sprintf("%d reserved for superusers", superReserved))
		if !mayReserved && reserved > 0 {
			free -= reserved
			why = append(why, fmt.Sprintf("%d for pg_use_reserved_connections", reserved))
		}
	}
	why = append(why, fmt.Sprintf("%d in use", inUse))
	raise := "raise max_connections"
	if !super && roleLimit >= 0 && roleLimit-roleUsed+1 < free {
		free = roleLimit - roleUsed + 1
		why = append(why, fmt.Sprintf("; role %s limited to %d connections, %d in use", conn.Config().User, roleLimit, roleUsed))
		raise = "raise the role's CONNECTION LIMIT"
	}
	if !super && dbLimit >= 0 && dbLimit-dbUsed+1 < free {
		free = dbLimit - dbUsed + 1
		why = append(why, fmt.Sprintf("; database %s limited to %d connections, %d in use", conn.Config().Database, dbLimit, dbUsed))
		raise = "raise the database's CONNECTION LIMIT"
	}
	free = max(free, 0)
	if need > free*c.Target.Nodes() {
		return Usagef("the run needs %d connections but %d can be made (%s): lower %s or %s",
			need, free, strings.ReplaceAll(strings.Join(why, ", "), ", ;", ";"), lower, raise)
	}
	return nil
}
