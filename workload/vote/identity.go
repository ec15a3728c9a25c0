package vote

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// A run's audit checks WHICH vote rows the run added, not only how many:
// each vote the run saw commit adds the hash of its row (seed, article_id,
// user_id) to a sum (mod 2^64), and the audit compares that sum with the
// same sum over the vote table after the run minus before it. The seed is
// drawn afresh per run, so a second writer cannot forge rows whose hashes
// add up to those it deleted; the sum before the run is taken in the
// client, so that the seed reaches the server only in the audit's query,
// after its snapshot is fixed. A vote whose outcome stayed unknown (its
// commit in flight when the connection was lost, or under way when the run
// stopped) may or may not be there: the difference must be the sum of a
// subset of theirs. (workload/pgbench holds its history rows the same way.)

// rowHashSQL is a vote row's hash; $1 is the seed, as text.
const rowHashSQL = `('x' || left(md5($1 || ':' || article_id || ':' || user_id), 16))::bit(64)::bigint`

// identitySQL sums the hashes of the vote table's rows (a numeric, taken
// mod 2^64 by workload.HashSum).
const identitySQL = `COALESCE(sum(` + rowHashSQL + `), 0)::text`

// identityCopy sends the vote rows whose hashes workload.CopyHashSum sums
// in the client as identitySQL does in the server.
const identityCopy = `COPY (SELECT article_id, user_id FROM vote) TO STDOUT`

// identity is what a run's clients saw commit, by vote row.
type identity struct {
	seed   uint64
	before uint64 // the table's sum before the run
	// rowsBefore is the hashes of the rows the table held before the run
	// (rows of the same content as a vote in doubt, which an earlier run
	// with the same --seed wrote, are not that vote's: PresentPastMax).
	rowsBefore workload.Kept
	workload.Outcomes
	mu       sync.Mutex
	programs []*program
}

func newIdentity() *identity { return &identity{seed: rand.Uint64()} }

// hash is one vote row's hash, as identitySQL computes it: md5 of
// "seed:article:user", its first 8 bytes big-endian; buf is reused.
func (id *identity) hash(buf []byte, article, user int64) ([]byte, uint64) {
	buf = strconv.AppendUint(buf[:0], id.seed, 10)
	buf = append(buf, ':')
	buf = strconv.AppendInt(buf, article, 10)
	buf = append(buf, ':')
	buf = strconv.AppendInt(buf, user, 10)
	sum := md5.Sum(buf)
	return buf, binary.BigEndian.Uint64(sum[:8])
}

// explains says whether after, the table's sum after the run, is the sum
// before plus the committed votes' and those of k of the votes in doubt
// (the vote rows the run added beyond those it saw commit; call it once
// the run's clients are done). unknown is how many votes the run counts of
// unknown outcome: when it knows fewer in doubt, it does not try (tried
// false). present is which votes in doubt have a row (nil: try them all).
func (id *identity) explains(after uint64, unknown, k int64, present workload.Present) (ok, tried bool, known int) {
	ok, tried, known = id.Explains(after-id.before, id.open(), unknown, k, present)
	if k < 0 || k > int64(known) {
		return false, true, known // the count says so too
	}
	return ok, tried, known
}

// open is the hashes of the votes under way when the run stopped.
func (id *identity) open() []uint64 {
	var open []uint64
	id.mu.Lock()
	defer id.mu.Unlock()
	for _, p := range id.programs {
		if p.open {
			open = append(open, p.hash)
		}
	}
	return open
}

// add registers a program, whose vote under way is in doubt at the end.
func (id *identity) add(p *program) {
	id.mu.Lock()
	id.programs = append(id.programs, p)
	id.mu.Unlock()
}

// audit sums the vote table's identities after the run and holds the rows
// the run added to the votes it saw commit: a line, and a violation when
// they are not those rows.
func (id *identity) audit(ctx context.Context, t *pg.Target, rec workload.Reconciliation, res *workload.CheckResult) error {
	var sum string
	var present workload.Present
	seed := strconv.FormatUint(id.seed, 10)
	err := workload.ReadSnapshot(ctx, t, "summing the vote rows' identities", errNoSchema, func(tx pgx.Tx) error {
		if err := workload.TakeSnapshot(ctx, tx); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT `+identitySQL+` FROM vote`, seed).Scan(&sum); err != nil {
			return err
		}
		var err error
		present, err = id.PresentPastMax(ctx, tx, `SELECT `+rowHashSQL+` FROM vote`, []any{seed}, id.open(), &id.rowsBefore)
		return err
	})
	if err != nil {
		return err
	}
	after, err := workload.HashSum(sum, "the vote table")
	if err != nil {
		return err
	}
	ok, tried, known := id.explains(after, rec.Unknown, rec.CommittedUnknown(), present)
	var line string
	switch {
	case !tried && int64(known) < rec.Unknown:
		line = fmt.Sprintf("not checked: %d votes in doubt, of which %d committed, and only %d of them known by their rows; the rows are counted only",
			rec.Unknown, rec.CommittedUnknown(), known)
	case !tried:
		line = fmt.Sprintf("NOT CHECKED: %d votes in doubt, of which %d committed, and more than the %d whose subsets the audit tries have a row",
			known, rec.CommittedUnknown(), workload.MaxInDoubt)
		res.Violations = append(res.Violations, workload.Unverifiable("votes", known))
	case ok && rec.CommittedUnknown() == 0:
		line = "the rows the run added are the votes it saw commit (a sum of their hashes, seeded afresh by the run)"
	case ok:
		line = fmt.Sprintf("the rows the run added are the votes it saw commit and %d of the %d in doubt (a sum of their hashes, seeded afresh by the run)", rec.CommittedUnknown(), known)
	default:
		line = "VIOLATION: the rows the run added are not the votes it saw commit"
		res.Violations = append(res.Violations, "vote rows: the rows the run added are not the votes it saw commit"+
			inDoubt(known)+": a sum of their hashes (article_id, user_id, seeded afresh by the run) over the vote table, after the run minus before, differs: "+
			"a vote deleted, duplicated or changed, or one written by someone else, during the run")
	}
	res.Lines = append(res.Lines, workload.Line{Label: "vote identity", Value: line})
	checked := int64(0)
	if tried {
		checked = 1
	}
	res.Values["vote_identity_checked"] = checked
	return nil
}

func inDoubt(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" nor those and any of the %d in doubt", n)
}
