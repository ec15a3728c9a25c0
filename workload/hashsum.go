package workload

import (
	"fmt"
	"math/big"
	"sync"
	"sync/atomic"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
)

// HashSum reads a sum of 64-bit hashes the server added up as a numeric
// (the sum of bigints, as text: a run's identity of the rows it wrote),
// mod 2^64; what names the sum in the error.
func HashSum(s, what string) (uint64, error) {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return 0, fmt.Errorf("reading %s's identity sum %q", what, s)
	}
	return n.Mod(n, new(big.Int).Lsh(big.NewInt(1), 64)).Uint64(), nil
}

// Outcomes is what a run's clients saw of the rows they wrote, each row
// by its hash (the one a HashSum adds up): the sum of the hashes of those
// that committed (mod 2^64), and the hashes of those in doubt, whose
// COMMIT was in flight when the connection was lost. A run's audit holds
// the table's sum to the committed ones and a subset of those in doubt.
type Outcomes struct {
	committed atomic.Uint64
	mu        sync.Mutex
	inDoubt   []uint64
}

// Ended records how a write with hash h ended: committed (err nil), in
// doubt (its COMMIT in flight when the connection was lost), or rolled
// back (nothing written).
func (o *Outcomes) Ended(h uint64, err error) {
	if err == nil {
		o.committed.Add(h)
		return
	}
	if class, _ := pg.Classify(err); class == metrics.AmbiguousCommit {
		o.Doubt(h)
	}
}

// Doubt records a write with hash h whose outcome is unknown.
func (o *Outcomes) Doubt(h uint64) {
	o.mu.Lock()
	o.inDoubt = append(o.inDoubt, h)
	o.mu.Unlock()
}

// Committed is the sum of the committed writes' hashes, mod 2^64.
func (o *Outcomes) Committed() uint64 { return o.committed.Load() }

// InDoubt returns a copy of the hashes of the writes in doubt.
func (o *Outcomes) InDoubt() []uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]uint64(nil), o.inDoubt...)
}
