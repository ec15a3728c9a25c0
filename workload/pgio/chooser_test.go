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

// The keys a statement covers: pgio's range reads rows k..k+WORK_UNIT
// with k from 1 to scale-WORK_UNIT-1 (mypgio's pgio_get_random_number(1,
// scale-WORK_UNIT)), so WORK_UNIT+1 rows and never the last row; an update
// draws k the same way and covers UPDATE_WORK_UNIT+1 rows. The exact range
// covers a work unit, anywhere in the table.
func TestSpan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		r                Range
		scale, wu, uwu   int64
		k                Kind
		lo, hi, rowsEach int64 // first keys, and rows a statement covers
	}{
		{RangePgio, 2000, 255, 8, Select, 1, 1744, 256},
		{RangePgio, 2000, 255, 8, Update, 1, 1744, 9},
		{RangePgio, 2000, 1, 8, Select, 1, 1998, 2},
		{RangePgio, 3, 1, 1, Select, 1, 1, 2},
		{RangeExact, 2000, 255, 8, Select, 1, 1746, 255},
		{RangeExact, 2000, 255, 8, Update, 1, 1993, 8},
		{RangeExact, 10, 10, 1, Select, 1, 1, 10},
		{RangeExact, 1, 1, 1, Select, 1, 1, 1},
	} {
		c := Config{Scale: tc.scale, WorkUnit: tc.wu, UpdateWorkUnit: tc.uwu, Range: tc.r}
		first, width := c.Span(tc.k)
		lo, hi := tc.scale, int64(0)
		for range 20000 {
			k := Key(rng, first)
			lo, hi = min(lo, k), max(hi, k)
		}
		if lo != tc.lo || hi != tc.hi || width != tc.rowsEach {
			t.Errorf("%s range, scale %d, work units %d/%d, %s: keys %d to %d, %d rows each; want %d to %d, %d rows",
				tc.r, tc.scale, tc.wu, tc.uwu, tc.k, lo, hi, width, tc.lo, tc.hi, tc.rowsEach)
		}
	}
}
