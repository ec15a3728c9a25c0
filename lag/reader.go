package lag

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
)

// Reader finds markers on the destination as soon as they are visible: every
// Poll it asks for each writer's markers above the highest it has seen
// (seq > last), and tells the Tracker the time the answer came back. A
// marker is therefore seen at most one poll period plus one round trip
// after it became visible: that is the measurement's precision, and
// ReaderStats measures both.
//
// A pipeline that reorders a writer's markers leaves gaps below the highest
// seen; those are looked for every GapPoll (and measured with that coarser
// precision) until the Tracker gives up on them.
type Reader struct {
	Target  *pg.Target
	Tracker *Tracker
	// FirstWriter is the table's number of the Tracker's writer 0.
	FirstWriter int
	// Table is the marker table's name on the destination ("" = Table).
	Table   string
	Poll    time.Duration
	GapPoll time.Duration // 0 = 50 × Poll, at least 20 ms
	// Ready, if set, is called once the reader is connected and its first
	// poll has come back. Start the markers after it: a marker written
	// while the reader still connects would be seen a connection and a
	// first query later (100 ms and more on a busy machine), which is the
	// instrument starting, not lag, and no poll period shows.
	Ready func()
}

// ReaderStats is what a Reader did, for the precision it states.
type ReaderStats struct {
	Polls int64
	// Period is the time between the starts of consecutive polls, RoundTrip
	// the time each poll took (µs).
	Period, RoundTrip *hdr.Histogram
	// Errors counts failed polls (a lost connection, a query cancelled by
	// a standby's recovery); FirstErr is the first.
	Errors   int64
	FirstErr error
}

// Run polls until ctx ends. It returns an error only for what retrying
// cannot cure (the table does not exist, the login is refused).
func (r *Reader) Run(ctx context.Context) (ReaderStats, error) {
	st := ReaderStats{Period: metrics.NewHistogram(), RoundTrip: metrics.NewHistogram()}
	table := r.Table
	if table == "" {
		table = Table
	}
	n := r.Tracker.Writers()
	fast := pollSQL(ident(table), n)
	gapPoll := r.GapPoll
	if gapPoll <= 0 {
		gapPoll = max(50*r.Poll, 20*time.Millisecond)
	}
	gapSQL := "SELECT writer, seq FROM " + ident(table) + " WHERE writer = $1 AND seq > $2 AND seq < $3"

	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.WithoutCancel(ctx))
		}
	}()
	args := make([]any, 2*n)
	var pos []Position
	var seen []Sighting
	timer := time.NewTimer(0)
	defer timer.Stop()
	next := time.Now()
	var prev time.Time
	nextGap := next.Add(gapPoll)
	backoff := time.Duration(0)
	fail := func(err error) error {
		st.Errors++
		if st.FirstErr == nil {
			st.FirstErr = err
		}
		if _, fatal := pg.Classify(err); fatal {
			return fmt.Errorf("polling %s on the destination: %w", table, err)
		}
		if conn != nil && (pg.IsConnectionError(err) || conn.IsClosed()) {
			conn.Close(context.WithoutCancel(ctx))
			conn = nil
		}
		return nil
	}
	for {
		timer.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			return st, nil
		case <-timer.C:
		}
		if conn == nil {
			var err error
			if conn, err = r.Target.Connect(ctx); err != nil {
				if ctx.Err() != nil {
					return st, nil
				}
				if err := fail(err); err != nil {
					return st, err
				}
				backoff = min(max(2*backoff, 10*time.Millisecond), time.Second)
				next = time.Now().Add(backoff)
				continue
			}
			backoff = 0
		}
		start := time.Now()
		if !prev.IsZero() {
			_ = st.Period.RecordValue(min(start.Sub(prev).Microseconds(), st.Period.HighestTrackableValue()))
		}
		prev = start
		pos = r.Tracker.Positions(pos)
		for i, p := range pos {
			args[2*i], args[2*i+1] = int32(r.FirstWriter+i), p.MaxSeen
		}
		var err error
		seen, err = r.query(ctx, conn, fast, args, seen[:0])
		at := time.Now()
		st.Polls++
		if err != nil {
			if ctx.Err() != nil {
				return st, nil
			}
			if err := fail(err); err != nil {
				return st, err
			}
		} else {
			_ = st.RoundTrip.RecordValue(min(at.Sub(start).Microseconds(), st.RoundTrip.HighestTrackableValue()))
			r.Tracker.Seen(seen, at, false)
			if r.Ready != nil {
				r.Ready()
				r.Ready = nil
			}
		}
		if conn != nil && !at.Before(nextGap) {
			nextGap = at.Add(gapPoll)
			for i, p := range pos {
				if p.After+1 >= p.MaxSeen {
					continue
				}
				seen, err = r.query(ctx, conn, gapSQL, []any{int32(r.FirstWriter + i), p.After, p.MaxSeen}, seen[:0])
				if err != nil {
					if ctx.Err() != nil {
						return st, nil
					}
					if err := fail(err); err != nil {
						return st, err
					}
					break
				}
				r.Tracker.Seen(seen, time.Now(), true)
			}
		}
		next = next.Add(r.Poll)
		if now := time.Now(); next.Before(now) {
			next = now
		}
	}
}

// query runs one poll and returns the markers found, as Tracker writers.
func (r *Reader) query(ctx context.Context, conn *pgx.Conn, sql string, args []any, into []Sighting) ([]Sighting, error) {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return into, err
	}
	defer rows.Close()
	var w int32
	var seq int64
	for rows.Next() {
		if err := rows.Scan(&w, &seq); err != nil {
			return into, err
		}
		into = append(into, Sighting{Writer: int(w) - r.FirstWriter, Seq: seq})
	}
	return into, rows.Err()
}

// pollSQL asks for each of n writers' markers above a seq: the arguments
// are writer and seq pairs.
func pollSQL(table string, n int) string {
	var b strings.Builder
	b.WriteString("SELECT writer, seq FROM " + table + " WHERE ")
	for i := range n {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString("(writer = $" + strconv.Itoa(2*i+1) + " AND seq > $" + strconv.Itoa(2*i+2) + ")")
	}
	return b.String()
}
