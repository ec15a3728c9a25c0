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

// The audit replays a crafted ledger exactly: a lost update at read
// committed is allowed, with the drift it causes explained, and every
// change no transfer made is found, whatever the level.
func TestAudit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		isolation int
		mode      int
		extra     string // more SQL after the two transfers
		lost      int64
		drift     int64
		explained int64
		offLedger int64
		violation string
	}{
		{name: "lost update at read committed", lost: 1, drift: +10, explained: +10, offLedger: 1},
		{name: "lost update at serializable", isolation: 2, lost: 1, drift: +10, explained: +10, offLedger: 1,
			violation: "1 lost update written at repeatable read or serializable"},
		{name: "lost update of a for-update transfer", mode: 2, lost: 1, drift: +10, explained: +10, offLedger: 1,
			violation: "1 lost update in for-update transfers at read committed"},
		{name: "write without ledger row", lost: 1, drift: +10, explained: +10, offLedger: 1,
			extra: "UPDATE bank_account SET version = version + 1 WHERE id = 7", violation: "1 account with versions no ledger row wrote"},
		{name: "balance changed beside a lost update", lost: 1, drift: +510, explained: +10, offLedger: 2,
			extra:     "UPDATE bank_account SET balance = balance + 500 WHERE id = 5",
			violation: "1 account whose balance is not what the ledger replays to (first: account 5 holds 600, its ledger 100); money drift of +500 that no read-committed lost update explains"},
		{name: "money moved beside a lost update", lost: 1, drift: +10, explained: +10, offLedger: 2,
			extra:     "UPDATE bank_account SET balance = balance + CASE id WHEN 1 THEN 7 ELSE -7 END WHERE id IN (1, 2)",
			violation: "2 accounts whose balance is not what the ledger replays to (first: account 1 holds 102, its ledger 95)"},
		{name: "negative balance", lost: 1, drift: -100, explained: +10, offLedger: 2,
			extra:     "UPDATE bank_account SET balance = -10 WHERE id = 4",
			violation: "1 negative balance in accounts no delta transfer wrote"},
		{name: "ledger row duplicated", lost: 2, drift: +10, explained: +5, offLedger: 2,
			extra: "INSERT INTO bank_ledger SELECT * FROM bank_ledger WHERE to_id = 3", violation: "2 accounts with more ledger writes than versions"},
		{name: "ledger row deleted", lost: 1, drift: +10, explained: 0, offLedger: 1,
			extra: "DELETE FROM bank_ledger WHERE to_id = 2", violation: "2 accounts with versions no ledger row wrote"},
		{name: "account deleted", lost: 1, drift: -90, explained: +10, offLedger: 1,
			extra: "DELETE FROM bank_account WHERE id = 9", violation: "1 account missing (bank_meta has 10, ids 1 to 10)"},
		{name: "account added", lost: 1, drift: +110, explained: +10, offLedger: 1,
			extra: "INSERT INTO bank_account VALUES (11, 100, 0)", violation: "1 row in bank_account outside accounts 1 to 10"},
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
			sql := `INSERT INTO bank_ledger VALUES (1, 2, 10, 0, 0, 1, 1, $1, $2), (1, 3, 5, 0, 0, 2, 1, $1, $2);
				UPDATE bank_account SET balance = 95, version = 2 WHERE id = 1;
				UPDATE bank_account SET balance = 110, version = 1 WHERE id = 2;
				UPDATE bank_account SET balance = 105, version = 1 WHERE id = 3`
			for i, q := range strings.Split(sql, ";") {
				args := []any{}
				if i == 0 {
					args = append(args, tc.isolation, tc.mode)
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
			if a.lostUpdates != tc.lost || a.drift() != tc.drift || a.explained() != tc.explained || a.offLedger != tc.offLedger {
				t.Fatalf("lost %d drift %d explained %d off ledger %d: %+v", a.lostUpdates, a.drift(), a.explained(), a.offLedger, *a)
			}
			got := strings.Join(a.violations(), "; ")
			if (tc.violation == "") != (got == "") || !strings.Contains(got, tc.violation) {
				t.Fatalf("violations %q, want %q", got, tc.violation)
			}
		})
	}
}
