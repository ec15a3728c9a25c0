package vote

import (
	"slices"
	"sync"
	"testing"
)

// Staleness figures add up exactly across concurrent readers, and the
// maximum is the largest observed.
func TestStalenessArithmetic(t *testing.T) {
	rs := &runState{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(0); i < 1000; i++ {
				rs.observe(i%50+int64(w), 1000)
			}
		}()
	}
	wg.Wait()
	// Per reader: 20 × (0+…+49) + 1000 × w.
	var want int64
	for w := int64(0); w < 8; w++ {
		want += 20*1225 + 1000*w
	}
	if rs.reads.Load() != 8000 || rs.stalenessSum.Load() != want || rs.stalenessMax.Load() != 56 || rs.ageSumMicros.Load() != 8000*1000 {
		t.Fatalf("reads %d sum %d (want %d) max %d age %d", rs.reads.Load(), rs.stalenessSum.Load(), want, rs.stalenessMax.Load(), rs.ageSumMicros.Load())
	}
}

// Every --write-every-th operation of a client is a vote, counted per
// client.
func TestChooserWriteEvery(t *testing.T) {
	newChooser := writeEvery(4)
	a, b := newChooser(0), newChooser(1)
	var got []int
	for i := 0; i < 8; i++ {
		got = append(got, a())
	}
	if want := []int{0, 0, 0, 1, 0, 0, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("client 0 chose %v, want %v", got, want)
	}
	if b() != 0 {
		t.Fatal("client 1 shares client 0's count")
	}
}
