package vote

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestVoteZipfFrequencies(t *testing.T) {
	const n, draws = 1000, 200000
	for _, s := range []float64{1.15, 0.8, 2.5} {
		z := NewZipf(rand.New(rand.NewPCG(7, 11)), n, s)
		counts := make([]int, n+1)
		for range draws {
			k := z.Next()
			if k < 1 || k > n {
				t.Fatalf("s=%g: draw %d out of [1, %d]", s, k, n)
			}
			counts[k]++
		}
		var norm float64
		for k := 1; k <= n; k++ {
			norm += math.Pow(float64(k), -s)
		}
		// Ranks 1..20 one by one, then the rest in buckets: each within
		// five standard deviations of its expected count.
		within := func(label string, obs int, p float64) {
			exp := p * draws
			if sd := math.Sqrt(exp * (1 - p)); math.Abs(float64(obs)-exp) > 5*sd+1 {
				t.Errorf("s=%g %s: %d draws, want %.0f ± %.0f", s, label, obs, exp, 5*sd)
			}
		}
		for k := 1; k <= 20; k++ {
			within("rank "+strconv.Itoa(k), counts[k], math.Pow(float64(k), -s)/norm)
		}
		for lo := 21; lo <= n; lo *= 3 {
			hi := min(lo*3-1, n)
			obs, p := 0, 0.0
			for k := lo; k <= hi; k++ {
				obs += counts[k]
				p += math.Pow(float64(k), -s) / norm
			}
			within("ranks "+strconv.Itoa(lo)+".."+strconv.Itoa(hi), obs, p)
		}
	}
}

func TestVoteZipfRangeAndDeterminism(t *testing.T) {
	for _, tc := range []struct {
		n int64
		s float64
	}{{1, 1.15}, {2, 0.8}, {1 << 40, 0.5}, {100000, 1}, {7, 0.01}} {
		a := NewZipf(rand.New(rand.NewPCG(3, 4)), tc.n, tc.s)
		b := NewZipf(rand.New(rand.NewPCG(3, 4)), tc.n, tc.s)
		for range 10000 {
			x, y := a.Next(), b.Next()
			if x != y {
				t.Fatalf("n=%d s=%g: same seed drew %d and %d", tc.n, tc.s, x, y)
			}
			if x < 1 || x > tc.n {
				t.Fatalf("n=%d s=%g: draw %d out of range", tc.n, tc.s, x)
			}
		}
	}
}
