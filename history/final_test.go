package history

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// finalHistory is a serial history whose keys end as: key 1 [1 2 3] (reads
// saw [1 2], 3 committed unread, 4 only failed), key 2 [1] and maybe 2 (an
// unknown append no read holds), key 3 [1] (an unknown append a committed
// read holds: it committed).
func finalHistory() []Attempt {
	return []Attempt{
		at(0, 0, 10, Committed, A(1, 1), A(2, 1)),
		at(1, 20, 30, Committed, R(1, 1), A(1, 2)),
		at(0, 40, 50, Committed, R(1, 1, 2), A(1, 3)),
		at(1, 60, 70, Failed, A(1, 4)),
		at(2, 80, 90, Unknown, A(2, 2)),
		at(0, 100, 110, Unknown, A(3, 1)),
		at(1, 120, 130, Committed, R(3, 1)),
	}
}

// checkWithFinal checks h, then the final read lists (key: list; a key
// left out has no list), keys retired and final before it when online.
func checkWithFinal(t *testing.T, h []Attempt, lists map[int64][]int64, online bool) *Result {
	t.Helper()
	c := NewChecker()
	if err := c.ExpectFinal(); err != nil {
		t.Fatal(err)
	}
	for _, a := range h {
		if err := c.Add(a); err != nil {
			t.Fatal(err)
		}
	}
	if online {
		end := h[len(h)-1].Complete + 1
		for _, k := range []int64{1, 2, 3} {
			if err := c.Retire(k, end); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Progress(end); err != nil {
			t.Fatal(err)
		}
		if n := c.Stats().LiveKeys; n != 0 {
			t.Fatalf("%d keys live after every key retired", n)
		}
	}
	if _, err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Key 3's only append is of unknown outcome, but a committed read
	// held it: the final read must find its list.
	if lo, hi, ok := c.FinalRange(); lo != 1 || hi != 3 || !ok {
		t.Errorf("FinalRange %d, %d, %v; want 1, 3, true", lo, hi, ok)
	}
	keys := slices.Sorted(maps.Keys(lists))
	res, err := c.CheckFinal(math.MinInt64, math.MaxInt64, func(read func(int64, []int64) error) error {
		for _, k := range keys {
			if err := read(k, lists[k]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The final read is held to the history: each way the database can differ
// from what the history wrote is its class, online (keys final long
// before) as offline, with the same examples.
func TestFinalRead(t *testing.T) {
	clean := map[int64][]int64{1: {1, 2, 3}, 2: {1}, 3: {1}}
	with := func(k int64, l ...int64) map[int64][]int64 {
		m := maps.Clone(clean)
		if l == nil {
			delete(m, k)
		} else {
			m[k] = l
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		lists   map[int64][]int64
		want    map[Class]int
		missing int
		example string // a line of the output
	}{
		{name: "as written", lists: clean},
		{name: "the unknown append committed", lists: with(2, 1, 2)},
		{name: "a key no attempt touched, empty", lists: with(7, []int64{}...)},
		{name: "a value of the version order removed", lists: with(1, 1, 3), want: map[Class]int{LostAppend: 1},
			example: "T1 appended 2 to key 1 and committed; T2 read key 1 as [1 3] after every attempt had ended, without 2"},
		{name: "a committed append no read held removed", lists: with(1, 1, 2), want: map[Class]int{LostAppend: 1},
			example: "T1 = line 3, committed: … [append 1 3] …"},
		{name: "an unknown append a read held, its key deleted", lists: with(3), want: map[Class]int{LostAppend: 1}, missing: 1,
			example: "T1 appended 1 to key 3, its outcome unknown, and committed reads held 1: it committed; T2 read key 3 as [] after every attempt had ended, without 1"},
		{name: "a key deleted", lists: with(1), want: map[Class]int{LostAppend: 3}, missing: 1},
		{name: "two values of the order swapped", lists: with(1, 2, 1, 3), want: map[Class]int{IncompatibleOrder: 1},
			example: "T1 read key 1 as [2 1 3], which does not extend [1 2], the longest read of key 1 before it (T2's): at position 1, 2 against 1"},
		{name: "an unread append before the order", lists: with(1, 3, 1, 2), want: map[Class]int{IncompatibleOrder: 1}},
		{name: "a value nobody appended", lists: with(1, 1, 2, 3, 9), want: map[Class]int{GarbageRead: 1},
			example: "T1 read key 1 as [1 2 3 9], which holds 9; no attempt in the history appended 9 to key 1"},
		{name: "a key nobody appended to", lists: with(7, 5), want: map[Class]int{GarbageRead: 1}},
		{name: "a value only a failed attempt appended", lists: with(1, 1, 2, 3, 4), want: map[Class]int{G1a: 1},
			example: "T2 = line 4, failed: … [append 1 4] …"},
		{name: "a value twice", lists: with(1, 1, 2, 2, 3), want: map[Class]int{DuplicateElements: 1},
			example: "T1 = the final read, in one snapshot after every attempt ended: [r 1 [1 2 2 3]]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var texts [2]string
			for i, online := range []bool{false, true} {
				res := checkWithFinal(t, finalHistory(), tc.lists, online)
				f := res.Final
				if f == nil {
					t.Fatal("no final read in the result")
				}
				want := tc.want
				if want == nil {
					want = map[Class]int{}
				}
				if !reflect.DeepEqual(f.Counts, want) || f.Missing != tc.missing {
					t.Errorf("online %v: final read found %v, %d missing; want %v, %d", online, f.Counts, f.Missing, want, tc.missing)
				}
				for c, n := range want {
					if res.Count(c) != n {
						t.Errorf("online %v: result counts %d %s, want %d", online, res.Count(c), c, n)
					}
				}
				if len(want) > 0 != res.Verdict(ReadCommitted).Violation {
					t.Errorf("online %v: verdict at read committed %+v", online, res.Verdict(ReadCommitted))
				}
				var b strings.Builder
				if err := res.WriteText(&b, Serializable, func(i int) string { return fmt.Sprintf("line %d", i+1) }); err != nil {
					t.Fatal(err)
				}
				texts[i] = b.String()
			}
			if texts[0] != texts[1] {
				t.Errorf("offline and online differ:\n%s\n%s", texts[0], texts[1])
			}
			if !strings.Contains(texts[0], tc.example) {
				t.Errorf("the output lacks %q:\n%s", tc.example, texts[0])
			}
			if !strings.Contains(texts[0], "\nfinal read: ") {
				t.Errorf("no final read line:\n%s", texts[0])
			}
		})
	}
}

// Over simulated histories full of faults, the final read of the
// simulated database finds the same online and offline, and nothing in a
// serial or snapshot history without faults; a commit the database lost
// shows as a lost append.
func TestFinalReadSimulated(t *testing.T) {
	lost := 0
	for seed := range uint64(100) {
		src := seeded(seed)
		cfg := simConfig{
			mode:      simMode(src.intn(3)),
			clients:   1 + src.intn(8),
			keys:      1 + src.intn(6),
			maxWrites: 1 + src.intn(12),
			maxOps:    1 + src.intn(4),
			attempts:  src.intn(1500),
			failed:    src.intn(10),
			unknown:   src.intn(10),
			faults:    src.intn(2) * src.intn(4),
		}
		var rec collect
		db := simulate(src, cfg, &rec)
		scan := func(read func(int64, []int64) error) error {
			for _, k := range slices.Sorted(maps.Keys(db)) {
				if err := read(k, db[k]); err != nil {
					return err
				}
			}
			return nil
		}
		var texts [2]string
		for i := range texts {
			c := NewChecker()
			if err := c.ExpectFinal(); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				for _, a := range rec.attempts {
					if err := c.Add(a); err != nil {
						t.Fatal(err)
					}
				}
			} else if err := rec.replay(c); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Close(); err != nil {
				t.Fatal(err)
			}
			res, err := c.CheckFinal(math.MinInt64, math.MaxInt64, scan)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			// The simulated read committed takes no row locks: a reader sees
			// its own append at the end of its read while another commits
			// one before it, which PostgreSQL's row lock forbids and the
			// final read rightly calls an incompatible order. The serial
			// and snapshot databases are clean.
			if cfg.faults == 0 && cfg.mode != readCommitted && len(res.Final.Counts) > 0 {
				t.Fatalf("seed %d (%+v): a history without faults: the final read found %v", seed, cfg, res.Final.Counts)
			}
			lost += res.Final.Counts[LostAppend]
			var b strings.Builder
			_ = res.WriteText(&b, Serializable, nil)
			texts[i] = b.String()
		}
		if texts[0] != texts[1] {
			t.Fatalf("seed %d: offline\n%s\nonline\n%s", seed, texts[0], texts[1])
		}
	}
	if lost == 0 {
		t.Error("no simulated database lost a commit: the test did not cover lost appends")
	}
}

// The promises: a final read is expected before any key is final, and
// checked once, after Close.
func TestFinalReadMisuse(t *testing.T) {
	c := NewChecker()
	if _, err := c.CheckFinal(0, 0, func(func(int64, []int64) error) error { return nil }); err == nil {
		t.Error("CheckFinal before ExpectFinal and Close passed")
	}
	if err := c.Add(at(0, 0, 1, Committed, A(1, 1))); err != nil {
		t.Fatal(err)
	}
	if err := c.Retire(1, 2); err != nil {
		t.Fatal(err)
	}
	if err := c.Progress(3); err != nil {
		t.Fatal(err)
	}
	if err := c.ExpectFinal(); err == nil {
		t.Error("ExpectFinal after a key was final passed")
	}
	c = NewChecker()
	_ = c.ExpectFinal()
	if _, err := c.Close(); err != nil {
		t.Fatal(err)
	}
	twice := func(read func(int64, []int64) error) error {
		if err := read(1, nil); err != nil {
			return err
		}
		return read(1, nil)
	}
	if _, err := c.CheckFinal(0, 1, twice); err == nil || !strings.Contains(err.Error(), "key 1 twice") {
		t.Errorf("a key read twice: %v", err)
	}
}
