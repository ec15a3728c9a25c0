package cli

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pgtest"
)

// forgeTwo deletes the run's last transfer that is the latest write of
// both its accounts (its balances and versions undone) and forges two
// transfers of 10 from account 1 to 2 in the run's ids, each reading and
// writing the versions the accounts have: the ledger gains one row, the
// replay and the version chains stay whole (the sixth retest's (1)). At
// read committed, the four accounts locked first: a transfer of the run
// that moved one of them meanwhile fails it (tried again), not a
// serialization failure at every try, which under the race detector
// kept a repeatable-read forgery failing past the run's end.
func forgeTwo(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE gone ON COMMIT DROP AS SELECT l.* FROM bank_ledger l
		JOIN bank_account a ON a.id = l.from_id AND a.version = l.from_written
		JOIN bank_account b ON b.id = l.to_id AND b.version = l.to_written
		WHERE l.from_id NOT IN (1, 2) AND l.to_id NOT IN (1, 2) AND l.id > (SELECT max(first_id) FROM bank_run)
		ORDER BY l.id DESC LIMIT 1`); err != nil {
		return err
	}
	var still int
	if err := tx.QueryRow(ctx, `WITH locked AS (SELECT id, version FROM bank_account
			WHERE id IN (1, 2, (SELECT from_id FROM gone), (SELECT to_id FROM gone)) ORDER BY id FOR UPDATE)
		SELECT count(*) FROM gone g JOIN locked a ON a.id = g.from_id AND a.version = g.from_written
			JOIN locked b ON b.id = g.to_id AND b.version = g.to_written`).Scan(&still); err != nil {
		return err
	}
	if still != 1 {
		return errors.New("the transfer to delete is no longer its accounts' latest write")
	}
	for _, q := range []string{
		`DELETE FROM bank_ledger l USING gone g WHERE l.id = g.id`,
		`UPDATE bank_account a SET balance = a.balance + g.amount, version = a.version - 1 FROM gone g WHERE a.id = g.from_id`,
		`UPDATE bank_account a SET balance = a.balance - g.amount, version = a.version - 1 FROM gone g WHERE a.id = g.to_id`,
		forgeOne, move10, forgeOne, move10,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

const forgeOne = `INSERT INTO bank_ledger (id, from_id, to_id, amount, from_read, to_read, from_written, to_written, isolation, mode)
	SELECT nextval('bank_ledger_id'), 1, 2, 10, a.version, b.version, a.version + 1, b.version + 1,
		(SELECT isolation FROM gone), (SELECT mode FROM gone)
	FROM bank_account a, bank_account b WHERE a.id = 1 AND b.id = 2`

const move10 = `UPDATE bank_account SET balance = balance + CASE id WHEN 1 THEN -10 ELSE 10 END, version = version + 1 WHERE id IN (1, 2)`

// A second writer deletes one of a bank run's committed transfers and
// forges two (the ledger gains one row), then holds the accounts locked
// across the run's end: the whole table (read-modify-write at
// serializable) or ten rows FOR UPDATE (for-update at read committed).
// The drain cancels the transfers waiting on the lock and reads their
// answers: cancelled before their COMMIT was sent, none committed, so no
// transfer is in doubt and the row the ledger gained is a violation. On
// the code before, they were abandoned with an unknown outcome, which
// let the extra row be one of them: "not checked", exit 0 (the sixth
// retest's (1)). Without the tampering, the same lock leaves 0 abandoned
// and the identity held.
func TestBankAuditLockAcrossEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, level, mode, lock string }{
		{"read-modify-write at serializable, table locked", "ser", "read-modify-write", "LOCK TABLE bank_account IN ACCESS EXCLUSIVE MODE"},
		{"for-update at read committed, rows locked", "rc", "for-update", "SELECT id FROM bank_account WHERE id <= 10 ORDER BY id FOR UPDATE"},
	} {
		for _, tamper := range []bool{true, false} {
			name := tc.name
			if !tamper {
				name += ", clean"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				url := newBank(t)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				conn := pgtest.Conn(t, url)
				done := beside(ctx, conn, runRows, 5, func() (bool, error) {
					if tamper {
						if err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{}, func(tx pgx.Tx) error { return forgeTwo(ctx, tx) }); err != nil {
							return true, nil
						}
					}
					// Held past the run's end (3 s) and its drain
					// (--drain-timeout 500ms), then let go.
					_, err := conn.Exec(ctx, "BEGIN; "+tc.lock+"; SELECT pg_sleep(6); COMMIT")
					return false, err
				})
				r := txload(t.Context(), nil, "run", "bank", "--url", url, "--accounts", "1000", "--selection", "100",
					"--isolation", tc.level, "--transfer", tc.mode, "--concurrency", "4", "--progress", "0",
					"--init", "keep", "--duration", "3s", "--drain-timeout", "500ms")
				var err error
				select {
				case err = <-done:
				case <-time.After(15 * time.Second):
					cancel()
					err = <-done
				}
				if err != nil {
					t.Fatalf("the second writer did not lock (and tamper) during the run: %v\n%s", err, r.stdout)
				}
				out := squeeze(r.stdout)
				t.Log(out[strings.Index(out, "drain:"):])
				if !regexp.MustCompile(`drain: \d+ operations? in flight when the window ended, not in the figures below: \d+ committed and [1-9]\d* failed in the [^,]+, 0 abandoned`).MatchString(out) {
					t.Errorf("the transfers waiting on the lock at the drain deadline were not all failed, none abandoned:\n%s", r.stdout)
				}
				// check bank counts the rows of each run's ledger ids
				// against what bank_run recorded: the run's transfers
				// that committed, and 0 of unknown outcome.
				c := txload(t.Context(), nil, "check", "bank", "--url", url)
				if !tamper {
					if r.code != 0 || !strings.Contains(out, "ledger identity: the rows of the run's ledger ids are the transfers it saw commit") {
						t.Fatalf("clean run behind a lock: exit %d, want 0 and the identity held\n%s\n%s", r.code, r.stdout, r.stderr)
					}
					if c.code != 0 {
						t.Fatalf("check bank after a clean run behind a lock: exit %d\n%s\n%s", c.code, c.stdout, c.stderr)
					}
					return
				}
				if r.code != 1 || !strings.Contains(out, "VIOLATION") {
					t.Fatalf("run beside a second writer that deleted one transfer and forged two: exit %d, want 1 and a VIOLATION\n%s\n%s", r.code, r.stdout, r.stderr)
				}
				if c.code != 1 || !strings.Contains(c.stdout, "VIOLATION: 1 range of ledger ids recorded in bank_run with more rows than its runs saw commit or end of unknown outcome") {
					t.Fatalf("check bank after the run: exit %d, want 1 and the range's VIOLATION\n%s\n%s", c.code, c.stdout, c.stderr)
				}
			})
		}
	}
}
