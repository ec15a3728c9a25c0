package ycsb

import (
	"math"
	"math/rand/v2"
	"testing"
)

// draws is the sample size of the statistical tests: a share p is then
// known to ±5σ = 5·sqrt(p(1-p)/draws), under 0.006 for every p.
const draws = 200000

// within fails t unless the share got of the draws is within 5σ of want
// (a false alarm once in 1.7 million runs).
func within(t *testing.T, what string, got, want float64) {
	t.Helper()
	sigma := math.Sqrt(want * (1 - want) / draws)
	if math.Abs(got-want) > 5*sigma {
		t.Errorf("%s: %.5f of the draws, want %.5f ± %.5f (5σ)", what, got, want, 5*sigma)
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 7)) }

// YCSB's keys: "user" and the FNV-1a hash of the record's number, as
// YCSB 0.17 loads them (user6284781860667377211 is the key of record 0 in
// every YCSB run's load).
func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		keynum int64
		want   string
	}{
		{0, "user6284781860667377211"},
		{1, "user8517097267634966620"},
		{2, "user1820151046732198393"},
	} {
		if got := string(appendKey(nil, tc.keynum)); got != tc.want {
			t.Errorf("key of %d: %s, want %s", tc.keynum, got, tc.want)
		}
	}
}

// The zipfian (θ 0.99) over n items: item 0 is drawn 1/ζ(n) of the time
// and item 1 0.5^θ/ζ(n), exactly (Gray et al.'s method is exact on its
// first two items); the popular tenth gets its share ±2 points (the method
// approximates the tail).
func TestZipfianSkew(t *testing.T) {
	const n = 1000
	zn := zeta(0, n, zipfianConstant, 0)
	z := newZipfian(0, n-1, zipfianConstant, zn)
	rng := newRand(1)
	counts := make([]int, n)
	for range draws {
		v := z.next(rng, n)
		if v < 0 || v >= n {
			t.Fatalf("drew %d of %d items", v, n)
		}
		counts[v]++
	}
	within(t, "item 0", float64(counts[0])/draws, 1/zn)
	within(t, "item 1", float64(counts[1])/draws, math.Pow(0.5, zipfianConstant)/zn)
	top, want := 0, zeta(0, n/10, zipfianConstant, 0)/zn
	for _, c := range counts[:n/10] {
		top += c
	}
	if got := float64(top) / draws; math.Abs(got-want) > 0.02 {
		t.Errorf("the first tenth of the items: %.3f of the draws, want %.3f ± 0.02", got, want)
	}
}

// The scrambled zipfian spreads YCSB's popular items over the key space
// by hashing: the most popular key is fnvhash64(0) mod the item count,
// drawn 1/ζ (ζ of YCSB's 10^10 items) of the time, and the ten most popular
// keys take about 12% of the draws where ten keys of a uniform draw would
// take 1%.
func TestScrambledZipfianSkew(t *testing.T) {
	const n = 1000
	s := newScrambled(0, n-1)
	rng := newRand(2)
	counts := make([]int, n)
	for range draws {
		v := s.next(rng)
		if v < 0 || v >= n {
			t.Fatalf("drew %d of %d keys", v, n)
		}
		counts[v]++
	}
	hottest := fnvhash64(0) % n
	// Item 0's share, and the others' that hash to the same key (1/n of
	// the rest, at most).
	got := float64(counts[hottest]) / draws
	if lo, hi := 1/scrambledZetan-0.005, 1/scrambledZetan+1.0/n+0.005; got < lo || got > hi {
		t.Errorf("key %d: %.4f of the draws, want %.4f to %.4f", hottest, got, lo, hi)
	}
	for k, c := range counts {
		if c > counts[hottest] {
			t.Errorf("key %d drawn %d times, more than the hottest (%d, %d times)", k, c, hottest, counts[hottest])
		}
	}
	top := 0
	for _, k := range topKeys(counts, 10) {
		top += counts[k]
	}
	if share := float64(top) / draws; share < 0.10 || share > 0.14 {
		t.Errorf("the ten most popular keys: %.3f of the draws, want 0.10 to 0.14 (zipfian 0.99 over 10^10 items)", share)
	}
}

func topKeys(counts []int, n int) []int {
	var out []int
	used := map[int]bool{}
	for range n {
		best := -1
		for k, c := range counts {
			if !used[k] && (best < 0 || c > counts[best]) {
				best = k
			}
		}
		used[best] = true
		out = append(out, best)
	}
	return out
}

// The latest distribution follows the inserts: the newest record whose
// insert has ended is the most popular (1/ζ of the draws), the one before
// it next; an insert under way is never drawn; as inserts end, the
// popular records move to them. ζ grows with the records as YCSB grows it
// (incrementally).
func TestLatestFollowsInserts(t *testing.T) {
	c := &config{records: 1000, fields: 1, fieldLength: 10, distribution: latestDist}
	s := &state{cfg: c, records: c.records, base: 1 << 40, ins: inserts{inFlight: map[int64]struct{}{}, unacked: map[int64]struct{}{}}}
	s.latestZeta = zeta(0, s.records-1, zipfianConstant, 0)
	p := newProgram(s, newRand(3), nil)
	sample := func(last int64) map[int64]int {
		counts := map[int64]int{}
		for range draws {
			k := p.nextKeynum()
			counts[k]++
		}
		return counts
	}
	counts := sample(999)
	within(t, "the newest loaded record", float64(counts[999])/draws, 1/zeta(0, 999, zipfianConstant, 0))
	within(t, "the one before it", float64(counts[998])/draws, math.Pow(0.5, zipfianConstant)/zeta(0, 999, zipfianConstant, 0))
	// 500 inserts, the last still under way.
	var seqs []int64
	for range 500 {
		seqs = append(seqs, s.ins.start())
	}
	for _, q := range seqs[:499] {
		s.ins.ended(q, true)
	}
	counts = sample(1498)
	newest := s.base + 498
	if counts[s.base+499] != 0 {
		t.Errorf("the insert under way was drawn %d times", counts[s.base+499])
	}
	zn := zeta(0, 1498, zipfianConstant, 0)
	within(t, "the newest acknowledged insert", float64(counts[newest])/draws, 1/zn)
	if math.Abs(p.lat.gen.zetan-zn) > 1e-9 {
		t.Errorf("ζ grown incrementally to %.12f, want %.12f", p.lat.gen.zetan, zn)
	}
	inserted := 0
	for k, n := range counts {
		if k >= s.base {
			inserted += n
		}
	}
	// The 499 inserted records are the newest third of 1499: a zipfian
	// gives them ζ(499)/ζ(1498) of the draws, 86%; Gray's method
	// approximates it (±2 points), with YCSB's eta of the first count.
	if got, want := float64(inserted)/draws, zeta(0, 499, zipfianConstant, 0)/zn; math.Abs(got-want) > 0.02 {
		t.Errorf("the inserted records: %.3f of the draws, want %.3f ± 0.02", got, want)
	}
	s.ins.ended(seqs[499], false) // failed: acknowledged, as YCSB does
	if counts := sample(1499); counts[s.base+499] == 0 {
		t.Errorf("the last insert, ended, is never drawn")
	}
}

// Hotspot: 80% of the draws on the first 20% of the records, the rest
// alike on the others.
func TestHotspot(t *testing.T) {
	const n = 1000
	h := newHotspot(0, n-1, 0.2, 0.8)
	rng := newRand(4)
	hot := 0
	for range draws {
		v := h.next(rng)
		if v < 0 || v >= n {
			t.Fatalf("drew %d of %d", v, n)
		}
		if v < n/5 {
			hot++
		}
	}
	within(t, "the hot fifth", float64(hot)/draws, 0.8)
}

// Uniform: every tenth of the records a tenth of the draws.
func TestUniform(t *testing.T) {
	const n = 1000
	rng := newRand(5)
	var tenths [10]int
	for range draws {
		v := uniform(rng, 0, n-1)
		if v < 0 || v >= n {
			t.Fatalf("drew %d of %d", v, n)
		}
		tenths[v/(n/10)]++
	}
	for i, c := range tenths {
		within(t, "tenth "+string(rune('0'+i)), float64(c)/draws, 0.1)
	}
}
