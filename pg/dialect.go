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
	// Embedded: the throwaway server txload started itself.
	Embedded bool `json:"embedded,omitempty"`
	// Settings are the server's settings that shape a run's figures.
	Settings Settings `json:"settings,omitzero"`
}

// Settings are server settings that shape a run's figures, as SHOW prints
// them ("" where the server has no such setting or did not say): the
// default isolation, whether a commit waits for the disk, how many
// connections and how much shared memory the server has.
type Settings struct {
	DefaultTransactionIsolation string `json:"default_transaction_isolation,omitempty"`
	SynchronousCommit           string `json:"synchronous_commit,omitempty"`
	Fsync                       string `json:"fsync,omitempty"`
	FullPageWrites              string `json:"full_page_writes,omitempty"`
	MaxConnections              string `json:"max_connections,omitempty"`
	SharedBuffers               string `json:"shared_buffers,omitempty"`
}

// Set records setting name's value; false when Settings has no such field.
func (s *Settings) Set(name, value string) bool {
	for _, f := range []struct {
		name string
		to   *string
	}{
		{"default_transaction_isolation", &s.DefaultTransactionIsolation}, {"synchronous_commit", &s.SynchronousCommit},
		{"fsync", &s.Fsync}, {"full_page_writes", &s.FullPageWrites}, {"max_connections", &s.MaxConnections}, {"shared_buffers", &s.SharedBuffers},
	} {
		if f.name == name {
			*f.to = value
			return true
		}
	}
	return false
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
