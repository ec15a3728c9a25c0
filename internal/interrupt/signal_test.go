//go:build unix

package interrupt

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/txload/txload/internal/runner"
)

// TestContext sends each stop signal to the test process itself: the
// context ends, its cause naming the signal; a SIGPIPE while stdout and
// stderr are open (a socket closed under a write) ends nothing; stop ends
// the context without a cause of its own.
func TestContext(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, stop := Context(context.Background())
			defer stop()
			if err := syscall.Kill(os.Getpid(), syscall.SIGPIPE); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(os.Getpid(), sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("%v did not end the context", sig)
			}
			var in *runner.Interrupt
			if !errors.As(context.Cause(ctx), &in) || in.Signal != sig {
				t.Errorf("cause %v, want the interrupt by %v", context.Cause(ctx), sig)
			}
		})
	}
	ctx, stop := Context(context.Background())
	if err := syscall.Kill(os.Getpid(), syscall.SIGPIPE); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if ctx.Err() != nil {
		t.Errorf("a SIGPIPE with the outputs open ended the context: %v", context.Cause(ctx))
	}
	stop()
	if !errors.Is(context.Cause(ctx), context.Canceled) {
		t.Errorf("after stop: cause %v, want context.Canceled", context.Cause(ctx))
	}
}

// The same stop delivered twice at once (timeout(1) signals the process,
// then its group) is one interrupt: the process lives on to report and
// clean up, where it used to die of the second delivery.
func TestDuplicateSignal(t *testing.T) {
	ctx, stop := Context(context.Background())
	defer stop()
	for range 2 {
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGINT did not end the context")
	}
	time.Sleep(50 * time.Millisecond) // still alive after the second
}

// A stop signal ignored when the command started (nohup's SIGHUP, SIGINT in
// a script's background job) stays ignored: it ends nothing, and the
// others still do. (Notify took it over: nohup had no effect.)
func TestIgnoredAtStartStaysIgnored(t *testing.T) {
	signal.Ignore(syscall.SIGHUP)
	defer signal.Reset(syscall.SIGHUP)
	ctx, stop := Context(context.Background())
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if ctx.Err() != nil {
		t.Fatalf("an ignored SIGHUP ended the context: %v", context.Cause(ctx))
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not end the context")
	}
	if !signal.Ignored(syscall.SIGHUP) {
		t.Error("SIGHUP is no longer ignored")
	}
}
