package pg

import (
	"testing"

	"github.com/txload/txload/internal/pgtest"
)

// A connection through PgBouncer is recognised (its startup process id is
// not the backend's), with its version and pool mode from its console; a
// direct connection is not.
func TestDetectPooler(t *testing.T) {
	direct := srv.NewDatabase(t)
	for _, tc := range []struct {
		name, mode string
	}{{"direct", ""}, {"transaction", "transaction"}, {"session", "session"}} {
		t.Run(tc.name, func(t *testing.T) {
			u := direct
			if tc.mode != "" {
				u = pgtest.Pgbouncer(t, direct, tc.mode)
			}
			tg, err := NewTarget([]string{u})
			if err != nil {
				t.Fatal(err)
			}
			conn, err := tg.ConnectNode(t.Context(), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(t.Context())
			p, err := DetectPooler(t.Context(), tg, 0, conn)
			if err != nil {
				t.Fatal(err)
			}
			if p.Found != (tc.mode != "") || p.Mode != tc.mode {
				t.Fatalf("detected %+v", p)
			}
			if tc.mode != "" && (len(p.Name) < 10 || p.Name[:9] != "PgBouncer") {
				t.Errorf("name %q", p.Name)
			}
			if p.TransactionPooling() != (tc.mode == "transaction") {
				t.Errorf("transaction pooling %v", p.TransactionPooling())
			}
		})
	}
}
