package pgbenchrun

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report/pgbenchlog"
	"github.com/txload/txload/workload"
)

// result is a run of 2 s in which op 0 committed ok transactions and one
// failed on a serialization failure.
func result(t *testing.T, ops []string, ok int) *engine.Result {
	t.Helper()
	start := time.Unix(1000, 0)
	g := metrics.NewRegistry(ops, start)
	r := g.NewRecorder()
	for range ok {
		r.Success(0, true, time.Millisecond, time.Millisecond, 0, 1)
	}
	r.Failure(0, true, metrics.Serialization, 1)
	if _, err := g.Tick(start.Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	total := g.Total()
	total.Elapsed = 2 * time.Second
	return &engine.Result{Total: total, ConnectTime: 3 * time.Millisecond, Connections: 100, ConnectionTime: 2 * time.Second}
}

// The run's description comes from the load and the engine's
// configuration as run: what the workload found (scale, protocol, its
// scripts' titles) or the defaults pgbench prints, the tries as pgbench
// takes them (no limit: no line), the connection time as pgbench computes
// it.
func TestFormatReport(t *testing.T) {
	scripts := []workload.OpInfo{{Title: "<builtin: select only>", Weight: 1}}
	for _, tt := range []struct {
		name    string
		load    workload.QueryLoad
		engine  engine.Config
		want    []string
		missing []string
	}{
		{"a builtin at scale 2, prepared", workload.QueryLoad{Ops: []string{"select-only"}, OpInfo: scripts, Scale: 2, Protocol: "prepared"},
			engine.Config{Concurrency: 4, Duration: 2 * time.Second, MaxTries: 1},
			[]string{"transaction type: <builtin: select only>\n", "scaling factor: 2\n", "query mode: prepared\n", "number of clients: 4\n",
				"number of threads: 3\n", "maximum number of tries: 1\n", "number of transactions actually processed: 99\n",
				"initial connection time = 3.000 ms\n"},
			[]string{"average connection time"}},
		{"a workload without scripts or scale, no limit of tries", workload.QueryLoad{Ops: []string{"transfer"}},
			engine.Config{Concurrency: 2, Duration: 2 * time.Second, MaxTries: engine.Unlimited},
			[]string{"transaction type: transfer\n", "scaling factor: 1\n", "query mode: simple\n", "number of transactions retried: "},
			[]string{"maximum number of tries"}},
		{"a connection per transaction", workload.QueryLoad{Ops: []string{"select-only"}, OpInfo: scripts},
			engine.Config{Concurrency: 2, Duration: 2 * time.Second, MaxTries: 1, ConnectPerTxn: true},
			// 2 s over 99 committed and 1 failed transactions.
			[]string{"average connection time = 20.000 ms\n", "(including reconnection times)"},
			[]string{"initial connection time"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			load := tt.load
			p := (&Format{}).Printer(runner.RunInfo{Load: &load, Engine: tt.engine, Threads: 3, Scrub: func(s string) string { return s }})
			var out bytes.Buffer
			if err := p.Report(&out, result(t, load.Ops, 99)); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, out.String())
				}
			}
			for _, m := range tt.missing {
				if strings.Contains(out.String(), m) {
					t.Errorf("report has %q:\n%s", m, out.String())
				}
			}
		})
	}
}

// pgbench prints its own lines for the errors it retries, and leaves the
// others to the runner.
func TestFormatFailed(t *testing.T) {
	p := (&Format{}).Printer(runner.RunInfo{Load: &workload.QueryLoad{Ops: []string{"s"}}, Engine: engine.Config{MaxTries: 3},
		Scrub: func(s string) string { return s }})
	var out bytes.Buffer
	e := engine.ErrorEvent{Client: 1, OpIndex: 0, Stmt: 2, Attempt: 1, Class: metrics.Serialization, Retry: true, Err: errors.New("could not serialize")}
	if !p.Failed(&out, e) {
		t.Fatal("a serialization failure is left to the runner")
	}
	want := "pgbench: client 1 got an error in command 2 (SQL) of script 0; could not serialize\n" +
		"pgbench: client 1 repeats the transaction after the error (try 1/3)\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	e.Class = metrics.Constraint
	if out.Reset(); p.Failed(&out, e) || out.Len() > 0 {
		t.Errorf("a constraint violation printed %q: pgbench does not retry it, the runner's line says it", out.String())
	}
}

// The transaction log writes one file per group, each transaction to its
// group's, as pgbench's threads do; what pgbench would not log (a client's
// other errors) is left out.
func TestTxnLog(t *testing.T) {
	dir := t.TempDir()
	l := &TxnLog{Config: pgbenchlog.Config{Prefix: filepath.Join(dir, "log"), PID: 7, MaxTries: 1}}
	if err := l.Open(2); err != nil {
		t.Fatal(err)
	}
	start := time.Unix(2000, 0)
	l.Start(start)
	l.Txn(engine.Txn{Client: 0, Group: 0, Number: 1, Outcome: engine.TxnOK, Latency: time.Millisecond, Tries: 1, End: start.Add(time.Second)})
	l.Txn(engine.Txn{Client: 1, Group: 1, Number: 1, Outcome: engine.TxnOK, Latency: 2 * time.Millisecond, Tries: 1, End: start.Add(time.Second)})
	l.Txn(engine.Txn{Client: 1, Group: 1, Number: 2, Outcome: engine.TxnFailed, Class: metrics.Other, Tries: 1, End: start.Add(time.Second)})
	if err := l.Close(start.Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ name, want string }{{"log.7", "0 1 1000 0 2001 0\n"}, {"log.7.1", "1 1 2000 0 2001 0\n"}} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != f.want {
			t.Errorf("%s holds %q, want %q", f.name, b, f.want)
		}
	}
}
