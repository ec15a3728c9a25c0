package pg

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Target is the database a run drives: one URL, or the nodes of a cluster,
// used round-robin so connections spread evenly over them.
type Target struct {
	urls    []string
	configs []*pgx.ConnConfig
	secrets []string
	next    atomic.Uint64
}

// DefaultConnectTimeout bounds each connection attempt when the URL sets none.
const DefaultConnectTimeout = 10 * time.Second

// NewTarget parses urls. It touches no server: a bad URL is a usage error.
func NewTarget(urls []string) (*Target, error) {
	if len(urls) == 0 {
		return nil, fmt.Errorf("no database URL")
	}
	t := &Target{urls: append([]string(nil), urls...), secrets: passwords(urls)}
	for _, u := range urls {
		cfg, err := pgx.ParseConfig(u)
		if err != nil {
			return nil, fmt.Errorf("parsing --url %s: %s", Redact(u), t.Scrub(err.Error()))
		}
		if cfg.ConnectTimeout == 0 {
			cfg.ConnectTimeout = DefaultConnectTimeout
		}
		if cfg.RuntimeParams["application_name"] == "" {
			cfg.RuntimeParams["application_name"] = "txload"
		}
		t.configs = append(t.configs, cfg)
	}
	return t, nil
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

// Connect opens a connection to the next node in round-robin order.
func (t *Target) Connect(ctx context.Context) (*pgx.Conn, error) {
	i := int((t.next.Add(1) - 1) % uint64(len(t.configs)))
	return t.ConnectNode(ctx, i)
}

// ConnectNode opens a connection to node i.
func (t *Target) ConnectNode(ctx context.Context, i int) (*pgx.Conn, error) {
	return t.connect(ctx, i, nil)
}

// ConnectWith opens a connection to the next node with its configuration
// changed by adjust: a DialFunc, say.
func (t *Target) ConnectWith(ctx context.Context, adjust func(*pgx.ConnConfig)) (*pgx.Conn, error) {
	i := int((t.next.Add(1) - 1) % uint64(len(t.configs)))
	return t.connect(ctx, i, adjust)
}

func (t *Target) connect(ctx context.Context, i int, adjust func(*pgx.ConnConfig)) (*pgx.Conn, error) {
	cfg := t.configs[i].Copy()
	if adjust != nil {
		adjust(cfg)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, &ConnectError{URL: Redact(t.urls[i]), msg: t.Scrub(err.Error()), err: err}
	}
	return conn, nil
}

// ConnectError is a failed connection attempt; its message carries the
// redacted URL and never a password.
type ConnectError struct {
	URL string
	msg string
	err error
}

func (e *ConnectError) Error() string {
	// pgx lists each address it tried on its own line: keep one line.
	msg := strings.Join(strings.Fields(strings.TrimPrefix(e.msg, "failed to connect to ")), " ")
	return fmt.Sprintf("connecting to %s: %s", e.URL, msg)
}

func (e *ConnectError) Unwrap() error { return e.err }
