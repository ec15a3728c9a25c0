package lag

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
)

// Stream writes a marker every Interval on its own connection to the
// source, each in its own transaction, and tells the Tracker when the
// source acknowledged each COMMIT.
type Stream struct {
	Target   *pg.Target
	Tracker  *Tracker
	W        int // the Tracker's writer
	Writer   int // the writer number in the table
	Interval time.Duration
}

// StreamStats is what a Stream did.
type StreamStats struct {
	// Errors counts markers whose write failed; FirstErr is the first.
	Errors   int64
	FirstErr error
	// Reconnects counts connections re-established after one was lost.
	Reconnects int64
}

// Run writes markers on an absolute schedule (a marker late by more than
// an interval does not make the next ones crowd in) until stop is closed,
// then writes one last marker, so that every write made before stop is
// followed by one, and returns. It returns early on ctx's end or an error
// that reconnecting cannot cure.
func (s *Stream) Run(ctx context.Context, stop <-chan struct{}) (StreamStats, error) {
	var st StreamStats
	if s.Interval <= 0 {
		return st, errors.New("marker stream: the interval must be positive")
	}
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.WithoutCancel(ctx))
		}
	}()
	backoff := time.Duration(0)
	next := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	last := false // stop was closed: the marker being written is the last
	// wait sleeps until t, or until stop closes (then the last marker is
	// due at once); it says false when ctx ended.
	wait := func(t time.Time) bool {
		if last {
			t = time.Now() // the last marker does not wait for the schedule
		}
		timer.Reset(time.Until(t))
		select {
		case <-ctx.Done():
			return false
		case <-stop:
			last = true
			stop = nil // a closed channel would be ready forever
			return true
		case <-timer.C:
			return true
		}
	}
	for {
		if conn == nil {
			var err error
			if conn, err = s.Target.Connect(ctx); err != nil {
				if ctx.Err() != nil {
					return st, nil
				}
				if _, fatal := pg.Classify(err); fatal {
					return st, fmt.Errorf("marker stream: %w", err)
				}
				st.note(err)
				backoff = min(max(2*backoff, 10*time.Millisecond), time.Second)
				timer.Reset(backoff)
				select {
				case <-ctx.Done():
					return st, nil
				case <-timer.C:
				}
				continue
			}
			backoff = 0
		}
		if err := s.write(ctx, conn); err != nil {
			if ctx.Err() != nil {
				return st, nil
			}
			class, fatal := pg.Classify(err)
			if fatal {
				return st, fmt.Errorf("marker stream: %w", err)
			}
			st.note(err)
			if class == metrics.ConnectionLost || class == metrics.AmbiguousCommit || conn.IsClosed() {
				conn.Close(context.WithoutCancel(ctx))
				conn = nil
				st.Reconnects++
			}
		} else if last {
			return st, nil
		}
		next = next.Add(s.Interval)
		if now := time.Now(); next.Before(now) {
			next = now
		}
		if !wait(next) {
			return st, nil
		}
	}
}

// write inserts one marker; the acknowledgement time is taken as soon as the
// COMMIT's reply is in.
func (s *Stream) write(ctx context.Context, conn *pgx.Conn) error {
	seq := s.Tracker.Send(s.W)
	_, err := conn.Exec(ctx, InsertSQL, Marker{Writer: s.Writer, Seq: seq}.Args()...)
	now := time.Now()
	if err != nil {
		// One statement in autocommit is its own COMMIT: a lost connection
		// leaves it ambiguous.
		err = pg.DuringCommit(err)
		class, _ := pg.Classify(err)
		s.Tracker.Failed(s.W, seq, class == metrics.AmbiguousCommit, now)
		return err
	}
	s.Tracker.Acked(s.W, seq, now)
	return nil
}

func (st *StreamStats) note(err error) {
	st.Errors++
	if st.FirstErr == nil {
		st.FirstErr = err
	}
}
