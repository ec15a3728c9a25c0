package failoverrun

import (
	"bytes"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/workload/all"
)

// options is failover's invocation as `txload failover name args...`
// gives it (the run flags' defaults, failover's), with the workload's own
// flags parsed from args; stdout and stderr are kept in buffers.
func options(t *testing.T, name string, args ...string) (Options, *buffer) {
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
	out := &buffer{}
	return Options{Workload: m, Generator: g, Registry: reg,
		Replications: []string{"async"}, Fault: "immediate", At: 2 * time.Second, PromoteAfter: DefaultPromoteAfter,
		FailoverTimeout: DefaultFailoverTimeout, ProbeInterval: DefaultProbeInterval,
		EmbeddedVersion: embedded.DefaultMajor(), CacheDir: os.Getenv("TXLOAD_CACHE_DIR"),
		Run: runner.Options{
			Engine: engine.Config{Concurrency: 8, MaxTries: 10, Duration: 4 * time.Second, MaxLag: engine.DefaultMaxLag,
				DrainTimeout: engine.DefaultDrainTimeout, Spin: engine.DefaultSpin, Seed: 1},
			Init: "fresh", Seed: 1, Config: map[string]string{}, Version: "test", Stdout: out, Stderr: out,
		},
		Config: map[string]any{},
	}, out
}

// buffer is a bytes.Buffer safe for the run's writers.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
