package pgio

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// Statements land in the interval of their start, warm-up apart; an
// interval is printed once every session reported past its end and its
// counters are in, and never twice.
func TestCollectorIntervals(t *testing.T) {
	t0 := time.Unix(1000, 0)
	measured := t0.Add(2 * time.Second)
	var printed []time.Duration
	c := NewCollector(2, measured, 2*time.Second, time.Minute, time.Second, func(iv *Interval) { printed = append(printed, iv.End) })
	b := c.Boundaries(measured.Add(3 * time.Second))
	want := []time.Time{t0, t0.Add(time.Second), measured, measured.Add(time.Second), measured.Add(2 * time.Second)}
	if len(b) != len(want) {
		t.Fatalf("boundaries %v, want %v", b, want)
	}
	for i := range b {
		if !b[i].Equal(want[i]) {
			t.Fatalf("boundaries %v, want %v", b, want)
		}
	}
	c.Record(0, Select, t0.Add(500*time.Millisecond), time.Millisecond, 10)          // warm-up
	c.Record(0, Select, measured.Add(100*time.Millisecond), 2*time.Millisecond, 10)  // interval 0
	c.Record(1, Update, measured.Add(900*time.Millisecond), 3*time.Millisecond, 5)   // interval 0
	c.Record(1, Select, measured.Add(1500*time.Millisecond), 4*time.Millisecond, 10) // interval 1
	for i := 0; i <= 2; i++ {
		c.Sample(Counters{At: measured.Add(time.Duration(i) * time.Second), DB: DBCounters{Blocks: Blocks{Hit: int64(100 * i)}}})
	}
	if len(printed) != 0 {
		t.Fatalf("printed %v before the sessions reported through the intervals", printed)
	}
	c.Through(0, measured.Add(3*time.Second))
	c.Through(1, measured.Add(1200*time.Millisecond))
	if len(printed) != 1 || printed[0] != time.Second {
		t.Fatalf("printed %v, want the first interval only", printed)
	}
	c.Done(1)
	if len(printed) != 2 || printed[1] != 2*time.Second {
		t.Fatalf("printed %v, want both intervals", printed)
	}
	c.Done(0)
	total, warm, ivs, _ := c.Totals()
	if total[Select].Statements != 2 || total[Update].Statements != 1 || warm[Select] != 1 || total[Select].Rows != 20 {
		t.Fatalf("totals %d/%d, warm-up %v", total[Select].Statements, total[Update].Statements, warm)
	}
	if !c.LastEnd().Equal(measured.Add(1504 * time.Millisecond)) {
		t.Errorf("last end %v", c.LastEnd().Sub(measured))
	}
	var got []int64
	for _, iv := range ivs {
		got = append(got, iv.Kinds[Select].Statements+iv.Kinds[Update].Statements)
		if !iv.Warmup && (!iv.HaveCounters || iv.Counters.DB.Hit != 100) {
			t.Errorf("interval ending %v: counters %+v", iv.End, iv.Counters)
		}
	}
	if len(got) != 4 || got[0] != 1 || got[1] != 0 || got[2] != 2 || got[3] != 1 {
		t.Errorf("statements by interval %v, want [1 0 2 1] (the two warm-up intervals first)", got)
	}
}

func TestRegime(t *testing.T) {
	const gib = int64(1) << 30
	for _, tc := range []struct {
		m    Memory
		size int64
		want string
	}{
		{Memory{SharedBuffers: gib, Local: true, MachineTotal: 24 * gib}, gib / 2, "fits in shared_buffers"},
		{Memory{SharedBuffers: gib, Local: true, MachineTotal: 24 * gib}, 8 * gib, "fits in the OS page cache"},
		{Memory{SharedBuffers: gib, Local: true, MachineTotal: 24 * gib}, 24 * gib, "runs measure physical reads from the disk"},
		{Memory{SharedBuffers: gib, ServerAddr: "10.0.0.61"}, 8 * gib, "cannot be told from here: the server (10.0.0.61) is not on this machine"},
		{Memory{SharedBuffers: gib, Local: true}, 8 * gib, "this machine's memory is unknown"},
		{Memory{SharedBuffers: -1}, 8 * gib, "unknown"},
	} {
		if got := tc.m.Regime(tc.size); !strings.Contains(got, tc.want) {
			t.Errorf("%+v, %d bytes: %q, want %q", tc.m, tc.size, got, tc.want)
		}
	}
}

func TestMachineMemory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "meminfo")
	if err := os.WriteFile(p, []byte("MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   20480000 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	total, avail := machineMemory(p)
	if total != 24576000<<10 || avail != 20480000<<10 {
		t.Fatalf("total %d, available %d", total, avail)
	}
	if total, avail := machineMemory(filepath.Join(t.TempDir(), "none")); total != 0 || avail != 0 {
		t.Fatalf("a missing file: %d, %d", total, avail)
	}
}

// A long run's collector holds the intervals in progress and the first
// keptIntervals, not every interval (each holds a histogram of each kind,
// 370 KB): over 2,000 intervals printed as they complete, with a sample at
// each boundary, its live heap grows by less than 16 MB (11 MB: the
// intervals kept; it grew by 720 MB when it kept them all), every interval is printed once and in order,
// and Totals returns the first keptIntervals and the number of them all.
// With no printer (no progress lines), the same.
func TestCollectorLongRunBounded(t *testing.T) {
	for _, printing := range []bool{true, false} {
		const n = 2000
		measured := time.Unix(5000, 0)
		var printed []time.Duration
		var print func(*Interval)
		if printing {
			print = func(iv *Interval) { printed = append(printed, iv.End) }
		}
		c := NewCollector(1, measured, 0, n*time.Millisecond, time.Millisecond, print)
		heap := func() uint64 {
			runtime.GC()
			s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
			metrics.Read(s)
			return s[0].Value.Uint64()
		}
		before := heap()
		c.Sample(Counters{At: measured})
		for i := range n {
			at := measured.Add(time.Duration(i)*time.Millisecond + 100*time.Microsecond)
			c.Record(0, Select, at, 300*time.Microsecond, 1)
			c.Record(0, Update, at, 500*time.Microsecond, 1)
			end := measured.Add(time.Duration(i+1) * time.Millisecond)
			c.Sample(Counters{At: end, DB: DBCounters{Blocks: Blocks{Hit: int64(i + 1)}}})
			c.Through(0, end)
			if len(c.inter) > 2 {
				t.Fatalf("interval %d: %d intervals held", i, len(c.inter))
			}
		}
		grew := int64(heap()) - int64(before)
		c.Done(0)
		runtime.KeepAlive(c)
		if grew > 16<<20 {
			t.Errorf("printing %v: the live heap grew by %d MB over %d intervals", printing, grew>>20, n)
		}
		if printing {
			if len(printed) != n {
				t.Fatalf("printed %d intervals of %d", len(printed), n)
			}
			for i, end := range printed {
				if end != time.Duration(i+1)*time.Millisecond {
					t.Fatalf("interval %d printed as ending at %v", i, end)
				}
			}
		}
		total, _, ivs, _ := c.Totals()
		if len(ivs) != keptIntervals || c.MeasuredIntervals() != n || total[Select].Statements != n {
			t.Fatalf("%d intervals kept, %d measured, %d selects", len(ivs), c.MeasuredIntervals(), total[Select].Statements)
		}
		for i, iv := range ivs {
			if iv.Kinds[Select].Statements != 1 || iv.Kinds[Update].Latency.TotalCount() != 1 || !iv.HaveCounters || iv.Counters.DB.Hit != 1 {
				t.Fatalf("kept interval %d: %+v", i, iv)
			}
		}
	}
}
