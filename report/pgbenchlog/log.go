// Package pgbenchlog writes pgbench's transaction logs (-l): a line per
// transaction, or with --aggregate-interval a line per interval, in
// pgbench's exact formats (PostgreSQL 15 to 18), one file per thread named
// as pgbench names them. A Writer is fed by one I/O loop and is not safe
// for concurrent use.
package pgbenchlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultPrefix is the file name prefix without --log-prefix.
const DefaultPrefix = "pgbench_log"

// Config is the run's options that shape the logs, as pgbench takes them.
type Config struct {
	// Prefix is --log-prefix ("" = pgbench_log); PID is the process id in
	// the file names.
	Prefix string
	PID    int
	// AggregateInterval is --aggregate-interval in seconds: 0 writes a
	// line per transaction.
	AggregateInterval int
	// SamplingRate is --sampling-rate: the fraction of transactions logged
	// (0 = all).
	SamplingRate float64
	// Seed is the run's random seed (--random-seed): the sampling draws
	// follow it, so a seeded run logs the same transactions again, as
	// pgbench's do.
	Seed uint64
	// Throttled is --rate: each line carries the schedule lag, and the
	// aggregates their lag columns.
	Throttled bool
	// LatencyLimit is -L: the aggregates count skipped transactions.
	LatencyLimit bool
	// MaxTries is --max-tries: unless 1, each line carries its retries and
	// the aggregates count retried transactions and retries.
	MaxTries uint32
	// FailuresDetailed is --failures-detailed: a failure is logged by kind
	// (serialization, deadlock) rather than as "failed", and the
	// aggregates count each kind.
	FailuresDetailed bool
}

// FileName is pgbench's name for a thread's log: PREFIX.PID for thread 0,
// PREFIX.PID.THREAD for the others.
func FileName(prefix string, pid, thread int) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if thread == 0 {
		return fmt.Sprintf("%s.%d", prefix, pid)
	}
	return fmt.Sprintf("%s.%d.%d", prefix, pid, thread)
}

// Outcome is how a transaction ended.
type Outcome uint8

const (
	// OK committed (possibly after retries).
	OK Outcome = iota
	// Skipped never started: too late under --rate and --latency-limit.
	Skipped
	// Serialization failed on a serialization error, retries exhausted.
	Serialization
	// Deadlock failed on a deadlock, retries exhausted.
	Deadlock
)

// Txn is one transaction, as pgbench logs it.
type Txn struct {
	// Client is the client's id; Number is the client's count of
	// transactions with this one (1 for its first, skipped and failed ones
	// counted), pgbench's transaction_no.
	Client int
	Number int64
	// Script is the script's index in the run (from 0).
	Script  int
	Outcome Outcome
	// Latency is from the transaction's scheduled start to its end; Lag
	// from the scheduled to the actual start. Both are logged for OK
	// transactions only.
	Latency, Lag time.Duration
	// Tries is the number of tries (1 = no retry).
	Tries int
	// End is when it ended: the line's time stamp, and what places it in
	// an aggregation interval.
	End time.Time
}

// Writer writes one thread's log.
type Writer struct {
	cfg    Config
	w      *bufio.Writer
	closer io.Closer
	name   string
	sample func() float64
	agg    stats
	err    error
}

// stats are pgbench's StatsData for one interval.
type stats struct {
	start                 int64 // µs since the epoch
	cnt, skipped          int64
	retries, retried      int64
	serialization, deadlk int64
	latency, lag          simple
}

// simple is pgbench's SimpleStats, in µs.
type simple struct {
	count               int64
	min, max, sum, sum2 float64
}

func (s *simple) add(v float64) {
	if s.count == 0 || v < s.min {
		s.min = v
	}
	if s.count == 0 || v > s.max {
		s.max = v
	}
	s.count++
	s.sum += v
	s.sum2 += v * v
}

// Create opens thread's log in the current directory (or where Prefix
// says), as pgbench does when its thread starts; start is the thread's
// benchmark start, the first interval's start rounded down to the second.
func Create(cfg Config, thread int, start time.Time) (*Writer, error) {
	name := FileName(cfg.Prefix, cfg.PID, thread)
	f, err := os.Create(name)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("could not open logfile \"%s\": %s", name, cErr(err))
	}
	w := New(f, cfg, start)
	w.closer, w.name = f, name
	// Each thread samples from its own sequence of the run's seed.
	w.sample = rand.New(rand.NewPCG(cfg.Seed, uint64(thread))).Float64
	return w, nil
}

// cErr is err as C's strerror words it: "No such file or directory".
func cErr(err error) string {
	s := err.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// New writes a log to w (Create's file, or any writer).
func New(w io.Writer, cfg Config, start time.Time) *Writer {
	lw := &Writer{cfg: cfg, w: bufio.NewWriterSize(w, 64<<10), sample: rand.Float64}
	lw.agg.start = start.Unix() * 1e6
	return lw
}

// SetStart sets the thread's benchmark start, when the log was opened
// before it was known (pgbench opens its logs before its clients connect):
// the first interval starts at it, rounded down to the second. Call it
// before the first Log.
func (w *Writer) SetStart(start time.Time) { w.agg.start = start.Unix() * 1e6 }

// Name is the log file's name ("" for New).
func (w *Writer) Name() string { return w.name }

// SetSampler replaces the source of --sampling-rate's draws, values in
// [0, 1): pgbench's thread PRNG, for runs that reproduce its choices.
func (w *Writer) SetSampler(f func() float64) { w.sample = f }

func us(d time.Duration) float64 { return float64(d / time.Microsecond) }

// Log records one transaction: a line, or its share of an interval after
// writing the intervals that ended before it.
func (w *Writer) Log(t Txn) error {
	if w.err != nil {
		return w.err
	}
	if w.cfg.SamplingRate != 0 && w.sample() > w.cfg.SamplingRate {
		return nil
	}
	var latency, lag float64
	if t.Outcome == OK {
		latency, lag = us(t.Latency), us(t.Lag)
	}
	if w.cfg.AggregateInterval > 0 {
		w.flushIntervals(t.End)
		w.accumulate(t, latency, lag)
		return w.err
	}
	end := t.End.UnixMicro()
	b := w.w.AvailableBuffer()
	b = strconv.AppendInt(b, int64(t.Client), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, t.Number, 10)
	b = append(b, ' ')
	if t.Outcome == OK {
		b = strconv.AppendFloat(b, latency, 'f', 0, 64)
	} else {
		b = append(b, w.result(t.Outcome)...)
	}
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(t.Script), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, end/1e6, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, end%1e6, 10)
	if w.cfg.Throttled {
		b = append(b, ' ')
		b = strconv.AppendFloat(b, lag, 'f', 0, 64)
	}
	if w.cfg.MaxTries != 1 {
		b = append(b, ' ')
		b = strconv.AppendUint(b, uint64(uint32(max(t.Tries, 1)-1)), 10)
	}
	b = append(b, '\n')
	_, w.err = w.w.Write(b)
	return w.err
}

// result is pgbench's getResultString.
func (w *Writer) result(o Outcome) string {
	switch {
	case o == Skipped:
		return "skipped"
	case !w.cfg.FailuresDetailed:
		return "failed"
	case o == Serialization:
		return "serialization"
	}
	return "deadlock"
}

// accumulate is pgbench's accumStats.
func (w *Writer) accumulate(t Txn, latency, lag float64) {
	a := &w.agg
	if t.Outcome == Skipped {
		a.skipped++
		return
	}
	if t.Tries > 1 {
		a.retries += int64(t.Tries - 1)
		a.retried++
	}
	switch t.Outcome {
	case OK:
		a.cnt++
		a.latency.add(latency)
		if w.cfg.Throttled {
			a.lag.add(lag)
		}
	case Serialization:
		a.serialization++
	case Deadlock:
		a.deadlk++
	}
}

// flushIntervals writes every interval that ended at or before now, empty
// ones included, as pgbench's doLog does.
func (w *Writer) flushIntervals(now time.Time) {
	step := int64(w.cfg.AggregateInterval) * 1e6
	nowUS := now.UnixMicro()
	for w.err == nil && w.agg.start+step <= nowUS {
		a := &w.agg
		var lag simple
		if w.cfg.Throttled {
			lag = a.lag
		}
		var skipped, retried, retries, ser, dead int64
		if w.cfg.LatencyLimit {
			skipped = a.skipped
		}
		if w.cfg.MaxTries != 1 {
			retried, retries = a.retried, a.retries
		}
		if w.cfg.FailuresDetailed {
			ser, dead = a.serialization, a.deadlk
		}
		_, w.err = fmt.Fprintf(w.w, "%d %d %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %d %d %d %d %d\n",
			a.start/1e6, a.cnt, a.latency.sum, a.latency.sum2, a.latency.min, a.latency.max,
			lag.sum, lag.sum2, lag.min, lag.max, skipped, retried, retries, ser, dead)
		*a = stats{start: a.start + step}
	}
}

// Close ends the log at now, when the thread ended: the intervals that
// ended by then are written (pgbench drops the last, incomplete one), and
// the file is flushed and closed.
func (w *Writer) Close(now time.Time) error {
	if w.cfg.AggregateInterval > 0 {
		w.flushIntervals(now)
	}
	err := w.err
	if ferr := w.w.Flush(); err == nil {
		err = ferr
	}
	if w.closer != nil {
		if cerr := w.closer.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil && w.name != "" {
		return fmt.Errorf("writing %s: %w", w.name, err)
	}
	return err
}
