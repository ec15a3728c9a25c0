package pg

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// Dialect is the kind of server behind a URL.
type Dialect string

// The dialects txload knows.
const (
	PostgreSQL  Dialect = "PostgreSQL"
	CockroachDB Dialect = "CockroachDB"
	YugabyteDB  Dialect = "YugabyteDB"
)

// Server identifies what answered.
type Server struct {
	Dialect Dialect `json:"dialect"`
	Version string  `json:"version"`
	Banner  string  `json:"banner"` // version() as the server wrote it
}

// String reads like "PostgreSQL 18.3".
func (s Server) String() string { return string(s.Dialect) + " " + s.Version }

var (
	crdbVersion = regexp.MustCompile(`^CockroachDB \S+ (v\S+)`)
	ybVersion   = regexp.MustCompile(`^PostgreSQL [0-9.]+-YB-([0-9.]+)`)
	pgVersion   = regexp.MustCompile(`^PostgreSQL ([0-9.]+\w*)`)
)

// ParseBanner identifies a server from what version() returns.
func ParseBanner(banner string) (Server, error) {
	for _, c := range []struct {
		re *regexp.Regexp
		d  Dialect
	}{{crdbVersion, CockroachDB}, {ybVersion, YugabyteDB}, {pgVersion, PostgreSQL}} {
		if m := c.re.FindStringSubmatch(banner); m != nil {
			return Server{Dialect: c.d, Version: m[1], Banner: banner}, nil
		}
	}
	return Server{}, fmt.Errorf("unrecognised server version %q", banner)
}

// Detect asks the server what it is.
func Detect(ctx context.Context, conn *pgx.Conn) (Server, error) {
	var banner string
	if err := conn.QueryRow(ctx, "SELECT version()", pgx.QueryExecModeSimpleProtocol).Scan(&banner); err != nil {
		return Server{}, fmt.Errorf("detecting server version: %w", err)
	}
	return ParseBanner(banner)
}
