package vote

import (
	"math"
	"math/rand/v2"
)

// Zipf draws ranks 1..n with P(k) ∝ 1/k^s for any s > 0, by rejection
// inversion (W. Hörmann and G. Derflinger, "Rejection-inversion to generate
// variates from monotone discrete distributions", 1996), in constant time and
// memory whatever n.
type Zipf struct {
	rng               *rand.Rand
	n                 float64
	s                 float64 // exponent
	hX1, hN, tolerate float64
}

// NewZipf returns a sampler of ranks 1..n with exponent s > 0 drawing from rng.
func NewZipf(rng *rand.Rand, n int64, s float64) *Zipf {
	z := &Zipf{rng: rng, n: float64(n), s: s}
	z.hX1 = z.hIntegral(1.5) - 1
	z.hN = z.hIntegral(float64(n) + 0.5)
	z.tolerate = 2 - z.hIntegralInverse(z.hIntegral(2.5)-z.h(2))
	return z
}

// Next returns a rank in [1, n].
func (z *Zipf) Next() int64 {
	for {
		u := z.hN + z.rng.Float64()*(z.hX1-z.hN)
		x := z.hIntegralInverse(u)
		k := math.Floor(x + 0.5)
		if k < 1 {
			k = 1
		} else if k > z.n {
			k = z.n
		}
		if k-x <= z.tolerate || u >= z.hIntegral(k+0.5)-z.h(k) {
			return int64(k)
		}
	}
}

// h is the density 1/x^s.
func (z *Zipf) h(x float64) float64 { return math.Exp(-z.s * math.Log(x)) }

// hIntegral is an antiderivative of h: (x^(1-s) - 1)/(1-s), log x at s = 1.
func (z *Zipf) hIntegral(x float64) float64 {
	lx := math.Log(x)
	return helper2((1-z.s)*lx) * lx
}

func (z *Zipf) hIntegralInverse(x float64) float64 {
	t := x * (1 - z.s)
	if t < -1 {
		t = -1 // rounding near the bound
	}
	return math.Exp(helper1(t) * x)
}

// helper1 is log1p(x)/x, accurate near 0.
func helper1(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*(1.0/3-0.25*x))
}

// helper2 is expm1(x)/x, accurate near 0.
func helper2(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x*0.5*(1+x/3*(1+0.25*x))
}
