package cli

import (
	"context"
	"io"

	"github.com/txload/txload/internal/runner"
)

// untilDone runs f on a goroutine of its own and returns what it returns,
// or runner.ErrInterrupted as soon as ctx ends (a stop signal): f then
// runs on, to no one, until the process exits. For work that holds no
// file of its own to remove (reading, checking, merging into spools
// removed as they are made).
func untilDone[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	c := make(chan result, 1)
	go func() {
		v, err := f()
		c <- result{v, err}
	}()
	select {
	case r := <-c:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, runner.ErrInterrupted
	}
}

// ctxWriter fails every write once ctx has ended: an output being written
// when a stop signal comes is abandoned there (a file written through a
// temporary one is then removed).
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, runner.ErrInterrupted
	}
	return c.w.Write(p)
}
