package workload

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/printable"
)

// Meta describes a workload and makes configured instances of it.
type Meta struct {
	Name        string
	Description string // one line, for `txload workloads`
	Examples    string // shown in --help of the workload's commands
	New         func() Generator
}

// Generator is one configured instance of a workload: its flags, and what it
// can do once they are parsed.
type Generator interface {
	// Flags returns the workload's flags, bound to this instance.
	Flags() *pflag.FlagSet
	// Hooks returns what the workload can do. A nil hook is a capability
	// the workload does not have; the commands say so.
	Hooks() Hooks
}

// FlagVerbs is the annotation that gives a workload's flag to some commands
// only: its value lists their verbs ("run", "sweep"). A flag without it
// belongs to every command of the workload.
const FlagVerbs = "txload/verbs"

// Verbs are commands a workload's flag may be given to (OnlyFor), as a
// set: VerbRun|VerbSweep. A name that is not a command does not compile.
type Verbs uint8

// The commands of a workload.
const (
	VerbInit Verbs = 1 << iota
	VerbRun
	VerbSweep
	VerbCheck
	VerbFailover
)

var verbNames = [...]string{"init", "run", "sweep", "check", "failover"}

// Names lists the verbs of v, in the order of the constants.
func (v Verbs) Names() []string {
	var out []string
	for i, n := range verbNames {
		if v&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// OnlyFor gives the named flags of fs to the commands verbs only: the
// others neither list nor take them.
func OnlyFor(fs *pflag.FlagSet, verbs Verbs, names ...string) {
	for _, n := range names {
		if err := fs.SetAnnotation(n, FlagVerbs, verbs.Names()); err != nil {
			panic(err) // a name of the workload's own: a programming error
		}
	}
}

// FlagIgnoredBy annotates a workload's flag with the commands that take it
// (so one command line serves every command) but do not use it: they say
// so, in one line.
const FlagIgnoredBy = "txload/ignored-by"

// IgnoredBy marks the named flags of fs as taken but not used by the
// commands verbs (check audits against what init recorded, not the
// flags).
func IgnoredBy(fs *pflag.FlagSet, verbs Verbs, names ...string) {
	for _, n := range names {
		if err := fs.SetAnnotation(n, FlagIgnoredBy, verbs.Names()); err != nil {
			panic(err) // a name of the workload's own: a programming error
		}
	}
}

// FlagIgnored says whether the command verb takes flag f without using it.
func FlagIgnored(f *pflag.Flag, verb string) bool {
	return slices.Contains(f.Annotations[FlagIgnoredBy], verb)
}

// FlagIgnoredWhy annotates a flag IgnoredBy marks with what the command
// reads instead, when it is not the settings init recorded (IgnoredWhy).
const FlagIgnoredWhy = "txload/ignored-why"

// IgnoredWhy says what the commands that ignore the named flags of fs read
// instead of them: "it reads the tables and the history".
func IgnoredWhy(fs *pflag.FlagSet, why string, names ...string) {
	for _, n := range names {
		if err := fs.SetAnnotation(n, FlagIgnoredWhy, []string{why}); err != nil {
			panic(err) // a name of the workload's own: a programming error
		}
	}
}

// FlagFor says whether flag f belongs to the command verb ("run").
func FlagFor(f *pflag.Flag, verb string) bool {
	verbs, ok := f.Annotations[FlagVerbs]
	return !ok || slices.Contains(verbs, verb)
}

// InitMode is what a run does to the workload's schema first (--init).
type InitMode uint8

// The modes. InitDefault is the runner's default, fresh.
const (
	InitDefault InitMode = iota
	InitFresh            // drop and reload: each run on fresh data
	InitKeep             // load only if missing
	InitSkip             // leave it: the user loads it (`txload init`)
)

// String is the mode as --init takes it.
func (m InitMode) String() string {
	switch m {
	case InitKeep:
		return "keep"
	case InitSkip:
		return "skip"
	}
	return "fresh"
}

// RunDefaults are a workload's defaults of the run's own flags where they
// differ from the runner's: fields, so that a wrong name does not compile.
type RunDefaults struct {
	// Init is --init's default (InitDefault: fresh).
	Init InitMode
	// MaxTries is --max-tries' default (0: the runner's, 10).
	MaxTries int
	// ContinueOnError is --continue-on-error's default (the runner's: off).
	ContinueOnError bool
}

// Flags returns the defaults set, as flag name and value: what the
// commands set on their flags.
func (d RunDefaults) Flags() map[string]string {
	out := map[string]string{}
	if d.Init != InitDefault {
		out["init"] = d.Init.String()
	}
	if d.MaxTries > 0 {
		out["max-tries"] = strconv.Itoa(d.MaxTries)
	}
	if d.ContinueOnError {
		out["continue-on-error"] = "true"
	}
	return out
}

// Hooks are a workload's capabilities, as plain functions. Every command
// finds what it needs here: run needs Ops, init needs Init, check needs
// Check.
type Hooks struct {
	// Validate checks the configuration once flags are parsed, before the
	// database is touched. Its error names the flag and what is allowed.
	Validate func() error
	// Init creates and loads the workload's schema.
	Init func(ctx context.Context, t *pg.Target, opts InitOptions) error
	// Ops prepares a run: what its clients do. It fails with one line that
	// says to run init when the schema is missing or incomplete.
	Ops func(ctx context.Context, t *pg.Target, opts RunOptions) (*QueryLoad, error)
	// Check audits the data the workload left behind.
	Check func(ctx context.Context, t *pg.Target) (*CheckResult, error)
	// CheckValidate, if set, is Validate for check: a flag that names a
	// file the run writes and check reads (append's --history) is checked
	// as check's input, before the database is touched. Unset: Validate.
	CheckValidate func() error
	// Variants returns one generator per combination when the flags list
	// several values (each variant runs on fresh data, and the run ends
	// with a table comparing them); nil for a single combination.
	Variants func() []Variant
	// RunDefaults changes the defaults of run's own flags for this
	// workload: pgbench's family defaults to --max-tries 1, say.
	RunDefaults RunDefaults
	// Tables lists the tables the workload writes, for commands that
	// compare or replicate them (lag).
	Tables []string
	// Clients, if set, is how many clients a run of the configured
	// workload needs at least, as far as its flags tell, in place of
	// --concurrency (pgio: tables × sessions per table; 0: --concurrency),
	// and the flags that set that number. The server's free connections
	// are checked against it before anything is written.
	Clients func() (n int, flags string)
	// SessionState, if set, says why the configured workload needs state
	// kept in the server session ("--protocol prepared keeps named
	// prepared statements", beginning with the flag as the user typed
	// it), or "" when it needs none: a pooler that hands each transaction
	// any session refuses it.
	SessionState func() string
	// MarkTransactions, if set, says whether the configured workload can
	// write a marker inside each of its transactions (RunOptions.Marks,
	// for lag --mark-transactions): nil when it can, else why not, in one
	// line. Unset: the workload cannot.
	MarkTransactions func() error
	// PerStatement says the workload's operations report their statements
	// one by one (QueryLoad.Statements, OpInfo, Conn.Statement): run's -r.
	// Unset, run refuses -r.
	PerStatement bool
	// SingleProcess, if set, says why the workload runs in one txload
	// process only: run refuses --instance.
	SingleProcess string
	// Timed, if set, says why the workload runs only for a duration (its
	// loop or its sampling is timed): run then refuses --transactions.
	Timed string
	// Inputs, if set, lists the files the configured workload reads (its
	// script files), by flag: no output of the run may be one of them.
	Inputs func() []Input
	// Outputs, if set, lists the files the configured workload writes
	// (append's --history), by flag: no other output of the run may be
	// one of them.
	Outputs func() []Input
	// ValidateRun, if set, checks the configured workload against the
	// run's own settings, after Validate and before the database is
	// touched (TPC-C's --wait runs 10 terminals per warehouse: fewer given
	// as --concurrency is bad usage). Its error names the flags and what
	// is allowed.
	ValidateRun func(RunSettings) error
}

// RunSettings are the run's own settings a workload may check.
type RunSettings struct {
	// Concurrency is --concurrency, the clients of every instance
	// together; ConcurrencySet says it was given.
	Concurrency    int
	ConcurrencySet bool
	// Rate is --rate (0: closed loop); Instances the load generators of a
	// run of several (0: one).
	Rate      float64
	Instances int
}

// Input is a file a workload reads (or, in Outputs, writes), and the flag
// that named it.
type Input struct {
	Flag, Path string
}

// InitOptions steers Init.
type InitOptions struct {
	// Drop recreates the schema even if it exists.
	Drop bool
	// Log receives progress lines (stderr).
	Log io.Writer
}

// Logf writes a progress line to o.Log, if any.
func (o InitOptions) Logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format, args...)
	}
}

// RunOptions is what a workload learns of the run's own flags.
type RunOptions struct {
	Seed        uint64 // --seed: random choices are reproducible
	Concurrency int    // number of clients
	MaxTries    int    // attempts per operation (--max-tries)
	// FirstClient is the number of this process's first client among all
	// instances of a multi-process run (client ids are FirstClient+id).
	FirstClient int
	// Instance and Instances are this process's number (from 0) among the
	// load generators of the run (--instance i/N), and their number (1
	// when alone).
	Instance, Instances int
	// Duration and Warmup are the run's measured period and the warm-up
	// before it, Rate its open-loop rate (0: closed loop), Progress its
	// progress interval (0: none): for workloads that run their own loop on
	// the server (pgio's server mode) or report figures per interval.
	Duration, Warmup time.Duration
	Rate             float64
	Progress         time.Duration
	// Log receives warnings and the workload's own progress lines (stderr).
	Log io.Writer
	// Figure, if set, takes the workload's own figures of each progress
	// interval as gauges (--metrics-addr): name in snake_case, a help
	// text, the value.
	Figure func(name, help string, value float64)
	// Marks, if set, gives client id (from 0, in this process) the markers
	// it writes inside each of its transactions (lag --mark-transactions);
	// nil when the id has none. Only workloads whose MarkTransactions hook
	// is set and accepts the configuration take it.
	Marks func(client int) TxMarker
}

// TxMarker writes a marker row inside a client's transactions, so that a
// replication's lag is measured per transaction (package lag's TxMark). A
// client calls Begin once per attempt that reaches its COMMIT (a retry
// writes a new marker), runs its statement inside the transaction before
// COMMIT, then calls exactly one of Committed and RolledBack.
type TxMarker interface {
	// Begin returns the statement that writes the attempt's marker, its
	// arguments integers, to run inside the transaction before COMMIT.
	Begin() (sql string, args []any)
	// Committed says the attempt's COMMIT was acknowledged at at.
	Committed(at time.Time)
	// RolledBack says the attempt ended without an acknowledged COMMIT;
	// ambiguous when the connection was lost while COMMIT was in flight.
	RolledBack(ambiguous bool, at time.Time)
}

// QueryLoad is what a workload hands the engine for one run: the kinds of
// operation and how its clients run them.
type QueryLoad struct {
	// Ops names the kinds of operation.
	Ops []string
	// Statements, if set, is the number of statements of each operation:
	// their latencies, failures and retries are then reported one by one.
	Statements []int
	// Chooser makes client id's chooser of the kind of its next operation
	// (an index into Ops). Nil: every operation is Ops[0].
	Chooser func(id int) func() int
	// Clients, if positive, is the number of clients the load needs (pgio:
	// its tables times its sessions per table): the run has that many in
	// place of --concurrency.
	Clients int
	// Measured, if set, is told the measured window's figures (the
	// summary's: no warm-up, no drain) before Report is called.
	Measured func(window *metrics.Snapshot)
	// Pause, if set, makes client id's pause before each of its
	// operations in a closed loop: given the operation that ended (-1
	// before the first) and the one chosen next, how long the client
	// waits before the next's intended start (TPC-C's think and keying
	// times). The pause is in no latency; an operation whose pause would
	// end after the run's end is not started, its client pausing until
	// the end. An open loop has none.
	Pause func(id int) func(prev, next int) time.Duration

	// Drive runs the clients: it connects every one, calls cs.Ready with
	// the start time, then steps them as their sessions decide until every
	// session says Stop or ctx ends. Programs makes the Drive of a
	// workload whose clients are executor Programs (every workload's, but
	// pgio's server mode, which replays what the server ran).
	Drive func(ctx context.Context, cs Clients) error

	// Report, if set, builds the workload's block of the run's report
	// after the run, from what it measured: bank's audit, say.
	Report func(ctx context.Context, total *metrics.Snapshot) (*CheckResult, error)
	// OpInfo, if set, describes each of Ops (same order) for reports that
	// list them: its title, its weight in the mix, its statements' text.
	// Unset: each is titled by its name, weight 1.
	OpInfo []OpInfo
	// Scale is the size of the data the run found, in the workload's own
	// unit (pgbench's scaling factor, read from its tables): 0 for none. It
	// is recorded in the run's document, whatever the flags said.
	Scale int
	// Protocol is the query protocol the clients send their statements
	// with: ProtocolSimple, ProtocolExtended or ProtocolPrepared (see
	// ProtocolOf), recorded in the run's document and printed by
	// --output pgbench ("query mode"); "" is taken for simple.
	Protocol string
	// Close, if set, releases what Ops acquired, after every client ended.
	Close func()
}

// The query protocols, as pgbench names them (its --protocol).
const (
	ProtocolSimple   = "simple"   // Query messages (Conn.Simple)
	ProtocolExtended = "extended" // the unnamed statement, parsed each time (a Stmt without Name)
	ProtocolPrepared = "prepared" // named statements, parsed once per connection
)

// ProtocolOf is the protocol of statements sent with Conn.Bind, for
// QueryLoad.Protocol: prepared when every one has a Name, extended when
// none has (a pooler's), both when they differ.
func ProtocolOf(stmts ...*executor.Stmt) string {
	named := 0
	for _, s := range stmts {
		if s.Name != "" {
			named++
		}
	}
	switch named {
	case len(stmts):
		return ProtocolPrepared
	case 0:
		return ProtocolExtended
	}
	return ProtocolExtended + " and " + ProtocolPrepared
}

// Programs is the Drive of a workload whose clients are Programs on the
// executor's I/O loops, each with a connection of its own to t: programs
// makes client id's (id from 0 in this process; the run's number of it is
// RunOptions.FirstClient+id).
func Programs(t *pg.Target, programs func(id int) Program) func(context.Context, Clients) error {
	return func(ctx context.Context, cs Clients) error { return executor.Run(ctx, t, cs, programs) }
}

// Session, Step, Program and Clients are the engine's side of a client,
// the workload's, and what a Drive is handed; Setuper, Ender and
// Statementer are what a Program may also be (failover and lag's markers
// need an Ender: see Hooks.MarkTransactions); see package executor.
type (
	Session     = executor.Session
	Step        = executor.Step
	StepKind    = executor.StepKind
	Program     = executor.Program
	Setuper     = executor.Setuper
	Ender       = executor.Ender
	Statementer = executor.Statementer
	Clients     = executor.Clients
)

// The steps a session returns.
const (
	Stop      = executor.Stop
	Start     = executor.Start
	Wait      = executor.Wait
	Reconnect = executor.Reconnect
	Pause     = executor.Pause
)

// CheckResult is what a check found.
type CheckResult struct {
	// Lines are labelled figures, printed in order: "lost updates", "12".
	Lines []Line
	// Violations describe anomalies the isolation level of the run forbids;
	// any makes `check` exit 1.
	Violations []string
	// Values are the figures by key, for comparison tables and JSON.
	Values map[string]int64
	// Columns are the Values shown in a comparison of variants, as
	// {key, column title}.
	Columns [][2]string
	// Figures says the block reports figures and audits nothing (pgio's):
	// no "check: ok" is printed under it.
	Figures bool
	// Reconciled is the reconciliation Into added, for Identify.
	Reconciled *Reconciliation
}

// Printable quotes, in place, the control characters and invalid UTF-8
// of r's lines (pg.OneLine) and violations (printable.Block: a violation
// may hold lines of its own, an append anomaly's, indented), which carry names the
// database chose (a column's, a schema's, an operator's): a name of
// escape sequences would otherwise rewrite the terminal the check prints
// on, and hide its VIOLATION lines behind a "check: ok" of its own
// (the eighth retest's retry). It returns r.
func (r *CheckResult) Printable() *CheckResult {
	if r == nil {
		return nil
	}
	for i := range r.Lines {
		r.Lines[i].Label, r.Lines[i].Value = pg.OneLine(r.Lines[i].Label), pg.OneLine(r.Lines[i].Value)
	}
	for i, v := range r.Violations {
		r.Violations[i] = printable.Block(v)
	}
	return r
}

// Line is one labelled figure of a report.
type Line struct{ Label, Value string }

// Variant is one combination of a workload whose flags take lists.
type Variant struct {
	Labels    []Line // the combination, e.g. isolation=serializable
	Generator Generator
}

// OpInfo describes one kind of operation for the reports: its title, its
// weight in the mix, and its statements as a per-statement report lists
// them.
type OpInfo struct {
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

// AbortAfter is the error of an operation that succeeded but leaves its
// client unable to go on: the engine counts the operation as done, then
// ends the client as an error no retry cures would (pgbench counts a
// script that ended inside a transaction block, then aborts its client).
type AbortAfter struct{ Err error }

func (e *AbortAfter) Error() string { return e.Err.Error() }
func (e *AbortAfter) Unwrap() error { return e.Err }
