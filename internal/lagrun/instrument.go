package lagrun

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/lag"
	"github.com/txload/txload/workload"
)

// instrument is the measurement around the load: the marker stream on the
// source, the reader on the destination, the servers' views and the
// progress ticker. Writer 0 is the marker stream; with --mark-transactions
// client i writes as 1+i (the table's first+1+i), its figures kept apart.
type instrument struct {
	p       *plan
	pair    *pair
	first   int // the table's number of writer 0
	writers int
	start   time.Time
	tracker *lag.Tracker
	views   *lag.Views
	ticker  *ticker

	wg        sync.WaitGroup
	measuring context.CancelFunc // stops the reader, the views and the ticker
	readerErr chan error
	reader    lag.ReaderStats

	stopStream   chan struct{} // closed: write a last marker and stop
	cancelStream context.CancelFunc
	streamDone   chan struct{}
	stream       lag.StreamStats
	streamErr    error
	logErr       error // the --histogram log that could not be written
}

func (p *plan) newInstrument(pr *pair, first int) *instrument {
	in := &instrument{p: p, pair: pr, first: first, writers: 1, start: time.Now()}
	if p.o.MarkTransactions {
		in.writers += p.load.Engine.Concurrency
	}
	in.tracker = lag.NewSplitTracker(in.start, in.writers, 1, p.drainTimeout)
	return in
}

// marks gives the workload's clients their markers (--mark-transactions),
// nil without.
func (in *instrument) marks() func(int) workload.TxMarker {
	if !in.p.o.MarkTransactions {
		return nil
	}
	marks := lag.NewTxMarks(in.tracker, 1, in.first+1)
	n := in.writers - 1
	return func(id int) workload.TxMarker {
		if id < 0 || id >= n {
			return nil
		}
		return marks.Client(id)
	}
}

var errTimedOut = errors.New("timed out")

// waitFor polls cond every millisecond until it holds, d passes, ctx ends or
// the reader fails.
func waitFor(ctx context.Context, d time.Duration, readerErr chan error, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		select {
		case err := <-readerErr:
			readerErr <- err // for whoever looks next
			if err != nil {
				return err
			}
			return errors.New("the marker reader stopped")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errTimedOut
		}
	}
	return nil
}

// wait is waitFor, its error said as the run's: an interruption, what did
// not happen in time (timedOut), or the reader's error.
func (in *instrument) wait(ctx context.Context, cond func() bool, timedOut func() error) error {
	err := waitFor(ctx, in.p.drainTimeout, in.readerErr, cond)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return runner.ErrInterrupted
	case errors.Is(err, errTimedOut):
		return timedOut()
	}
	return in.pair.scrub(err)
}

// begin starts the reader, then the views and the marker stream once the
// reader polls, and the ticker once the first marker arrived.
func (in *instrument) begin(ctx context.Context) error {
	p, pr := in.p, in.pair
	mctx, measuring := context.WithCancel(ctx)
	in.measuring = measuring
	var polled atomic.Bool
	reader := &lag.Reader{Target: pr.dst.Target, Tracker: in.tracker, FirstWriter: in.first, Table: p.marker, Poll: p.o.PollInterval,
		Ready: func() { polled.Store(true) }}
	in.readerErr = make(chan error, 1)
	in.wg.Go(func() {
		var err error
		in.reader, err = reader.Run(mctx)
		in.readerErr <- err
	})
	// The markers start once the reader polls: those written while it
	// connects would carry its connection time as lag.
	if err := in.wait(ctx, polled.Load, func() error {
		return fmt.Errorf("the marker reader could not poll %s on the destination within %s", p.marker, p.drainTimeout)
	}); err != nil {
		return err
	}
	in.views = &lag.Views{Source: pr.src.Target, Dest: pr.dst.Target}
	in.wg.Go(func() { in.views.Run(mctx) })
	in.startStream(ctx)
	// The first marker must arrive before the load starts: otherwise the
	// replication does not carry the marker table.
	if err := in.wait(ctx, func() bool { return in.tracker.Counts().Measured > 0 }, func() error {
		return fmt.Errorf("no marker reached the destination within %s: does the replication carry %s from the source to %s on the destination?", p.drainTimeout, lag.Table, p.marker)
	}); err != nil {
		return err
	}
	fmt.Fprintf(p.load.Stderr, "lag: markers every %s on %s, polled every %s on %s\n", p.o.MarkInterval, pr.src.Target.URLs()[0], p.o.PollInterval, pr.dst.Target.URLs()[0])
	var err error
	in.ticker, err = p.startTicker(mctx, &in.wg, in.tracker, in.views, in.start)
	return err
}

// startStream starts the marker stream on the source.
func (in *instrument) startStream(ctx context.Context) {
	stream := &lag.Stream{Target: in.pair.src.Target, Tracker: in.tracker, W: 0, Writer: in.first, Interval: in.p.o.MarkInterval}
	in.stopStream, in.streamDone = make(chan struct{}), make(chan struct{})
	sctx, cancel := context.WithCancel(ctx)
	in.cancelStream = cancel
	go func() {
		in.stream, in.streamErr = stream.Run(sctx, in.stopStream)
		close(in.streamDone)
	}()
}

// endStream asks the stream for its last marker.
func (in *instrument) endStream() {
	select {
	case <-in.stopStream:
	default:
		close(in.stopStream)
	}
}

// drain waits, once the load ended at loadEnd, for the stream's last
// marker and then for the destination to have every marker, for the drain
// timeout at most; then it stops measuring.
func (in *instrument) drain(ctx context.Context, loadEnd time.Time) (caughtUp bool, catchUp time.Duration) {
	in.endStream()
	dctx, cancel := context.WithDeadline(ctx, loadEnd.Add(in.p.drainTimeout))
	defer cancel()
	select {
	case <-in.streamDone:
	case <-dctx.Done():
		in.cancelStream()
		<-in.streamDone
	}
	caughtUp = waitFor(dctx, in.p.drainTimeout, in.readerErr, func() bool { n, _ := in.tracker.Pending(); return n == 0 }) == nil
	catchUp = time.Since(loadEnd)
	in.measuring()
	in.wg.Wait()
	in.logErr = in.ticker.finish(time.Now())
	return caughtUp, catchUp
}

// err is the reader's or the stream's error, once drained.
func (in *instrument) err() error {
	select {
	case err := <-in.readerErr:
		if err != nil {
			return err
		}
	default:
	}
	if in.streamErr != nil {
		return in.streamErr
	}
	return in.logErr
}

// close stops whatever still runs, on any way out of Run.
func (in *instrument) close() {
	if in.streamDone != nil {
		in.endStream()
		in.cancelStream()
		<-in.streamDone
	}
	if in.measuring != nil {
		in.measuring()
		in.wg.Wait()
	}
	if in.ticker != nil {
		in.ticker.close()
	}
}
