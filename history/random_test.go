package history

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// checkSerial checks a serial history offline and online: neither may
// find anything.
func checkSerial(t *testing.T, src source, cfg simConfig) {
	t.Helper()
	var rec collect
	simulate(src, cfg, &rec)
	off, err := Check(rec.attempts)
	if err != nil {
		t.Fatalf("offline: %v", err)
	}
	if len(off.Findings) > 0 {
		var b strings.Builder
		_ = off.WriteText(&b, Serializable, nil)
		t.Fatalf("a serial history of %d attempts (%+v) shows anomalies:\n%s", len(rec.attempts), cfg, b.String())
	}
	ch := NewChecker()
	if err := rec.replay(ch); err != nil {
		t.Fatalf("online: %v", err)
	}
	on, err := ch.Close()
	if err != nil {
		t.Fatalf("online: %v", err)
	}
	if len(on.Findings) > 0 {
		t.Fatalf("online, a serial history shows %v", classesOf(on))
	}
}

// FuzzSerialHistories: no serial execution of a list-append workload, with
// failed and unknown attempts, shows any anomaly.
func FuzzSerialHistories(f *testing.F) {
	f.Add([]byte{3, 2, 4, 3, 50, 5, 5})
	f.Add([]byte("a serial history of appends and reads, retried and retired"))
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &byteSource{b: data}
		checkSerial(t, src, serialConfig(src, 1))
	})
}

// serialConfig draws a serial history's shape from src; scale makes it
// larger.
func serialConfig(src source, scale int) simConfig {
	return simConfig{
		mode:      serial,
		clients:   1 + src.intn(4*scale),
		keys:      1 + src.intn(4*scale),
		maxWrites: 1 + src.intn(6*scale),
		maxOps:    1 + src.intn(4),
		attempts:  src.intn(200 * scale * scale),
		failed:    src.intn(30),
		unknown:   src.intn(30),
	}
}

// TestSerialHistories is the fuzz test's property on seeded histories, in
// every test run.
func TestSerialHistories(t *testing.T) {
	for seed := range uint64(300) {
		src := seeded(seed)
		cfg := serialConfig(src, 3)
		t.Run(fmt.Sprint(seed), func(t *testing.T) { checkSerial(t, src, cfg) })
	}
}

// Online and offline checks of the same attempts agree: same classes, same
// counts, same examples, on histories full of anomalies.
func TestOnlineAgreesWithOffline(t *testing.T) {
	total := map[Class]int{}
	swept := 0 // histories the online checker swept before Close
	const histories = 200
	for seed := range uint64(histories) {
		src := seeded(seed)
		cfg := simConfig{
			mode:      simMode(1 + src.intn(2)),
			clients:   1 + src.intn(10),
			keys:      1 + src.intn(8),
			maxWrites: 1 + src.intn(16),
			maxOps:    1 + src.intn(4),
			attempts:  src.intn(3000),
			failed:    src.intn(10),
			unknown:   src.intn(10),
			faults:    src.intn(3),
		}
		var rec collect
		simulate(src, cfg, &rec)
		off, err := Check(rec.attempts)
		if err != nil {
			t.Fatalf("seed %d: offline: %v", seed, err)
		}
		ch := NewChecker()
		// Sweep often: every cycle must survive being searched in parts.
		ch.minSweep = 1 + int(seed%50)
		ch.sweepAt = ch.minSweep
		if err := rec.replay(ch); err != nil {
			t.Fatalf("seed %d: online: %v", seed, err)
		}
		on, err := ch.Close()
		if err != nil {
			t.Fatalf("seed %d: online: %v", seed, err)
		}
		if !reflect.DeepEqual(off.Findings, on.Findings) || !reflect.DeepEqual(off.Incomplete, on.Incomplete) {
			var a, b strings.Builder
			_ = off.WriteText(&a, Serializable, nil)
			_ = on.WriteText(&b, Serializable, nil)
			t.Fatalf("seed %d (%+v): offline found\n%s\nonline found\n%s", seed, cfg, a.String(), b.String())
		}
		if on.Stats.Sweeps > 1 {
			swept++
		}
		for _, f := range off.Findings {
			total[f.Class] += f.Count
		}
	}
	// The histories exercised every class but those a simulated database
	// does not make (G0, G1b need a writer's own two appends reordered or
	// seen half).
	t.Logf("classes found over the histories: %v; %d of %d swept online", total, swept, histories)
	if swept < histories/2 {
		t.Errorf("only %d of %d histories were swept before Close", swept, histories)
	}
	for _, c := range []Class{G1a, GarbageRead, G1c, GSingle, G2Item, IncompatibleOrder, DuplicateElements, LostAppend} {
		if total[c] == 0 {
			t.Errorf("no history showed %s: the comparison did not cover it", c)
		}
	}
}

// The online checker holds what is still open, not the history: over a
// long run at read committed (anomalies everywhere) it keeps a bounded
// number of attempts and keys, and drops the rest.
func TestOnlineMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("checks 200,000 attempts")
	}
	for _, mode := range []simMode{readCommitted, snapshot} {
		cfg := simConfig{mode: mode, clients: 16, keys: 10, maxWrites: 32, maxOps: 4, attempts: 200_000, failed: 2, unknown: 1, faults: 1}
		ch := NewChecker()
		o := &online{c: ch}
		simulate(seeded(7), cfg, o)
		if o.err != nil {
			t.Fatal(o.err)
		}
		s := ch.Stats()
		r, err := ch.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("mode %d: %+v; found %v", mode, s, classesOf(r))
		if s.PeakTxns > 3*defaultMinSweep || s.PeakKeys > 200 {
			t.Errorf("mode %d: the online checker held up to %d attempts and %d keys of %d attempts", mode, s.PeakTxns, s.PeakKeys, s.Attempts)
		}
		if len(r.Findings) == 0 {
			t.Errorf("mode %d: no anomalies found in a history with faults", mode)
		}
	}
}

// An attempt that breaks the online promises is an error, not a wrong
// answer.
func TestOnlinePromises(t *testing.T) {
	for _, tc := range []struct {
		name string
		feed func(c *Checker) error
		want string
	}{
		{"an attempt on a retired key", func(c *Checker) error {
			if err := c.Retire(1, us(10)); err != nil {
				return err
			}
			return c.Add(at(0, 10, 20, Committed, R(1)))
		}, "touches key 1, retired at 10000 ns"},
		{"an attempt on a key retired and final", func(c *Checker) error {
			if err := c.Add(at(0, 0, 5, Committed, A(1, 1))); err != nil {
				return err
			}
			if err := c.Retire(1, us(10)); err != nil {
				return err
			}
			if err := c.Progress(us(10)); err != nil {
				return err
			}
			return c.Add(at(0, 12, 20, Committed, R(1, 1)))
		}, "touches key 1, retired and final"},
		{"a client's attempt invoked before its previous one completed", func(c *Checker) error {
			if err := c.Add(at(3, 0, 20, Committed, R(1))); err != nil {
				return err
			}
			return c.Add(at(3, 10, 30, Committed, R(2)))
		}, "client 3 invoked an attempt at 10000 ns, before its previous attempt completed at 20000 ns"},
		{"an attempt invoked before the progress mark", func(c *Checker) error {
			if err := c.Progress(us(10)); err != nil {
				return err
			}
			return c.Add(at(0, 5, 20, Committed, R(1)))
		}, "before the progress mark"},
		{"a key retired twice", func(c *Checker) error {
			if err := c.Retire(1, us(10)); err != nil {
				return err
			}
			return c.Retire(1, us(20))
		}, "key 1 retired twice"},
		{"a value appended twice", func(c *Checker) error {
			if err := c.Add(at(0, 0, 5, Committed, A(1, 1))); err != nil {
				return err
			}
			if err := c.Add(at(1, 0, 5, Unknown, A(1, 1))); err != nil {
				return err
			}
			_, err := c.Close()
			return err
		}, "value 1 appended to key 1 twice, by attempt 0 and attempt 1"},
		{"an invalid attempt", func(c *Checker) error {
			return c.Add(at(0, 5, 1, Committed, R(1)))
		}, "attempt 0: invoke time 5000 ns is after the completion time 1000 ns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.feed(NewChecker())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// A search cut short by its budget says so: a class it may have missed is
// not ruled out, never reported absent; G0 and G1c, and any cycle at
// serializable, are decided whatever the budget.
func TestSearchBudget(t *testing.T) {
	var rec collect
	simulate(seeded(11), simConfig{mode: readCommitted, clients: 12, keys: 6, maxWrites: 40, maxOps: 4, attempts: 5000, faults: 1}, &rec)
	full, err := Check(rec.attempts)
	if err != nil {
		t.Fatal(err)
	}
	c := NewChecker()
	c.budget = 1
	for _, a := range rec.attempts {
		if err := c.Add(a); err != nil {
			t.Fatal(err)
		}
	}
	cut, err := c.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("full search: %v; cut: %v, not ruled out %v", classesOf(full), classesOf(cut), cut.Incomplete)
	if len(cut.Incomplete) == 0 {
		t.Fatal("no search stopped at a budget of one edge")
	}
	for _, cl := range []Class{G0, G1c} {
		if cut.Count(cl) != full.Count(cl) {
			t.Errorf("%s: %d with the budget cut, %d without", cl, cut.Count(cl), full.Count(cl))
		}
	}
	for _, f := range full.Findings {
		if cut.Count(f.Class) == 0 && cut.Incomplete[f.Class] == 0 {
			t.Errorf("%s found by the full search, neither found nor left open by the cut one", f.Class)
		}
	}
	if full.Stats.SCCs > 0 && !cut.Verdict(Serializable).Violation {
		t.Error("cycles, and no violation at serializable")
	}
	for _, cl := range Classes() {
		if cut.Incomplete[cl] > 0 && cut.Count(cl) == 0 && Serializable.Forbids(cl) {
			v := cut.Verdict(RepeatableRead)
			if RepeatableRead.Forbids(cl) && !v.Violation && !slices.Contains(v.Undecided, cl) {
				t.Errorf("%s not ruled out, and the verdict at repeatable read does not say so: %+v", cl, v)
			}
		}
	}
	var b strings.Builder
	_ = cut.WriteText(&b, RepeatableRead, nil)
	if n := cut.Incomplete[GNonadjacent]; n > 0 && cut.Count(GNonadjacent) == 0 && !strings.Contains(b.String(), "G-nonadjacent: not ruled out") {
		t.Errorf("the text does not say G-nonadjacent is not ruled out:\n%s", b.String())
	}
}
