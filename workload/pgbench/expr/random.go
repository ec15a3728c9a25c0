package expr

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// Limits of the random function parameters, as in pgbench.c.
const (
	minGaussianParam = 2.0
	minZipfianParam  = 1.001
	maxZipfianParam  = 1000.0
)

// PRNG is PostgreSQL's pg_prng (xoroshiro128** 1.0, seeded through
// splitmix64). It is a rand.Source: rand.New(expr.NewPRNG(seed)) gives an
// Env.Rand whose draws are those of a pgbench client whose generator was
// seeded with seed, and the random functions here consume it exactly as
// pgbench does, so they then return pgbench's very values.
type PRNG struct{ s0, s1 uint64 }

// NewPRNG returns a generator seeded like pg_prng_seed(state, seed).
func NewPRNG(seed uint64) *PRNG {
	p := &PRNG{}
	p.Seed(seed)
	return p
}

func splitmix64(state *uint64) uint64 {
	*state += 0x9E3779B97f4A7C15
	v := *state
	v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9
	v = (v ^ (v >> 27)) * 0x94D049BB133111EB
	return v ^ (v >> 31)
}

// Seed re-seeds the generator as pg_prng_seed does.
func (p *PRNG) Seed(seed uint64) {
	p.s0 = splitmix64(&seed)
	p.s1 = splitmix64(&seed)
	if p.s0 == 0 && p.s1 == 0 {
		p.s0 = 0x5851F42D4C957F2D
		p.s1 = 0x14057B7EF767814F
	}
}

// Uint64 is pg_prng_uint64: the next xoroshiro128** output.
func (p *PRNG) Uint64() uint64 {
	s0 := p.s0
	sx := p.s1 ^ s0
	val := bits.RotateLeft64(s0*5, 7) * 9
	p.s0 = bits.RotateLeft64(s0, 24) ^ sx ^ (sx << 16)
	p.s1 = bits.RotateLeft64(sx, 37)
	return val
}

// uint64Range is pg_prng_uint64_range over any 64-bit source: bitmask
// rejection.
func uint64Range(next func() uint64, rmin, rmax uint64) uint64 {
	if rmax <= rmin {
		return rmin
	}
	rng := rmax - rmin
	rshift := uint(bits.LeadingZeros64(rng))
	for {
		v := next() >> rshift
		if v <= rng {
			return rmin + v
		}
	}
}

// PgbenchSeeds reproduces how pgbench 15 run with --random-seed=seed and
// the given number of clients seeds them: client i's generator for the
// random functions is NewPRNG(clientSeeds[i]) (so
// rand.New(NewPRNG(clientSeeds[i])) as Env.Rand replays its draws), and
// :default_seed is defaultSeed unless -D default_seed is given.
func PgbenchSeeds(seed uint64, clients int) (clientSeeds []uint64, defaultSeed int64) {
	base := NewPRNG(seed)
	clientSeeds = make([]uint64, max(clients, 0))
	for i := range clientSeeds {
		clientSeeds[i] = base.Uint64()
	}
	return clientSeeds, int64(base.Uint64())
}

// HashFNV1a is pgbench's hash_fnv1a(val, seed) (getHashFnv1a).
func HashFNV1a(val, seed int64) int64 {
	const (
		fnvPrime       = 0x100000001b3
		fnvOffsetBasis = 0xcbf29ce484222325
	)
	result := uint64(fnvOffsetBasis) ^ uint64(seed)
	for i := 0; i < 8; i++ {
		octet := uint64(val & 0xff)
		val >>= 8
		result ^= octet
		result *= fnvPrime
	}
	return int64(result)
}

// HashMurmur2 is pgbench's hash_murmur2(val, seed) and hash(val, seed)
// (getHashMurmur2, MurmurHash64A of the 8 bytes of val).
func HashMurmur2(val, seed int64) int64 {
	const (
		mul       = 0xc6a4a7935bd1e995
		mulTimes8 = 0x35253c9ade8f4ca8
		rot       = 47
	)
	result := uint64(seed) ^ mulTimes8
	k := uint64(val)
	k *= mul
	k ^= k >> rot
	k *= mul
	result ^= k
	result *= mul
	result ^= result >> rot
	result *= mul
	result ^= result >> rot
	return int64(result)
}

// Permute is pgbench's permute(val, size, seed): a pseudorandom
// permutation of [0, size), bit-exact with pgbench 15. A size below 2
// gives 0 (the caller rejects sizes <= 0 as pgbench does).
func Permute(val, isize, seed int64) int64 {
	if isize < 2 {
		return 0
	}
	var st PRNG
	st.Seed(uint64(seed))
	size := uint64(isize)
	v := uint64(val) % size
	masklen := uint(63 - bits.LeadingZeros64(size))
	mask := (uint64(1) << masklen) - 1
	for i := 0; i < 6; i++ {
		m := (st.Uint64() & mask) | 1
		r := st.Uint64() & mask
		if v <= mask {
			v = ((v * m) ^ r) & mask
			v = ((v << 1) & mask) | (v >> (masklen - 1))
		}
		m = (st.Uint64() & mask) | 1
		r = st.Uint64() & mask
		t := size - 1 - v
		if t <= mask {
			t = ((t * m) ^ r) & mask
			t = ((t << 1) & mask) | (t >> (masklen - 1))
			v = size - 1 - t
		}
		r = uint64Range(st.Uint64, 0, size-1)
		v = (v + r) % size
	}
	return int64(v)
}

// randSource returns the generator's Uint64: Env.Rand, or the global
// generator when there is none.
func randSource(env *Env) func() uint64 {
	if env != nil && env.Rand != nil {
		return env.Rand.Uint64
	}
	return rand.Uint64
}

// prngDouble is pg_prng_double: a uniform double in [0, 1) with 52 bits.
func prngDouble(next func() uint64) float64 {
	return math.Ldexp(float64(next()>>12), -52)
}

func randomFunc(env *Env, fn funcID, args []Value) (Value, error) {
	imin, err := coerceToInt(args[0])
	if err != nil {
		return Value{}, err
	}
	imax, err := coerceToInt(args[1])
	if err != nil {
		return Value{}, err
	}
	if imin > imax {
		return Value{}, errors.New("empty range given to random")
	}
	// imax - imin + 1 must not overflow
	if d := imax - imin; d < 0 || d == math.MaxInt64 {
		return Value{}, errors.New("random range is too large")
	}
	next := randSource(env)
	if fn == fRandom {
		return Value{Kind: Int, I: imin + int64(uint64Range(next, 0, uint64(imax-imin)))}, nil
	}
	param, err := coerceToDouble(args[2])
	if err != nil {
		return Value{}, err
	}
	switch fn {
	case fRandomGaussian:
		if param < minGaussianParam {
			return Value{}, fmt.Errorf("gaussian parameter must be at least %s (not %s)",
				cfmtF(minGaussianParam), cfmtF(param))
		}
		return Value{Kind: Int, I: gaussianRand(next, imin, imax, param)}, nil
	case fRandomZipfian:
		// pgbench lets NaN through and then loops forever; refuse it
		if !(param >= minZipfianParam && param <= maxZipfianParam) {
			return Value{}, fmt.Errorf("zipfian parameter must be in range [%.3f, %.0f] (not %s)",
				minZipfianParam, maxZipfianParam, cfmtF(param))
		}
		return Value{Kind: Int, I: zipfianRand(next, imin, imax, param)}, nil
	default:
		if param <= 0 {
			return Value{}, fmt.Errorf("exponential parameter must be greater than zero (not %s)", cfmtF(param))
		}
		return Value{Kind: Int, I: exponentialRand(next, imin, imax, param)}, nil
	}
}

// exponentialRand is getExponentialRand: the density at the last value is
// exp(-param) times that at the first.
func exponentialRand(next func() uint64, min, max int64, param float64) int64 {
	cut := math.Exp(-param)
	uniform := 1.0 - prngDouble(next) // (0, 1]
	r := -math.Log(cut+(1.0-cut)*uniform) / param
	return min + int64(float64(max-min+1)*r)
}

// gaussianRand is getGaussianRand: a normal variate (Box-Muller, as
// pg_prng_double_normal) redrawn until it is in [-param, param), mapped
// onto [min, max].
func gaussianRand(next func() uint64, min, max int64, param float64) int64 {
	var stdev float64
	for {
		u1 := 1.0 - prngDouble(next)
		u2 := 1.0 - prngDouble(next)
		stdev = math.Sqrt(-2.0*math.Log(u1)) * math.Sin(2.0*math.Pi*u2)
		if !(stdev < -param || stdev >= param) {
			break
		}
	}
	r := (stdev + param) / (param * 2.0)
	return min + int64(float64(max-min+1)*r)
}

// zipfianRand is getZipfianRand / computeIterativeZipfian: Devroye's
// rejection method (Non-Uniform Random Variate Generation, p. 550-551).
func zipfianRand(next func() uint64, min, max int64, s float64) int64 {
	n := max - min + 1
	return min - 1 + iterativeZipfian(next, n, s)
}

func iterativeZipfian(next func() uint64, n int64, s float64) int64 {
	if n <= 1 {
		return 1
	}
	b := math.Pow(2.0, s-1.0)
	nf := float64(n)
	for {
		u := prngDouble(next)
		v := prngDouble(next)
		x := math.Floor(math.Pow(u, -1.0/(s-1.0)))
		t := math.Pow(1.0+1.0/x, s-1.0)
		if v*x*(t-1.0)/(b-1.0) <= t/b && x <= nf {
			return int64(x)
		}
	}
}
