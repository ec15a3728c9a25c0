package workload

import (
	"math/rand/v2"
	"testing"
)

// An identity explains a table's sum by the committed operations' hashes
// and k of those in doubt, never by another subset, and does not try
// when it knows fewer in doubt than the run counts, when k is out of
// range, or when the subsets are too many.
func TestIdentityExplains(t *testing.T) {
	id := &Identity{Seed: 1}
	id.Ended(100, nil)
	id.Ended(20, nil)
	open := []uint64{1, 2, 4}
	many := make([]uint64, 40)
	for i := range many {
		many[i] = uint64(1) << i
	}
	for _, tc := range []struct {
		name       string
		open       []uint64
		sum        uint64
		unknown, k int64
		present    []uint64 // which have a row (nil: not read)
		ok, tried  bool
	}{
		{name: "committed only", open: open, sum: 120, unknown: 3, k: 0, ok: true, tried: true},
		{name: "and one in doubt", open: open, sum: 122, unknown: 3, k: 1, ok: true, tried: true},
		{name: "and two in doubt", open: open, sum: 125, unknown: 3, k: 2, ok: true, tried: true},
		{name: "not those two", open: open, sum: 127, unknown: 3, k: 2, ok: false, tried: true},
		{name: "one swapped", open: open, sum: 121 + 7, unknown: 3, k: 0, ok: false, tried: true},
		{name: "wrapping mod 2^64", open: []uint64{^uint64(0)}, sum: 119, unknown: 1, k: 1, ok: true, tried: true},
		{name: "none committed, hashes unknown", open: open, sum: 120, unknown: 4, k: 0, ok: true, tried: true},
		{name: "none committed, one swapped", open: open, sum: 121, unknown: 4, k: 0, ok: false, tried: true},
		{name: "none committed, many", open: many, sum: 120, unknown: 40, k: 0, ok: true, tried: true},
		{name: "more unknown than known", open: open, sum: 121, unknown: 4, k: 1, tried: false},
		{name: "k beyond those in doubt", open: open, sum: 120, unknown: 3, k: 4, tried: false},
		{name: "k below 0", open: open, sum: 120, unknown: 3, k: -1, tried: false},
		{name: "twenty of forty", open: many, sum: 120 + 1<<20 - 1, unknown: 40, k: 20, ok: true, tried: true},
		{name: "not twenty of forty", open: many, sum: 120 + 1<<20, unknown: 40, k: 20, ok: false, tried: true},
		{name: "more than MaxInDoubt", open: append(many, 1<<40), sum: 120, unknown: 41, k: 20, tried: false},
		{name: "few of many", open: many, sum: 120 + 1<<3 + 1<<39, unknown: 40, k: 2, ok: true, tried: true},
		// Past MaxInDoubt, those with a row are tried: the others did not
		// commit.
		{name: "two of 41 have a row", open: append(many, 1<<40), sum: 120 + 1<<3 + 1<<40, unknown: 41, k: 2,
			present: []uint64{1 << 3, 1 << 40}, ok: true, tried: true},
		{name: "two of 41 have a row, a third row forged", open: append(many, 1<<40), sum: 120 + 1<<3 + 1<<40 + 1<<5, unknown: 41, k: 2,
			present: []uint64{1 << 3, 1 << 40}, ok: false, tried: true},
		{name: "the count says two, one has a row", open: append(many, 1<<40), sum: 120 + 1<<3 + 1<<5, unknown: 41, k: 2,
			present: []uint64{1 << 3}, ok: false, tried: true},
		{name: "41 of 41 have a row, 20 committed", open: append(many, 1<<40), sum: 120, unknown: 41, k: 20,
			present: append(many, 1<<40), tried: false},
		{name: "41 of 41 have a row and committed", open: append(many, 1<<40), sum: 120 + 1<<41 - 1, unknown: 41, k: 41,
			present: append(many, 1<<40), ok: true, tried: true},
		{name: "41 have a row, 40 committed", open: append(many, 1<<40), sum: 120 + 1<<41 - 1 - 1<<3, unknown: 41, k: 40,
			present: append(many, 1<<40), ok: true, tried: true},
		{name: "41 have a row, 3 committed", open: append(many, 1<<40), sum: 120 + 1<<40 + 1<<7 + 1, unknown: 41, k: 3,
			present: append(many, 1<<40), ok: true, tried: true},
		{name: "41 have a row, 3 committed, none of the subsets", open: append(many, 1<<40), sum: 120 + 1<<40 + 1<<7 + 1 + 1<<3, unknown: 41, k: 3,
			present: append(many, 1<<40), ok: false, tried: true},
		{name: "41 of 41 have a row and committed, one swapped", open: append(many, 1<<40), sum: 120 + 1<<41 - 1 + 1, unknown: 41, k: 41,
			present: append(many, 1<<40), ok: false, tried: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var present Present
			if tc.present != nil {
				present = Present{}
				for _, h := range tc.present {
					present[h]++
				}
			}
			ok, tried, known := id.Explains(tc.sum, tc.open, tc.unknown, tc.k, present)
			if ok != tc.ok || tried != tc.tried || known != len(tc.open) {
				t.Fatalf("Explains = %t, %t, %d; want %t, %t, %d", ok, tried, known, tc.ok, tc.tried, len(tc.open))
			}
		})
	}
}

// With no count of those in doubt that committed, any subset of them may
// explain the sum, up to MaxInDoubt of them.
func TestIdentityExplainsAny(t *testing.T) {
	id := &Identity{Seed: 1}
	id.Ended(100, nil)
	id.Doubt(8)
	open := []uint64{1, 2, 4}
	many := make([]uint64, MaxInDoubt)
	for _, tc := range []struct {
		name      string
		open      []uint64
		sum       uint64
		unknown   int64
		ok, tried bool
	}{
		{name: "committed only", open: open, sum: 100, unknown: 4, ok: true, tried: true},
		{name: "some in doubt", open: open, sum: 100 + 8 + 4 + 1, unknown: 4, ok: true, tried: true},
		{name: "all in doubt", open: open, sum: 115, unknown: 4, ok: true, tried: true},
		{name: "no subset", open: open, sum: 116, unknown: 4, ok: false, tried: true},
		{name: "more unknown than known", open: open, sum: 100, unknown: 5, tried: false},
		{name: "more than MaxInDoubt", open: many, sum: 100, unknown: 0, tried: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, tried, known := id.ExplainsAny(tc.sum, tc.open, tc.unknown, nil)
			if ok != tc.ok || tried != tc.tried || known != len(tc.open)+1 {
				t.Fatalf("ExplainsAny = %t, %t, %d; want %t, %t, %d", ok, tried, known, tc.ok, tc.tried, len(tc.open)+1)
			}
		})
	}
}

// subsetSum, meeting in the middle, answers as trying every subset does:
// random hashes (small, so that many subsets share a sum), every k and
// any k, against the sum of a subset drawn and against sums of none.
func TestSubsetSumAsEverySubset(t *testing.T) {
	naive := func(hs []uint64, k int, want uint64) bool {
		for m := range 1 << len(hs) {
			var sum uint64
			size := 0
			for i, h := range hs {
				if m&(1<<i) != 0 {
					sum += h
					size++
				}
			}
			if sum == want && (k < 0 || size == k) {
				return true
			}
		}
		return false
	}
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		hs := make([]uint64, r.IntN(12))
		for i := range hs {
			hs[i] = r.Uint64N(40)
			if trial%3 == 0 {
				hs[i] = r.Uint64() // wrapping mod 2^64
			}
		}
		var drawn uint64
		for _, h := range hs {
			if r.IntN(2) == 0 {
				drawn += h
			}
		}
		for _, want := range []uint64{drawn, r.Uint64N(200), ^uint64(0)} {
			for k := -1; k <= len(hs)+1; k++ {
				if got, exp := SubsetSum(hs, k, want), naive(hs, k, want); got != exp {
					t.Fatalf("SubsetSum(%v, %d, %d) = %t, every subset says %t", hs, k, want, got, exp)
				}
			}
		}
	}
}

// BenchmarkSubsetSum: 40 in doubt, half of them committed, the sum of no
// subset (the search goes through every one): the most an audit tries.
func BenchmarkSubsetSum(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	hs := make([]uint64, MaxInDoubt)
	for i := range hs {
		hs[i] = r.Uint64()
	}
	for b.Loop() {
		if SubsetSum(hs, MaxInDoubt/2, 12345) {
			b.Fatal("a subset of random hashes adds up to 12345")
		}
	}
}

// The client's sum of COPY's rows does not depend on how the rows are cut
// into writes: a row split across two writes is hashed whole.
func TestRowHasherSplitWrites(t *testing.T) {
	t.Parallel()
	text := []byte("1\t2\t3\n-40\t5\t6\n7\t\\N\t9\n10\t11\t12\n")
	whole := &rowHasher{prefix: []byte("99")}
	if _, err := whole.Write(text); err != nil {
		t.Fatal(err)
	}
	for cut := 1; cut < len(text); cut++ {
		h := &rowHasher{prefix: []byte("99")}
		h.Write(text[:cut])
		h.Write(text[cut:])
		if h.sum != whole.sum || len(h.part) != 0 {
			t.Errorf("cut at %d: sum %d, want %d (left %q)", cut, h.sum, whole.sum, h.part)
		}
	}
	one := &rowHasher{prefix: []byte("99")}
	one.Write([]byte("1\t2\t3\n"))
	if one.sum == 0 || one.sum == whole.sum {
		t.Errorf("one row's sum %d, all rows' %d", one.sum, whole.sum)
	}
}
