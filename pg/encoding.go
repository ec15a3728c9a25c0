package pg

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The client encoding of txload's connections.
//
// pgx reads and writes text as UTF-8 and refuses its simple protocol on a
// connection whose client_encoding is anything else ("simple protocol
// queries must be run with client_encoding=UTF8"); a database made with
// another encoding (SQL_ASCII by `initdb --locale C`, LATIN1, ...) gives a
// new session that encoding. So every pgx connection txload opens (to
// identify the server, init, check, read the tables' state) asks for UTF8,
// which the server converts to and from its own; and the workload's own
// connections (the executor's, ConnectRaw) keep the database's encoding as
// libpq does, or the client_encoding the URL or PGCLIENTENCODING names:
// the statements of a pgbench script reach the server byte for byte as
// they do from pgbench.

// pgxEncoding is the client_encoding of pgx connections.
const pgxEncoding = "UTF8"

// clientEncoding sets cfg's client_encoding for pgx and returns the one the
// URL asked for ("" = the database's own).
func clientEncoding(cfg *pgx.ConnConfig) string {
	asked := cfg.RuntimeParams["client_encoding"]
	cfg.RuntimeParams["client_encoding"] = pgxEncoding
	return asked
}

// ParseConfig parses a URL or connection string for a pgx connection of
// txload's own, with its client_encoding set to UTF8 (see above).
func ParseConfig(url string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	clientEncoding(cfg)
	return cfg, nil
}

// Connect opens a pgx connection to url, whatever the database's encoding.
func Connect(ctx context.Context, url string) (*pgx.Conn, error) {
	cfg, err := ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", Redact(url), err)
	}
	return pgx.ConnectConfig(ctx, cfg)
}
