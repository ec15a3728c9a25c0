package tpcc

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
)

// The sizes of clause 1.2 and 4.3.
const (
	items                = 100000 // item rows, and stock rows per warehouse
	districtsPerWH       = 10
	customersPerDistrict = 3000
	ordersPerDistrict    = 3000
	newOrdersPerDistrict = 900  // the last 900 orders of a district are undelivered
	firstNewOrder        = 2101 // ordersPerDistrict - newOrdersPerDistrict + 1
	// unusedItem is the item id of a New-Order rolled back on purpose
	// (clause 2.4.1.4): one beyond the last.
	unusedItem = items + 1
)

// NURand's A per field (clause 2.1.6).
const (
	aLast = 255
	aCID  = 1023
	aItem = 8191
)

// CValues are NURand's run-time constants C (clause 2.1.6): one per field.
type CValues struct {
	Last, CID, Item int
}

func (c CValues) String() string {
	return fmt.Sprintf("C_LAST %d, C_ID %d, OL_I_ID %d", c.Last, c.CID, c.Item)
}

// loadC draws the constants the load uses.
func loadC(r *rand.Rand) CValues {
	return CValues{Last: randInt(r, 0, aLast), CID: randInt(r, 0, aCID), Item: randInt(r, 0, aItem)}
}

// runC draws the constants of a run from the load's (clause 2.1.6.1): C_ID
// and OL_I_ID any value; C_LAST at a distance from the load's in [65, 119],
// neither 96 nor 112, so that the run's last names differ from the
// load's in the way the spec asks.
func runC(r *rand.Rand, load CValues) CValues {
	c := CValues{CID: randInt(r, 0, aCID), Item: randInt(r, 0, aItem)}
	for {
		c.Last = randInt(r, 0, aLast)
		if validDelta(c.Last, load.Last) {
			return c
		}
	}
}

// validDelta says whether C_LAST of a run may follow that of the load.
func validDelta(run, load int) bool {
	d := run - load
	if d < 0 {
		d = -d
	}
	return d >= 65 && d <= 119 && d != 96 && d != 112
}

// randInt is uniform in [lo, hi].
func randInt(r *rand.Rand, lo, hi int) int { return lo + r.IntN(hi-lo+1) }

// nuRand is NURand(A, x, y) with constant c (clause 2.1.6).
func nuRand(r *rand.Rand, a, c, x, y int) int {
	return ((randInt(r, 0, a)|randInt(r, x, y))+c)%(y-x+1) + x
}

var syllables = [10]string{"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}

// appendLastName appends the last name of number n in [0, 999]: its three
// digits as syllables (clause 4.3.2.3).
func appendLastName(dst []byte, n int) []byte {
	dst = append(dst, syllables[n/100]...)
	dst = append(dst, syllables[n/10%10]...)
	return append(dst, syllables[n%10]...)
}

// lastName is appendLastName as a string.
func lastName(n int) string { return string(appendLastName(nil, n)) }

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// gen draws a load's values and writes them as COPY text: the strings'
// characters come eight to a 64-bit draw of its PCG, called directly.
type gen struct {
	r   *rand.Rand
	pcg *rand.PCG
}

func newGen(seed1, seed2 uint64) *gen {
	pcg := rand.NewPCG(seed1, seed2)
	return &gen{r: rand.New(pcg), pcg: pcg}
}

// fill appends n characters of set, each drawn uniformly: a byte of a
// draw below the largest multiple of len(set) picks set[b % len(set)].
func (g *gen) fill(dst []byte, n int, set string) []byte {
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	out := dst[start:]
	limit := byte(256 / len(set) * len(set) % 256)
	if limit == 0 {
		limit = 255
	}
	i := 0
	for i < n {
		v := g.pcg.Uint64()
		for k := 0; k < 8 && i < n; k++ {
			if b := byte(v); b < limit {
				out[i] = set[int(b)%len(set)]
				i++
			}
			v >>= 8
		}
	}
	return dst
}

// alnum appends a random alphanumeric string of length in [lo, hi] (an
// a-string, clause 4.3.2.2).
func (g *gen) alnum(dst []byte, lo, hi int) []byte {
	return g.fill(dst, randInt(g.r, lo, hi), alnum)
}

// digits appends n random digits (an n-string).
func (g *gen) digits(dst []byte, n int) []byte { return g.fill(dst, n, "0123456789") }

// data appends an a-string of [26, 50] with "ORIGINAL" at a random place
// in 10% of the rows (i_data, s_data: clause 4.3.3.1).
func (g *gen) data(dst []byte) []byte {
	start := len(dst)
	dst = g.alnum(dst, 26, 50)
	if g.r.IntN(10) == 0 {
		n := len(dst) - start
		at := start + g.r.IntN(n-8+1)
		copy(dst[at:], "ORIGINAL")
	}
	return dst
}

// zip appends a zip code: 4 random digits and "11111".
func (g *gen) zip(dst []byte) []byte { return append(g.digits(dst, 4), "11111"...) }

// address appends street 1, street 2, city, state and zip, tab-separated.
func (g *gen) address(dst []byte) []byte {
	dst = g.alnum(dst, 10, 20)
	dst = append(dst, '\t')
	dst = g.alnum(dst, 10, 20)
	dst = append(dst, '\t')
	dst = g.alnum(dst, 10, 20)
	dst = append(dst, '\t')
	dst = g.letters(dst, 2)
	dst = append(dst, '\t')
	return g.zip(dst)
}

// letters appends n random upper-case letters.
func (g *gen) letters(dst []byte, n int) []byte { return g.fill(dst, n, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") }

// fixed appends v / 10^scale with scale decimals: 1234, 2 is 12.34.
func fixed(dst []byte, v int64, scale int) []byte {
	if v < 0 {
		dst = append(dst, '-')
		v = -v
	}
	p := int64(1)
	for range scale {
		p *= 10
	}
	dst = strconv.AppendInt(dst, v/p, 10)
	if scale == 0 {
		return dst
	}
	dst = append(dst, '.')
	frac := v % p
	for q := p / 10; q > 0; q /= 10 {
		dst = append(dst, byte('0'+frac/q%10))
	}
	return dst
}

// permutation returns 1..n in random order (o_c_id: clause 4.3.3.1).
func permutation(r *rand.Rand, n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(i + 1)
	}
	r.Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}
