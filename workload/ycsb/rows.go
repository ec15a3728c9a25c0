package ycsb

import (
	"sync"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// rmwRows holds a run's read-modify-writes to the rows they wrote: YCSB_RMW
// may grow by the right count on the wrong rows (a second writer moving
// counts between records, one lost here and doubled there). Each record
// weighs a hash of its key number, seeded afresh by each run and known to
// no one else; the table's sum of weight × YCSB_RMW (wrapping, mod 2^64)
// must grow by the weights of the read-modify-writes that committed, plus
// those of some of the ones whose outcome is unknown.
type rmwRows struct {
	seed uint64

	mu        sync.Mutex
	committed uint64   // the weights of the committed read-modify-writes
	doubt     []uint64 // of those whose COMMIT was sent, outcome unknown
	progs     []*program
}

// weight is keynum's weight: splitmix64's finalizer of the seeded number,
// a bijection, so no two records weigh the same.
func (r *rmwRows) weight(keynum int64) uint64 {
	z := uint64(keynum) ^ r.seed
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rmwRows) add(w uint64) {
	r.mu.Lock()
	r.committed += w
	r.mu.Unlock()
}

// ended follows a read-modify-write whose COMMIT was sent and that failed
// with err: in doubt unless the server refused it.
func (r *rmwRows) ended(w uint64, err error) {
	switch class, _ := pg.Classify(err); class {
	case metrics.Serialization, metrics.Deadlock, metrics.Constraint:
		return
	}
	r.mu.Lock()
	r.doubt = append(r.doubt, w)
	r.mu.Unlock()
}

// explained says whether the table's weighted sum growing by grew is the
// committed read-modify-writes' and those of some subset of the ones in
// doubt (the programs' left in flight at the end among them); checked is
// false when too many are in doubt to try every subset.
func (r *rmwRows) explained(grew uint64) (ok, checked bool, doubt int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := r.doubt
	for _, p := range r.progs {
		if p.inCommit {
			ws = append(ws, p.weight)
		}
	}
	d := grew - r.committed
	if len(ws) > workload.MaxInDoubt {
		return true, false, len(ws)
	}
	return workload.SubsetSum(ws, -1, d), true, len(ws)
}
