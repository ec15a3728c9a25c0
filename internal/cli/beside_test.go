package cli

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// beside is a second writer beside a run: it polls count (a query of one
// number) on conn every 20 ms until it reaches min (the run is under
// way), then calls act, again 20 ms later for as long as act says again
// (a deadlock with the run, say). The channel gets act's error, or ctx's
// if it ended first.
func beside(ctx context.Context, conn *pgx.Conn, count string, min int64, act func() (again bool, err error)) <-chan error {
	done := make(chan error, 1)
	go func() {
		for ; ctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
			var n int64
			if err := conn.QueryRow(ctx, count).Scan(&n); err != nil || n < min {
				continue
			}
			if again, err := act(); !again {
				done <- err
				return
			}
		}
		done <- ctx.Err()
	}()
	return done
}
