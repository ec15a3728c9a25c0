package tpcc

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// NURand stays in its range and is skewed as clause 2.1.6 makes it: its
// most frequent values are far above the uniform share.
func TestNURand(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ a, x, y int }{{aLast, 0, 999}, {aCID, 1, 3000}, {aItem, 1, 100000}} {
		counts := map[int]int{}
		const n = 200000
		for range n {
			v := nuRand(r, tc.a, 17, tc.x, tc.y)
			if v < tc.x || v > tc.y {
				t.Fatalf("NURand(%d, %d, %d) = %d: out of range", tc.a, tc.x, tc.y, v)
			}
			counts[v]++
		}
		top := 0
		for _, c := range counts {
			top = max(top, c)
		}
		if uniform := float64(n) / float64(tc.y-tc.x+1); float64(top) < 3*uniform {
			t.Errorf("NURand(%d, %d, %d): most frequent value drawn %d times, the uniform share is %.1f: not skewed", tc.a, tc.x, tc.y, top, uniform)
		}
	}
}

// The run's C_LAST keeps the distance clause 2.1.6.1 asks from the
// load's, whatever the load's.
func TestRunC(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for load := 0; load <= aLast; load++ {
		c := runC(r, CValues{Last: load})
		d := int(math.Abs(float64(c.Last - load)))
		if d < 65 || d > 119 || d == 96 || d == 112 || c.Last < 0 || c.Last > aLast {
			t.Fatalf("load C_LAST %d: run C_LAST %d (delta %d)", load, c.Last, d)
		}
	}
}

func TestLastName(t *testing.T) {
	for n, want := range map[int]string{0: "BARBARBAR", 371: "PRICALLYOUGHT", 999: "EINGEINGEING", 40: "BARPRESBAR"} {
		if got := lastName(n); got != want {
			t.Errorf("lastName(%d) = %s, want %s", n, got, want)
		}
	}
}

// The deck deals every 23 transactions 10/10/1/1/1, and 1% of the
// New-Orders to roll back.
func TestDeck(t *testing.T) {
	deal := deck(rand.New(rand.NewPCG(5, 6)))
	var total [numOps]int
	for range 10000 {
		var hand [numOps]int
		for range 23 {
			hand[deal()]++
		}
		if hand[opNewOrder]+hand[opNewOrderRollback] != 10 || hand[opPayment] != 10 || hand[opOrderStatus] != 1 || hand[opDelivery] != 1 || hand[opStockLevel] != 1 {
			t.Fatalf("a deck dealt %v", hand)
		}
		for i, n := range hand {
			total[i] += n
		}
	}
	if pct := 100 * float64(total[opNewOrderRollback]) / 100000; pct < 0.8 || pct > 1.2 {
		t.Errorf("%.2f%% of New-Orders rolled back, want 1%%", pct)
	}
}

// A terminal's pause is the think time of the transaction that ended (a
// negative exponential of its mean, at most 10 times it) and the keying
// time of the next, scaled.
func TestPauses(t *testing.T) {
	p := pauses(rand.New(rand.NewPCG(7, 8)), 0.5)
	if d := p(-1, opNewOrder); d != 9*time.Second {
		t.Errorf("first New-Order's pause %s, want its keying time 18s × 0.5", d)
	}
	var sum time.Duration
	const n = 100000
	for range n {
		d := p(opDelivery, opStockLevel) - time.Second // keying 2s × 0.5
		if d < 0 || d > 25*time.Second {
			t.Fatalf("think time after Delivery %s: out of [0, 10 × 5s × 0.5]", d)
		}
		sum += d
	}
	if mean := sum.Seconds() / n; math.Abs(mean-2.5) > 0.05 {
		t.Errorf("mean think time after Delivery %.3fs, want 5s × 0.5", mean)
	}
}

// Terminals: with --wait, 10 per warehouse, one per district; without,
// clients go round the warehouses.
func TestTerminal(t *testing.T) {
	g := newGenerator()
	g.cfg.warehouses = 3
	if w, d := g.terminal(4); w != 2 || d != 2 {
		t.Errorf("client 4 of 3 warehouses: warehouse %d district %d, want 2, 2", w, d)
	}
	g.cfg.wait = 1
	for gid, want := range map[int][2]int{0: {1, 1}, 9: {1, 10}, 10: {2, 1}, 29: {3, 10}} {
		if w, d := g.terminal(gid); w != want[0] || d != want[1] {
			t.Errorf("terminal %d: warehouse %d district %d, want %v", gid, w, d, want)
		}
	}
}
