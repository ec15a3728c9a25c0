package history

import (
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"os"
	"runtime"
	"testing"
	"time"
)

// benchConfig is a history like a list-append run at serializable: 16
// clients, 10 active keys of 32 appends each, transactions of 1-4
// operations, 2% failed and 1% unknown, at snapshot isolation (whose
// write skews make cycles to find).
func benchConfig(attempts int) simConfig {
	return simConfig{mode: snapshot, clients: 16, keys: 10, maxWrites: 32, maxOps: 4, attempts: attempts, failed: 2, unknown: 1}
}

// BenchmarkCheck measures the checker alone on a history of 100,000
// attempts held in memory, offline (every attempt, then Close) and online
// (fed as the attempts complete, keys retiring).
func BenchmarkCheck(b *testing.B) {
	var rec collect
	simulate(seeded(1), benchConfig(100_000), &rec)
	b.Run("offline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Check(rec.attempts); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(rec.attempts))*float64(b.N)/b.Elapsed().Seconds(), "txns/s")
	})
	b.Run("online", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := NewChecker()
			if err := rec.replay(c); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(rec.attempts))*float64(b.N)/b.Elapsed().Seconds(), "txns/s")
	})
}

// timed feeds a checker, timing only the checker's own calls, and samples
// the heap every 100,000 attempts.
type timed struct {
	c        *Checker
	spent    time.Duration
	n        int
	base     uint64
	peakHeap uint64
	err      error
	sample   bool
}

func (t *timed) call(f func() error) {
	if t.err != nil {
		return
	}
	start := time.Now()
	t.err = f()
	t.spent += time.Since(start)
}

func (t *timed) add(a Attempt) {
	t.call(func() error { return t.c.Add(a) })
	if t.n++; t.sample && t.n%100_000 == 0 {
		t.peakHeap = max(t.peakHeap, heapNow()-t.base)
	}
}
func (t *timed) retire(k int64, at time.Duration) {
	t.call(func() error { return t.c.Retire(k, at) })
}
func (t *timed) progress(at time.Duration) {
	t.call(func() error { return t.c.Progress(at) })
}

func heapNow() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkMillion checks a history of 1,000,000 attempts, generated as it
// is checked: the checker's rate (its own calls timed) and its heap, all
// attempts held (offline, measured before Close) or as they retire
// (online, the most sampled every 100,000 attempts; online-final keeps
// each key's state for a final read of the simulated database, checked
// after Close: kept-B/append is the heap that state takes per value
// appended, committed or not). Run it with -benchtime 1x.
func BenchmarkMillion(b *testing.B) {
	const n = 1_000_000
	for _, mode := range []string{"offline", "online", "online-final"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				t := &timed{c: NewChecker(), sample: mode != "offline"}
				if mode == "online-final" {
					if err := t.c.ExpectFinal(); err != nil {
						b.Fatal(err)
					}
				}
				t.base = heapNow()
				var s sink = t
				if mode == "offline" {
					s = offlineSink{t}
				}
				db := simulate(seeded(2), benchConfig(n), s)
				if t.err != nil {
					b.Fatal(t.err)
				}
				if mode == "offline" {
					t.peakHeap = heapNow() - t.base
				}
				var r *Result
				t.call(func() error {
					var err error
					r, err = t.c.Close()
					return err
				})
				if mode == "online-final" {
					values := 0 // appended, committed or not
					for _, fk := range t.c.final {
						values += len(fk.vals)
					}
					kept := heapNow() - t.base
					t.call(func() error {
						var err error
						r, err = t.c.CheckFinal(math.MinInt64, math.MaxInt64, func(read func(int64, []int64) error) error {
							for k, l := range db {
								if err := read(k, l); err != nil {
									return err
								}
							}
							return nil
						})
						return err
					})
					if t.err == nil && len(r.Final.Counts) > 0 {
						b.Fatalf("the final read of a clean database found %v", r.Final.Counts)
					}
					// What CheckFinal let go: the keys' states (the
					// simulated database is still held).
					b.ReportMetric(float64(kept-min(kept, heapNow()-t.base))/float64(values), "kept-B/append")
				}
				if t.err != nil {
					b.Fatal(t.err)
				}
				b.ReportMetric(float64(n)/t.spent.Seconds(), "txns/s")
				b.ReportMetric(float64(t.peakHeap)/(1<<20), "heap-MB")
				b.ReportMetric(float64(t.peakHeap)/n, "heap-B/txn")
				b.ReportMetric(float64(r.Stats.PeakTxns), "peak-txns")
			}
		})
	}
}

// offlineSink passes attempts only: the checker sees them all before Close.
type offlineSink struct{ t *timed }

func (o offlineSink) add(a Attempt)               { o.t.add(a) }
func (o offlineSink) retire(int64, time.Duration) {}
func (o offlineSink) progress(time.Duration)      {}

// BenchmarkReadJSONL measures the reader alone on 100,000 lines of a real
// run's history (pg-18.3-serializable's, repeated), the first recording
// its level: each line is also looked at for the level a file records.
func BenchmarkReadJSONL(b *testing.B) {
	real, err := os.ReadFile("testdata/pg-18.3-serializable.jsonl.gz")
	if err != nil {
		b.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(real))
	if err != nil {
		b.Fatal(err)
	}
	lines, err := io.ReadAll(zr)
	if err != nil {
		b.Fatal(err)
	}
	var text []byte
	for n := 0; n < 100_000; n += bytes.Count(lines, []byte("\n")) {
		text = append(text, lines...)
	}
	text = append([]byte(`{"isolation":"serializable",`), text[1:]...)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		rd, err := NewReader(bytes.NewReader(text), JSONL)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := rd.Read(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}
