package pgbench

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/workload/pgbench/expr"
)

// benchSession runs max transactions back to back and keeps the first
// error.
type benchSession struct {
	id, n, max int
	mu         sync.Mutex
	err        error
}

func (s *benchSession) ID() int { return s.id }
func (s *benchSession) Next(time.Time) executor.Step {
	if s.n >= s.max {
		return executor.Step{Kind: executor.Stop}
	}
	s.n++
	return executor.Step{Kind: executor.Start, Attempt: 1}
}
func (s *benchSession) Done(now time.Time, err error, _ int) executor.Step {
	if err != nil {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		return executor.Step{Kind: executor.Stop}
	}
	return s.Next(now)
}
func (s *benchSession) Connected(now time.Time, err error) executor.Step { return s.Next(now) }
func (s *benchSession) StatementAt(int, int, time.Duration, time.Time)   {}

// The builtins' programs, prepared, on one I/O loop of 32 clients against
// the real server (scale 1): the client's path of a transaction with the
// program's own work (\set, variables, binding), its CPU time and context
// switches per transaction beside (the server's are not counted).
func BenchmarkBuiltins(b *testing.B) {
	_, tg := benchTables(b, "1")
	for _, name := range []string{"select-only", "simple-update", "tpcb-like"} {
		b.Run(name, func(b *testing.B) {
			g := newRunGen(name)
			if err := g.flags.Parse([]string{"--protocol", "prepared"}); err != nil {
				b.Fatal(err)
			}
			if err := g.validate(); err != nil {
				b.Fatal(err)
			}
			const clients = 32
			group := make([]executor.Session, clients)
			sessions := make([]*benchSession, clients)
			for i := range group {
				sessions[i] = &benchSession{id: i, max: b.N / clients}
				group[i] = sessions[i]
			}
			vars := map[string]expr.Value{"scale": {Kind: expr.Int, I: 1}}
			b.ReportAllocs()
			var from pgtest.Usage
			err := executor.Run(context.Background(), tg, executor.Clients{Groups: [][]executor.Session{group},
				Ready: func(time.Time) { from = pgtest.ReadUsage(b); b.ResetTimer() }},
				func(id int) executor.Program { return g.newProgram(id, id, uint64(id), vars, nil, 0, nil) })
			b.StopTimer()
			pgtest.ReportUsage(b, from, clients*(b.N/clients))
			if err != nil {
				b.Fatal(err)
			}
			for _, s := range sessions {
				if s.err != nil {
					b.Fatal("client " + strconv.Itoa(s.id) + ": " + s.err.Error())
				}
			}
		})
	}
}
