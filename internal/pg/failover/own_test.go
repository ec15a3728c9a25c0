package failover

import (
	"net/url"
	"strings"
	"testing"

	"github.com/txload/txload/internal/pgtest"
)

// The prober's connections (its probes, and the counts of markers on a
// node) are txload's own: the server's timeouts off, whatever the URL's
// options say; behind a pooler that refuses that, they connect without.
// Before, a URL with options=-c statement_timeout=100ms bounded them too.
func TestProberOwnSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	s := pgtest.OwnServer(t)
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	direct := s.URL() + "&options=-c%20statement_timeout%3D100ms"
	refused := strings.Replace(direct, u.Host, pgtest.RefusingPooler(t, u.Host, "statement_timeout"), 1)
	for _, tc := range []struct{ name, url, want string }{
		{"direct", direct, "0"},
		{"a pooler that refuses it", refused, "100ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewProber([]string{tc.url})
			if err != nil {
				t.Fatal(err)
			}
			if st := p.Probe(t.Context()); st.Nodes[0].Err != nil {
				t.Fatalf("probe: %v", st.Nodes[0].Err)
			}
			conn, err := p.Connect(t.Context(), p.Addrs()[0])
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(t.Context())
			var got string
			if err := conn.QueryRow(t.Context(), "SHOW statement_timeout").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("statement_timeout %q, want %q", got, tc.want)
			}
		})
	}
}
