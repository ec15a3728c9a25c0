package pg

import (
	"fmt"
	"strings"
	"testing"
)

// A failed connection worded as libpq words it (pgbench prints that), and
// in txload's own error without pgx's TLS attempt, which the server refused
// under sslmode=prefer before the plain one.
func TestConnectFailureMessages(t *testing.T) {
	u := parseURL(t, srv.URL())
	host, port := u.Hostname(), u.Port()
	for _, tc := range []struct {
		name, url, libpq string
	}{
		{"no such database", fmt.Sprintf("postgres://postgres@%s:%s/nosuchdb", host, port),
			fmt.Sprintf("connection to server at \"%s\", port %s failed: FATAL:  database \"nosuchdb\" does not exist\n", host, port)},
		{"refused", fmt.Sprintf("postgres://postgres@%s:1/x", host),
			fmt.Sprintf("connection to server at \"%s\", port 1 failed: Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?\n", host)},
		{"no such socket", "host=/nonexistent port=5432 user=postgres dbname=x",
			"connection to server on socket \"/nonexistent/.s.PGSQL.5432\" failed: No such file or directory\n\tIs the server running locally and accepting connections on that socket?\n"},
		{"no such host", "postgres://postgres@nosuchhost.invalid:5432/x",
			"could not translate host name \"nosuchhost.invalid\" to address: Name or service not known\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := NewTarget([]string{tc.url})
			if err != nil {
				t.Fatal(err)
			}
			_, err = tg.Connect(testCtx(t))
			if err == nil {
				t.Fatal("connected")
			}
			if strings.Contains(err.Error(), "tls") {
				t.Errorf("txload's message tells of the TLS attempt: %v", err)
			}
			got, ok := LibpqConnectMessage(err)
			if !ok || got != tc.libpq {
				t.Errorf("libpq's words:\n got %q\nwant %q", got, tc.libpq)
			}
		})
	}
}
