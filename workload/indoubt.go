package workload

import (
	"math/rand/v2"
)

// MaxInDoubt is the most subsets, as a power of 2, that an Identity tries:
// with more operations in doubt, a run's identity check falls back to
// counting rows.
const MaxInDoubt = 20

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
// (known), k is not within 0 and known (the count says so), or the
// subsets of k are more than 2^MaxInDoubt, it does not try (tried false).
func (o *Outcomes) Explains(sum uint64, open []uint64, unknown, k int64) (ok, tried bool, known int) {
	doubt := append(o.InDoubt(), open...)
	n := len(doubt)
	if k == 0 {
		// None of those in doubt committed, by the count: the sum is the
		// committed writes' alone, whatever hashes those in doubt had
		// (a write stuck before it was sent has none known).
		return sum == o.Committed(), true, n
	}
	if k < 0 || k > int64(n) || int64(n) < unknown || !fewSubsets(n, int(k)) {
		return false, false, n
	}
	return subsetSum(doubt, int(k), sum-o.Committed()), true, n
}

// ExplainsAny is Explains when the audit knows no count of the rows in
// doubt that committed: any subset of them may explain sum. With more
// than MaxInDoubt in doubt, it does not try.
func (o *Outcomes) ExplainsAny(sum uint64, open []uint64, unknown int64) (ok, tried bool, known int) {
	doubt := append(o.InDoubt(), open...)
	n := len(doubt)
	if n > MaxInDoubt || int64(n) < unknown {
		return false, false, n
	}
	want := sum - o.Committed()
	for k := range n + 1 {
		if subsetSum(doubt, k, want) {
			return true, true, n
		}
	}
	return false, true, n
}

// fewSubsets says whether n choose k is at most 2^MaxInDoubt.
func fewSubsets(n, k int) bool {
	k = min(k, n-k)
	c := 1.0
	for i := range k {
		c = c * float64(n-i) / float64(i+1)
	}
	return c <= 1<<MaxInDoubt
}

// subsetSum says whether some k of hs add up to want (mod 2^64).
func subsetSum(hs []uint64, k int, want uint64) bool {
	if k == 0 {
		return want == 0
	}
	if len(hs) < k {
		return false
	}
	return subsetSum(hs[1:], k-1, want-hs[0]) || subsetSum(hs[1:], k, want)
}
