package pgio

import "math/rand/v2"

// Kind is a statement kind.
type Kind int

// The kinds, in the order of the run's operations.
const (
	Select Kind = iota
	Update
	numKinds
)

func (k Kind) String() string { return [...]string{"select", "update"}[k] }

// Chooser picks each statement's kind in windows of 100 statements, as
// pgio's mypgio() does: every whole window of a session holds exactly pct
// updates. pgio makes a statement an update on a coin toss (the key's
// parity) until the window's quota is reached, which bunches the updates at
// the start of each window (at 20%, all of them in its first 40 or so
// statements); here each statement of a window is an update with
// probability (updates left)/(statements left), so the window's updates are
// a uniform random choice of pct of its 100 positions. The server-mode
// procedure applies the same rule.
type Chooser struct {
	pct        int
	rng        *rand.Rand
	n, updates int // statements and updates so far in the current window
}

// NewChooser returns a chooser for pct updates drawing from rng.
func NewChooser(pct int, rng *rand.Rand) *Chooser { return &Chooser{pct: pct, rng: rng} }

// Next returns the next statement's kind.
func (c *Chooser) Next() Kind {
	k := Select
	if left := c.pct - c.updates; left > 0 && c.rng.IntN(100-c.n) < left {
		k = Update
	}
	if k == Update {
		c.updates++
	}
	if c.n++; c.n == 100 {
		c.n, c.updates = 0, 0
	}
	return k
}

// Key draws the first key of a statement whose first keys run from 1 to
// first (Config.Span), uniformly.
func Key(rng *rand.Rand, first int64) int64 { return 1 + rng.Int64N(first) }
