package pgio

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The replay hands events on in the order of their times, never before the
// lag after each passed, calls ready with the start shifted by the lag
// first, and returns no sooner than the lag after the last statement's
// end: the clock of whoever takes them is the run's, shifted.
func TestReplayOrderAndLag(t *testing.T) {
	const lag = 40 * time.Millisecond
	p := NewReplay(lag)
	start := time.Now()
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	type got struct {
		x    Replayed
		when time.Time
	}
	var out []got
	var readyAt, readyArg time.Time
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(context.Background(), func(s time.Time) { readyAt, readyArg = time.Now(), s }, func(x Replayed) { out = append(out, got{x, time.Now()}) })
	}()
	p.Begin(start)
	// Two sessions' flushes, out of order between sessions, and a session's
	// report at the time of its last statement's start.
	p.Push(Replayed{Ev: EvStatement, S: 1, At: at(5), D: 2 * time.Millisecond})
	p.Push(Replayed{Ev: EvStatement, S: 1, At: at(20), D: 30 * time.Millisecond})
	p.Push(Replayed{Ev: EvThrough, S: 1, At: at(20)})
	p.Push(Replayed{Ev: EvStatement, S: 0, At: at(1), D: time.Millisecond})
	p.Push(Replayed{Ev: EvFailed, S: 0, At: at(12), Err: errors.New("deadlock")})
	p.Close()
	<-done
	end := time.Now()
	if !readyArg.Equal(start.Add(lag)) || readyAt.Before(start.Add(lag)) {
		t.Errorf("ready(%v) at %v; want start+lag, not before it", readyArg.Sub(start), readyAt.Sub(start))
	}
	want := []struct {
		ev Event
		s  int
		ms int
	}{{EvStatement, 0, 1}, {EvStatement, 1, 5}, {EvFailed, 0, 12}, {EvStatement, 1, 20}, {EvThrough, 1, 20}}
	if len(out) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(out), len(want), out)
	}
	for i, w := range want {
		g := out[i]
		if g.x.Ev != w.ev || g.x.S != w.s || !g.x.At.Equal(at(w.ms)) {
			t.Errorf("event %d: %+v, want %v of session %d at %dms", i, g.x, w.ev, w.s, w.ms)
		}
		if g.when.Before(g.x.At.Add(lag)) {
			t.Errorf("event %d handed on %v after the start, before its time and the lag", i, g.when.Sub(start))
		}
	}
	if last := at(50).Add(lag); end.Before(last) {
		t.Errorf("returned %v after the start, before the last statement's end and the lag (%v)", end.Sub(start), last.Sub(start))
	}
}

// Closed before the run started (it failed to start), or interrupted, the
// replay returns without calling ready or handing anything on.
func TestReplayEnds(t *testing.T) {
	p := NewReplay(time.Hour)
	p.Close()
	p.Run(context.Background(), func(time.Time) { t.Error("ready called") }, func(Replayed) { t.Error("an event handed on") })

	p = NewReplay(time.Hour)
	p.Begin(time.Now())
	p.Push(Replayed{Ev: EvStatement, At: time.Now()})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	p.Run(ctx, func(time.Time) { t.Error("ready called") }, func(Replayed) { t.Error("an event handed on") })
}

// Held until a time (a timed run's end), the replay returns no sooner than
// the lag after it, however early the last statement ended.
func TestReplayHold(t *testing.T) {
	const lag = 20 * time.Millisecond
	p := NewReplay(lag)
	start := time.Now()
	p.Begin(start)
	p.Push(Replayed{Ev: EvStatement, At: start, D: time.Millisecond})
	p.Hold(start.Add(60 * time.Millisecond))
	p.Close()
	p.Run(context.Background(), func(time.Time) {}, func(Replayed) {})
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Errorf("returned %v after the start, before the held end and the lag (80ms)", d)
	}
}
