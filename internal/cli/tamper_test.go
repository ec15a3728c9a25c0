package cli

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/workload/all"
	"github.com/txload/txload/workload/tpcc"
)

// The tamper catalogue: every check is attacked after a real run. Each
// workload with a check lists here how a short run of it is made and the
// tamperings of the catalogue that apply to its tables; the test makes one
// run per workload and isolation level, then applies each tampering to a
// copy of that database and wants `txload check` to exit 1 with a
// VIOLATION naming what it found, or, where the check cannot tell (an
// allowed cell, with its reason), to exit 0. A new workload adds its row
// to tamperWorkloads; docs/failures.md's table ("Audits under tampering")
// is made from this one (TestTamperTableInDocs).

// The catalogue's tamperings, in the table's order.
const (
	tamperBalance      = "a balance changed"
	tamperMoved        = "money moved between two rows, total kept"
	tamperRowDeleted   = "a row deleted"
	tamperRowAdded     = "a row inserted that no transaction wrote"
	tamperRowDuplicate = "a row duplicated"
	tamperVersion      = "a version bumped"
	tamperNegative     = "a negative balance"
	tamperLogDeleted   = "a history/ledger row deleted"
	tamperLogDuplicate = "a history/ledger row duplicated"
	tamperLogAdded     = "a history/ledger row that no transaction wrote"
	tamperCounter      = "a vote counter off by one"
	tamperOther        = "another table's balance changed"
	tamperValue        = "a value changed, its length kept"
	tamperValueMoved   = "a value copied from another row"
	tamperTraded       = "versions traded, their count and sums kept"
	tamperOverdraft    = "an overdraft in the ledger, final balances kept"
	tamperAmount       = "a transfer of a negative amount"
	tamperSelf         = "a transfer from an account to itself"
	tamperNull         = "a NULL where the workload writes a value"
	tamperSettings     = "the settings table changed"
	tamperMarker       = "the init marker deleted"
	tamperWideDelta    = "a history delta outside the script's range"
	tamperOrphan       = "a history row of a teller that does not exist"
	tamperZeroed       = "every vote counter zeroed"
	tamperElemRemoved  = "a list element removed"
	tamperElemSwapped  = "two list elements reordered"
	tamperElemAdded    = "a list element appended that no transaction wrote"
	tamperResigned     = "a value rewritten, its checksum recomputed"
	tamperForged       = "a run recorded that never ran, and writes consistent with it"
	tamperForgedGaps   = "a run recorded that never ran, between two gaps of the ledger's ids, of another mode, and a lost update of its"
	tamperElemForm     = "a list value in a form txload never writes (01, +1, a trailing comma)"
	tamperTitle        = "a column no sum reads rewritten (a title)"
	tamperOutOfRange   = "a value outside the range the workload draws from"
	tamperCountMoved   = "a count moved between two rows, their sum kept"
	tamperUntouched    = "money moved between two rows the workload never moves"
	tamperScale        = "the scale doubled behind the init marker"
	tamperScaleForged  = "the scale doubled, the init marker rewritten to match"
	tamperLogSwapped   = "a history transaction swapped for another, count and sums kept"
	tamperLogSplit     = "a history row split in two, sums kept"
	tamperZeroDelta    = "a history row of delta 0"
	tamperStockLow     = "a stock quantity below what New-Order leaves"
	tamperLineAmount   = "an order line's amount not its quantity × price"
	tamperLineItem     = "an order line of an item that does not exist"
	tamperLastLine     = "an undelivered order's last line deleted, its line count lowered"
	tamperRelabelLevel = "a ledger row relabelled read committed, its read made stale"
	tamperRelabelMode  = "a ledger row relabelled another transfer mode, with a large amount"
	tamperAmountKept   = "a transfer's amount changed, both balances adjusted"
	tamperMetaMarker   = "the settings table and the init marker rewritten together"
	tamperRunDeleted   = "the record of the runs deleted"
	tamperVariantName  = "a run recorded under a name no run writes, and votes beside it"
	tamperVoteTwice    = "one voter's vote for an article repeated, its counter kept"
	tamperAckDeleted   = "an acknowledged insert deleted after the run"
	tamperKeyNever     = "rows at keys the workload never writes (0 and below), in forms it never writes"
	tamperOutsideDup   = "a list holding a value twice, at a key outside the history's"
	tamperKeyTwice     = "a row duplicated, its key's constraint dropped, the count of its parent raised"
	tamperNoCustomer   = "a payment moved to a customer that does not exist, balances adjusted"
	tamperAmountSwing  = "a payment's amount outside its range, another's changed to keep the sums"
	tamperCode         = "a code outside the spec's range (a carrier, a credit, a tax)"
	tamperDated        = "a date before the load or in the future"
	tamperCountOff     = "a customer's payment or delivery count not its rows'"
	tamperFewerLoaded  = "the last loaded rows deleted, the settings table and the init marker lowered to match"
	tamperFewerAll     = "the last loaded rows deleted, every record of how many lowered to match"
	tamperMarkerOnly   = "the init marker's settings rewritten, the tables left as they are"
	tamperBranchOf     = "a row's parent id changed (an account's or teller's branch)"
	tamperFiller       = "a padding column written (pgbench's filler)"
	tamperTypeKept     = "a column's type changed, its sums kept (a numeric ±0.4, a float −0.0)"
	tamperUndone       = "a transaction undone whole, every row it wrote restored"
	tamperRowsUndone   = "a transaction's own rows deleted and the next id lowered, the counts it raised elsewhere kept"
	tamperTextForm     = "a text in a form the workload never writes (a last name, a zip)"
	tamperCollation    = "a text column given a collation that compares other values equal (case-insensitive), then a value changed"
	tamperTxAdded      = "a consistent transaction added after the run"
	tamperHuge         = "a value at its type's top (2^63−1), its column widened within its type's family"
	tamperMarkerTime   = "the init marker's time moved back, a row dated before the real init"
	tamperViewTable    = "a derived view replaced by a table of the same columns"
	tamperVoteMany     = "one voter's vote for an article repeated 500 times, its counter kept"
	tamperFewerHalf    = "half the loaded rows deleted, every record of how many lowered to match"
	tamperExtraTable   = "a table beside the workload's, of their name and form, that no check reads"
	tamperCopied       = "a value a transaction copies from another table's row changed, its form kept (New-Order's OL_DIST_INFO)"
	tamperNamesCopied  = "a value a transaction writes from other rows' names changed, its form kept (Payment's H_DATA)"
	tamperRenamed      = "a name changed with every copy of it (a warehouse's W_NAME and its payments' H_DATA)"
	tamperDrawnValue   = "a value the load draws and no other row records changed, its form kept (a loaded order line's OL_DIST_INFO)"
	tamperPrepended    = "a line forged in front of a text a transaction prepends to (a BC customer's C_DATA)"
	tamperShadowed     = "a value changed, and the server's md5 shadowed by a function placed before pg_catalog on the database's search path, to hide it"
	tamperViewed       = "a table replaced by a view that shows read-only repeatable-read sessions (the audits') other rows than everyone else"
	tamperPolicy       = "row-level security forced on a table, its policy hiding forged rows from read-only repeatable-read sessions"
	tamperCatalogCopy  = "a value changed, and a copy of the table as it was placed in pg_catalog, which the audits' search path puts first"
	tamperForeignChild = "a foreign table made a child of a workload table, which a scan of the table reads too"
	tamperRedefined    = "a derived view redefined, still a materialized view of the same columns (an article's count plus 1000)"
	tamperExtraNamed   = "relations beside the workload's named as its tables in another case or shape (\"TXN3\", txn_extra, a materialized view), that no check reads"
	tamperLinesSwapped = "two lines a transaction prepends to a text swapped, the same lines in the other order (a BC customer's C_DATA)"
	tamperSchemaNamed  = "a table beside the workload's, and the database's own setting of txload.schema (the audits' name for the workload's schema) pointed elsewhere, to hide it"
	tamperRunDropped   = "the record of the runs dropped (its table), the init marker kept"
	tamperRemade       = "a table made again under its record (a new oid, its rows kept), the init marker kept"
	tamperMetaRow      = "a second row in the settings table, dated back, and a row dated before the real init"
	tamperLoadForged   = "the load's time moved back everywhere it is recorded (the settings table and the rows the load dated), a row dated before the real load"
	tamperOverload     = "a value changed, and operators of pg_catalog's name and other types made in public, which the audit's expression resolves to, to hide it"
)

var tamperCatalogue = []string{tamperBalance, tamperMoved, tamperRowDeleted, tamperRowAdded, tamperRowDuplicate,
	tamperVersion, tamperNegative, tamperLogDeleted, tamperLogDuplicate, tamperLogAdded, tamperCounter, tamperOther,
	tamperValue, tamperValueMoved, tamperElemRemoved, tamperElemSwapped, tamperElemAdded, tamperTraded, tamperOverdraft, tamperAmount,
	tamperSelf, tamperNull, tamperSettings, tamperMarker, tamperWideDelta, tamperOrphan, tamperZeroed,
	tamperResigned, tamperForged, tamperForgedGaps, tamperElemForm, tamperTitle, tamperOutOfRange, tamperCountMoved,
	tamperUntouched, tamperScale, tamperScaleForged, tamperLogSwapped, tamperLogSplit, tamperZeroDelta,
	tamperStockLow, tamperLineAmount, tamperLineItem, tamperLastLine,
	tamperRelabelLevel, tamperRelabelMode, tamperAmountKept, tamperMetaMarker, tamperRunDeleted,
	tamperVariantName, tamperVoteTwice, tamperAckDeleted,
	tamperKeyNever, tamperOutsideDup,
	tamperKeyTwice, tamperNoCustomer, tamperAmountSwing, tamperCode, tamperDated, tamperCountOff,
	tamperFewerLoaded, tamperFewerAll, tamperMarkerOnly,
	tamperBranchOf, tamperFiller,
	tamperTypeKept, tamperUndone, tamperRowsUndone, tamperTextForm, tamperCollation, tamperTxAdded,
	tamperHuge, tamperMarkerTime,
	tamperViewTable, tamperVoteMany, tamperFewerHalf, tamperExtraTable,
	tamperCopied, tamperNamesCopied, tamperRenamed, tamperDrawnValue, tamperPrepended,
	tamperShadowed, tamperViewed, tamperPolicy,
	tamperCatalogCopy, tamperForeignChild,
	tamperRedefined, tamperExtraNamed,
	tamperLinesSwapped, tamperSchemaNamed,
	tamperRunDropped, tamperRemade,
	tamperMetaRow, tamperLoadForged,
	tamperOverload}

// auditSession is true in a read-only repeatable-read session, as the
// checks' and audits' are: what the sixth outside retest's views and
// policies showed other rows.
const auditSession = `(current_setting('transaction_read_only') = 'on' AND current_setting('transaction_isolation') = 'repeatable read')`

// tampering is one entry of the catalogue applied to a workload's tables.
type tampering struct {
	what string // the catalogue's name
	sql  string // applied to a copy of the database after the run
	want string // what the VIOLATION says, when caught
	// allowed, if set, is why the check cannot tell this change from
	// what the workload's transactions do, at every level ("" when
	// caught); a level's own reason, if any, is in allowedAt.
	allowed   string
	allowedAt map[string]string
}

// tamperWorkload is a workload with a check: how its data is made, and how
// it is attacked.
type tamperWorkload struct {
	name   string // the table's column: "bank read-modify-write"
	check  string // the workload whose check runs: txload check NAME
	levels []string
	// setup makes the data at level in the database at url: init and a
	// short run, each a command line (without --url); {dir} is a
	// directory of the test's, for the files a run writes and check reads.
	setup func(level string) [][]string
	// checkArgs, if set, are check's flags at level beyond --url.
	checkArgs func(level string) []string
	tamper    []tampering
	comment   string // a note under the table, if any
}

// levelSQL is how a workload without an --isolation flag runs at a
// level: the database's default for its transactions.
func levelSQL(level string) string {
	return fmt.Sprintf("ALTER DATABASE %%s SET default_transaction_isolation = '%s'", level)
}

var isolationLevels = []string{"read committed", "repeatable read", "serializable"}

func bankTamperings(mode string) []tampering {
	off := "whose balance is not what the ledger replays to"
	misfit := "ledger row that no run recorded in bank_run could have written"
	// A delta transfer does not look at the balance it withdraws from: it
	// may overdraw, but only by --amount, the run's, at a time.
	overdraft := "1 account whose ledger replays to a negative balance written by a read-modify-write or for-update withdrawal"
	if mode == "1" {
		overdraft = "1 " + misfit
	}
	// read is the version a transfer of the mode reads: none for delta.
	read := func(v string) string {
		if mode == "1" {
			return "NULL"
		}
		return v
	}
	// transfer records in the ledger, and applies, a transfer of amount
	// (an expression over a.balance, b.balance) from account a to b, after
	// the last versions of both, at the run's level and with an id in its
	// range (the last one's: ids are not unique).
	transfer := func(from, to int, amount string) string {
		return fmt.Sprintf(`WITH a AS (SELECT * FROM bank_account WHERE id = %[1]d), b AS (SELECT * FROM bank_account WHERE id = %[2]d),
			l AS (INSERT INTO bank_ledger SELECT %[1]d, %[2]d, %[3]s, %[4]s, %[5]s, a.version + 1, b.version + 1, (SELECT isolation FROM bank_run), %[6]s, (SELECT max(id) FROM bank_ledger) FROM a, b RETURNING amount)
			UPDATE bank_account SET balance = balance + CASE id WHEN %[1]d THEN -l.amount ELSE l.amount END, version = version + 1 FROM l WHERE id IN (%[1]d, %[2]d)`,
			from, to, amount, read("a.version"), read("b.version"), mode)
	}
	var eight []string
	for from := 2; from <= 9; from++ {
		eight = append(eight, transfer(from, 1, "10"))
	}
	traded := func(side string) string {
		return fmt.Sprintf(`WITH acc AS (SELECT id, version - 8 AS base FROM bank_account WHERE id = 1)
			UPDATE bank_ledger l SET %[1]s_written = acc.base + CASE %[1]s_written - acc.base WHEN 2 THEN 1 WHEN 3 THEN 5 WHEN 7 THEN 6 END,
				%[1]s_read = %[1]s_read + CASE %[1]s_written - acc.base WHEN 2 THEN -1 WHEN 3 THEN 2 WHEN 7 THEN -1 END
			FROM acc WHERE l.%[1]s_id = acc.id AND %[1]s_written - acc.base IN (2, 3, 7)`, side)
	}
	return []tampering{
		{what: tamperBalance, sql: `UPDATE bank_account SET balance = balance + 500000 WHERE id = 5`, want: off},
		{what: tamperMoved, sql: `UPDATE bank_account SET balance = balance + CASE id WHEN 3 THEN 7 ELSE -7 END WHERE id IN (3, 4)`, want: "2 accounts " + off},
		{what: tamperRowDeleted, sql: `DELETE FROM bank_account WHERE id = 500`, want: "1 account missing"},
		{what: tamperRowAdded, sql: `INSERT INTO bank_account VALUES (1001, 10000, 0)`, want: "1 row in bank_account outside accounts 1 to 1000"},
		{what: tamperRowDuplicate, sql: `ALTER TABLE bank_account DROP CONSTRAINT bank_account_pkey; INSERT INTO bank_account SELECT * FROM bank_account WHERE id = 600`,
			want: "1 account row more than bank_meta's 1000 (an id duplicated)"},
		{what: tamperVersion, sql: `UPDATE bank_account SET version = version + 1 WHERE id = 6`, want: "1 account with versions no ledger row wrote"},
		{what: tamperNegative, sql: `UPDATE bank_account SET balance = -10 WHERE id = 7`, want: off},
		{what: tamperLogDeleted, sql: `DELETE FROM bank_ledger WHERE ctid = (SELECT min(ctid) FROM bank_ledger)`, want: "2 accounts with versions no ledger row wrote"},
		{what: tamperLogDuplicate, sql: `INSERT INTO bank_ledger SELECT * FROM bank_ledger WHERE ctid = (SELECT min(ctid) FROM bank_ledger)`,
			want: "2 accounts with more ledger writes than versions"},
		{what: tamperLogAdded, sql: `INSERT INTO bank_ledger SELECT 8, 9, 10, a.version, b.version, a.version + 1, b.version + 1, 0, ` + mode +
			` FROM bank_account a, bank_account b WHERE a.id = 8 AND b.id = 9`, want: "2 accounts with more ledger writes than versions"},
		// Accounts 2 to 9 each send 10 to account 1, whose versions
		// b+2, b+3, b+7 of the 8 they write then become b+1, b+5, b+6
		// (each read the one before): count, bounds, sum and sum of
		// squares are kept.
		{what: tamperTraded, sql: strings.Join(eight, "; ") + "; " + traded("from") + "; " + traded("to"), want: "1 account whose ledger writes are not versions 1 to its version, each once"},
		// Account 8 sends its balance and 5 to 9, then 9 sends 10 back:
		// 8 went to -5.
		{what: tamperOverdraft, sql: transfer(8, 9, "a.balance + 5") + "; " + transfer(9, 8, "10"), want: overdraft},
		{what: tamperAmount, sql: transfer(8, 9, "-5"), want: "1 ledger row with an amount below 1"},
		{what: tamperSelf, sql: `INSERT INTO bank_ledger SELECT 8, 8, 5, ` + read("version") + `, ` + read("version + 1") + `, version + 1, version + 2, 0, ` + mode +
			` FROM bank_account WHERE id = 8; UPDATE bank_account SET version = version + 2 WHERE id = 8`, want: "1 ledger row of a transfer from an account to itself"},
		{what: tamperNull, sql: `ALTER TABLE bank_account ALTER version DROP NOT NULL; UPDATE bank_account SET version = NULL WHERE id = 5`,
			want: "1 row of bank_account with a NULL balance or version"},
		{what: tamperSettings, sql: `UPDATE bank_meta SET accounts = 999; DELETE FROM bank_account WHERE id = 1000; DELETE FROM bank_ledger WHERE 1000 IN (from_id, to_id)`,
			want: "the bank tables say accounts=999 initial-balance=10000, but init recorded accounts=1000 initial-balance=10000"},
		{what: tamperMarker, sql: `DELETE FROM txload_init WHERE workload = 'bank'`, want: "no txload_init row for bank"},
		relabelLevel(mode),
		// The run's last transfer (the last write of both its accounts)
		// made a transfer of another mode, of 100000, its balances moved.
		{what: tamperRelabelMode, sql: lastTransfer(`mode = CASE bank_ledger.mode WHEN 1 THEN 0 ELSE 1 END, amount = 100000,
				from_read = CASE bank_ledger.mode WHEN 1 THEN bank_ledger.from_written - 1 END, to_read = CASE bank_ledger.mode WHEN 1 THEN bank_ledger.to_written - 1 END`, "100000 - l.old"),
			want: "1 " + misfit},
		{what: tamperAmountKept, sql: lastTransfer(`amount = bank_ledger.amount - 3`, "-3"), want: "1 " + misfit},
		{what: tamperMetaMarker, sql: `UPDATE bank_meta SET initial_balance = 10001;
			UPDATE txload_init SET settings = 'accounts=1000 initial-balance=10001' WHERE workload = 'bank';
			UPDATE bank_account SET balance = balance + 1`,
			want: "1 run recorded in bank_run on accounts=1000 initial-balance=10000, where bank_meta says accounts=1000 initial-balance=10001"},
		{what: tamperRunDeleted, sql: `DELETE FROM bank_run`, want: "ledger rows whose id no run recorded in bank_run covers"},
		// A read-committed run of the mode recorded over the run's ids, as
		// if it had run beside it, and one of its rows made that run's lost
		// update: its bounds are the real run's (retest 16).
		{what: tamperForged, sql: `INSERT INTO bank_run SELECT first_id, last_id, 0, mode, amount, selection, accounts, initial_balance FROM bank_run; ` +
			relabelLevel(mode).sql, want: "recorded in bank_run as the bound of more than one run"},
		// Retest 16's T3: a read-committed read-modify-write run recorded
		// over one row of the real run (a write whose previous write of
		// its account read the version before it, and which no later
		// write of it skips, so that the replay's change is that one's
		// delta), between two gaps of
		// the ledger's ids (made by moving the rows beside it to the ids
		// beside theirs), the real run's count lowered by one, and that
		// row made its lost update (the write before it lost, its delta
		// taken from the balance).
		{what: tamperForgedGaps, sql: `CREATE TEMP TABLE pick AS
			WITH w AS (SELECT from_id AS id, from_written AS v, COALESCE(from_read, from_written - 1) AS r, -amount AS d FROM bank_ledger
				UNION ALL SELECT to_id, to_written, COALESCE(to_read, to_written - 1), amount FROM bank_ledger),
			l AS (SELECT l.ctid AS c, l.id, l.to_id AS acct, l.to_written AS v FROM bank_ledger l
				JOIN bank_run r ON l.id > r.first_id + 2 AND l.id < r.last_id - 2
				WHERE l.to_written >= 2 AND COALESCE(l.to_read, l.to_written - 1) = l.to_written - 1
					AND EXISTS (SELECT FROM w WHERE w.id = l.to_id AND w.v = l.to_written - 1 AND w.r = w.v - 1)
					AND NOT EXISTS (SELECT FROM w WHERE w.id = l.to_id AND w.v > l.to_written AND w.r < l.to_written) LIMIT 1)
			SELECT l.*, (SELECT w.d FROM w WHERE w.id = l.acct AND w.v = l.v - 1) AS d FROM l;
			DO $$ BEGIN IF NOT EXISTS (SELECT FROM pick) THEN RAISE EXCEPTION 'no ledger row to forge a run over'; END IF; END $$;
			UPDATE bank_ledger SET id = bank_ledger.id - 1 FROM pick WHERE bank_ledger.id = pick.id - 1;
			UPDATE bank_ledger SET id = bank_ledger.id + 1 FROM pick WHERE bank_ledger.id = pick.id + 1;
			UPDATE bank_run SET committed = committed - 1;
			INSERT INTO bank_run SELECT pick.id - 1, pick.id + 1, 0, 0, r.amount, r.selection, r.accounts, r.initial_balance, 1, 0 FROM pick, bank_run r;
			UPDATE bank_ledger SET isolation = 0, mode = 0, from_read = COALESCE(from_read, from_written - 1), to_read = pick.v - 2 FROM pick WHERE bank_ledger.ctid = pick.c;
			UPDATE bank_account SET balance = balance - pick.d FROM pick WHERE bank_account.id = pick.acct`,
			allowed: forgedRunWhy},
		// The run's last transfer swapped for the same accounts the other
		// way, its balances undone and the forged one's applied: what the
		// fourth retest did beside a run.
		{what: tamperLogSwapped, sql: lastTransfer(`from_id = bank_ledger.to_id, to_id = bank_ledger.from_id, from_read = bank_ledger.to_read, to_read = bank_ledger.from_read,
				from_written = bank_ledger.to_written, to_written = bank_ledger.from_written`, "-2 * l.old"),
			allowed: "nothing in the database records which transfers a run made: a transfer swapped for another of the run's settings, balances and versions undone, is one the run could have made; the run's own audit, which sums the identities of the rows of its ledger ids, catches one swapped during it (TestBankAuditSecondWriter)"},
		{what: tamperTypeKept, sql: `ALTER TABLE bank_account ALTER balance TYPE numeric; UPDATE bank_account SET balance = balance + CASE id WHEN 1 THEN 0.4 ELSE -0.4 END WHERE id IN (1, 2)`,
			want: "column bank_account.balance is numeric, where init makes it bigint"},
		// A transfer of the run's settings, its versions and balances
		// moved to match, at an id of the run's range (a duplicate).
		{what: tamperTxAdded, sql: transfer(3, 4, "10"), want: "1 range of ledger ids recorded in bank_run with more rows than its runs saw commit"},
		// The fifth retest's (issue 36, (12)): two balances and an amount
		// at bigint's top, whose sums overflow one (a scan error before).
		// The sixth retest's: money moved, and the table replaced by a
		// view that undoes the move for the audits' sessions.
		{what: tamperViewed, sql: `UPDATE bank_account SET balance = balance + CASE id WHEN 7 THEN -5000 ELSE 5000 END WHERE id IN (7, 8);
			ALTER TABLE bank_account RENAME TO bank_account_data;
			CREATE VIEW bank_account AS SELECT id, balance + CASE WHEN ` + auditSession + ` THEN CASE id WHEN 7 THEN 5000 WHEN 8 THEN -5000 ELSE 0 END ELSE 0 END AS balance, version FROM bank_account_data`,
			want: "bank_account is a view, where init makes a table"},
		// The seventh retest's: a copy of the accounts as they were in
		// pg_catalog, the applications' path naming pg_catalog last.
		{what: tamperCatalogCopy, sql: `SET allow_system_table_mods = on; CREATE TABLE pg_catalog.bank_account AS SELECT * FROM bank_account; RESET allow_system_table_mods;
			UPDATE bank_account SET balance = balance + 1000000 WHERE id = 7;
			DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET search_path = "$user", public, pg_catalog', current_database()); END $$`,
			want: "bank_account is also a relation in pg_catalog"},
		{what: tamperForeignChild, sql: `CREATE FOREIGN DATA WRAPPER elsewhere; CREATE SERVER elsewhere FOREIGN DATA WRAPPER elsewhere;
			CREATE FOREIGN TABLE bank_account_more () INHERITS (bank_account) SERVER elsewhere`,
			want: "bank_account_more, a partition or child of bank_account (a scan of bank_account reads it), is a foreign table"},
		{what: tamperHuge, sql: `UPDATE bank_account SET balance = 9223372036854775807 WHERE id IN (5, 6);
			UPDATE bank_ledger SET amount = 9223372036854775807 WHERE ctid = (SELECT max(ctid) FROM bank_ledger)`,
			want: "beyond a 64-bit integer"},
	}
}

// forgedRun is why a read-committed run forged in bank_run, and a lost
// update of its in the ledger, pass where they do.
// forgedRunWhy is why a run recorded between two gaps of the ledger's
// ids, and a lost update of its, pass.
const forgedRunWhy = "bank_run is the database's only record of the runs: a read-committed run recorded beside the real one, between two gaps of the ledger's ids (which rolled-back transfers leave), and a lost update of its in the ledger, are what two runs at once write, which check cannot tell from a forgery; a run recorded over another's bounds or a ledger row's id is caught"

// lastTransfer changes the run's last transfer (the last write of both its
// accounts: the ledger's replay moves their final balances alone) by set,
// and moves its balances by more, an expression over l.old (its amount).
func lastTransfer(set, more string) string {
	return fmt.Sprintf(`WITH l AS (SELECT l.ctid AS c, l.from_id, l.to_id, l.amount AS old FROM bank_ledger l
			JOIN bank_account f ON f.id = l.from_id AND f.version = l.from_written JOIN bank_account t ON t.id = l.to_id AND t.version = l.to_written LIMIT 1),
		u AS (UPDATE bank_ledger SET %s FROM l WHERE bank_ledger.ctid = l.c)
		UPDATE bank_account a SET balance = balance + CASE WHEN a.id = l.from_id THEN -(%[2]s) ELSE %[2]s END FROM l WHERE a.id IN (l.from_id, l.to_id)`, set, more)
}

// relabelLevel makes the last write of an account with two or more a lost
// update at read committed (a write that, as the one before it, read the
// version before its own, so the replay's change is that one's delta): the row says read committed, its read the
// version before the one it read, and the balance is what that lost update
// leaves (the write of the version skipped undone), so the replay agrees.
// Read committed lets a read-modify-write transfer lose that update.
func relabelLevel(mode string) tampering {
	tm := tampering{what: tamperRelabelLevel,
		sql: `WITH w AS (SELECT from_id AS id, from_written AS v, COALESCE(from_read, from_written - 1) AS r, -amount AS d FROM bank_ledger
				UNION ALL SELECT to_id, to_written, COALESCE(to_read, to_written - 1), amount FROM bank_ledger),
			l AS (SELECT l.ctid AS c, l.to_id AS acct, l.to_written AS v FROM bank_ledger l JOIN bank_account a ON a.id = l.to_id AND a.version = l.to_written
				WHERE l.to_written >= 2 AND COALESCE(l.to_read, l.to_written - 1) = l.to_written - 1
					AND EXISTS (SELECT FROM w WHERE w.id = l.to_id AND w.v = l.to_written - 1 AND w.r = w.v - 1) LIMIT 1),
			p AS (SELECT w.d FROM w, l WHERE w.id = l.acct AND w.v = l.v - 1),
			u AS (UPDATE bank_ledger SET isolation = 0, to_read = l.v - 2 FROM l WHERE bank_ledger.ctid = l.c)
			UPDATE bank_account SET balance = balance - (SELECT d FROM p) FROM l WHERE id = l.acct`,
		want: "1 ledger row that no run recorded in bank_run could have written"}
	switch mode {
	case "0":
		tm.allowedAt = map[string]string{"read committed": "a read-committed lost update forged in the ledger, its balance set to what it leaves, is what read committed lets a read-modify-write transfer do: the ledger and the run's record cannot tell it from a real one"}
	case "1":
		tm.want = "1 ledger row whose versions read do not fit its mode"
	case "2":
		tm.want = "lost update in for-update transfers at read committed"
	}
	return tm
}

func tpcbTamperings(builtin string) []tampering {
	off := "whose abalance is not the sum of their history deltas"
	teller := tampering{what: tamperOther, sql: `UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = 1`,
		want: "1 teller whose tbalance is not the sum of their history deltas"}
	// Money moved between two tellers, which simple-update never moves.
	tellers := tampering{what: tamperUntouched, sql: `UPDATE pgbench_tellers SET tbalance = tbalance + CASE tid WHEN 1 THEN 7 ELSE -7 END WHERE tid IN (1, 2)`,
		want: "2 tellers whose tbalance is not the sum of their history deltas"}
	switch builtin {
	case "simple-update":
		teller.want = "balances disagree: tellers"
		tellers.want = "2 tellers whose tbalance is not init's 0, though txload ran no builtin but select-only or simple-update"
	case "tpcb":
		tellers.want, tellers.allowed = "", "check tpcb is the check of any mix of the builtins, pgbench's own runs among them (which txload does not record), over a history pgbench may have truncated: it holds the tellers' sum to the branches', not one teller; check tpcb-like holds each to its history"
	}
	// The record of the scripts txload ran forged: the other builtin
	// recorded (tpcb-like beside simple-update's run, simple-update beside
	// tpcb-like's), then money moved between two tellers.
	other := map[string]string{"simple-update": "tpcb-like", "tpcb-like": "simple-update", "tpcb": "simple-update"}[builtin]
	forged := tampering{what: tamperForged, sql: `INSERT INTO txload_pgbench_builtin SELECT '` + other + `', 'pgbench_tellers'::regclass::oid ON CONFLICT DO NOTHING; ` + tellers.sql,
		allowed: "txload_pgbench_builtin is the database's only record of the scripts txload ran on the tables: a run of the other builtin recorded beside the real one (tpcb-like beside simple-update, simple-update beside tpcb-like), and tellers moved with their sum kept, are what such a run can leave in a history that holds both builtins' rows, which check cannot tell from a forgery (check tpcb reads no record)"}
	// A consistent transaction of the builtin's (tpcb-like's for check
	// tpcb) added after the run.
	txAdded := tampering{what: tamperTxAdded, sql: `WITH h AS (INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, 9, 17, localtimestamp)),
		a AS (UPDATE pgbench_accounts SET abalance = abalance + 17 WHERE aid = 9),
		t AS (UPDATE pgbench_tellers SET tbalance = tbalance + 17 WHERE tid = 1)
		UPDATE pgbench_branches SET bbalance = bbalance + 17 WHERE bid = 1`,
		allowed: "the database keeps no count of the transactions a builtin's runs committed: a transaction added after a run, its history row and balances consistent, is one a run could have written; " +
			"the run's own audit counts and identifies the history rows its transactions wrote, so one added beside it is caught (TestBuiltinAuditSecondWriter)"}
	if builtin == "simple-update" {
		txAdded.sql = `WITH h AS (INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, 9, 17, localtimestamp))
			UPDATE pgbench_accounts SET abalance = abalance + 17 WHERE aid = 9`
	}
	// Scale 2's rows added at init's balances, the marker left at scale 1.
	const scale = `INSERT INTO pgbench_branches VALUES (2, 0, NULL); INSERT INTO pgbench_tellers SELECT tid, 2, 0, NULL FROM generate_series(11, 20) tid;
		INSERT INTO pgbench_accounts SELECT aid, 2, 0, '' FROM generate_series(100001, 200000) aid`
	// The seventh retest's (6): the record of txload's init and runs
	// removed, or the tellers made again under it, so that the tellers
	// moved and a history row dated before the init go unseen.
	const unrecorded = `UPDATE pgbench_tellers SET tbalance = tbalance + CASE tid WHEN 1 THEN 50 ELSE -50 END WHERE tid IN (1, 2);
		UPDATE pgbench_history SET mtime = '2019-01-01' WHERE ctid = (SELECT min(ctid) FROM pgbench_history); `
	return []tampering{
		{what: tamperRunDeleted, sql: unrecorded + `DELETE FROM txload_pgbench_builtin`, want: "recorded them in txload_pgbench_builtin, which no longer holds init's row"},
		{what: tamperRunDropped, sql: unrecorded + `DROP TABLE txload_pgbench_builtin`, want: "recorded them in txload_pgbench_builtin, which is gone (dropped)"},
		{what: tamperRemade, sql: unrecorded + `CREATE TABLE nt (LIKE pgbench_tellers INCLUDING ALL); INSERT INTO nt SELECT * FROM pgbench_tellers;
			DROP TABLE pgbench_tellers; ALTER TABLE nt RENAME TO pgbench_tellers`,
			want: "pgbench_tellers is not the table txload's init made and recorded in txload_pgbench_builtin (init's pgbench_accounts, pgbench_branches, pgbench_history still there)"},
		{what: tamperBalance, sql: `UPDATE pgbench_accounts SET abalance = abalance + 500 WHERE aid = 5`, want: "1 account " + off},
		{what: tamperMoved, sql: `UPDATE pgbench_accounts SET abalance = abalance + CASE aid WHEN 3 THEN 7 ELSE -7 END WHERE aid IN (3, 4)`, want: "2 accounts " + off},
		{what: tamperRowDeleted, sql: `DELETE FROM pgbench_accounts WHERE aid = 500`, want: "1 account missing"},
		{what: tamperRowAdded, sql: `INSERT INTO pgbench_accounts (aid, bid, abalance, filler) VALUES (100001, 1, 0, '')`,
			want: "1 row in pgbench_accounts beyond aid 1 to 100000"},
		{what: tamperRowDuplicate, sql: `ALTER TABLE pgbench_accounts DROP CONSTRAINT pgbench_accounts_pkey; INSERT INTO pgbench_accounts SELECT * FROM pgbench_accounts WHERE aid = 600`,
			want: "1 row in pgbench_accounts beyond aid 1 to 100000"},
		{what: tamperNegative, sql: `UPDATE pgbench_accounts SET abalance = -10 - abalance WHERE aid = 7`, want: "1 account " + off},
		{what: tamperLogDeleted, sql: `DELETE FROM pgbench_history WHERE ctid = (SELECT min(ctid) FROM pgbench_history WHERE delta <> 0)`, want: off},
		{what: tamperLogDuplicate, sql: `INSERT INTO pgbench_history SELECT * FROM pgbench_history WHERE ctid = (SELECT min(ctid) FROM pgbench_history WHERE delta <> 0)`, want: off},
		{what: tamperLogAdded, sql: `INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, 9, 5, now())`, want: off},
		teller,
		{what: tamperNull, sql: `WITH a AS (SELECT aid FROM pgbench_history GROUP BY aid HAVING count(*) = 1 LIMIT 1),
			u AS (UPDATE pgbench_history SET delta = NULL WHERE aid = (SELECT aid FROM a))
			UPDATE pgbench_accounts SET abalance = NULL WHERE aid = (SELECT aid FROM a)`,
			want: "1 row in pgbench_accounts with a NULL abalance"},
		// A history row's delta, and the balances it moved, 10000 more.
		{what: tamperWideDelta, sql: `WITH h AS (SELECT ctid, aid, tid, bid FROM pgbench_history WHERE delta > 0 LIMIT 1),
			u1 AS (UPDATE pgbench_history SET delta = delta + 10000 WHERE ctid = (SELECT ctid FROM h)),
			u2 AS (UPDATE pgbench_accounts SET abalance = abalance + 10000 WHERE aid = (SELECT aid FROM h)),
			u3 AS (UPDATE pgbench_tellers SET tbalance = tbalance + 10000 WHERE tid = (SELECT tid FROM h))
			UPDATE pgbench_branches SET bbalance = bbalance + 10000 WHERE bid = (SELECT bid FROM h)`,
			want: "1 history row with a delta outside -5000 to 5000"},
		// Scale 1 has tellers 1 to 10.
		{what: tamperOrphan, sql: `UPDATE pgbench_history SET tid = 11 WHERE ctid = (SELECT min(ctid) FROM pgbench_history)`,
			want: "history rows of 1 tid id that pgbench_tellers does not have"},
		tellers,
		{what: tamperScale, sql: scale, want: "pgbench_branches holds scale 2, but init recorded scale=1 in txload_init"},
		{what: tamperScaleForged, sql: scale + `; UPDATE txload_init SET settings = replace(settings, 'scale=1 ', 'scale=2 ') WHERE workload = 'tpcb'`,
			allowed: "rows added at init's balances with the marker rewritten to match are what init at that scale writes: the data cannot show they came later (a later run's transactions would touch them, but only by chance)"},
		// The first history row's delta moves from its account to the next
		// one, and its row is made to name that account.
		{what: tamperLogSwapped, sql: `WITH h AS (SELECT ctid, aid, delta FROM pgbench_history WHERE delta <> 0 ORDER BY ctid LIMIT 1),
			a AS (UPDATE pgbench_accounts SET abalance = abalance + CASE WHEN aid = (SELECT aid FROM h) THEN -(SELECT delta FROM h) ELSE (SELECT delta FROM h) END
				WHERE aid IN ((SELECT aid FROM h), (SELECT aid % 100000 + 1 FROM h)))
			UPDATE pgbench_history SET aid = aid % 100000 + 1 WHERE ctid = (SELECT ctid FROM h)`,
			allowed: "the standalone check holds every balance to its history, and no record says which transactions ran: a history transaction swapped for another that keeps every balance its history's sum is data a run could have written; the run's own audit, which sums the identities of the rows its transactions wrote, catches one swapped beside it (TestBuiltinAuditSecondWriter)"},
		{what: tamperLogSplit, sql: `WITH h AS (DELETE FROM pgbench_history WHERE ctid = (SELECT min(ctid) FROM pgbench_history WHERE delta > 1) RETURNING *)
			INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) SELECT tid, bid, aid, delta / 2, mtime FROM h UNION ALL SELECT tid, bid, aid, delta - delta / 2, mtime FROM h`,
			allowed: "two history rows of one account, teller and branch whose deltas add up to the one they replace are what two transactions drawing them write, and the standalone check has no count of the transactions; the run's own audit, which counts the rows its transactions wrote and sums their identities, catches a split beside it"},
		{what: tamperZeroDelta, sql: `INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, 9, 0, now())`,
			allowed: "pgbench's builtins draw the delta by random(-5000, 5000), which includes 0 (1 in 10001): a transaction that drew it writes a row of delta 0 and moves no balance; the run's own audit counts and identifies the rows its transactions wrote"},
		forged,
		{what: tamperBranchOf, sql: `UPDATE pgbench_accounts SET bid = 2 WHERE aid = 5; UPDATE pgbench_tellers SET bid = 2 WHERE tid = 3`,
			want: "1 account whose bid is not their aid's branch"},
		{what: tamperFiller, sql: `UPDATE pgbench_accounts SET filler = 'x' WHERE aid = 9; UPDATE pgbench_history SET filler = 'x' WHERE ctid = (SELECT min(ctid) FROM pgbench_history)`,
			want: "1 row in pgbench_accounts whose filler is not blank"},
		// A day's margin either way: the writer's time zone decides what
		// a timestamp without time zone reads.
		{what: tamperDated, sql: `UPDATE pgbench_history SET mtime = mtime + CASE WHEN ctid = (SELECT min(ctid) FROM pgbench_history) THEN interval '-3 days' ELSE interval '3 days' END
			WHERE ctid IN ((SELECT min(ctid) FROM pgbench_history), (SELECT max(ctid) FROM pgbench_history))`,
			want: "1 history row with an mtime more than a day before the init that emptied the history"},
		{what: tamperTypeKept, sql: `ALTER TABLE pgbench_accounts ALTER abalance TYPE numeric; UPDATE pgbench_accounts SET abalance = abalance + CASE aid WHEN 1 THEN 0.4 ELSE -0.4 END WHERE aid IN (1, 2)`,
			want: "column pgbench_accounts.abalance is numeric, where init makes it integer"},
		txAdded,
		// The fifth retest's (issue 36, (12)): bigint is integer's
		// family, which the column check lets pass (CockroachDB's INT is
		// one); a balance, a bid and two deltas at its top, whose sums
		// overflow a bigint.
		{what: tamperHuge, sql: `ALTER TABLE pgbench_accounts ALTER abalance TYPE bigint, ALTER bid TYPE bigint; ALTER TABLE pgbench_history ALTER delta TYPE bigint;
			UPDATE pgbench_accounts SET abalance = 9223372036854775807 WHERE aid = 5; UPDATE pgbench_accounts SET bid = 9223372036854775807 WHERE aid = 6;
			INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, 9, 9223372036854775807, now()), (1, 1, 9, 9223372036854775807, now())`,
			want: "1 row in pgbench_accounts whose abalance is outside integer's range, -2147483648 to 2147483647 (first: aid 5 holds 9223372036854775807)"},
		{what: tamperMarkerTime, sql: `UPDATE txload_init SET updated_at = updated_at - interval '10 days' WHERE workload = 'tpcb';
			UPDATE pgbench_history SET mtime = mtime - interval '5 days' WHERE ctid = (SELECT min(ctid) FROM pgbench_history)`,
			allowed: "the marker's time is the database's only record of when init emptied the history, metadata a writer can rewrite as it can the marker's settings: a history row dated before a marker moved back is what an init at that time and a run after it write; " +
				"the run's own audit holds the rows it added to the run's window, timed by the server's clock when the run starts, not by the marker"},
	}
}

// tpcbAnyTamperings is `check tpcb`'s (and select-only's): what every mix
// of the builtins keeps, over a history pgbench may have truncated.
func tpcbAnyTamperings() []tampering {
	truncated := "an account off its history is what pgbench's truncation of pgbench_history leaves (before each run unless -n): check tpcb cannot tell; check tpcb-like and check simple-update can"
	ts := tpcbTamperings("tpcb")
	for i := range ts {
		switch ts[i].what {
		case tamperBalance, tamperMoved, tamperNegative, tamperLogDeleted, tamperLogDuplicate, tamperLogAdded:
			ts[i].allowed, ts[i].want = truncated, ""
		case tamperOther:
			ts[i].want = "balances disagree: tellers"
		}
	}
	return ts
}

func voteTamperings(variant string) []tampering {
	onlyRecord := ""
	if variant != "counter" {
		onlyRecord = "the vote rows are the only record of the votes in the join and matview variants (no counter is kept): the run's own audit reconciles them with the votes it saw commit, check has nothing to hold them against"
	}
	mismatch := "whose votes disagree with the vote rows"
	counted := mismatch
	if variant != "counter" {
		counted = "1 article whose votes are not 0, though no counter run wrote them"
	}
	ts := []tampering{
		{what: tamperCounter, sql: `UPDATE article SET votes = votes + 1 WHERE id = 5`, want: counted},
		{what: tamperRowDeleted, sql: `DELETE FROM article WHERE id = 1000`, want: "1 article missing"},
		{what: tamperRowAdded, sql: `INSERT INTO article VALUES (1001, 'Article #1001', 0)`, want: "1 row in article beyond ids 1 to 1000"},
		{what: tamperRowDuplicate, sql: `ALTER TABLE article DROP CONSTRAINT article_pkey; INSERT INTO article SELECT * FROM article WHERE id = 600`,
			want: "1 article row more than the 1000 init loaded (an id duplicated)"},
		{what: tamperLogDeleted, sql: `DELETE FROM vote WHERE ctid = (SELECT min(ctid) FROM vote)`, want: mismatch, allowed: onlyRecord},
		{what: tamperLogDuplicate, sql: `INSERT INTO vote SELECT * FROM vote WHERE ctid = (SELECT min(ctid) FROM vote)`, want: mismatch, allowed: onlyRecord},
		{what: tamperLogAdded, sql: `INSERT INTO vote VALUES (5000, 1)`, want: "1 vote for articles that do not exist"},
		{what: tamperNull, sql: `ALTER TABLE article ALTER votes DROP NOT NULL; UPDATE article SET votes = NULL WHERE id = 5`, want: "1 article whose votes"},
		{what: tamperMarker, sql: `DELETE FROM txload_init WHERE workload = 'vote'`, want: "no txload_init row for vote"},
		{what: tamperTypeKept, sql: `ALTER TABLE article ALTER votes TYPE double precision; UPDATE article SET votes = '-0' WHERE id = (SELECT min(id) FROM article WHERE votes = 0)`,
			want: "column article.votes is double precision, where init makes it bigint"},
		{what: tamperCollation, sql: `CREATE COLLATION IF NOT EXISTS ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false); ALTER TABLE article ALTER title TYPE text COLLATE ci; UPDATE article SET title = upper(title) WHERE id = 5`,
			want: "column article.title has the collation ci"},
	}
	if variant == "counter" {
		ts = append(ts, tampering{what: tamperZeroed, sql: `UPDATE article SET votes = 0`, want: mismatch})
	}
	// A variant that never ran recorded, then its votes: after counter
	// runs, rows beyond the counters.
	forged := map[string]string{"counter": "join", "join": "matview", "matview": "join"}[variant]
	ts = append(ts,
		tampering{what: tamperForged, sql: fmt.Sprintf(`INSERT INTO vote_variant VALUES ('%s') ON CONFLICT DO NOTHING; INSERT INTO vote SELECT id, id * 7919 FROM article WHERE id <= 10`, forged),
			allowed: "vote_variant is the database's only record of which variants ran: a variant's row and votes that agree with it are what a run of that variant writes, which check cannot tell from a forgery; the run's own audit reconciles the vote rows it added with the votes it saw commit"},
		tampering{what: tamperTitle, sql: `UPDATE article SET title = 'Article #6' WHERE id = 5`, want: "1 article whose title is not the one init wrote"},
		tampering{what: tamperOutOfRange, sql: `UPDATE vote SET user_id = -1 WHERE ctid = (SELECT min(ctid) FROM vote)`, want: "1 vote whose user_id is not from 0 to 2^40-1"},
		// The retest's: a name with a trailing space, then a vote.
		tampering{what: tamperVariantName, sql: `INSERT INTO vote_variant VALUES ('join '); INSERT INTO vote VALUES (12, 42)`,
			want: `vote_variant records 1 variant that no run writes: "join "`})
	// A vote repeated; after counter runs, its article's counter raised
	// with it.
	twice := `INSERT INTO vote SELECT article_id, user_id FROM vote WHERE ctid = (SELECT min(ctid) FROM vote)`
	if variant == "counter" {
		twice = `WITH v AS (` + twice + ` RETURNING article_id) UPDATE article a SET votes = votes + 1 FROM v WHERE a.id = v.article_id`
	}
	ts = append(ts, tampering{what: tamperVoteTwice, sql: twice,
		allowed: "a vote draws its user_id from 2^40 voters, uniformly and with repeats, as Noria's benchmark does: an article's n votes repeat a voter with probability about n²/2^41, " +
			"so a long zipf run makes repeats (1.8 expected after 10^7 votes over 100,000 articles at exponent 1.15, 177 after 10^8): a repeat is what a run writes"})
	// A vote added after the run, its counter raised where counter runs
	// keep one.
	added := `INSERT INTO vote VALUES (5, 4242)`
	if variant == "counter" {
		added += `; UPDATE article SET votes = votes + 1 WHERE id = 5`
	}
	ts = append(ts, tampering{what: tamperTxAdded, sql: added,
		allowed: "the database keeps no count of the votes a run committed: a vote added after the run, its counter raised where counter runs keep one, is one a run could have written; " +
			"the run's own audit reconciles the vote rows it added with the votes it saw commit and sums their identities, so one added beside it is caught (TestVoteAuditSecondWriter)"})
	// The fifth retest's (issue 36, (12)): a counter at bigint's top,
	// whose sum overflows one.
	huge := tampering{what: tamperHuge, sql: `UPDATE article SET votes = 9223372036854775807 WHERE id IN (5, 6)`,
		want: "2 articles whose votes are not 0, though no counter run wrote them"}
	if variant == "counter" {
		huge.want = mismatch + " (first: article 5)"
	}
	ts = append(ts, huge)
	// The sixth retest's: 500 votes forged beyond the users' range, and a
	// policy forced on the vote table that hides them from the audits'
	// sessions (a superuser, as the catalogue's, reads past it; the
	// retest's owner was no superuser).
	ts = append(ts, tampering{what: tamperPolicy, sql: `ALTER TABLE vote ENABLE ROW LEVEL SECURITY; ALTER TABLE vote FORCE ROW LEVEL SECURITY;
		CREATE POLICY show ON vote USING (NOT ` + auditSession + ` OR user_id < 1099511627776);
		INSERT INTO vote SELECT 7, 2000000000000 + g FROM generate_series(1, 500) g`, want: "vote has row-level security enabled, where init makes none"})
	// The fifth retest's (issue 36, round 8, (7)): one vote 500 times.
	many := `INSERT INTO vote SELECT article_id, user_id FROM vote, generate_series(1, 499) WHERE ctid = (SELECT min(ctid) FROM vote)`
	if variant == "counter" {
		many = `WITH v AS (` + many + ` RETURNING article_id) UPDATE article a SET votes = votes + (SELECT count(*) FROM v) WHERE a.id = (SELECT min(article_id) FROM v)`
	}
	ts = append(ts, tampering{what: tamperVoteMany, sql: many,
		allowed: "runs on kept tables (--init keep) at one --seed (1 unless given) draw the same votes, client by client: each run repeats the votes of the one before " +
			"(two 1 s runs of 4 clients on fresh tables repeated 1,413 of their 3,640 votes), so 500 runs repeat a vote 500 times, and the database keeps no count of the runs to hold repeats to"})
	// The fifth retest's (issue 36, round 8, (6)): article_votes made a
	// table, its counts forged (the join and counter variants never read
	// it; a matview run's REFRESH fails on it).
	ts = append(ts, tampering{what: tamperViewTable, sql: `DROP MATERIALIZED VIEW article_votes;
		CREATE TABLE article_votes AS SELECT article_id, count(*)::BIGINT * 2 AS votes, now() AS refreshed_at FROM vote GROUP BY article_id
		UNION ALL SELECT 0, count(*)::BIGINT * 2, now() FROM vote`,
		want: "article_votes is a table, where init makes a materialized view of the vote rows"})
	// The sixth retest's: still a materialized view, its index made
	// again, counting 1000 more votes for one article.
	ts = append(ts, tampering{what: tamperRedefined, sql: `DROP MATERIALIZED VIEW article_votes;
		CREATE MATERIALIZED VIEW article_votes AS
			SELECT article_id, count(*)::BIGINT + CASE WHEN article_id = 910 THEN 1000 ELSE 0 END AS votes, now() AS refreshed_at FROM vote GROUP BY article_id
			UNION ALL SELECT 0, count(*)::BIGINT, now() FROM vote;
		CREATE UNIQUE INDEX article_votes_article_id ON article_votes (article_id)`,
		want: "article_votes is not the view init makes, as the server prints both"})
	// The fourth retest's (issue 36, N3): the last ten articles deleted
	// with their votes (and counters), the marker saying init loaded 990.
	ts = append(ts,
		tampering{what: tamperFewerAll, sql: `DELETE FROM vote WHERE article_id > 990; DELETE FROM article WHERE id > 990;
			UPDATE txload_init SET settings = 'articles=990' WHERE workload = 'vote'`,
			allowed: "init's marker is the only record of how many articles it loaded, and an article's id is its number, no sequence's: articles deleted from the top with their votes, " +
				"the marker lowered to match, are what init of fewer articles and runs on them write; a run's own audit holds the vote rows to those it saw commit"},
		tampering{what: tamperMarkerOnly, sql: `UPDATE txload_init SET settings = 'articles=999' WHERE workload = 'vote'`,
			want: "1 row in article beyond ids 1 to 999"})
	return ts
}

// tpccTamperings are the catalogue's tamperings of TPC-C's tables, each
// caught by a consistency condition of clause 3.3.2 or the cardinalities
// of clause 1.2, then the tamperings that break one condition each
// (tpcc.Tamperings), which the table does not list.
func tpccTamperings() []tampering {
	cond := func(n int) string { return fmt.Sprintf("consistency condition %d (", n) }
	// The seventh retest's (8): an order dated before the load, and the
	// bound of the check's dates, tpcc_meta's loaded_at, lowered to let it.
	const dated = `UPDATE orders SET o_entry_d = '2019-05-05' WHERE o_w_id = 1 AND o_d_id = 1 AND o_id = 5; `
	out := []tampering{
		{what: tamperMetaRow, sql: dated + `INSERT INTO tpcc_meta SELECT warehouses, c_last, c_id, c_item, '2019-01-01' FROM tpcc_meta`,
			want: "tpcc_meta holds 2 rows, where init wrote one"},
		{what: tamperMarkerTime, sql: dated + `UPDATE tpcc_meta SET loaded_at = '2019-01-01 00:00:00+00'`,
			want: "tpcc_meta's loaded_at (2019-01-01 00:00:00 UTC) is more than 2 days before the load's C_SINCE"},
		{what: tamperLoadForged, sql: dated + `UPDATE tpcc_meta SET loaded_at = '2019-01-01 00:00:00+00'; UPDATE customer SET c_since = '2019-01-01'`,
			allowed: "the load's time is recorded in tpcc_meta's loaded_at and in every customer's C_SINCE (which no transaction changes), and the check holds them to each other: " +
				"moved back together, they are a load made then, and a row dated after it is one a run could have written (docs/tpcc.md)"},
		{what: tamperBalance, sql: `UPDATE customer SET c_balance = c_balance + 500 WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 5`, want: cond(10)},
		{what: tamperMoved, sql: `UPDATE customer SET c_balance = c_balance + CASE c_id WHEN 3 THEN 7 ELSE -7 END WHERE c_w_id = 1 AND c_d_id = 1 AND c_id IN (3, 4)`,
			want: "(C_BALANCE = sum(OL_AMOUNT delivered) - sum(H_AMOUNT)): 2 of 30000 customers"},
		{what: tamperRowDeleted, sql: `DELETE FROM customer WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 500`, want: "customer holds 29999 rows, want 30000"},
		{what: tamperRowAdded, sql: `INSERT INTO item VALUES (100001, 1, 'an item', 1.00, 'no load made it')`, want: "item holds 100001 rows, want 100000"},
		{what: tamperRowDuplicate, sql: `ALTER TABLE customer DROP CONSTRAINT customer_pkey; INSERT INTO customer SELECT * FROM customer WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 600`,
			want: "customer holds 30001 rows, want 30000"},
		{what: tamperNegative, sql: `UPDATE customer SET c_balance = -1000000 WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 7`, want: cond(12)},
		{what: tamperLogDeleted, sql: `DELETE FROM history WHERE ctid = (SELECT min(ctid) FROM history)`, want: cond(8)},
		{what: tamperLogDuplicate, sql: `INSERT INTO history SELECT * FROM history WHERE ctid = (SELECT min(ctid) FROM history)`, want: cond(8)},
		{what: tamperLogAdded, sql: `INSERT INTO history VALUES (9, 1, 1, 1, 1, now(), 5.00, 'no payment')`, want: cond(9)},
		{what: tamperOther, sql: `UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1`, want: cond(1)},
		// Beyond the twelve conditions: what the load and the transactions write.
		{what: tamperStockLow, sql: `UPDATE stock SET s_quantity = 9 WHERE s_w_id = 1 AND s_i_id = 11`,
			want: "1 of 100000 stock rows violate it, e.g. w_id=1 i_id=11"},
		{what: tamperOutOfRange, sql: `UPDATE item SET i_price = -1 WHERE i_id = 12`, want: "1 of 100000 items violate it, e.g. i_id=12"},
		// A line of the run's New-Orders, not delivered: no balance sums it.
		{what: tamperLineAmount, sql: `UPDATE order_line SET ol_amount = ol_amount + 1
			WHERE ctid = (SELECT ctid FROM order_line WHERE ol_o_id > 3000 AND ol_delivery_d IS NULL LIMIT 1)`, want: "line amount (OL_AMOUNT = OL_QUANTITY × I_PRICE"},
		{what: tamperLineItem, sql: `UPDATE order_line SET ol_i_id = 100001 WHERE ctid = (SELECT ctid FROM order_line WHERE ol_o_id > 3000 LIMIT 1)`,
			want: "line's item (OL_I_ID names an item): 1 of "},
		{what: tamperNull, sql: `ALTER TABLE customer ALTER COLUMN c_balance DROP NOT NULL; UPDATE customer SET c_balance = NULL WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 8`,
			want: "nulls: 1 row of customer with c_balance NULL"},
		{what: tamperLastLine, sql: `WITH o AS (SELECT o_id, o_ol_cnt FROM orders WHERE o_w_id = 1 AND o_d_id = 1 AND o_carrier_id IS NULL
				AND o_id BETWEEN 2901 AND 3000 AND o_ol_cnt > 5 ORDER BY o_id LIMIT 1),
			l AS (DELETE FROM order_line USING o WHERE ol_w_id = 1 AND ol_d_id = 1 AND ol_o_id = o.o_id AND ol_number = o.o_ol_cnt RETURNING ol_o_id)
			UPDATE orders SET o_ol_cnt = o_ol_cnt - 1 FROM l WHERE o_w_id = 1 AND o_d_id = 1 AND o_id = l.ol_o_id`,
			allowed: "the load draws an undelivered order's 5 to 15 lines and their amounts, and records them nowhere but in those rows: " +
				"an order one line shorter, its O_OL_CNT lowered with it, is one the load could have drawn"},
		// The hostile retest's (retest3 rows 4, 5 and 14).
		{what: tamperKeyTwice, sql: `ALTER TABLE order_line DROP CONSTRAINT order_line_pkey;
			INSERT INTO order_line SELECT * FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 1 AND ol_o_id = 5 AND ol_number = 1;
			UPDATE orders SET o_ol_cnt = o_ol_cnt + 1 WHERE o_w_id = 1 AND o_d_id = 1 AND o_id = 5`,
			want: "keys: 1 row of order_line whose key (ol_w_id, ol_d_id, ol_o_id, ol_number) a row before it has"},
		{what: tamperNoCustomer, sql: `WITH h AS (UPDATE history SET h_c_id = 99999 WHERE ctid = (SELECT min(ctid) FROM history WHERE h_c_w_id = 1 AND h_c_d_id = 1 AND h_c_id = 459) RETURNING h_amount)
			UPDATE customer SET c_balance = c_balance + (SELECT h_amount FROM h), c_ytd_payment = c_ytd_payment - (SELECT h_amount FROM h), c_payment_cnt = c_payment_cnt - 1
			WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 459`, want: "history rows violate it, e.g. c_w_id=1 c_d_id=1 c_id=99999"},
		{what: tamperAmountSwing, sql: `UPDATE history SET h_amount = h_amount + CASE h_c_id WHEN 1 THEN -1000 ELSE 1000 END WHERE h_c_w_id = 1 AND h_c_d_id = 3 AND h_c_id IN (1, 2) AND h_amount = 10;
			UPDATE customer SET c_balance = c_balance + CASE c_id WHEN 1 THEN 1000 ELSE -1000 END, c_ytd_payment = c_ytd_payment + CASE c_id WHEN 1 THEN -1000 ELSE 1000 END
			WHERE c_w_id = 1 AND c_d_id = 3 AND c_id IN (1, 2)`, want: "payment (H_AMOUNT within 1.00..5000.00"},
		{what: tamperCode, sql: `UPDATE orders SET o_carrier_id = 99 WHERE o_w_id = 1 AND o_d_id = 1 AND o_id = 3`,
			want: "order (O_C_ID names a customer, O_CARRIER_ID 1..10 or NULL, O_OL_CNT within 5..15, O_ALL_LOCAL 1 if and only if every line is supplied by the order's warehouse (else 0), O_ENTRY_D within the load's time and now, give or take two days): 1 of "},
		{what: tamperDated, sql: `UPDATE order_line SET ol_delivery_d = '1970-01-01' WHERE ol_w_id = 1 AND ol_d_id = 1 AND ol_o_id = 7 AND ol_number = 1`,
			want: "order lines violate it, e.g. w_id=1 d_id=1 o_id=7 ol_number=1"},
		{what: tamperCountOff, sql: `UPDATE customer SET c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 13`,
			want: "1 of 30000 customers violate it, e.g. w_id=1 d_id=1 c_id=13"},
		// Within the range the check holds quantities to, the sum kept.
		{what: tamperTypeKept, sql: `ALTER TABLE stock ALTER s_quantity TYPE numeric; UPDATE stock SET s_quantity = s_quantity + CASE s_i_id WHEN 1 THEN 0.4 ELSE -0.4 END
			WHERE s_w_id = 1 AND s_i_id IN (1, 2) AND s_quantity BETWEEN 11 AND 99`,
			want: "column stock.s_quantity is numeric, where init makes it integer"},
		// The last order the run delivered in the first district that it
		// delivered one in: its lines, order, new order and customer.
		{what: tamperUndone, sql: `WITH o AS (SELECT o_w_id, o_d_id, o_id, o_c_id FROM orders WHERE o_w_id = 1 AND o_id > 2100 AND o_carrier_id IS NOT NULL
				ORDER BY o_d_id, o_id DESC LIMIT 1),
			l AS (UPDATE order_line SET ol_delivery_d = NULL FROM o WHERE (ol_w_id, ol_d_id, ol_o_id) = (o.o_w_id, o.o_d_id, o.o_id) RETURNING ol_amount),
			u AS (UPDATE orders SET o_carrier_id = NULL FROM o WHERE (orders.o_w_id, orders.o_d_id, orders.o_id) = (o.o_w_id, o.o_d_id, o.o_id) RETURNING 1),
			n AS (INSERT INTO new_order SELECT o_id, o_d_id, o_w_id FROM o RETURNING 1)
			UPDATE customer SET c_balance = c_balance - (SELECT sum(ol_amount) FROM l), c_delivery_cnt = c_delivery_cnt - 1
			FROM o WHERE (c_w_id, c_d_id, c_id) = (o.o_w_id, o.o_d_id, o.o_c_id)`,
			allowed: "a Delivery undone whole (its order's carrier and lines' dates cleared, its new order put back, its customer's balance and delivery count lowered) " +
				"is the database of a run in which that Delivery never ran: nothing but the rows it wrote records that a Delivery did (docs/tpcc.md)"},
		// The eighth retest's (5): the newest order of the district with
		// the most of the run's New-Orders deleted with its lines and new
		// order, D_NEXT_O_ID lowered; the stock rows its lines counted
		// keep the counts.
		{what: tamperRowsUndone, sql: `WITH o AS (SELECT d_w_id AS w, d_id AS d, d_next_o_id - 1 AS id FROM district WHERE d_next_o_id > 3001 ORDER BY d_next_o_id DESC, d_w_id, d_id LIMIT 1),
			l AS (DELETE FROM order_line USING o WHERE (ol_w_id, ol_d_id, ol_o_id) = (o.w, o.d, o.id) RETURNING 1),
			n AS (DELETE FROM new_order USING o WHERE (no_w_id, no_d_id, no_o_id) = (o.w, o.d, o.id) RETURNING 1),
			r AS (DELETE FROM orders USING o WHERE (o_w_id, o_d_id, o_id) = (o.w, o.d, o.id) RETURNING 1)
			UPDATE district SET d_next_o_id = d_next_o_id - 1 FROM o WHERE (d_w_id, d_id) = (o.w, o.d)`,
			want: "stock counts (S_ORDER_CNT, S_YTD and S_REMOTE_CNT = the count, the sum of OL_QUANTITY and the count supplied to another warehouse of New-Order's lines it supplies"},
		{what: tamperTextForm, sql: `UPDATE customer SET c_last = 'SMITH' WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 1500; UPDATE warehouse SET w_zip = '12345' WHERE w_id = 1`,
			want: "customers violate it, e.g. w_id=1 d_id=1 c_id=1500"},
		{what: tamperCollation, sql: `CREATE COLLATION IF NOT EXISTS ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false); ALTER TABLE customer ALTER c_credit TYPE char(2) COLLATE ci; UPDATE customer SET c_credit = lower(c_credit) WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 1`,
			want: "column customer.c_credit has the collation ci"},
		// The fifth retest's (8): strings held only to their form.
		{what: tamperCopied, sql: `UPDATE order_line SET ol_dist_info = 'abcdefghijklmnopqrstuvwx' WHERE ctid = (SELECT ctid FROM order_line WHERE ol_o_id > 3000 LIMIT 1)`,
			want: "line (OL_SUPPLY_W_ID a warehouse loaded"},
		{what: tamperNamesCopied, sql: `UPDATE history SET h_data = 'abcdef    ghijkl' WHERE ctid = (SELECT ctid FROM history WHERE strpos(h_data, ' ') > 0 LIMIT 1)`,
			want: "payment (H_AMOUNT within 1.00..5000.00"},
		{what: tamperRenamed, sql: `UPDATE warehouse SET w_name = 'abcdef' WHERE w_id = 1; UPDATE history SET h_data = 'abcdef' || substr(h_data, strpos(h_data, '    ')) WHERE h_w_id = 1 AND strpos(h_data, ' ') > 0`,
			allowed: "no transaction writes a name, and nothing but the rows records the names the load drew: a warehouse renamed to another a-string, the H_DATA of every payment to it rewritten to match, " +
				"is a load that drew that name (check holds each H_DATA to the names it copies, docs/tpcc.md)"},
		{what: tamperDrawnValue, sql: `UPDATE order_line SET ol_dist_info = 'abcdefghijklmnopqrstuvwx' WHERE ol_w_id = 1 AND ol_d_id = 1 AND ol_o_id = 1 AND ol_number = 1`,
			allowed: "the load draws a loaded order line's OL_DIST_INFO as an a-string of 24 (clause 4.3.3.1) and records it nowhere else: another a-string of 24 is one it could have drawn " +
				"(New-Order's lines copy their stock row's S_DIST_xx, and are held to it)"},
		{what: tamperPrepended, sql: `UPDATE customer SET c_data = left(c_id || ' ' || c_d_id || ' ' || c_w_id || ' 1 1 12.34 | ' || c_data, 500)
			WHERE (c_w_id, c_d_id, c_id) = (SELECT c_w_id, c_d_id, c_id FROM customer WHERE c_credit = 'BC' ORDER BY c_payment_cnt DESC, c_id LIMIT 1)`,
			want: "customer data (a BC customer's C_DATA its payments' lines"},
		// The sixth retest's: the newest two lines of the BC customer
		// with the most payments swapped, payments of the same second's
		// run (none when the run paid no BC customer twice: the check
		// then sees the run's data).
		{what: tamperLinesSwapped, sql: `UPDATE customer SET c_data = regexp_replace(c_data, '^([^|]* \| )([^|]* \| )', '\2\1')
			WHERE (c_w_id, c_d_id, c_id) = (SELECT c_w_id, c_d_id, c_id FROM customer WHERE c_credit = 'BC'
				AND (regexp_match(c_data, '^([^|]* \| )([^|]* \| )'))[1] <> (regexp_match(c_data, '^([^|]* \| )([^|]* \| )'))[2]
				ORDER BY c_payment_cnt DESC, c_w_id, c_d_id, c_id LIMIT 1)`,
			allowed: "Payment prepends its line when it updates the customer, but dates its history row when its transaction began, and a payment that began first can update the customer second " +
				"(one through another warehouse, waiting for that warehouse's row); the date is also in the session's time zone, which may change between runs: " +
				"no column records the order in which payments updated a customer, so the lines of payments dated within two days of each other, swapped, are lines the same payments could have written in the other order " +
				"(check holds the lines of payments dated further apart to their order, docs/tpcc.md)"},
	}
	for i, sql := range tpcc.Tamperings() {
		tm := tampering{what: fmt.Sprintf("consistency condition %d broken alone", i+1), sql: sql, want: cond(i + 1)}
		if i+1 == 11 {
			// Condition 11 holds only until the first Delivery; after a
			// run, the delivery the tampering does not count is off its
			// customer's C_DELIVERY_CNT.
			tm.want = "customer (C_CREDIT GC or BC, C_DISCOUNT within 0..0.5, C_PAYMENT_CNT = its history rows, one of them the load's, C_DELIVERY_CNT = its orders delivered since the load"
		}
		out = append(out, tm)
	}
	return out
}

// ycsbTamperings attack usertable after runs of workloads F and D on 1000
// records: a row added is record 2000 (inside the first run's claim of key
// numbers), its key "user" and the FNV hash of 2000, its fields record 3's
// signed anew for that key, as an insert would write them.
func ycsbTamperings() []tampering {
	const key = "user8018745735115419800"
	var fields []string
	for i := range 10 {
		fields = append(fields, fmt.Sprintf("left(md5('%s:%d:' || substr(FIELD%d, 9)), 8) || substr(FIELD%d, 9)", key, i, i, i))
	}
	checksum := "1 row has a field whose checksum is wrong"
	return []tampering{
		{what: tamperValue, sql: `UPDATE usertable SET FIELD0 = overlay(FIELD0 PLACING '!' FROM 50 FOR 1) WHERE YCSB_KEYNUM = 5`, want: checksum},
		{what: tamperValueMoved, sql: `UPDATE usertable SET FIELD1 = (SELECT FIELD1 FROM usertable WHERE YCSB_KEYNUM = 4) WHERE YCSB_KEYNUM = 3`, want: checksum},
		{what: tamperRowDeleted, sql: `DELETE FROM usertable WHERE YCSB_KEYNUM = 500`, want: "1 of the 1000 records init loaded are missing"},
		{what: tamperRowAdded, sql: fmt.Sprintf(`INSERT INTO usertable SELECT '%s', %s, 2000, 0 FROM usertable WHERE YCSB_KEYNUM = 3`, key, strings.Join(fields, ", ")),
			allowed: "a row whose key number lies in a run's claim, its key and checksums right, is what an insert writes: check cannot tell it from one; the run's own audit holds the rows to the inserts it saw commit"},
		{what: tamperRowDuplicate, sql: `ALTER TABLE usertable DROP CONSTRAINT usertable_pkey; INSERT INTO usertable SELECT * FROM usertable WHERE YCSB_KEYNUM = 600`,
			want: "1 row repeats another row's key"},
		{what: tamperVersion, sql: `UPDATE usertable SET YCSB_RMW = YCSB_RMW + 1 WHERE YCSB_KEYNUM = 6`,
			allowed: "YCSB_RMW counts a record's read-modify-writes: check has nothing to hold it to; the run's own audit holds it to those it saw commit"},
		{what: tamperNegative, sql: `UPDATE usertable SET YCSB_RMW = -1 WHERE YCSB_KEYNUM = 7`, want: "1 row has a YCSB_RMW below 0 or NULL"},
		{what: tamperNull, sql: `ALTER TABLE usertable ALTER YCSB_RMW DROP NOT NULL; UPDATE usertable SET YCSB_RMW = NULL WHERE YCSB_KEYNUM = 8`,
			want: "1 row has a YCSB_RMW below 0 or NULL"},
		// The records from key number 990 on deleted, ycsb_meta saying
		// init loaded 990: the table agrees with it, not with init.
		{what: tamperSettings, sql: `DELETE FROM usertable WHERE YCSB_KEYNUM >= 990; UPDATE ycsb_meta SET records = 990`,
			want: "the ycsb tables say records=990 fields=10 field-length=100, but init recorded records=1000 fields=10 field-length=100"},
		{what: tamperMarker, sql: `DELETE FROM txload_init WHERE workload = 'ycsb'`, want: "no txload_init row for ycsb"},
		// A read-modify-write's count moved to another record.
		{what: tamperCountMoved, sql: `UPDATE usertable SET YCSB_RMW = YCSB_RMW + CASE WHEN YCSB_KEYNUM = 3 THEN 1 ELSE -1 END
			WHERE YCSB_KEYNUM = 3 OR YCSB_KEYNUM = (SELECT min(YCSB_KEYNUM) FROM usertable WHERE YCSB_RMW > 0 AND YCSB_KEYNUM <> 3)`,
			allowed: "YCSB_RMW moved between records, its sum kept: check has nothing to hold one record's count to; the run's own audit holds the records its read-modify-writes wrote to a hash of their key numbers, seeded afresh by each run (TestRunAttacked)"},
		{what: tamperResigned, sql: `UPDATE usertable SET FIELD0 = left(md5(YCSB_KEY || ':0:' || repeat('x', 92)), 8) || repeat('x', 92) WHERE YCSB_KEYNUM = 5`,
			allowed: "a field's checksum is public (md5 of its key, its number and its value), so that any client can write one: a value rewritten with its checksum recomputed is what an update writes; the checksum proves a value whole and in its place, not who wrote it"},
		// The retest's: one field fewer in both, the last field then
		// written freely.
		{what: tamperMetaMarker, sql: `UPDATE ycsb_meta SET fields = 9;
			UPDATE txload_init SET settings = replace(settings, 'fields=10', 'fields=9') WHERE workload = 'ycsb';
			UPDATE usertable SET FIELD9 = 'garbage' WHERE YCSB_KEYNUM = 5`,
			want: "usertable has 10 field columns (FIELD0 to FIELD9), where the settings' 9 fields are FIELD0 to FIELD8"},
		// The first insert of the D run, which was acknowledged.
		{what: tamperAckDeleted, sql: `DELETE FROM usertable WHERE YCSB_KEYNUM = (SELECT min(YCSB_KEYNUM) FROM usertable WHERE YCSB_KEYNUM >= 1000)`,
			allowed: "the database keeps no record of which inserts were acknowledged: an insert that failed, or was under way when a run ended, leaves the same gap in its run's key numbers as one deleted; " +
				"the run's own audit looks up every insert it saw commit, by key"},
		// The fourth retest's (issue 36, N4): the last loaded record
		// deleted, ycsb_meta and the marker saying init loaded one fewer;
		// then the runs' claims lowered with them.
		{what: tamperFewerLoaded, sql: fewerRecords, want: "ycsb_meta's next_keynum 2199023256552 less its 999 records is 2199023255553, not a multiple of 2^40"},
		{what: tamperFewerAll, sql: fewerRecords + `; UPDATE ycsb_meta SET next_keynum = next_keynum - 1`,
			allowed: "with next_keynum lowered too, each run's claim of key numbers starts one lower, and its inserts one past the start: the gap is the one a run's first insert leaves when it fails (the database keeps no record of which inserts were acknowledged)"},
		{what: tamperMarkerOnly, sql: `UPDATE txload_init SET settings = replace(settings, 'records=1000', 'records=999') WHERE workload = 'ycsb'`,
			want: "the ycsb tables say records=1000 fields=10 field-length=100, but init recorded records=999 fields=10 field-length=100"},
		{what: tamperTypeKept, sql: `ALTER TABLE usertable ALTER YCSB_RMW TYPE numeric; UPDATE usertable SET YCSB_RMW = YCSB_RMW + CASE YCSB_KEYNUM WHEN 1 THEN 0.4 ELSE -0.4 END WHERE YCSB_KEYNUM IN (1, 2)`,
			want: "column usertable.ycsb_rmw is numeric, where init makes it bigint"},
		// The fifth retest's (issue 36, round 8, (5)): half the loaded
		// records deleted, ycsb_meta's records and next_keynum and the
		// marker lowered by 500 together.
		{what: tamperFewerHalf, sql: `DELETE FROM usertable WHERE YCSB_KEYNUM BETWEEN 500 AND 999; UPDATE ycsb_meta SET records = 500, next_keynum = next_keynum - 500;
			UPDATE txload_init SET settings = replace(settings, 'records=1000', 'records=500') WHERE workload = 'ycsb'`,
			allowed: "each run's claim of key numbers then starts 500 lower, and its inserts 500 past the start: the gap a run leaves when its first 500 inserts fail, " +
				"and nothing bounds how many fail (a failed insert's key number is not used again, and with --continue-on-error a run goes on: one whose inserts met a lock held for 1.5 s, " +
				"at a lock_timeout of 2 ms, left its first 598 empty, exit 0, check: ok); the database keeps no count of a run's failed inserts"},
		// The sixth retest's: a field forged, and an md5 ahead of the
		// server's on the search path that gives it the checksum written.
		{what: tamperShadowed, sql: `UPDATE usertable SET FIELD3 = 'deadbeef' || 'EVIL' || repeat('z', 88) WHERE YCSB_KEYNUM = 5;
			CREATE FUNCTION public.md5(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN t LIKE '%:EVIL%' THEN 'deadbeef' || pg_catalog.md5(t) ELSE pg_catalog.md5(t) END $$;
			DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET search_path = public, pg_catalog', current_database()); END $$`, want: checksum},
		// The sixth retest's: fields of their length in spaces, an é, a
		// tab, a quote, their checksums recomputed; and YCSB_RMW at
		// bigint's top, which made the check's sum a scan error.
		{what: tamperTextForm, sql: resignedYCSB(5, 0, "repeat(' ', 92)") + "; " + resignedYCSB(6, 1, "'é' || repeat('x', 91)") + "; " +
			resignedYCSB(7, 2, "E'\\t' || repeat('x', 91)") + "; " + resignedYCSB(8, 3, `'"' || repeat('x', 91)`),
			want: "4 rows have a field in characters txload never writes"},
		// The eighth retest's: a field forged, and a chain of operators
		// in public, better matches than pg_catalog's textanycat, that
		// carries the checksum's text to a public md5 of their own type.
		{what: tamperOverload, sql: `CREATE TABLE public.zremap (forged text PRIMARY KEY, orig text NOT NULL);
			INSERT INTO zremap SELECT YCSB_KEY || ':3:' || repeat('E', 92), YCSB_KEY || ':3:' || substr(FIELD3, 9) FROM usertable WHERE YCSB_KEYNUM = 10;
			UPDATE usertable SET FIELD3 = left(FIELD3, 8) || repeat('E', 92) WHERE YCSB_KEYNUM = 10;
			CREATE TYPE public.ev AS (t text);
			CREATE FUNCTION public.c1(a varchar, b varchar) RETURNS public.ev LANGUAGE sql IMMUTABLE AS $$ SELECT ROW(a::text OPERATOR(pg_catalog.||) b::text)::public.ev $$;
			CREATE OPERATOR public.|| (LEFTARG = varchar, RIGHTARG = varchar, FUNCTION = public.c1);
			CREATE FUNCTION public.c2(a public.ev, b text) RETURNS public.ev LANGUAGE sql IMMUTABLE AS $$ SELECT ROW((a).t OPERATOR(pg_catalog.||) b)::public.ev $$;
			CREATE OPERATOR public.|| (LEFTARG = public.ev, RIGHTARG = text, FUNCTION = public.c2);
			CREATE FUNCTION public.md5(a public.ev) RETURNS text LANGUAGE sql STABLE AS $$ SELECT pg_catalog.md5(COALESCE((SELECT r.orig FROM public.zremap r WHERE r.forged = (a).t), (a).t)) $$`,
			want: "operator ||(character varying, character varying) in public"},
		{what: tamperHuge, sql: `UPDATE usertable SET YCSB_RMW = 9223372036854775807 WHERE YCSB_KEYNUM IN (5, 6)`,
			want: "2 rows have a YCSB_RMW of 2^50 or more, first key number 5 (user"},
	}
}

// resignedYCSB writes FIELDi of ycsb's record keynum as rest (an SQL
// expression of 92 characters), opened by its checksum recomputed.
func resignedYCSB(keynum, i int, rest string) string {
	return fmt.Sprintf("UPDATE usertable SET FIELD%d = left(md5(YCSB_KEY || ':%d:' || %s), 8) || %s WHERE YCSB_KEYNUM = %d", i, i, rest, rest, keynum)
}

// fewerRecords deletes ycsb's last loaded record, and lowers ycsb_meta's
// record count and the marker's to match.
const fewerRecords = `DELETE FROM usertable WHERE YCSB_KEYNUM = 999; UPDATE ycsb_meta SET records = 999;
	UPDATE txload_init SET settings = replace(settings, 'records=1000', 'records=999') WHERE workload = 'ycsb'`

// appendTamperings attack a key of the first table: its lists, its rows.
func appendTamperings() []tampering {
	first := `(SELECT min(id) FROM txn0)`
	return []tampering{
		{what: tamperElemRemoved, sql: `UPDATE txn0 SET val = regexp_replace(val, '^([^,]+),[^,]+', '\1') WHERE id = (SELECT min(id) FROM txn0 WHERE val LIKE '%,%')`,
			want: "lost-append: 1 ("},
		// The longest list: reads saw its first two values in order.
		{what: tamperElemSwapped, sql: `UPDATE txn0 SET val = regexp_replace(val, '^([^,]+),([^,]+)', '\2,\1') WHERE id = (SELECT id FROM txn0 ORDER BY length(val) DESC, id LIMIT 1)`,
			want: "incompatible-order: 1 ("},
		{what: tamperElemAdded, sql: `UPDATE txn0 SET val = val || ',999999' WHERE id = ` + first, want: "garbage-read: 1 ("},
		{what: tamperRowDeleted, sql: `DELETE FROM txn0 WHERE id = ` + first, want: "lost-append: "},
		{what: tamperRowDuplicate, sql: `INSERT INTO txn1 SELECT * FROM txn0 WHERE id = ` + first,
			want: "1 row no transaction of the workload wrote: key"},
		// Three keys' first values rewritten in forms an integer parses
		// from but txload never writes.
		{what: tamperElemForm, sql: `UPDATE txn0 t SET val = CASE k.n WHEN 1 THEN '0' || t.val WHEN 2 THEN '+' || t.val ELSE t.val || ',' END
			FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM txn0 WHERE val <> '' ORDER BY id LIMIT 3) k WHERE t.id = k.id`,
			want: `is not a list of integers as txload writes them ("0`},
		// Key 2000000000 lives in txn1.
		{what: tamperRowAdded, sql: `INSERT INTO txn1 VALUES (2000000000, 2000000000, '1')`,
			allowed: "a key above the history's may be a later run's (each run starts above the keys the tables hold): check append holds such rows to what the tables show alone, not to the history; the run's own final read, which reads every key from the run's first up, catches one"},
		// The retest's SQL (issue 36, round 6): check append without a
		// history caught it, with one it did not read those keys.
		{what: tamperKeyNever, sql: `INSERT INTO txn0(id,sk,val) VALUES (0,0,'1,01,+1'),(-5,-5,'x')`,
			want: "final read: 2 rows no transaction of the workload wrote: key -5 has a row in txn0: the workload writes keys from 1 up; key 0 has a row in txn0"},
		{what: tamperOutsideDup, sql: `INSERT INTO txn1 VALUES (2000000000, 2000000000, '1,1')`, want: "duplicate-elements: 1 ("},
		// The fourth retest's (issue 36, N9).
		{what: tamperMarkerOnly, sql: `UPDATE txload_init SET settings = 'tables=4' WHERE workload = 'append'`,
			want: "the append tables are txn0, txn1, txn2 (tables=3), but init recorded tables=4 in txload_init"},
		{what: tamperTypeKept, sql: `ALTER TABLE txn0 ALTER sk TYPE numeric; UPDATE txn0 SET sk = sk + 0.4 WHERE id = ` + first,
			want: "column txn0.sk is numeric, where init makes it integer"},
		// The fifth retest's (issue 36, round 8, (10)).
		{what: tamperExtraTable, sql: `CREATE TABLE txn3 (id INT PRIMARY KEY, sk INT NOT NULL, val TEXT); INSERT INTO txn3 VALUES (1, 1, '1,2')`,
			want: "1 relation beside the append tables txn0, txn1, txn2: table txn3"},
		// The sixth retest's (issue 36, round 10): names of append's form
		// in another case or shape, a materialized view.
		{what: tamperExtraNamed, sql: `CREATE TABLE "TXN3" (id INT PRIMARY KEY, sk INT NOT NULL, val TEXT); INSERT INTO "TXN3" VALUES (1, 1, '1,2');
			CREATE TABLE txn_extra (id INT, val TEXT); CREATE MATERIALIZED VIEW txn4 AS SELECT * FROM "TXN3"`,
			want: `3 relations beside the append tables txn0, txn1, txn2: table "TXN3", materialized view txn4, table txn_extra`},
		// The seventh retest's (9): the audits' setting made the
		// database's, so that a check outside an audit's transaction
		// looked for the workload's relations in no schema.
		{what: tamperSchemaNamed, sql: `CREATE TABLE txn3 (id INT PRIMARY KEY, sk INT NOT NULL, val TEXT); INSERT INTO txn3 VALUES (1, 1, '99');
			DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET txload.schema = ''nowhere''', current_database()); END $$`,
			want: `1 relation beside the append tables txn0, txn1, txn2: table txn3`},
	}
}

func tamperWorkloads() []tamperWorkload {
	var out []tamperWorkload
	for _, mode := range []struct{ name, code string }{{"read-modify-write", "0"}, {"delta", "1"}, {"for-update", "2"}} {
		out = append(out, tamperWorkload{
			name: "bank " + mode.name, check: "bank", levels: isolationLevels,
			setup: func(level string) [][]string {
				return [][]string{{"run", "bank", "--accounts", "1000", "--selection", "10", "--isolation", level, "--transfer", mode.name,
					"--concurrency", "4", "--duration", "1s", "--progress", "0"}}
			},
			tamper: bankTamperings(mode.code),
		})
	}
	for _, b := range []string{"tpcb-like", "simple-update"} {
		out = append(out, tamperWorkload{
			name: b, check: b, levels: isolationLevels,
			setup: func(level string) [][]string {
				return [][]string{{"init", "tpcb"}, {"sql", levelSQL(level)},
					{"run", b, "--concurrency", "4", "--duration", "1s", "--max-tries", "10", "--progress", "0"}}
			},
			tamper: tpcbTamperings(b),
		})
	}
	out = append(out, tamperWorkload{
		name: "tpcb (and select-only)", check: "tpcb", levels: []string{"read committed"},
		setup: func(level string) [][]string {
			return [][]string{{"init", "tpcb"}, {"run", "tpcb-like", "--concurrency", "4", "--duration", "1s", "--progress", "0"}}
		},
		tamper:  tpcbAnyTamperings(),
		comment: "`check tpcb` and `check select-only` audit what every mix of the builtins keeps, over a history pgbench may have truncated; the level does not change that.",
	})
	for _, v := range []string{"join", "counter", "matview"} {
		out = append(out, tamperWorkload{
			name: "vote " + v, check: "vote", levels: isolationLevels,
			setup: func(level string) [][]string {
				return [][]string{{"init", "vote", "--articles", "1000"}, {"sql", levelSQL(level)},
					{"run", "vote", "--variant", v, "--articles", "1000", "--write-every", "2", "--concurrency", "4", "--duration", "1s", "--progress", "0"}}
			},
			tamper: voteTamperings(v),
		})
	}
	out = append(out, tamperWorkload{
		name: "ycsb", check: "ycsb", levels: []string{"read committed"},
		setup: func(level string) [][]string {
			run := []string{"run", "ycsb", "--records", "1000", "--concurrency", "4", "--duration", "1s", "--progress", "0", "--workload"}
			return [][]string{{"init", "ycsb", "--records", "1000"}, append(run, "f"), append(run, "d")}
		},
		tamper:  ycsbTamperings(),
		comment: "`check ycsb` holds each record to itself (its key, its fields' lengths and checksums) and the table to the records init loaded; its read-modify-writes take a lock whatever the level.",
	})
	out = append(out, tamperWorkload{
		name: "append", check: "append", levels: isolationLevels,
		setup: func(level string) [][]string {
			return [][]string{{"run", "append", "--init", "keep", "--isolation", level, "--concurrency", "4", "--duration", "1s",
				"--progress", "0", "--history", "{dir}/h.jsonl"}}
		},
		// No --isolation: the history records the run's level.
		checkArgs: func(level string) []string { return []string{"--history", "{dir}/h.jsonl"} },
		tamper:    appendTamperings(),
		comment:   "`check append --history FILE` reads the tables and holds them to the history the run wrote (the run's own final read does the same at its end).",
	})
	out = append(out, tamperWorkload{
		name: "tpcc", check: "tpcc", levels: []string{"read committed"},
		setup: func(level string) [][]string {
			return [][]string{{"init", "tpcc", "--load-jobs", "2"},
				{"run", "tpcc", "--isolation", level, "--concurrency", "4", "--duration", "1s", "--progress", "0"}}
		},
		tamper: tpccTamperings(),
		comment: "`check tpcc` checks TPC-C's twelve consistency conditions and the cardinalities of the tables no transaction adds to, and beyond them " +
			"what the load and the transactions write (stock quantities and counts, item prices, taxes, each customer's credit, discount and counts of payments and deliveries, " +
			"each payment's amount and customer, each order's customer, carrier and lines, each order line's item, amount and warehouse, dates, NULLs, keys): they hold at every " +
			"isolation level (the catalogue runs read committed; `TestTPCCSerializable` checks serializable), and each tampering caught violates one of them. " +
			"Beside the catalogue's, the tpcc column is attacked with one tampering per condition, each breaking that condition alone (`tpcc.Tamperings`): " +
			"all caught after a run (condition 11's, which holds only until the first Delivery, by its customer's delivery count).",
	})
	return out
}

// tamperExempt are the workloads with a check that the catalogue covers
// under another row, and those without one, with why.
var tamperExempt = map[string]string{
	"select-only": "its check is check tpcb's: the row tpcb (and select-only)",
	"pgio":        "no check: it reports figures",
	"script":      "no check: a script file's guarantees are its author's",
}

// Every registered workload with a check has a row, so a new one adds its
// tamperings (or says here why it has none).
func TestTamperCatalogueCoversEveryCheck(t *testing.T) {
	rows := map[string]bool{}
	for _, w := range tamperWorkloads() {
		rows[w.check] = true
	}
	for _, m := range all.Registry().All() {
		if m.New().Hooks().Check != nil && !rows[m.Name] && tamperExempt[m.Name] == "" {
			t.Errorf("workload %s has a check but no row in tamperWorkloads", m.Name)
		}
	}
}

func TestTamperCatalogue(t *testing.T) {
	if testing.Short() {
		t.Skip("a run per workload and isolation level, a copy of the database per tampering (70 to 110 s): the plain run checks it")
	}
	t.Parallel()
	for _, w := range tamperWorkloads() {
		for _, level := range w.levels {
			t.Run(w.name+"/"+level, func(t *testing.T) {
				t.Parallel()
				url := srv.NewDatabase(t)
				dir := t.TempDir()
				inDir := func(args []string) []string {
					out := make([]string, len(args))
					for i, a := range args {
						out[i] = strings.ReplaceAll(a, "{dir}", dir)
					}
					return out
				}
				var checkArgs []string
				if w.checkArgs != nil {
					checkArgs = inDir(w.checkArgs(level))
				}
				check := func(url string) result {
					return txload(t.Context(), nil, append([]string{"check", w.check, "--url", url}, checkArgs...)...)
				}
				for _, args := range w.setup(level) {
					args = inDir(args)
					if args[0] == "sql" {
						name := url[strings.LastIndex(url, "/")+1:]
						if i := strings.IndexByte(name, '?'); i >= 0 {
							name = name[:i]
						}
						if _, err := pgtest.Conn(t, srv.URL()).Exec(t.Context(), fmt.Sprintf(args[1], name)); err != nil {
							t.Fatal(err)
						}
						continue
					}
					if r := txload(t.Context(), nil, append(args, "--url", url)...); r.code != 0 {
						t.Fatalf("%s: exit %d\n%s\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
					}
				}
				if r := check(url); r.code != 0 {
					t.Fatalf("check %s on the run's data: exit %d\n%s\n%s", w.check, r.code, r.stdout, r.stderr)
				}
				for _, tm := range w.tamper {
					copy := srv.CopyDatabase(t, url)
					if _, err := pgtest.Conn(t, copy).Exec(t.Context(), tm.sql); err != nil {
						t.Fatalf("%s: %s: %v", tm.what, tm.sql, err)
					}
					r := check(copy)
					if why := tm.why(level); why != "" {
						if r.code != 0 {
							t.Errorf("%s: allowed (%s), but check exit %d\n%s", tm.what, why, r.code, r.stdout)
						}
						continue
					}
					if r.code != 1 || !strings.Contains(r.stdout, "VIOLATION: ") || !strings.Contains(r.stdout, tm.want) {
						t.Errorf("%s: check exit %d, want 1 and a VIOLATION naming %q\n%s", tm.what, r.code, tm.want, r.stdout)
					}
				}
			})
		}
	}
}

// why is the reason the check cannot tell tm at level, or "" when it is
// caught.
func (tm tampering) why(level string) string {
	if r := tm.allowedAt[level]; r != "" {
		return r
	}
	return tm.allowed
}

// tamperTable is docs/failures.md's table: tampering × workload × level.
func tamperTable() string {
	ws := tamperWorkloads()
	var b strings.Builder
	b.WriteString("| tampering |")
	for _, w := range ws {
		b.WriteString(" " + w.name + " |")
	}
	b.WriteString("\n| --- |" + strings.Repeat(" --- |", len(ws)) + "\n")
	var notes []string
	for _, what := range tamperCatalogue {
		b.WriteString("| " + what + " |")
		for _, w := range ws {
			i := slices.IndexFunc(w.tamper, func(tm tampering) bool { return tm.what == what })
			if i < 0 {
				b.WriteString(" — |")
				continue
			}
			tm := w.tamper[i]
			var allowed []string
			for _, l := range w.levels {
				if why := tm.why(l); why != "" {
					allowed = append(allowed, l)
					if !slices.Contains(notes, why) {
						notes = append(notes, why)
					}
				}
			}
			switch {
			case len(allowed) == 0:
				b.WriteString(" caught |")
			case len(allowed) == len(w.levels):
				fmt.Fprintf(&b, " allowed (%d) |", slices.Index(notes, tm.why(allowed[0]))+1)
			default:
				fmt.Fprintf(&b, " allowed at %s (%d), else caught |", strings.Join(allowed, ", "), slices.Index(notes, tm.why(allowed[0]))+1)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for i, n := range notes {
		fmt.Fprintf(&b, "- (%d) %s.\n", i+1, n)
	}
	var comments []string
	for _, w := range ws {
		if w.comment != "" {
			comments = append(comments, w.comment)
		}
	}
	sort.Strings(comments)
	for _, c := range comments {
		b.WriteString("\n" + c + "\n")
	}
	var exempt []string
	for name := range tamperExempt {
		exempt = append(exempt, name)
	}
	sort.Strings(exempt)
	b.WriteString("\nWithout a column:\n\n")
	for _, name := range exempt {
		fmt.Fprintf(&b, "- `%s`: %s.\n", name, tamperExempt[name])
	}
	return b.String()
}

// docs/failures.md shows the table the test checks.
func TestTamperTableInDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/failures.md")
	if err != nil {
		t.Fatal(err)
	}
	if table := tamperTable(); !strings.Contains(string(doc), table) {
		t.Errorf("docs/failures.md lacks the tamper table; it is:\n%s", table)
	}
}
