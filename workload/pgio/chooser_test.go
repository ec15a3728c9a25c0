package pgio

import (
	"math/rand/v2"
	"testing"
)

// Every window of 100 holds exactly pct updates, for every pct, and the
// updates are spread over the window rather than bunched at its end.
func TestChooserWindows(t *testing.T) {
	for pct := 0; pct <= 100; pct++ {
		c := NewChooser(pct, rand.New(rand.NewPCG(1, uint64(pct))))
		firstHalf := 0
		for w := 0; w < 50; w++ {
			updates := 0
			for i := 0; i < 100; i++ {
				if c.Next() == Update {
					updates++
					if i < 50 {
						firstHalf++
					}
				}
			}
			if updates != pct {
				t.Fatalf("pct %d: window %d holds %d updates", pct, w, updates)
			}
		}
		// About half of the updates fall in the first half of a window.
		if pct > 0 && pct < 100 {
			if share := float64(firstHalf) / float64(50*pct); share < 0.3 || share > 0.8 {
				t.Errorf("pct %d: %.2f of the updates in the first half of their window", pct, share)
			}
		}
	}
}

func TestKeyRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ scale, n int64 }{{2000, 255}, {10, 10}, {10, 1}, {1, 1}} {
		lo, hi := tc.scale, int64(0)
		for range 20000 {
			k := Key(rng, tc.scale, tc.n)
			lo, hi = min(lo, k), max(hi, k)
		}
		if lo != 1 || hi != tc.scale-tc.n+1 {
			t.Errorf("scale %d, %d rows: keys from %d to %d, want 1 to %d", tc.scale, tc.n, lo, hi, tc.scale-tc.n+1)
		}
	}
}
