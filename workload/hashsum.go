package workload

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"math/big"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"

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
	// kept is the committed writes' hashes, so that rows of the same
	// content as a write in doubt can be told to be theirs (Present).
	kept Kept
}

// Kept is a multiset of hashes of rows (the committed writes', the rows a
// table held before the run), up to maxKept of them; past it, none
// counts. Safe for concurrent use.
type Kept struct {
	mu   sync.Mutex
	hs   []uint64
	full bool
}

// maxKept is the most hashes a Kept keeps: 8 MB. Past it, a row of the
// same content as a write in doubt may be another's, and counts as the
// one in doubt's (Present).
const maxKept = 1 << 20

// Add keeps h.
func (k *Kept) Add(h uint64) {
	k.mu.Lock()
	if len(k.hs) < maxKept {
		k.hs = append(k.hs, h)
	} else {
		k.full, k.hs = true, nil
	}
	k.mu.Unlock()
}

// takeFrom takes one row from present for each hash kept that it has,
// unless some were not kept.
func (k *Kept) takeFrom(present Present) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.full {
		return
	}
	for _, h := range k.hs {
		if n := present[h]; n > 0 {
			present[h] = n - 1
		}
	}
}

// Ended records how a write with hash h ended: committed (err nil), in
// doubt (its COMMIT in flight when the connection was lost), or rolled
// back (nothing written).
func (o *Outcomes) Ended(h uint64, err error) {
	if err == nil {
		o.committed.Add(h)
		o.kept.Add(h)
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

// CopyHashSum sums in the client, mod 2^64, the hashes of the rows that
// copySQL (a COPY ... TO STDOUT of integer columns, in text) sends: each
// row's md5 of "seed:c1:c2:…", its first 8 bytes big-endian, as a server's
// sum of ('x' || left(md5($1 || ':' || c1 || …), 16))::bit(64)::bigint
// adds up, with rows a NULL makes NULL adding nothing there as here. It
// returns the sum and the rows copied. A run sums its table's rows before
// it starts this way, so that its seed reaches the server (where a
// statement log shows it) only in its audit, whose snapshot is then
// already taken: a writer who reads the seed there is too late to forge.
// keep, when not nil, keeps each row's hash (PresentPastMax's before).
func CopyHashSum(ctx context.Context, conn *pgconn.PgConn, seed uint64, copySQL string, keep *Kept) (sum uint64, rows int64, err error) {
	h := &rowHasher{prefix: strconv.AppendUint(nil, seed, 10), keep: keep}
	tag, err := conn.CopyTo(ctx, h, copySQL)
	if err != nil {
		return 0, 0, err
	}
	if len(h.part) > 0 {
		return 0, 0, fmt.Errorf("the copy's last row %q has no line end", h.part)
	}
	return h.sum, tag.RowsAffected(), nil
}

// rowHasher hashes COPY's text rows as CopyHashSum says, a row split
// across writes kept in part.
type rowHasher struct {
	prefix, part, buf []byte
	sum               uint64
	keep              *Kept // each row's hash, when not nil
}

func (h *rowHasher) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			h.part = append(h.part, p...)
			break
		}
		line := p[:i]
		if len(h.part) > 0 {
			h.part = append(h.part, line...)
			line = h.part
		}
		h.row(line)
		h.part = h.part[:0]
		p = p[i+1:]
	}
	return n, nil
}

// row adds one row's hash: its columns joined by ':' after the seed. An
// integer column's text has no escapes; a NULL (\N) makes the server's
// text NULL, whose hash its sum skips.
func (h *rowHasher) row(line []byte) {
	if bytes.Contains(line, []byte(`\N`)) {
		return
	}
	b := append(append(h.buf[:0], h.prefix...), ':')
	for _, c := range line {
		if c == '\t' {
			c = ':'
		}
		b = append(b, c)
	}
	h.buf = b
	d := md5.Sum(b)
	x := binary.BigEndian.Uint64(d[:8])
	h.sum += x
	if h.keep != nil {
		h.keep.Add(x)
	}
}
