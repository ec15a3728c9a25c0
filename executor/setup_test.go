package executor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/pg"
)

// setupProgram is a queryProgram that sets each new connection up with a
// statement of its own (a Setuper).
type setupProgram struct {
	*funcProgram
	setup string
}

func (p *setupProgram) Setup(c *Conn) { c.Simple([]byte(p.setup), nil, CaptureNone) }

// boundedTarget is a target for addr whose connections must be ready in a
// second (the URL's connect_timeout).
func boundedTarget(t *testing.T, addr string) *pg.Target {
	t.Helper()
	tg, err := pg.NewTarget([]string{fmt.Sprintf("postgres://u@%s/db?sslmode=disable&connect_timeout=1", addr)})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// A server that stops answering while a client connects (before the
// startup is done, or once it is, during the program's setup statements)
// fails that client's connection within the connect timeout, and the error
// says which client and which step: at the start of a run, the run fails
// at once; later, the session is told (Connected) and retries as after any
// failed connection. Before the bound, a client whose setup had no answer
// waited for it for ever, and the run with it, saying nothing.
func TestConnectionSetupBounded(t *testing.T) {
	const bound = time.Second
	for name, raw := range loops() {
		t.Run(name+", startup not answered", func(t *testing.T) {
			took, err := runBounded(t, boundedTarget(t, pgtest.Mute(t)), raw, &recSession{ops: 1}, queryProgram("SELECT"))
			checkStalled(t, err, took, bound, "starting client 0: connecting to postgres://u@", "startup and authentication: no answer in 1s (the connect timeout)")
		})
		t.Run(name+", setup not answered", func(t *testing.T) {
			srv := newFakeServer(t, func(c *serverConn) {
				if c.expect("Q SET x = 1") {
					stall(c)
				}
			})
			p := &setupProgram{queryProgram("SELECT"), "SET x = 1"}
			took, err := runBounded(t, boundedTarget(t, srv.ln.Addr().String()), raw, &recSession{ops: 1}, p)
			checkStalled(t, err, took, bound, "starting client 0: setting up the connection: no answer in 1s (the connect timeout)")
		})
		t.Run(name+", setup of a reconnection not answered", func(t *testing.T) {
			srv := newFakeServer(t, func(c *serverConn) {
				if !c.expect("Q SET x = 1") {
					return
				}
				if c.n > 0 {
					stall(c)
					return
				}
				c.send(tag("SET"), idle)
				c.expect("Q SELECT") // then the connection is lost
			})
			p := &setupProgram{queryProgram("SELECT"), "SET x = 1"}
			sess := &recSession{ops: 1}
			took, err := runBounded(t, boundedTarget(t, srv.ln.Addr().String()), raw, sess, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(sess.connected) != 1 || sess.connected[0] == nil {
				t.Fatalf("reconnections told: %v; want one that failed", sess.connected)
			}
			checkStalled(t, sess.connected[0], took, bound, "setting up the connection: no answer in 1s (the connect timeout)")
		})
	}
}

// stall answers nothing until the client goes, or 25 s have passed (a
// client with no bound would wait for ever, and the server's end with it).
func stall(c *serverConn) {
	_ = c.nc.SetReadDeadline(time.Now().Add(25 * time.Second))
	c.waitGone()
}

// runBounded runs one session against tg, within 15 s, and says how long
// it took. A run that has not ended 5 s after its context (a reconnection
// goes on without it) fails the test.
func runBounded(t *testing.T, tg *pg.Target, raw bool, sess Session, p Program) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, tg, Clients{Groups: [][]Session{{sess}}, Ready: func(time.Time) {}}, func(int) Program { return p }, raw)
	}()
	select {
	case err := <-done:
		if ctx.Err() != nil {
			t.Fatalf("the run did not end within 15 s (connect timeout 1s): %v", err)
		}
		return time.Since(start), err
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end within 20 s (connect timeout 1s), 5 s after its context")
	}
	return 0, nil
}

// checkStalled checks that err says each of want, and came within the
// bound (with room for a loaded machine, far from the 15 s of no bound).
func checkStalled(t *testing.T, err error, took, bound time.Duration, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error after %s; want %q", took, want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if took > 5*bound {
		t.Errorf("took %s with a connect timeout of %s", took, bound)
	}
}
