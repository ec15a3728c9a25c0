package interrupt

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/txload/txload/internal/runner"
)

// stopSignals end a command as Ctrl-C does: the summary of what ran, the
// embedded server stopped and its data removed, exit code 130. A closed
// terminal (SIGHUP) and Ctrl-\ (SIGQUIT) included, which would otherwise
// kill txload on the spot and leave the server's data behind.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// duplicateWithin is how soon after the first a stop signal is the same
// stop delivered twice, not a second one.
const duplicateWithin = time.Second

// Context returns a context that a stop signal cancels, its cause a
// *runner.Interrupt naming the signal; a second stop signal, a second or
// more after the first, kills at once. A stop signal ignored when the
// process started (nohup's SIGHUP) stays ignored.
// A closed standard output or error (`txload run … | head -1`) ends the
// command the same way, cleanly, instead of killing it with SIGPIPE in the
// middle of a write: the reports then name it. stop releases the signals.
func Context(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	pipes := make(chan os.Signal, 1)
	// A signal ignored when txload started stays ignored, as in any
	// program that catches it: SIGHUP under nohup, SIGINT and SIGQUIT in
	// a script's background job (`txload run … &`). Notify would take it
	// over, and a stop would then come from what the user shut out.
	var watched []os.Signal
	for _, s := range stopSignals {
		if !signal.Ignored(s) {
			watched = append(watched, s)
		}
	}
	if len(watched) > 0 {
		signal.Notify(sigs, watched...)
	}
	// With SIGPIPE notified, a write to a closed stdout or stderr returns
	// EPIPE instead of killing the process. The signal also comes for a
	// socket closed under a write; only a closed output ends the command.
	signal.Notify(pipes, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		var grace <-chan time.Time
		stopped := false
		for {
			select {
			case s := <-sigs:
				// The same stop often comes twice at once: timeout(1) and
				// a terminal signal the process and then its group. Within
				// a second it is that one stop; after it, a second signal
				// kills at once.
				if !stopped {
					stopped = true
					cancel(&runner.Interrupt{Signal: s})
					grace = time.After(duplicateWithin)
				}
			case <-grace:
				grace = nil
				if len(watched) > 0 {
					signal.Reset(watched...)
				}
			case <-pipes:
				if outputClosed() {
					cancel(&runner.Interrupt{Signal: syscall.SIGPIPE})
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}
