package workload

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/txload/txload/internal/pg"
	"github.com/txload/txload/metrics"
)

// Meta describes a workload and makes configured instances of it.
type Meta struct {
	Name        string
	Description string // one line, for `txload workloads`
	Examples    string // shown in --help of the workload's commands
	New         func() Generator
}

// Generator is one configured instance of a workload.
type Generator interface {
	// Flags returns the workload's flags, bound to this instance.
	Flags() *pflag.FlagSet
	// Validate checks the configuration once flags are parsed, before the
	// database is touched. Its error names the flag and what is allowed.
	Validate() error
}

// Initer creates and loads a workload's schema.
type Initer interface {
	Init(ctx context.Context, t *pg.Target, opts InitOptions) error
}

// InitOptions steers Init.
type InitOptions struct {
	// Drop recreates the schema even if it exists.
	Drop bool
	// Log receives progress lines (stderr).
	Log io.Writer
}

// Opser returns the operations a run executes.
type Opser interface {
	Ops(ctx context.Context, t *pg.Target, opts RunOptions) (*QueryLoad, error)
}

// RunOptions is what a workload learns of the run's own flags.
type RunOptions struct {
	Seed        uint64 // --seed: random choices are reproducible
	Concurrency int    // number of workers
	MaxTries    int    // attempts per operation (--max-tries)
}

// QueryLoad is what a workload hands the engine: operation names and a way to
// make one worker per concurrent client.
type QueryLoad struct {
	// Ops names the kinds of operation, in the order Worker.Next indexes them.
	Ops []string
	// NewWorker makes worker id (0-based) with its own connection.
	NewWorker func(ctx context.Context, id int) (Worker, error)
	// Close, if set, releases what Ops acquired, after every worker closed.
	Close func()
	// BlockingIO says the workers wait in blocking syscalls (see
	// pg.BlockingDial): a thread returning from one needs a free scheduler
	// slot, so the run gives Go twice as many as there are cores.
	BlockingIO bool
	// Statements, if set, is the number of statements of each operation:
	// their latencies, failures and retries are then reported one by one,
	// through the StatementRecorder given to workers that are
	// StatementWorkers.
	Statements []int
}

// StatementRecorder takes per-statement figures from a worker.
type StatementRecorder interface {
	Statement(op, stmt int, d time.Duration)
	StatementError(op, stmt int, retried bool)
}

// StatementWorker is a Worker that reports its statements one by one.
type StatementWorker interface {
	SetStatementRecorder(StatementRecorder)
}

// Worker runs operations on its own connection. Only its goroutine calls it.
type Worker interface {
	// Next picks the kind of operation to run next, as an index into Ops.
	Next() int
	// Do makes attempt number attempt (from 1) at an operation of kind op.
	// A retry calls Do again with the same op and the next attempt number,
	// after the failed attempt was rolled back by Do itself.
	Do(ctx context.Context, op, attempt int) error
	// Reset re-establishes the worker's connection after it was lost.
	Reset(ctx context.Context) error
	// Close releases the connection.
	Close(ctx context.Context)
}

// Checker audits the data a workload left behind.
type Checker interface {
	Check(ctx context.Context, t *pg.Target) (*CheckResult, error)
}

// CheckResult is what a check found.
type CheckResult struct {
	// Lines are labelled figures, printed in order: "lost updates", "12".
	Lines []Line
	// Violations describe anomalies the isolation level of the run forbids;
	// any makes `check` exit 1.
	Violations []string
	// Values are the figures by key, for comparison tables and JSON.
	Values map[string]int64
}

// Line is one labelled figure of a report.
type Line struct{ Label, Value string }

// RunReporter builds a workload's own block of a run's report, after the
// run: for the bank, iso-load's lines and the audit.
type RunReporter interface {
	RunReport(ctx context.Context, t *pg.Target, total *metrics.Snapshot) (*CheckResult, error)
}

// Varianter is implemented by workloads whose flags take lists: each variant
// is one combination, run on fresh data, and the run ends with a table
// comparing them.
type Varianter interface {
	// Variants returns one generator per combination, each with one value per
	// listed flag. A single combination returns nil.
	Variants() []Variant
}

// Variant is one combination of a Varianter.
type Variant struct {
	Labels    []Line // the combination, e.g. isolation=serializable
	Generator Generator
}

// RunDefaulter changes the defaults of run's own flags for one workload:
// the pgbench family defaults to pgbench's --max-tries 1, say.
type RunDefaulter interface {
	DefaultRunFlags() map[string]string
}

// PgbenchDescriber describes a run the way pgbench's report header does,
// for --output pgbench.
type PgbenchDescriber interface {
	PgbenchInfo() PgbenchInfo
}

// PgbenchInfo is what pgbench's report says of the scripts.
type PgbenchInfo struct {
	Scale     int
	QueryMode string
	Scripts   []PgbenchScript
}

// PgbenchScript is one script: its title in the report, its weight, and its
// commands as -r lists them.
type PgbenchScript struct {
	Title      string
	Weight     int
	Statements []string
}

// Registry holds the workloads the commands know.
type Registry struct {
	metas map[string]Meta
}

// NewRegistry returns a registry of metas. Names must be unique.
func NewRegistry(metas ...Meta) (*Registry, error) {
	r := &Registry{metas: make(map[string]Meta, len(metas))}
	for _, m := range metas {
		if _, dup := r.metas[m.Name]; dup {
			return nil, fmt.Errorf("registering workload %q: name used twice", m.Name)
		}
		r.metas[m.Name] = m
	}
	return r, nil
}

// Get returns the named workload.
func (r *Registry) Get(name string) (Meta, error) {
	m, ok := r.metas[name]
	if !ok {
		return Meta{}, fmt.Errorf("unknown workload %q (known: %s)", name, strings.Join(r.Names(), ", "))
	}
	return m, nil
}

// All returns every workload, sorted by name.
func (r *Registry) All() []Meta {
	out := make([]Meta, 0, len(r.metas))
	for _, m := range r.metas {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names returns every workload name, sorted.
func (r *Registry) Names() []string {
	var names []string
	for _, m := range r.All() {
		names = append(names, m.Name)
	}
	return names
}
