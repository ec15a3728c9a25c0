package workload

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// MaxInDoubt is the most operations in doubt whose subsets an Identity
// tries, every one of them (2^40), by meeting in the middle: the sums of
// each half's 2^20 subsets, one half sorted and searched for what the
// other's lack. With more in doubt, a run's identity check reads which of
// them have a row (PresentHashes) and tries those; with more than
// MaxInDoubt of those, it falls back to counting rows. A client has one operation in flight at most, so a run of
// up to 40 clients is always checked, whatever a second writer makes of
// their ends (the seventh outside retest held 32 commits unanswered).
const MaxInDoubt = 40

// Identity is what a run's clients saw commit, by the rows they wrote: the
// Outcomes of the rows' hashes, seeded afresh per run (Seed). A run's
// audit holds a table's sum of the same hashes to it (HashSum reads the
// server's). Safe for concurrent use.
type Identity struct {
	Seed uint64
	Outcomes
}

// NewIdentity draws a seed.
func NewIdentity() *Identity { return &Identity{Seed: rand.Uint64()} }

// Explains says whether sum, the table's sum over the run's rows, is the
// committed writes' and that of k of those in doubt: those that ended in
// doubt and open, the hashes of writes under way when the run stopped
// (call it once the run's clients are done). unknown is how many writes
// the run counts of unknown outcome: when k is 0 it compares sum with the
// committed writes' alone; otherwise, when it knows fewer in doubt
// (known), or k is not within 0 and known (the count says so), it does
// not try (tried false). present, when not nil, is how many rows of each
// hash in doubt the table has beyond the committed writes' own (Present,
// in the audit's snapshot): the others did not commit, and only those are
// tried; when they are k, they are the one subset; with more than
// MaxInDoubt tried, it does not try.
func (o *Outcomes) Explains(sum uint64, open []uint64, unknown, k int64, present Present) (ok, tried bool, known int) {
	doubt := o.Doubtful(open)
	n := len(doubt)
	if k == 0 {
		// None of those in doubt committed, by the count: the sum is the
		// committed writes' alone, whatever hashes those in doubt had
		// (a write stuck before it was sent has none known).
		return sum == o.Committed(), true, n
	}
	if k < 0 || k > int64(n) || int64(n) < unknown {
		return false, false, n
	}
	doubt = among(doubt, present)
	if len(doubt) > MaxInDoubt {
		// Past what meeting in the middle reaches, the subsets of k (or
		// those left out, of len-k) are tried one by one where they are
		// few: as many with a row as the count says committed (a pooler
		// frozen under 60 commits) is one subset.
		found, tried := fewSubsets(doubt, int(k), sum-o.Committed())
		return found, tried, n
	}
	return SubsetSum(doubt, int(k), sum-o.Committed()), true, n
}

// maxFew is the most subsets fewSubsets tries one by one.
const maxFew = 1 << 22

// fewSubsets says whether some k of hs add up to want (mod 2^64), trying
// every subset of k, or of the len(hs)-k left out, whichever is fewer,
// when they are at most maxFew; tried is false when they are more.
func fewSubsets(hs []uint64, k int, want uint64) (found, tried bool) {
	if k < 0 || k > len(hs) {
		return false, true
	}
	m := k
	if len(hs)-k < m {
		// The ones left out add up to the total less want.
		m = len(hs) - k
		var all uint64
		for _, h := range hs {
			all += h
		}
		want = all - want
	}
	// C(n, m), given up past maxFew.
	count := 1
	for i := range m {
		count = count * (len(hs) - i) / (i + 1)
		if count > maxFew {
			return false, false
		}
	}
	var try func(from, left int, sum uint64) bool
	try = func(from, left int, sum uint64) bool {
		if left == 0 {
			return sum == want
		}
		for i := from; i <= len(hs)-left; i++ {
			if try(i+1, left-1, sum+hs[i]) {
				return true
			}
		}
		return false
	}
	return try(0, m, 0), true
}

// ExplainsAny is Explains when the audit knows no count of the rows in
// doubt that committed: any subset of them may explain sum.
func (o *Outcomes) ExplainsAny(sum uint64, open []uint64, unknown int64, present Present) (ok, tried bool, known int) {
	doubt := o.Doubtful(open)
	n := len(doubt)
	if int64(n) < unknown {
		return false, false, n
	}
	if doubt = among(doubt, present); len(doubt) > MaxInDoubt {
		return false, false, n
	}
	return SubsetSum(doubt, -1, sum-o.Committed()), true, n
}

// Doubtful is the hashes of the writes in doubt: those that ended in
// doubt, and open (those under way when the run stopped).
func (o *Outcomes) Doubtful(open []uint64) []uint64 {
	return append(o.InDoubt(), open...)
}

// Present is how many rows of each hash of the writes in doubt a table
// holds beyond the committed writes' own: rows of the same content as one
// in doubt (an earlier run's on kept tables, a committed twin in the run)
// are not counted as its.
type Present map[uint64]int

// among is the hashes of doubt that present holds, each as many times at
// most (all, if present is nil).
func among(doubt []uint64, present Present) []uint64 {
	if present == nil {
		return doubt
	}
	taken := make(map[uint64]int, len(doubt))
	var out []uint64
	for _, h := range doubt {
		if taken[h] < present[h] {
			taken[h]++
			out = append(out, h)
		}
	}
	return out
}

// PresentPastMax is PresentHashes of the writes in doubt (Doubtful(open))
// where they are more than MaxInDoubt, less the rows of the committed
// writes of the same hashes and those of before (the rows the table held
// before the run, where rowsSQL reads them too; nil: none), and nil (all
// tried) where they are not more: the table is read a second time only
// past what the subsets reach. Rows of the same content as a write in
// doubt counted as its (retest 9: a bank delta transfer's committed twin
// in the run; a vote an earlier run with the same --seed wrote on the
// kept tables), and 32 of 60 in doubt were past the subsets tried, over
// clean data.
func (o *Outcomes) PresentPastMax(ctx context.Context, q querier, rowsSQL string, args []any, open []uint64, before *Kept) (Present, error) {
	doubt := o.Doubtful(open)
	if len(doubt) <= MaxInDoubt {
		return nil, nil
	}
	present, err := PresentHashes(ctx, q, rowsSQL, args, doubt)
	if err != nil {
		return nil, err
	}
	o.kept.takeFrom(present)
	before.takeFrom(present)
	return present, nil
}

// PresentHashes reads, in q's snapshot (the audit's, where the sum was
// read), how many rows have each of hashes: rowsSQL selects one bigint,
// each row's hash as the identity's sum adds it, with args; hashes become
// the argument after them. A write in doubt whose hash no row has did not
// commit, whatever else the table holds, so that an audit need try only
// the subsets of those with one: with more than MaxInDoubt in doubt (a
// pooler's sessions held past the run's end, which txload cannot end)
// they are those that committed, and rows of the same content. Used only
// past MaxInDoubt: it reads the table a second time.
func PresentHashes(ctx context.Context, q querier, rowsSQL string, args []any, hashes []uint64) (Present, error) {
	signed := make([]int64, len(hashes))
	for i, h := range hashes {
		signed[i] = int64(h) // the server's bigint, the same 64 bits
	}
	rows, err := q.Query(ctx, `SELECT r.h, count(*) FROM (`+rowsSQL+`) r(h) WHERE r.h = ANY($`+strconv.Itoa(len(args)+1)+`::bigint[]) GROUP BY r.h`,
		append(args[:len(args):len(args)], signed)...)
	if err != nil {
		return nil, fmt.Errorf("reading which rows in doubt are there: %w", err)
	}
	present := Present{}
	var h, n int64
	_, err = pgx.ForEachRow(rows, []any{&h, &n}, func() error {
		present[uint64(h)] = int(n)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading which rows in doubt are there: %w", err)
	}
	return present, nil
}

// Unverifiable is the violation of an identity check that could not be
// made: of the n operations (what: "votes") in doubt, more than
// MaxInDoubt have a row, and no subset of them is tried. A check that
// cannot tell the rows the run added from rows forged in their place
// does not pass: the retry of the eighth retest held 48 votes past the
// run's end through a pooler, copied 44 of them (a row's content is all
// its hash is made of) and forged a vote beside them, and the identity
// said "not checked" over check: ok. Rows of the same content as those in
// doubt beyond the hashes the audit keeps (maxKept: of the committed
// writes, of the rows before the run) make them present too, over clean
// data: a false alarm, which the violation names as a cause.
func Unverifiable(what string, n int) string {
	return fmt.Sprintf("%s: the rows the run added cannot be told from rows forged in their place: of the %d %s in doubt, more than the %d whose subsets the audit tries have a row "+
		"(held past the run's end where txload cannot end their sessions, through a pooler or a URL of several hosts, and their rows copied; "+
		"or truly committed, unanswered; or rows of the same content as theirs, which a row's hash cannot tell apart, "+
		"beyond the %d hashes the audit keeps: other writes of the run with the same content, or rows an earlier run on the kept tables wrote with the same --seed): "+
		"the audit does not vouch for the rows", what, n, what, MaxInDoubt, maxKept)
}

// SubsetSum says whether some k of hs (any number of them, if k < 0)
// add up to want (mod 2^64): the sums of every subset of hs' first half,
// sorted by their sizes, and for each subset of the second half a
// search for the sum it lacks among those of the size it lacks. 2^(n/2)
// sums each way: for 40 hashes, 2^20 each.
func SubsetSum(hs []uint64, k int, want uint64) bool {
	if k > len(hs) {
		return false
	}
	// With any number wanted, every size is one.
	size := func(mask int) int {
		if k < 0 {
			return 0
		}
		return bits.OnesCount(uint(mask))
	}
	a, b := subsetSums(hs[:len(hs)/2]), subsetSums(hs[len(hs)/2:])
	bySize := make([][]uint64, len(hs)/2+1)
	for m, s := range a {
		bySize[size(m)] = append(bySize[size(m)], s)
	}
	for _, sums := range bySize {
		slices.Sort(sums)
	}
	for m, s := range b {
		need := max(k, 0) - size(m)
		if need < 0 || need >= len(bySize) {
			continue
		}
		if _, ok := slices.BinarySearch(bySize[need], want-s); ok {
			return true
		}
	}
	return false
}

// subsetSums is the sum of every subset of hs, indexed by its bit mask.
func subsetSums(hs []uint64) []uint64 {
	sums := make([]uint64, 1<<len(hs))
	for m := 1; m < len(sums); m++ {
		sums[m] = sums[m&(m-1)] + hs[bits.TrailingZeros(uint(m))]
	}
	return sums
}

// AfterTheFact is the line a check made after the fact (`txload check`,
// not a run's own audit) gives for a run's identity (what: "ledger
// rows"): it is not checked, since only the run held the seed of the
// hashes, drawn afresh and never stored. Retest 9's O1: a ledger row
// forged with bank_run edited to cover it passed `txload check bank`
// with nothing said of the identity.
func AfterTheFact(what string) Line {
	return Line{Label: "identity", Value: "not checked after the fact: which " + what + " a run wrote is checked only by that run's own audit " +
		"(a sum of hashes seeded afresh by the run, the seed never stored); this check holds the tables to each other"}
}
