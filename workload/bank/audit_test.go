package bank

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

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
			tg, conn := initBank(t, 100)
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
			coverRuns(t, conn, 100)
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

// The audit finds, over a crafted ledger of 10 accounts of 10000, what a
// hostile tester did that the sums it first took let through: versions
// traded for others of the same count, sum and sum of squares; an
// overdraft by a transfer that refuses to overdraw, the final balances
// kept; transfers no transfer writes; bank_meta off the marker; NULLs.
func TestAuditTampered(t *testing.T) {
	// Accounts 2 to 9 each send 10 to account 1 at serializable, by
	// read-modify-write: account 1's versions 1 to 8.
	const eight = `INSERT INTO bank_ledger VALUES (2,1,10,0,0,1,1,2,0),(3,1,10,0,1,1,2,2,0),(4,1,10,0,2,1,3,2,0),(5,1,10,0,3,1,4,2,0),(6,1,10,0,4,1,5,2,0),(7,1,10,0,5,1,6,2,0),(8,1,10,0,6,1,7,2,0),(9,1,10,0,7,1,8,2,0);
		UPDATE bank_account SET balance = 9990, version = 1 WHERE id BETWEEN 2 AND 9;
		UPDATE bank_account SET balance = 10080, version = 8 WHERE id = 1`
	// The same at read committed, transfer 3 having read version 1 of
	// account 1 (a lost update of 10).
	const eightLost = `INSERT INTO bank_ledger VALUES (2,1,10,0,0,1,1,0,0),(3,1,10,0,1,1,2,0,0),(4,1,10,0,1,1,3,0,0),(5,1,10,0,3,1,4,0,0),(6,1,10,0,4,1,5,0,0),(7,1,10,0,5,1,6,0,0),(8,1,10,0,6,1,7,0,0),(9,1,10,0,7,1,8,0,0);
		UPDATE bank_account SET balance = 9990, version = 1 WHERE id BETWEEN 2 AND 9;
		UPDATE bank_account SET balance = 10070, version = 8 WHERE id = 1`
	// Account 1 sends 10050 to 2, then 3 sends 100 to 1: account 1 went
	// to -50 and back to 50.
	overdraft := func(mode int) string {
		return fmt.Sprintf(`INSERT INTO bank_ledger VALUES (1,2,10050,0,0,1,1,0,%[1]d),(3,1,100,0,1,1,2,0,%[1]d);
		UPDATE bank_account SET balance = CASE id WHEN 1 THEN 50 WHEN 2 THEN 20050 ELSE 9900 END, version = CASE id WHEN 1 THEN 2 ELSE 1 END WHERE id IN (1, 2, 3)`, mode)
	}
	for _, tc := range []struct {
		name, setup, tamper, violation string
	}{
		{name: "versions traded, count and power sums kept", setup: eight,
			tamper:    `UPDATE bank_ledger SET to_written = CASE to_written WHEN 2 THEN 1 WHEN 3 THEN 5 WHEN 7 THEN 6 END, to_read = CASE to_written WHEN 2 THEN 0 WHEN 3 THEN 4 WHEN 7 THEN 5 END WHERE to_id = 1 AND to_written IN (2, 3, 7)`,
			violation: "1 account whose ledger writes are not versions 1 to its version, each once"},
		{name: "versions traded beside a lost update, money destroyed", setup: eightLost,
			tamper: `UPDATE bank_ledger SET to_written = CASE to_written WHEN 2 THEN 1 WHEN 3 THEN 5 WHEN 7 THEN 6 END, to_read = CASE to_written WHEN 2 THEN 0 WHEN 3 THEN 1 WHEN 7 THEN 5 END WHERE to_id = 1 AND to_written IN (2, 3, 7);
				UPDATE bank_account SET balance = 10050 WHERE id = 1`,
			violation: "1 account whose ledger writes are not versions 1 to its version, each once"},
		{name: "overdraft by read-modify-write", setup: "SELECT 1", tamper: overdraft(0),
			violation: "1 account whose ledger replays to a negative balance written by a read-modify-write or for-update withdrawal, which refuses to overdraw (first: account 1, version 1: -50)"},
		{name: "overdraft by for-update", setup: "SELECT 1", tamper: overdraft(2),
			violation: "(first: account 1, version 1: -50)"},
		{name: "overdraft by for-update beside a delta transfer", setup: "SELECT 1",
			tamper:    overdraft(2) + `; INSERT INTO bank_ledger VALUES (4,5,10,NULL,NULL,1,1,0,1); UPDATE bank_account SET balance = balance + CASE id WHEN 4 THEN -10 ELSE 10 END, version = 1 WHERE id IN (4, 5)`,
			violation: "(first: account 1, version 1: -50)"},
		{name: "amount 0", setup: "SELECT 1", tamper: `INSERT INTO bank_ledger VALUES (1,2,0,0,0,1,1,0,0); UPDATE bank_account SET version = 1 WHERE id IN (1, 2)`,
			violation: "1 ledger row with an amount below 1"},
		{name: "negative amount", setup: "SELECT 1", tamper: `INSERT INTO bank_ledger VALUES (1,2,-5,0,0,1,1,0,0); UPDATE bank_account SET balance = balance + CASE id WHEN 1 THEN 5 ELSE -5 END, version = 1 WHERE id IN (1, 2)`,
			violation: "1 ledger row with an amount below 1"},
		{name: "self-transfer", setup: "SELECT 1", tamper: `INSERT INTO bank_ledger VALUES (1,1,5,0,1,1,2,0,0); UPDATE bank_account SET version = 2 WHERE id = 1`,
			violation: "1 ledger row of a transfer from an account to itself"},
		{name: "bank_meta off the marker", setup: "SELECT 1", tamper: `UPDATE bank_meta SET accounts = 9; DELETE FROM bank_account WHERE id = 10`,
			violation: "the bank tables say accounts=9 initial-balance=10000, but init recorded accounts=10 initial-balance=10000 in txload_init"},
		{name: "bank_meta emptied", setup: "SELECT 1", tamper: `DELETE FROM bank_meta`,
			violation: "bank_meta holds 0 rows (0 with a NULL), where init wrote one"},
		{name: "marker deleted", setup: "SELECT 1", tamper: `DELETE FROM txload_init WHERE workload = 'bank'`,
			violation: "no txload_init row for bank"},
		{name: "NULL version", setup: eight, tamper: `ALTER TABLE bank_account ALTER version DROP NOT NULL; UPDATE bank_account SET version = NULL WHERE id = 1`,
			violation: "1 row of bank_account with a NULL balance or version"},
		{name: "NULL balance of 0", setup: "SELECT 1", tamper: `ALTER TABLE bank_account ALTER balance DROP NOT NULL; INSERT INTO bank_ledger VALUES (1,2,10000,0,0,1,1,0,0); UPDATE bank_account SET balance = CASE id WHEN 1 THEN NULL ELSE 20000 END, version = 1 WHERE id IN (1, 2)`,
			violation: "1 row of bank_account with a NULL balance or version"},
		{name: "NULL amount", setup: eight, tamper: `ALTER TABLE bank_ledger ALTER amount DROP NOT NULL; UPDATE bank_ledger SET amount = NULL WHERE from_id = 9`,
			violation: "1 ledger row with a NULL where every transfer writes a value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, conn := initBank(t, 10000)
			for _, sql := range []string{tc.setup, tc.tamper} {
				for _, q := range strings.Split(sql, ";") {
					if _, err := conn.Exec(t.Context(), q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
				coverRuns(t, conn, 10000)
				a, err := runAudit(t.Context(), tg)
				if err != nil {
					t.Fatal(err)
				}
				got := strings.Join(a.violations(), "; ")
				if sql == tc.setup {
					if got != "" {
						t.Fatalf("before the tampering: violations %q", got)
					}
					continue
				}
				if !strings.Contains(got, tc.violation) {
					t.Fatalf("violations %q, want %q", got, tc.violation)
				}
			}
		})
	}
}

// coverRuns records in bank_run, for each level, mode and amount a
// crafted ledger holds, a run of it over every ledger id and the 10
// accounts of initial: the audit holds each row to the run that wrote it,
// as it does a real run's (TestAuditRuns attacks that).
func coverRuns(t *testing.T, conn *pgx.Conn, initial int64) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), `DELETE FROM bank_run`); err != nil {
		t.Fatal(err)
	}
	// Each run's first id its own, below every row's, as sequence values
	// are: a bound two runs share is a run that never ran.
	if _, err := conn.Exec(t.Context(), `INSERT INTO bank_run SELECT -row_number() OVER (), NULL, i, m, a, 10, 10, $1::BIGINT
		FROM (SELECT DISTINCT isolation i, mode m, amount a FROM bank_ledger WHERE isolation IS NOT NULL AND mode IS NOT NULL AND amount IS NOT NULL) d`, initial); err != nil {
		t.Fatal(err)
	}
}

// initBank inits a bank of 10 accounts of initial in a new database.
func initBank(t *testing.T, initial int64) (*pg.Target, *pgx.Conn) {
	t.Helper()
	url := srv.NewDatabase(t)
	tg, err := pg.NewTarget([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	g := newGenerator()
	g.cfg.accounts, g.cfg.initialBalance = 10, initial
	if err := g.schema().Init(t.Context(), tg, workload.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	conn := pgtest.Conn(t, url)
	// The fixtures' runs take bounds at 0 and below, as if the sequence
	// had given them (a run's bound is one it gave: holdBounds).
	if _, err := conn.Exec(t.Context(), `ALTER SEQUENCE bank_ledger_id MINVALUE -1000`); err != nil {
		t.Fatal(err)
	}
	return tg, conn
}

// The audit holds each ledger row to the run bank_run records over its id:
// a row relabelled to another level or mode, an amount other than the
// run's, an account beyond its selection, a row no run covers, and
// bank_meta rewritten with the marker after a run are found; a row at a
// stronger level than its run's (a server that runs read committed as
// serializable) is not.
func TestAuditRuns(t *testing.T) {
	// Accounts 2 to 9 each send 10 to account 1 at serializable, by
	// read-modify-write: account 1's versions 1 to 8, ledger ids 1 to 8.
	const eight = `INSERT INTO bank_ledger VALUES (2,1,10,0,0,1,1,2,0),(3,1,10,0,1,1,2,2,0),(4,1,10,0,2,1,3,2,0),(5,1,10,0,3,1,4,2,0),(6,1,10,0,4,1,5,2,0),(7,1,10,0,5,1,6,2,0),(8,1,10,0,6,1,7,2,0),(9,1,10,0,7,1,8,2,0);
		UPDATE bank_account SET balance = 9990, version = 1 WHERE id BETWEEN 2 AND 9;
		UPDATE bank_account SET balance = 10080, version = 8 WHERE id = 1`
	// run records a run over ledger ids first+1 to last-1.
	run := func(first, last string, iso, mode, amount, sel int) string {
		return fmt.Sprintf(`INSERT INTO bank_run VALUES (%s, %s, %d, %d, %d, %d, 10, 10000)`, first, last, iso, mode, amount, sel)
	}
	// reported records a run that reported: committed transfers seen to
	// commit, unknown of unknown outcome.
	reported := func(first, last string, committed, unknown int) string {
		return fmt.Sprintf(`INSERT INTO bank_run VALUES (%s, %s, 2, 0, 10, 10, 10, 10000, %d, %d)`, first, last, committed, unknown)
	}
	ser := run("0", "9", 2, 0, 10, 10)
	// The ledger's ids spread apart, so that runs at once have bounds
	// between them, as their sequence values are.
	apart := "UPDATE bank_ledger SET id = id * 2; "
	many := fmt.Sprintf(`INSERT INTO bank_run SELECT 100 + g * 10, 105 + g * 10, 0, 1, 5, 10, 10, 10000 FROM generate_series(1, %d) g`, maxTermRuns)
	for _, tc := range []struct {
		name, runs, tamper, violation string
	}{
		{name: "clean", runs: ser},
		{name: "a stronger level than the run's", runs: run("0", "9", 0, 0, 10, 10)},
		{name: "two runs at once", runs: apart + run("1", "NULL", 0, 1, 5, 10) + "; " + run("0", "20", 2, 0, 10, 10)},
		// Transfer 8 relabelled read committed, its read made stale:
		// account 1's replay then takes 10 away, and its balance with it.
		{name: "relabelled read committed with a stale read", runs: ser,
			tamper:    `UPDATE bank_ledger SET isolation = 0, to_read = 6 WHERE from_id = 9; UPDATE bank_account SET balance = 10070 WHERE id = 1`,
			violation: "1 ledger row that no run recorded in bank_run could have written: the runs whose ids cover it ran another level, transfer mode, amount or selection (first: ledger id 8 says read committed, read-modify-write, amount 10, accounts up to 9; its run: serializable, read-modify-write, amount 10, selection 10)"},
		{name: "relabelled delta with a large amount", runs: ser,
			tamper:    `UPDATE bank_ledger SET mode = 1, from_read = NULL, to_read = NULL, amount = 100000 WHERE from_id = 9; UPDATE bank_account SET balance = CASE id WHEN 9 THEN -89990 ELSE 110070 END WHERE id IN (1, 9)`,
			violation: "(first: ledger id 8 says serializable, delta, amount 100000, accounts up to 9"},
		{name: "an amount changed, both balances adjusted", runs: ser,
			tamper:    `UPDATE bank_ledger SET amount = 7 WHERE from_id = 9; UPDATE bank_account SET balance = balance + CASE id WHEN 9 THEN 3 ELSE -3 END WHERE id IN (1, 9)`,
			violation: "1 ledger row that no run recorded in bank_run could have written"},
		{name: "an account beyond the selection", runs: run("0", "9", 2, 0, 10, 8),
			violation: "1 ledger row that no run recorded in bank_run could have written"},
		{name: "rows after the run's end", runs: run("0", "6", 2, 0, 10, 10),
			violation: "3 ledger rows whose id no run recorded in bank_run covers"},
		{name: "rows before the run", runs: run("2", "NULL", 2, 0, 10, 10),
			violation: "2 ledger rows whose id no run recorded in bank_run covers"},
		{name: "no run recorded", runs: "SELECT 1",
			violation: "8 ledger rows whose id no run recorded in bank_run covers"},
		// More runs than one term each: the rows grouped by run.
		{name: "many runs", runs: ser + "; " + many},
		{name: "many runs, a row relabelled", runs: ser + "; " + many,
			tamper:    `UPDATE bank_ledger SET isolation = 0, to_read = 6 WHERE from_id = 9; UPDATE bank_account SET balance = 10070 WHERE id = 1`,
			violation: "1 ledger row that no run recorded in bank_run could have written: the runs whose ids cover it ran another level, transfer mode, amount or selection (first: ledger id 8 says read committed, read-modify-write, amount 10, accounts up to 9; its run: serializable, read-modify-write, amount 10, selection 10)"},
		{name: "many runs, rows after the run's end", runs: run("0", "6", 2, 0, 10, 10) + "; " + many,
			violation: "3 ledger rows whose id no run recorded in bank_run covers"},
		// A run that reported holds the rows of its ids to its counts;
		// runs at once, to the sums of theirs; with a run that did not
		// report among them, they are not held.
		{name: "a reported run, its count kept", runs: reported("0", "9", 8, 0)},
		{name: "a reported run, a row of unknown outcome committed", runs: reported("0", "9", 7, 1)},
		{name: "a reported run, a row too many", runs: reported("0", "9", 7, 0),
			violation: "1 range of ledger ids recorded in bank_run with more rows than its runs saw commit or end of unknown outcome (a transfer added or a row duplicated beside them; first: ids 1 to 8, 8 rows, where its run saw 7 commit and 0 end of unknown outcome)"},
		{name: "a reported run, a row too few", runs: reported("0", "9", 9, 2),
			violation: "1 range of ledger ids recorded in bank_run with fewer rows than its runs saw commit (a row deleted, or its id moved; first: ids 1 to 8, 8 rows, where its run saw 9 commit and 2 end of unknown outcome)"},
		{name: "a reported run, a count below 0", runs: reported("0", "9", 9, -1),
			violation: "1 row in bank_run with a count of transfers below 0, which no run reports"},
		{name: "two reported runs at once", runs: apart + reported("0", "20", 5, 0) + "; " + reported("3", "9", 3, 0)},
		{name: "two reported runs at once, a row too many", runs: apart + reported("0", "20", 4, 0) + "; " + reported("3", "9", 3, 0),
			violation: "(a transfer added or a row duplicated beside them; first: ids 1 to 19, 8 rows, where its 2 runs saw 7 commit and 0 end of unknown outcome)"},
		{name: "two runs at once, one not reported", runs: apart + reported("0", "20", 1, 0) + "; " + run("3", "9", 2, 0, 10, 10)},
		{name: "a run after one that did not report", runs: apart + run("0", "NULL", 2, 0, 10, 10) + "; " + reported("3", "9", 1, 0)},
		// A run's bounds are ids it took from the sequence: never a
		// ledger row's, never another run's (retest 16).
		{name: "a run recorded over the real one's bounds", runs: ser + "; " + run("0", "9", 0, 0, 10, 10),
			violation: "2 ids recorded in bank_run as the bound of more than one run (first: 0)"},
		{name: "a run recorded over a ledger row's id", runs: ser + "; " + run("4", "6", 0, 0, 10, 10),
			violation: "2 ledger rows at an id recorded in bank_run as a run's first or last (first: 4)"},
		{name: "a run recorded beyond what the sequence gave", runs: ser + "; " + run("1500", "1600", 0, 0, 10, 10),
			violation: "2 ids recorded in bank_run as a run's bound that bank_ledger_id never gave (first: 1500; it gives -1000 on, and gave 1000 last)"},
		{name: "the sequence dropped", runs: ser, tamper: "DROP SEQUENCE bank_ledger_id CASCADE",
			violation: "the runs' bounds cannot be held to bank_ledger_id, the sequence each run takes its ledger ids and its bounds from (ERROR: relation \"bank_ledger_id\" does not exist"},
		{name: "the sequence restarted at a value below a bound", runs: ser, tamper: "ALTER SEQUENCE bank_ledger_id RESTART WITH 5",
			violation: "1 id recorded in bank_run as a run's bound that bank_ledger_id never gave (first: 9; it gives -1000 on, and gave 4 last)"},
		{name: "the sequence set past the bounds, not called since", runs: ser, tamper: "SELECT setval('bank_ledger_id', 1000, false)"},
		{name: "the sequence made a view", runs: ser, tamper: "DROP SEQUENCE bank_ledger_id CASCADE; CREATE VIEW bank_ledger_id AS SELECT 1000::bigint AS last_value, true AS is_called",
			violation: "bank_ledger_id is not a sequence"},
		{name: "a run recorded below what the sequence gives", runs: ser + "; " + run("-2000", "NULL", 0, 0, 10, 10),
			violation: "1 id recorded in bank_run as a run's bound that bank_ledger_id never gave (first: -2000"},
		{name: "many runs, a row too many", runs: reported("0", "9", 7, 0) + "; " + many,
			violation: "first: ids 1 to 8, 8 rows, where its run saw 7 commit and 0 end of unknown outcome"},
		{name: "many runs, a row too few", runs: reported("0", "9", 9, 0) + "; " + many,
			violation: "1 range of ledger ids recorded in bank_run with fewer rows than its runs saw commit"},
		{name: "bank_run dropped", runs: "DROP TABLE bank_run",
			violation: "no bank_run table, which records each run"},
		{name: "a NULL in bank_run", runs: ser + "; ALTER TABLE bank_run ALTER amount DROP NOT NULL; UPDATE bank_run SET amount = NULL",
			violation: "1 row in bank_run with a NULL where every run records a value"},
		{name: "bank_meta and the marker rewritten together", runs: ser,
			tamper: `UPDATE bank_meta SET initial_balance = 10001; UPDATE txload_init SET settings = 'accounts=10 initial-balance=10001' WHERE workload = 'bank';
				UPDATE bank_account SET balance = balance + 1`,
			violation: "1 run recorded in bank_run on accounts=10 initial-balance=10000, where bank_meta says accounts=10 initial-balance=10001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, conn := initBank(t, 10000)
			// The sequence set past the fixtures' bounds, as if it had
			// given them.
			for _, sql := range []string{eight, tc.runs, "SELECT setval('bank_ledger_id', 1000)", tc.tamper} {
				for _, q := range strings.Split(sql, ";") {
					if strings.TrimSpace(q) == "" {
						continue
					}
					if _, err := conn.Exec(t.Context(), q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
			}
			a, err := runAudit(t.Context(), tg)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(a.violations(), "; ")
			if (tc.violation == "") != (got == "") || !strings.Contains(got, tc.violation) {
				t.Fatalf("violations %q, want %q", got, tc.violation)
			}
		})
	}
}
