package bank

import (
	"strings"
	"testing"

	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// A transfer the run left in doubt that reaches the server after the run
// recorded its end (a pooler held it unsent, then passed it on) has a
// ledger id beyond the run's range: the run claims it, by its hash, and
// the audit holds it to the transfers in doubt. On the code before, the
// audit named it a row no run covers, over clean data (a retry of the
// eighth retest: a frozen PgBouncer, 1 run of 7). A row beyond the range
// that is not a transfer in doubt (forged, or one in doubt twice) is not
// claimed, and with it none is.
func TestClaimLate(t *testing.T) {
	// Accounts 2 to 9 each send 10 to account 1 at serializable, by
	// read-modify-write: ledger ids 1 to 8, then the run's end, 9.
	const eight = `INSERT INTO bank_ledger VALUES (2,1,10,0,0,1,1,2,0),(3,1,10,0,1,1,2,2,0),(4,1,10,0,2,1,3,2,0),(5,1,10,0,3,1,4,2,0),(6,1,10,0,4,1,5,2,0),(7,1,10,0,5,1,6,2,0),(8,1,10,0,6,1,7,2,0),(9,1,10,0,7,1,8,2,0);
		UPDATE bank_account SET balance = 9990, version = 1 WHERE id BETWEEN 2 AND 9;
		UPDATE bank_account SET balance = 10080, version = 8 WHERE id = 1;
		INSERT INTO bank_run VALUES (0, nextval('bank_ledger_id'), 2, 0, 10, 10, 10, 10000, 8, 2)`
	// The transfer in doubt: account 9 sends 10 to account 1, having
	// read versions 1 and 8.
	const late = `INSERT INTO bank_ledger VALUES (9,1,10,1,8,2,9,2,0);
		UPDATE bank_account SET balance = 9980, version = 2 WHERE id = 9;
		UPDATE bank_account SET balance = 10090, version = 9 WHERE id = 1`
	// The same row again (its versions made to fit), and one forged of
	// another amount.
	const twice = `INSERT INTO bank_ledger VALUES (9,1,10,1,8,3,10,2,0);
		UPDATE bank_account SET balance = 9970, version = 3 WHERE id = 9;
		UPDATE bank_account SET balance = 10100, version = 10 WHERE id = 1`
	const forged = `INSERT INTO bank_ledger VALUES (8,1,11,1,8,2,9,2,0);
		UPDATE bank_account SET balance = 9979, version = 2 WHERE id = 8;
		UPDATE bank_account SET balance = 10091, version = 9 WHERE id = 1`
	for _, tc := range []struct {
		name, after string
		claimed     bool
		violation   string
	}{
		{name: "a transfer in doubt after the end", after: late, claimed: true},
		{name: "a forged row after the end", after: forged,
			violation: "1 ledger row whose id no run recorded in bank_run covers"},
		{name: "the transfer in doubt twice", after: late + ";" + twice,
			violation: "2 ledger rows whose id no run recorded in bank_run covers"},
		{name: "the transfer in doubt and a forged row", after: late + "; UPDATE bank_account SET balance = 9980 WHERE id = 8; UPDATE bank_account SET balance = 10100 WHERE id = 1; INSERT INTO bank_ledger VALUES (8,7,10,1,1,2,2,2,0); UPDATE bank_account SET balance = 9980, version = 2 WHERE id = 8; UPDATE bank_account SET balance = 10000, version = 2 WHERE id = 7",
			violation: "2 ledger rows whose id no run recorded in bank_run covers"},
		{name: "nothing after the end", after: "SELECT 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, conn := initBank(t, 10000)
			ctx := t.Context()
			ident := newIdentity()
			// In doubt: one ended with its COMMIT unanswered (the pooler's),
			// one under way when the run stopped.
			_, h := ident.hash(nil, 9, 1, 10, true, 1, 8, pg.Serializable, ReadModifyWrite)
			ident.Doubt(h)
			p := &program{ident: ident, open: true}
			_, p.hash = ident.hash(nil, 5, 1, 10, true, 1, 8, pg.Serializable, ReadModifyWrite)
			ident.add(p)
			for _, q := range strings.Split(eight+";"+tc.after, ";") {
				if _, err := conn.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			last, err := ident.claimLate(ctx, tg, 0, 9)
			if err != nil {
				t.Fatal(err)
			}
			var recorded, rows int64
			if err := conn.QueryRow(ctx, `SELECT last_id, (SELECT count(*) FROM bank_ledger WHERE id > 0 AND id < last_id) FROM bank_run`).Scan(&recorded, &rows); err != nil {
				t.Fatal(err)
			}
			if recorded != last || tc.claimed != (last > 9) {
				t.Fatalf("claimLate returned %d, bank_run records %d: want the range extended %v", last, recorded, tc.claimed)
			}
			a, err := runAudit(ctx, tg)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(a.violations(), "; ")
			if (tc.violation == "") != (got == "") || !strings.Contains(got, tc.violation) {
				t.Fatalf("violations %q, want %q", got, tc.violation)
			}
			if tc.violation != "" {
				return
			}
			// The identity holds the claimed row to the transfers in doubt.
			res := &workload.CheckResult{Values: map[string]int64{}}
			rec := workload.Reconciliation{Committed: 8, Unknown: 2, Server: rows}
			for from := int32(2); from <= 9; from++ {
				_, h := ident.hash(nil, from, 1, 10, true, 0, int64(from-2), pg.Serializable, ReadModifyWrite)
				ident.Ended(h, nil)
			}
			if err := ident.audit(ctx, tg, 0, last, rec, res); err != nil {
				t.Fatal(err)
			}
			if len(res.Violations) > 0 || res.Values["ledger_identity_checked"] != 1 {
				t.Fatalf("identity: %v %v", res.Lines, res.Violations)
			}
		})
	}
}
