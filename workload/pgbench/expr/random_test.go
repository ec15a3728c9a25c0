package expr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// draws per distribution check.
const draws = 200000

// sample draws n values of src from a generator seeded with seed.
func sample(t testing.TB, src string, seed uint64, n int) []int64 {
	t.Helper()
	node, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Rand: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	out := make([]int64, n)
	for i := range out {
		v, err := node.Eval(env)
		if err != nil {
			t.Fatal(err)
		}
		if v.Kind != Int {
			t.Fatalf("%s gave %s", src, describe(v))
		}
		out[i] = v.I
	}
	return out
}

func TestRandomDeterministic(t *testing.T) {
	for _, src := range []string{
		"random(1, 1000000)",
		"random_exponential(1, 1000, 2.5)",
		"random_gaussian(1, 1000, 3)",
		"random_zipfian(1, 1000, 1.2)",
	} {
		t.Run(src, func(t *testing.T) {
			a := sample(t, src, 42, 1000)
			b := sample(t, src, 42, 1000)
			c := sample(t, src, 43, 1000)
			same := 0
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("draw %d differs under the same seed: %d, %d", i, a[i], b[i])
				}
				if a[i] == c[i] {
					same++
				}
			}
			if same == len(a) {
				t.Fatal("another seed gave the same sequence")
			}
			// and with pgbench's own generator
			n, _ := Parse(src)
			e1 := &Env{Rand: rand.New(NewPRNG(5))}
			e2 := &Env{Rand: rand.New(NewPRNG(5))}
			for i := 0; i < 100; i++ {
				x, _ := n.Eval(e1)
				y, _ := n.Eval(e2)
				if x.I != y.I {
					t.Fatalf("PRNG draw %d differs", i)
				}
			}
		})
	}
}

func TestRandomBounds(t *testing.T) {
	t.Parallel()
	ranges := [][2]int64{
		{1, 1}, {1, 2}, {-5, 5}, {0, 9}, {-1000000, -999990},
		{1, 1000000}, {math.MinInt64/2 + 1, math.MaxInt64 / 2},
		{math.MaxInt64 - 3, math.MaxInt64}, {math.MinInt64, math.MinInt64 + 3},
	}
	funcs := []string{
		"random(%d, %d)",
		"random_exponential(%d, %d, 0.001)",
		"random_exponential(%d, %d, 5)",
		"random_exponential(%d, %d, 50)",
		"random_gaussian(%d, %d, 2)",
		"random_gaussian(%d, %d, 10)",
		"random_zipfian(%d, %d, 1.001)",
		"random_zipfian(%d, %d, 1.5)",
		"random_zipfian(%d, %d, 1000)",
	}
	for _, f := range funcs {
		for _, r := range ranges {
			src := fmt.Sprintf(f, r[0], r[1])
			t.Run(src, func(t *testing.T) {
				n := 2000
				if r[1]-r[0] < 100 && f == "random_zipfian(%d, %d, 1.001)" {
					n = 100 // slow to accept on small ranges, as in pgbench
				}
				for _, v := range sample(t, src, 7, n) {
					if v < r[0] || v > r[1] {
						t.Fatalf("%s gave %d", src, v)
					}
				}
			})
		}
	}
}

// meanVar returns the sample mean and variance.
func meanVar(xs []int64) (float64, float64) {
	var s, s2 float64
	for _, x := range xs {
		f := float64(x)
		s += f
		s2 += f * f
	}
	n := float64(len(xs))
	m := s / n
	return m, s2/n - m*m
}

// checkDistribution compares the sample with exact cell probabilities
// p[k] of the values lo+k: mean within 5 standard errors, and each cell
// with enough weight within 5 binomial standard deviations.
func checkDistribution(t *testing.T, xs []int64, lo int64, p []float64) {
	t.Helper()
	n := float64(len(xs))
	var mean, m2 float64
	for k, pk := range p {
		x := float64(lo + int64(k))
		mean += pk * x
		m2 += pk * x * x
	}
	variance := m2 - mean*mean
	gotMean, gotVar := meanVar(xs)
	if se := math.Sqrt(variance / n); math.Abs(gotMean-mean) > 5*se {
		t.Errorf("mean %.4f, want %.4f (se %.4f)", gotMean, mean, se)
	}
	if math.Abs(gotVar-variance) > 0.03*variance {
		t.Errorf("variance %.4f, want %.4f", gotVar, variance)
	}
	counts := make([]float64, len(p))
	for _, x := range xs {
		counts[x-lo]++
	}
	for k, pk := range p {
		if pk*n < 100 {
			continue
		}
		sd := math.Sqrt(n * pk * (1 - pk))
		if math.Abs(counts[k]-n*pk) > 5*sd {
			t.Errorf("value %d: %v draws, want %.1f (sd %.1f)", lo+int64(k), counts[k], n*pk, sd)
		}
	}
}

func TestUniformDistribution(t *testing.T) {
	t.Parallel()
	const lo, hi = 1, 1000
	xs := sample(t, "random(1, 1000)", 1, draws)
	p := make([]float64, hi-lo+1)
	for k := range p {
		p[k] = 1 / float64(len(p))
	}
	checkDistribution(t, xs, lo, p)
	m, v := meanVar(xs)
	if math.Abs(m-500.5) > 3 || math.Abs(v-83333.25)/83333.25 > 0.02 {
		t.Errorf("mean %.3f var %.1f, want 500.5 and 83333.25", m, v)
	}
}

// random_exponential(lo, lo+N-1, a) returns lo + floor(N*r), r having
// density a*exp(-a*r)/(1-exp(-a)) on [0, 1): value lo+k has probability
// (exp(-a*k/N) - exp(-a*(k+1)/N)) / (1 - exp(-a)).
func TestExponentialDistribution(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n     int64
		param float64
	}{{100, 1}, {100, 5}, {1000, 0.2}, {20, 30}} {
		t.Run(fmt.Sprint(tc.n, tc.param), func(t *testing.T) {
			xs := sample(t, fmt.Sprintf("random_exponential(1, %d, %g)", tc.n, tc.param), 2, draws)
			p := make([]float64, tc.n)
			norm := 1 - math.Exp(-tc.param)
			N := float64(tc.n)
			for k := range p {
				p[k] = (math.Exp(-tc.param*float64(k)/N) - math.Exp(-tc.param*float64(k+1)/N)) / norm
			}
			checkDistribution(t, xs, 1, p)
			// the continuous mean, for the record: 1/a - 1/(e^a - 1) of the range
			cont := 1 + N*(1/tc.param-1/math.Expm1(tc.param)) - 0.5
			if m, _ := meanVar(xs); math.Abs(m-cont) > 0.02*N {
				t.Errorf("mean %.2f, continuous approximation %.2f", m, cont)
			}
		})
	}
}

// random_gaussian(lo, lo+N-1, a) returns lo + floor(N*(z+a)/(2a)), z a
// standard normal truncated to [-a, a): value lo+k has probability
// (Phi(a*(2k/N-1) + 2a/N) - Phi(a*(2k/N-1))) / (Phi(a) - Phi(-a)).
func TestGaussianDistribution(t *testing.T) {
	t.Parallel()
	phi := func(x float64) float64 { return 0.5 * (1 + math.Erf(x/math.Sqrt2)) }
	for _, tc := range []struct {
		n     int64
		param float64
	}{{100, 2}, {1000, 5}, {50, 10}} {
		t.Run(fmt.Sprint(tc.n, tc.param), func(t *testing.T) {
			xs := sample(t, fmt.Sprintf("random_gaussian(1, %d, %g)", tc.n, tc.param), 3, draws)
			a, N := tc.param, float64(tc.n)
			norm := phi(a) - phi(-a)
			p := make([]float64, tc.n)
			for k := range p {
				lo := a * (2*float64(k)/N - 1)
				p[k] = (phi(lo+2*a/N) - phi(lo)) / norm
			}
			checkDistribution(t, xs, 1, p)
			// documented shape: the middle 1/param of the range holds
			// (Phi(1) - Phi(-1)) / (Phi(a) - Phi(-a)) of the draws, about 67%
			want := (phi(1) - phi(-1)) / norm
			lo, hi := N/2-N/(2*a), N/2+N/(2*a) // offsets, value = 1 + offset
			var in float64
			for _, x := range xs {
				off := float64(x - 1)
				if off >= math.Ceil(lo) && off < math.Ceil(hi) {
					in++
				}
			}
			// cells are whole values: accept the discretisation slack
			if got := in / float64(len(xs)); math.Abs(got-want) > 0.01+2/N*a {
				t.Errorf("middle 1/param holds %.4f of draws, want about %.4f", got, want)
			}
		})
	}
}

// random_zipfian(1, N, s): value k has probability k^-s / H(N, s).
func TestZipfianDistribution(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n     int64
		s     float64
		draws int
	}{{1000, 1.5, draws}, {1000, 2.5, draws}, {100, 1.1, draws / 4}, {10, 3, draws / 4}} {
		t.Run(fmt.Sprint(tc.n, tc.s), func(t *testing.T) {
			xs := sample(t, fmt.Sprintf("random_zipfian(1, %d, %g)", tc.n, tc.s), 4, tc.draws)
			p := make([]float64, tc.n)
			var h float64
			for k := range p {
				p[k] = math.Pow(float64(k+1), -tc.s)
				h += p[k]
			}
			for k := range p {
				p[k] /= h
			}
			counts := make([]float64, tc.n+1)
			for _, x := range xs {
				counts[x]++
			}
			// frequency ratios of the first ranks follow k^-s
			for _, k := range []int{2, 3, 4} {
				if counts[k] < 500 {
					continue
				}
				ratio := counts[1] / counts[k]
				want := math.Pow(float64(k), tc.s)
				// relative error of a ratio of two counts
				rel := math.Sqrt(1/counts[1] + 1/counts[k])
				if math.Abs(ratio/want-1) > 5*rel {
					t.Errorf("f(1)/f(%d) = %.3f, want %.3f", k, ratio, want)
				}
			}
			for k := 1; k <= 5 && k <= int(tc.n); k++ {
				pk := p[k-1]
				sd := math.Sqrt(float64(len(xs)) * pk * (1 - pk))
				if d := counts[k] - float64(len(xs))*pk; math.Abs(d) > 5*sd {
					t.Errorf("rank %d: %v draws, want %.1f", k, counts[k], float64(len(xs))*pk)
				}
			}
		})
	}
}

// The PRNG is pg_prng: xoroshiro128** seeded through splitmix64. Reference
// outputs of the published algorithms for seed 0.
func TestPRNG(t *testing.T) {
	p := NewPRNG(0)
	// splitmix64 from state 0 gives 0xe220a8397b1dcdaf then 0x6e789e6aa1b965f4
	if p.s0 != 0xe220a8397b1dcdaf || p.s1 != 0x6e789e6aa1b965f4 {
		t.Fatalf("seeded state %#x %#x", p.s0, p.s1)
	}
	s0, s1 := p.s0, p.s1
	want := bitsRotl(s0*5, 7) * 9
	if got := p.Uint64(); got != want {
		t.Fatalf("first output %#x, want %#x", got, want)
	}
	_ = s1
	// uint64Range stays in range and covers it
	seen := make(map[uint64]bool)
	for i := 0; i < 1000; i++ {
		v := uint64Range(p.Uint64, 10, 14)
		if v < 10 || v > 14 {
			t.Fatalf("uint64Range gave %d", v)
		}
		seen[v] = true
	}
	if len(seen) != 5 {
		t.Fatalf("uint64Range covered %d of 5 values", len(seen))
	}
	if uint64Range(p.Uint64, 3, 3) != 3 {
		t.Fatal("empty range")
	}
}

func bitsRotl(x uint64, k uint) uint64 { return x<<k | x>>(64-k) }
