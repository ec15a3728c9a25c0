package runner

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/prom"
	"github.com/txload/txload/workload"
)

// Options is one invocation of a command that runs load.
type Options struct {
	// Command names the command, for JSON: "run", "sweep".
	Command string
	// Engine is the run's schedule and limits. Classify is set by Run.
	Engine engine.Config
	// Init is what happens to the schema before the run: fresh (drop and
	// reload), keep (load if missing), skip.
	Init string
	// ConcurrencySet says --concurrency was given (Hooks.ValidateRun).
	ConcurrencySet bool
	// InitSet says --init was given: without it, a workload whose default
	// is skip never creates tables on a user's database (it does on the
	// embedded server, which holds nothing).
	InitSet bool
	// Seed seeds the workload's random choices and the arrival schedule.
	Seed uint64
	// FirstClient numbers this process's clients among all instances.
	FirstClient int
	// Format, if set, prints the run in another format than txload's
	// summary (--output).
	Format Format
	// PgbenchExit: the run's exit status is pgbench's: an open loop that
	// fell behind its rate (BEHIND) is reported and does not fail the run
	// (its lag says so), nor does a run in which every transaction failed
	// (its failures say so); aborted clients do.
	PgbenchExit bool
	// PerStatement reports each statement's latency, failures and retries.
	PerStatement bool
	// VerboseErrors prints every failed attempt on Stderr.
	VerboseErrors bool
	// JSON, Histogram and CPUProfile are output files ("" = none).
	JSON, Histogram, CPUProfile string
	// Outputs are the command's other output files (sweep's --csv and
	// --chart); Inputs the files it reads (a script's --file). No output
	// may be an input or another output.
	Outputs, Inputs []outfile.File
	// HTML is the file of the run's HTML report ("" = none).
	HTML string
	// ClientErrorsAbort: an error that would stop the run (a syntax error,
	// a missing table, a script's own error) ends only its client; the run
	// goes on and reports them. Authentication errors still stop the run;
	// a lost connection ends its client.
	ClientErrorsAbort bool
	// KeepIntervals keeps the run's intervals in its Outcome without --json
	// or --html: for a caller that writes its own document (lag).
	KeepIntervals bool
	// MetricsAddr is --metrics-addr: serve /metrics there ("" = off). See
	// StartMetrics, which sets Metrics.
	MetricsAddr string
	// Metrics, if set, is fed every interval the engine ticks.
	Metrics *prom.Exporter
	// LiveAddr is --live: serve the run's live page there ("" = off; the
	// --metrics-addr server serves it too). See StartMetrics, which sets
	// Live.
	LiveAddr string
	// Live, if set, feeds the live page.
	Live *Live
	// Config is the flags as given, for JSON; never a password.
	Config map[string]string
	// Version is txload's.
	Version string
	// Stdout takes the reports, Stderr progress and diagnostics.
	Stdout, Stderr io.Writer
	// allClients are the clients of every instance, for a share (Share).
	allClients int
	// figures keeps the workload's own figures of each interval for the
	// document, when the run writes one (RunOne sets it).
	figures *figureLog

	// BeforeRun, if set, runs once the target is open and checked, before
	// the workload loads: what a command does to the database before its
	// load (a banner, a look at the tables, a vacuum). It may adjust the
	// options.
	BeforeRun func(ctx context.Context, conn *Conn, opts *Options) error
	// TxnLog, if set, takes every transaction that ended.
	TxnLog TxnLog
	// Marks, if set, gives each client the markers it writes inside its
	// transactions (lag --mark-transactions): workload.RunOptions.Marks.
	Marks func(client int) workload.TxMarker
}

// ParseInstance reads --instance: "i/N", instance i (from 0) of N.
func ParseInstance(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--instance %q: want i/N, instance i of N counted from 0 (0 <= i < N), e.g. 0/3", s)
	}
	return i, n, nil
}

// Share makes o this instance's share of a run of several load generators:
// its slice of the clients (numbered after those of the instances before
// it); the engine takes its share of the schedule. Instances share a
// database whose schema is loaded once, before them.
func (o *Options) Share(i, n int) error {
	c := o.Engine.Concurrency
	if c < n {
		return Usagef("--concurrency %d is the clients of all %d instances together: give at least one each", c, n)
	}
	if o.InitSet && o.Init != "skip" {
		return Usagef("--init %s with --instance: the instances would load the schema at once; run `txload init` once before them and give --init skip", o.Init)
	}
	o.Init, o.InitSet = "skip", true
	o.allClients = c
	o.Engine.Instance, o.Engine.Instances, o.Engine.AllClients = i, n, c
	o.Engine.Concurrency = report.InstanceClients(c, i, n)
	o.FirstClient = i*(c/n) + min(i, c%n)
	return nil
}

// Validate checks o before anything touches the database: every value, and
// that every output file can be created.
func (o *Options) Validate() error {
	cfg := o.Engine
	cfg.Classify = pg.Classify
	if err := cfg.Validate(); err != nil {
		return Usage(err)
	}
	switch o.Init {
	case "fresh", "keep", "skip":
	default:
		return Usagef("--init %q is not allowed (allowed: fresh, keep, skip)", o.Init)
	}
	return o.CheckSinks()
}

// CheckSinks checks where the run's results go: the --metrics-addr and the
// output files (each can be written, none is an input or another output).
// Validate does it; a command that picks its server first (and says when
// it starts one) calls it before that.
func (o *Options) CheckSinks() error {
	if err := checkMetricsAddr(o.MetricsAddr); err != nil {
		return err
	}
	if err := checkAddr("--live", o.LiveAddr); err != nil {
		return err
	}
	return CheckFiles(o.OutputFiles(), o.Inputs)
}

// OutputFiles lists the run's output files, by flag.
func (o *Options) OutputFiles() []outfile.File {
	out := []outfile.File{{Flag: "--json", Path: o.JSON}, {Flag: "--html", Path: o.HTML},
		{Flag: "--histogram", Path: o.Histogram}, {Flag: "--cpuprofile", Path: o.CPUProfile}}
	return append(out, o.Outputs...)
}

// CheckFiles makes sure each output file can be written before the run
// starts, so that minutes of load are not lost to a typo, a directory or a
// read-only file system, and that no output is an input or another output.
func CheckFiles(outputs, inputs []outfile.File) error {
	for _, f := range outputs {
		if f.Path == "" {
			continue
		}
		if err := outfile.Check(f.Path); err != nil {
			return Usagef("%s %s: %v", f.Flag, f.Path, err)
		}
	}
	if err := outfile.Conflicts(outputs, inputs); err != nil {
		return Usage(err)
	}
	return nil
}

// WriteFile writes the output file path (outfile.Write, a stalled reader
// left when ctx ends), and says so on stderr.
func WriteFile(ctx context.Context, stderr io.Writer, path string, write func(io.Writer) error) error {
	if err := outfile.Write(ctx, path, write); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s\n", path)
	return nil
}

// lockedWriter serialises writes from the ticker and the clients.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Locked returns w made safe for concurrent writers.
func Locked(w io.Writer) io.Writer {
	if _, ok := w.(*lockedWriter); ok {
		return w
	}
	return &lockedWriter{w: w}
}

// auditTimeout bounds the audit after an interrupted run, which runs
// even after Ctrl-C.
const auditTimeout = time.Minute

// auditContext is the context of the audit after a run: after a run that
// ended as asked, ctx itself, unbounded (an audit of a large table takes
// minutes: ycsb's of 200,000 records at load 24 took more than one, and
// the run failed with its statement cancelled), which a stop signal ends;
// after an interrupted run, one that the interrupt does not end, bounded
// by auditTimeout (a second stop signal kills at once).
func auditContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Err() != nil {
		return context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	}
	return context.WithCancel(ctx)
}
