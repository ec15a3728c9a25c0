package ycsb

import (
	"math"
	"math/rand/v2"
	"strconv"
)

// The generators below are YCSB's (site.ycsb.generator, core 0.17), line
// for line where the numbers depend on it: the same draws for the same
// uniform variates.

// fnvhash64 is YCSB's Utils.fnvhash64: FNV-1a over the 8 bytes of v, low
// byte first, as a non-negative long (Java's Math.abs, under which the
// smallest long stays negative).
func fnvhash64(v int64) int64 {
	h := uint64(0xCBF29CE484222325)
	for range 8 {
		h ^= uint64(v & 0xff)
		v >>= 8
		h *= 1099511628211
	}
	r := int64(h)
	if r < 0 {
		r = -r
	}
	return r
}

// appendKey appends the key of record keynum as YCSB builds it
// (CoreWorkload.buildKeyName with insertorder=hashed, zeropadding=1):
// "user" and the hash in decimal.
func appendKey(b []byte, keynum int64) []byte {
	return strconv.AppendInt(append(b, "user"...), fnvhash64(keynum), 10)
}

// zipfianConstant is YCSB's ZipfianGenerator.ZIPFIAN_CONSTANT.
const zipfianConstant = 0.99

// zeta adds the terms st..n-1 of ζ(n, theta) to initial
// (ZipfianGenerator.zetastatic).
func zeta(st, n int64, theta, initial float64) float64 {
	sum := initial
	for i := st; i < n; i++ {
		sum += 1 / math.Pow(float64(i+1), theta)
	}
	return sum
}

// zipfian is YCSB's ZipfianGenerator: Gray et al.'s method ("Quickly
// Generating Billion-Record Synthetic Databases", SIGMOD 1994), items
// base..base+items-1, the most popular first. Asked for more items than
// its ζ covers, it extends ζ incrementally (the latest distribution); as in
// YCSB, eta keeps the item count it was made with.
type zipfian struct {
	items, base                     int64
	theta, alpha, zetan, eta, zeta2 float64
	countForZeta                    int64
	half                            float64 // 0.5^theta
}

// newZipfian makes the generator of min..max with ζ(max-min+1) given.
func newZipfian(min, max int64, theta, zetan float64) *zipfian {
	z := &zipfian{items: max - min + 1, base: min, theta: theta, zetan: zetan, half: math.Pow(0.5, theta)}
	z.zeta2 = zeta(0, 2, theta, 0)
	z.alpha = 1 / (1 - theta)
	z.countForZeta = z.items
	z.eta = (1 - math.Pow(2/float64(z.items), 1-theta)) / (1 - z.zeta2/z.zetan)
	return z
}

// next draws one of itemcount items (ZipfianGenerator.nextLong).
func (z *zipfian) next(rng *rand.Rand, itemcount int64) int64 {
	if itemcount > z.countForZeta {
		z.zetan = zeta(z.countForZeta, itemcount, z.theta, z.zetan)
		z.countForZeta = itemcount
		z.eta = (1 - math.Pow(2/float64(z.items), 1-z.theta)) / (1 - z.zeta2/z.zetan)
	}
	u := rng.Float64()
	uz := u * z.zetan
	if uz < 1 {
		return z.base
	}
	if uz < 1+z.half {
		return z.base + 1
	}
	return z.base + int64(float64(itemcount)*math.Pow(z.eta*u-z.eta+1, z.alpha))
}

// The scrambled zipfian draws from a zipfian over scrambledItems items,
// whose ζ YCSB precomputed, and spreads the popular ones over the key
// space by hashing (ScrambledZipfianGenerator).
const (
	scrambledItems = 10000000000
	scrambledZetan = 26.46902820178302
)

// scrambled is YCSB's ScrambledZipfianGenerator of min..max.
type scrambled struct {
	gen            *zipfian
	min, itemcount int64
}

func newScrambled(min, max int64) *scrambled {
	return &scrambled{gen: newZipfian(0, scrambledItems, zipfianConstant, scrambledZetan), min: min, itemcount: max - min + 1}
}

func (s *scrambled) next(rng *rand.Rand) int64 {
	return s.min + fnvhash64(s.gen.next(rng, s.gen.items))%s.itemcount
}

// latest is YCSB's SkewedLatestGenerator over the records acknowledged so
// far: the newest the most popular.
type latest struct{ gen *zipfian }

// newLatest makes the generator when last is the newest record
// (ZipfianGenerator(basis.lastValue()), whose ζ is zetan).
func newLatest(last int64, zetan float64) *latest {
	return &latest{gen: newZipfian(0, last-1, zipfianConstant, zetan)}
}

// next draws a record when last is the newest.
func (l *latest) next(rng *rand.Rand, last int64) int64 { return last - l.gen.next(rng, last) }

// hotspot is YCSB's HotspotIntegerGenerator: a fraction of the operations
// on a fraction of the records, the first ones.
type hotspot struct {
	lower, hot, cold int64
	opn              float64
}

func newHotspot(lower, upper int64, dataFraction, opnFraction float64) *hotspot {
	interval := upper - lower + 1
	hot := int64(float64(interval) * dataFraction)
	return &hotspot{lower: lower, hot: hot, cold: interval - hot, opn: opnFraction}
}

func (h *hotspot) next(rng *rand.Rand) int64 {
	if rng.Float64() < h.opn {
		return h.lower + rng.Int64()%h.hot
	}
	return h.lower + h.hot + rng.Int64()%h.cold
}

// uniform draws lower..upper alike (UniformLongGenerator).
func uniform(rng *rand.Rand, lower, upper int64) int64 {
	return lower + rng.Int64()%(upper-lower+1)
}

// discrete draws an index of weights with the probability of its share
// (DiscreteGenerator: the weights need not add up to 1).
func discrete(rng *rand.Rand, weights []float64, sum float64) int {
	val := rng.Float64()
	for i, w := range weights {
		pw := w / sum
		if val < pw {
			return i
		}
		val -= pw
	}
	return len(weights) - 1
}
