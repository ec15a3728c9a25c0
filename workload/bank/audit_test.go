package bank

import (
	"strings"
	"testing"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// The audit counts exactly what a crafted ledger holds: a lost update at
// read committed is allowed (with the drift it causes), the same at
// serializable is a violation, and a write without its ledger row too.
func TestAudit(t *testing.T) {
	for _, tc := range []struct {
		name                             string
		isolation                        int
		extra                            string // more SQL after the two transfers
		lost, drift, offLedger, versions int64
		violation                        string
	}{
		{name: "lost update at read committed", isolation: 0, lost: 1, drift: +10, offLedger: 1},
		{name: "lost update at serializable", isolation: 2, lost: 1, drift: +10, offLedger: 1,
			violation: "1 lost update written at repeatable read or serializable"},
		{name: "write without ledger row", isolation: 0, lost: 1, drift: +10, offLedger: 1, versions: 1,
			extra: "UPDATE bank_account SET version = version + 1 WHERE id = 7", violation: "1 account whose version does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := srv.NewDatabase(t)
			tg, err := pg.NewTarget([]string{url})
			if err != nil {
				t.Fatal(err)
			}
			g := newGenerator()
			g.cfg.accounts, g.cfg.initialBalance = 10, 100
			if err := g.schema().Init(t.Context(), tg, workload.InitOptions{}); err != nil {
				t.Fatal(err)
			}
			conn := pgtest.Conn(t, url)
			// Transfer 1 moves 10 from 1 to 2, having read versions 0.
			// Transfer 2 moves 5 from 1 to 3 but read account 1 before
			// transfer 1 wrote it (version 0): it overwrites 90 with 95.
			sql := `INSERT INTO bank_ledger VALUES (1, 2, 10, 0, 0, 1, 1, $1, 0), (1, 3, 5, 0, 0, 2, 1, $1, 0);
				UPDATE bank_account SET balance = 95, version = 2 WHERE id = 1;
				UPDATE bank_account SET balance = 110, version = 1 WHERE id = 2;
				UPDATE bank_account SET balance = 105, version = 1 WHERE id = 3`
			for i, q := range strings.Split(sql, ";") {
				args := []any{}
				if i == 0 {
					args = append(args, tc.isolation)
				}
				if _, err := conn.Exec(t.Context(), q, args...); err != nil {
					t.Fatal(err)
				}
			}
			if tc.extra != "" {
				if _, err := conn.Exec(t.Context(), tc.extra); err != nil {
					t.Fatal(err)
				}
			}
			a, err := runAudit(t.Context(), tg)
			if err != nil {
				t.Fatal(err)
			}
			if a.transfers != 2 || a.lostUpdates != tc.lost || a.actual-a.expected != tc.drift || a.mismatched != tc.offLedger || a.versionMismatch != tc.versions {
				t.Fatalf("audit %+v", *a)
			}
			got := strings.Join(a.violations(), "; ")
			if (tc.violation == "") != (got == "") || !strings.Contains(got, tc.violation) {
				t.Fatalf("violations %q, want %q", got, tc.violation)
			}
		})
	}
}
