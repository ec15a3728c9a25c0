package pgbench

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"math/big"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
)

// A builtin run's audit checks WHICH history rows its transactions wrote,
// not only how many: each committed transaction adds the hash of its
// history row (seed, aid, tid, bid, delta) to a sum (mod 2^64), and the
// audit compares that sum with the same sum over pgbench_history after the
// run minus before it. The seed is drawn per run, so nobody can forge rows
// whose hashes add up to the ones they replace. A transaction whose COMMIT
// was in flight when its connection was lost may or may not be there: the
// difference must be the sum of a subset of theirs.

// maxInDoubt is the most in-doubt transactions whose subsets the audit
// tries (2^maxInDoubt sums); beyond, it falls back to counting rows.
const maxInDoubt = 16

// identity is what a run's clients saw commit, by history row.
type identity struct {
	seed      uint64
	committed atomic.Uint64 // the sum of their hashes, mod 2^64
	mu        sync.Mutex
	inDoubt   []uint64 // hashes of the transactions with an unknown outcome
}

// rowHash is the hash of one history row, as identitySQL computes it:
// md5 of "seed:aid:tid:bid:delta", its first 8 bytes big-endian. buf is
// reused, so that nothing is allocated per transaction.
func rowHash(buf []byte, seed uint64, aid, tid, bid, delta int64) ([]byte, uint64) {
	buf = strconv.AppendUint(buf[:0], seed, 10)
	for _, v := range [...]int64{aid, tid, bid, delta} {
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, v, 10)
	}
	sum := md5.Sum(buf)
	return buf, binary.BigEndian.Uint64(sum[:8])
}

// identitySQL sums the hashes of pgbench_history's rows (a numeric; taken
// mod 2^64 by parseHashSum). $1 is the seed, as text.
const identitySQL = `SELECT COALESCE(sum(('x' || left(md5($1 || ':' || aid || ':' || tid || ':' || bid || ':' || delta), 16))::bit(64)::bigint), 0)::text FROM pgbench_history`

// parseHashSum reads identitySQL's sum mod 2^64.
func parseHashSum(s string) (uint64, error) {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return 0, fmt.Errorf("reading the history's identity sum %q", s)
	}
	return n.Mod(n, new(big.Int).Lsh(big.NewInt(1), 64)).Uint64(), nil
}

// ended records how a builtin transaction ended: committed (err nil), in
// doubt (COMMIT in flight when the connection was lost), or rolled back.
func (id *identity) ended(h uint64, err error) {
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

// explains says whether diff, the history's sum after minus before, is
// what the committed transactions and a subset of the in-doubt ones
// wrote; tried says the subsets were tried (false: too many in doubt, or
// fewer known than unknown outcomes; the audit falls back to counts).
func (id *identity) explains(diff uint64, unknown int64) (ok, tried bool) {
	id.mu.Lock()
	doubt := append([]uint64(nil), id.inDoubt...)
	id.mu.Unlock()
	if len(doubt) > maxInDoubt || int64(len(doubt)) < unknown {
		return false, false
	}
	rest := diff - id.committed.Load()
	for mask := 0; mask < 1<<len(doubt); mask++ {
		var s uint64
		for i, h := range doubt {
			if mask&(1<<i) != 0 {
				s += h
			}
		}
		if s == rest {
			return true, true
		}
	}
	return false, true
}

// identityEnder is the part of a program that tells the run's identity how
// each builtin transaction ended.
type identityEnder struct {
	id  *identity
	buf []byte
}

// end reads the transaction's history row from the script's variables.
func (e *identityEnder) end(p *program, _ time.Time, err error) {
	if e == nil || e.id == nil {
		return
	}
	var v [4]int64
	for i, name := range [...]string{"aid", "tid", "bid", "delta"} {
		x, ok := p.lookup(name)
		if !ok {
			return // the attempt ended before its \set: it wrote nothing
		}
		v[i] = x.I
	}
	var h uint64
	e.buf, h = rowHash(e.buf, e.id.seed, v[0], v[1], v[2], v[3])
	e.id.ended(h, err)
}
