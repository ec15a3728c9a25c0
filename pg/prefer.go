package pg

import (
	"crypto/tls"

	"github.com/jackc/pgx/v5/pgconn"
)

// Under sslmode=prefer (the default of a URL that names none) pgx opens a
// TCP connection, asks for TLS, and on the server's refusal opens a second
// one in plain text: every connection to a server without TLS costs two
// connections and two backends' startup (measured with -C on 2 cores: 43
// to 52 ms a connection against 27 ms with sslmode=disable). libpq goes on
// in plain text on the same connection. Once a node has refused TLS, its
// next connections go straight to plain text, as they would end up anyway.

// preferPlain makes cfg, a configuration of node i, connect in plain text
// at once if the node refused TLS before.
func (t *Target) preferPlain(i int, cfg *pgconn.Config) {
	if i >= len(t.plain) || !t.plain[i].Load() || cfg.TLSConfig == nil {
		return
	}
	var plain []*pgconn.FallbackConfig
	for _, f := range cfg.Fallbacks {
		if f.TLSConfig == nil {
			plain = append(plain, f)
		}
	}
	if len(plain) == 0 {
		return // sslmode=require or stricter: TLS or nothing
	}
	cfg.Host, cfg.Port, cfg.TLSConfig = plain[0].Host, plain[0].Port, nil
	cfg.Fallbacks = plain[1:]
}

// notePlain remembers that node i refused TLS: cfg offered it (with a plain
// fallback) and pc, the connection made, is plain.
func (t *Target) notePlain(i int, cfg *pgconn.Config, pc *pgconn.PgConn) {
	if i >= len(t.plain) || cfg.TLSConfig == nil || pc == nil {
		return
	}
	if _, isTLS := pc.Conn().(*tls.Conn); !isTLS {
		t.plain[i].Store(true)
	}
}
