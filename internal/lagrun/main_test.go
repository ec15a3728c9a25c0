package lagrun

import (
	"context"
	"testing"
	"time"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/workload/all"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// options is lag's invocation as `txload lag --workload name args...`
// gives it (the run flags' defaults, lag's), less output: the workload's
// own flags are parsed from args.
func options(t *testing.T, name string, args ...string) Options {
	t.Helper()
	reg := all.Registry()
	m, err := reg.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	g := m.New()
	fs := g.Flags()
	for flag, v := range g.Hooks().RunDefaults.Flags() {
		if fl := fs.Lookup(flag); fl != nil {
			_ = fl.Value.Set(v)
		}
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return Options{Workload: m, Generator: g, Registry: reg, Replication: "logical",
		MarkInterval: 10 * time.Millisecond, PollInterval: time.Millisecond, EmbeddedVersion: embedded.DefaultMajor(),
		Run: runner.Options{
			Engine: engine.Config{Concurrency: 8, MaxTries: 10, Duration: 10 * time.Second, MaxLag: engine.DefaultMaxLag,
				DrainTimeout: DefaultDrainTimeout, Spin: engine.DefaultSpin, Seed: 1},
			Init: "fresh", Seed: 1, Config: map[string]string{}, Version: "test",
		},
		Config: map[string]any{},
	}
}

// exec runs statements on url, failing the test on an error.
func exec(t *testing.T, url string, sqls ...string) {
	t.Helper()
	conn := pgtest.Conn(t, url)
	for _, q := range sqls {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
