package workload

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
)

// MaxInDoubt is the most subsets, as a power of 2, that an Identity tries:
// with more operations in doubt, a run's identity check falls back to
// counting rows.
const MaxInDoubt = 20

// Identity is what a run's clients saw commit, by the rows they wrote: the
// sum (mod 2^64) of a hash of each committed operation's row, seeded
// afresh per run (Seed), and the hashes of those whose outcome is unknown.
// A run's audit holds a table's sum of the same hashes to it (HashSum
// reads the server's). Safe for concurrent use.
type Identity struct {
	Seed      uint64
	committed atomic.Uint64
	mu        sync.Mutex
	inDoubt   []uint64
}

// NewIdentity draws a seed.
func NewIdentity() *Identity { return &Identity{Seed: rand.Uint64()} }

// Ended records how an operation whose row hashes to h ended: committed
// (err nil), in doubt (its commit in flight when the connection was lost),
// or rolled back.
func (id *Identity) Ended(h uint64, err error) {
	if err == nil {
		id.committed.Add(h)
		return
	}
	if class, _ := pg.Classify(err); class == metrics.AmbiguousCommit {
		id.mu.Lock()
		id.inDoubt = append(id.inDoubt, h)
		id.mu.Unlock()
	}
}

// Explains says whether sum, the table's sum over the run's rows, is the
// committed operations' and that of k of those in doubt: those that ended
// in doubt and open, the hashes of operations under way when the run
// stopped (call it once the run's clients are done). unknown is how many
// operations the run counts of unknown outcome: when it knows fewer in
// doubt (known), k is not within 0 and known (the count says so), or the
// subsets of k are more than 2^MaxInDoubt, it does not try (tried false).
func (id *Identity) Explains(sum uint64, open []uint64, unknown, k int64) (ok, tried bool, known int) {
	id.mu.Lock()
	doubt := append(append([]uint64(nil), id.inDoubt...), open...)
	id.mu.Unlock()
	n := len(doubt)
	if k < 0 || k > int64(n) || int64(n) < unknown {
		return false, false, n
	}
	c := 1.0
	for i := range min(k, int64(n)-k) {
		c = c * float64(int64(n)-i) / float64(i+1)
	}
	if c > 1<<MaxInDoubt {
		return false, false, n
	}
	return subsetSum(doubt, int(k), sum-id.committed.Load()), true, n
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
