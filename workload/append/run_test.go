package append

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/txload/txload/history"
	"github.com/txload/txload/workload"
)

// The generator keeps the promises the online checker relies on: events
// in strictly increasing time, each key's values 1, 2, 3… drawn once, a
// key retired after its last value and never drawn again, the window
// always --keys wide; and every attempt it invokes ends in the history,
// abandoned ones as unknown.
func TestGenerator(t *testing.T) {
	cfg := &config{keys: 3, minOps: 1, maxOps: 4, maxWrites: 5}
	r, err := newRunState(cfg, 100, workload.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.start = time.Now() // the consumer starts at the end: r.events keeps every event
	progs := make([]*program, 4)
	for i := range progs {
		progs[i] = &program{r: r, client: i, rng: rand.New(rand.NewPCG(1, uint64(i)))}
		r.programs = append(r.programs, progs[i])
	}
	for n := range 2000 {
		p := progs[n%len(progs)]
		if p.open {
			for i := range p.a.Ops {
				if p.a.Ops[i].Kind == history.Read {
					p.a.Ops[i].List = []int64{}
				}
			}
			r.complete(p, history.Failed, "40001", time.Now())
		}
		if err := r.draw(p); err != nil {
			t.Fatal(err)
		}
		if len(r.window) != cfg.keys {
			t.Fatalf("window %v", r.window)
		}
	}
	seen := append([]event(nil), r.events...)
	last := time.Duration(-1)
	next := map[int64]int64{}
	retired := map[int64]time.Duration{}
	for _, e := range seen {
		at := e.at
		if e.kind != evRetire {
			at = e.a.Invoke
			if e.kind == evComplete {
				at = e.a.Complete
			}
		}
		if at <= last && e.kind != evRetire {
			t.Fatalf("event at %d after %d", at, last)
		}
		last = max(last, at)
		switch e.kind {
		case evRetire:
			if next[e.key] != int64(cfg.maxWrites) {
				t.Fatalf("key %d retired after %d values", e.key, next[e.key])
			}
			retired[e.key] = e.at
		case evInvoke:
			for _, op := range e.a.Ops {
				if at, ok := retired[op.Key]; ok && e.a.Invoke >= at {
					t.Fatalf("key %d drawn at %d, retired at %d", op.Key, e.a.Invoke, at)
				}
				if op.Kind == history.Append {
					if op.Value != next[op.Key]+1 {
						t.Fatalf("key %d got value %d after %d", op.Key, op.Value, next[op.Key])
					}
					next[op.Key] = op.Value
				}
			}
		}
	}
	if len(retired) < 100 {
		t.Fatalf("only %d keys retired", len(retired))
	}
	go r.consume()
	res, err := r.finish(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Values["attempts"] != 2000 || res.Values["unknown"] != int64(len(progs)) {
		t.Fatalf("values %v: every attempt drawn ends in the history, the %d still open unknown", res.Values, len(progs))
	}
}

func TestTable(t *testing.T) {
	var n [3]int
	for k := range int64(3000) {
		n[table(k)]++
	}
	for i, c := range n {
		if c < 800 {
			t.Errorf("table %d holds %d of 3000 keys", i, c)
		}
	}
}

// A list is read only in the form txload writes it: decimal values joined
// by commas. A value in another form (a leading zero, a plus sign, an
// empty value after a trailing comma) is one no transaction wrote, though
// it parses as an integer.
func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int64 // read all the same, beside the error
		ok   bool
	}{
		{"", []int64{}, true},
		{"1", []int64{1}, true},
		{"1,2,30", []int64{1, 2, 30}, true},
		{"-4,0", []int64{-4, 0}, true},
		{"01", []int64{1}, false},
		{"1,02", []int64{1, 2}, false},
		{"+1", []int64{1}, false},
		{"-0", []int64{0}, false},
		{"1,2,", []int64{1, 2}, false},
		{",1", []int64{1}, false},
		{"1,,2", []int64{1, 2}, false},
		{" 1", nil, false},
		{"1\n", nil, false},
		{"x", nil, false},
		{"99999999999999999999", nil, false},
	} {
		got, err := parseList([]byte(tc.in))
		if (err == nil) != tc.ok || !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("parseList(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
