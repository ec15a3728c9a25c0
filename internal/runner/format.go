package runner

import (
	"io"
	"time"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/workload"
)

// Format is an output format of a run other than txload's own summary
// (Options.Format nil): it prints the run's progress lines, its failed
// attempts and aborted clients on Stderr, and its report on Stdout, in its
// own words. The command that offers it makes it (`--output`).
type Format interface {
	// Printer returns the printer of one run (one variant), once its load
	// is ready.
	Printer(r RunInfo) Printer
}

// RunInfo is what a Format learns of a run before it starts.
type RunInfo struct {
	// Load is the workload's load: its operations, how they are described
	// (OpInfo), the scale and protocol it found.
	Load *workload.QueryLoad
	// Engine is the run's configuration, its clients those of the load.
	Engine engine.Config
	// Threads are the I/O loops (or goroutines, one per client) that drive
	// the clients.
	Threads int
	// PerStatement asks for each statement's figures in the report.
	PerStatement bool
	// Scrub removes passwords from a message before it is printed.
	Scrub func(string) string
}

// Printer prints one run in a Format.
type Printer interface {
	// WholeIntervals says the progress lines cover whole intervals only:
	// the partial interval at the end of the window is not printed.
	WholeIntervals() bool
	// Progress prints the progress line of interval t.
	Progress(w io.Writer, t engine.Tick)
	// Failed prints failed attempt e (--verbose-errors) and says whether
	// it did; if not, the runner prints its own line.
	Failed(w io.Writer, e engine.ErrorEvent) bool
	// Aborted prints the abort of a client and says whether it did; if
	// not, the runner prints its own line.
	Aborted(w io.Writer, e engine.Event) bool
	// Report prints the run's report, in place of the summary and the
	// workload's audit.
	Report(w io.Writer, res *engine.Result) error
}

// TxnLog takes every transaction that ended (engine.Config.OnTxn): a log
// of each transaction, kept group by group of clients (engine.Groups).
type TxnLog interface {
	// Open opens the log of groups groups, before the clients connect.
	Open(groups int) error
	// Start takes the run's start, once the clients are connected.
	Start(start time.Time)
	// Txn takes one transaction, on the goroutine that drives its group:
	// never for two clients of one group at once.
	Txn(t engine.Txn)
	// Close ends the log at end, with the first error writing it.
	Close(end time.Time) error
}
