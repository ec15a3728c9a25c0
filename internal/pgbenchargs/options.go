package pgbenchargs

import (
	"strings"

	"github.com/txload/txload/workload/pgbench/script"
)

// Mode is what a command line asks pgbench to do.
type Mode int

const (
	// Run is a benchmark (no -i).
	Run Mode = iota
	// Init is -i: run InitSteps.
	Init
	// Help is -? or --help as the first argument: print Usage on stdout.
	Help
	// Version is -V or --version as the first argument.
	Version
	// ListBuiltins is -b list: print Output on stderr and exit 0.
	ListBuiltins
	// ShowScript is --show-script NAME: print Output on stderr and exit 0.
	ShowScript
)

// The defaults pgbench documents.
const (
	DefaultInitSteps    = "dtgvp"
	AllInitSteps        = "dtgGvpf"
	DefaultTransactions = 10
	DefaultLogPrefix    = "pgbench_log"
	// MaxScripts is pgbench's MAX_SCRIPTS.
	MaxScripts = 128
	// MaxParams is the most :variables a statement may use under the
	// extended and prepared protocols (pgbench's MAX_ARGS - 1).
	MaxParams = 255
)

// Options is a parsed pgbench command line: pgbench's own variables, with
// its defaults applied and its cross-option checks passed.
type Options struct {
	Mode Mode
	// Major is the pgbench whose command line was followed (15 to 18):
	// -d is --debug up to 16 and --dbname from 17.
	Major int

	// Output is what -b list and --show-script print, on stderr.
	Output string
	// Notices are lines pgbench prints on stderr while it reads its
	// options ("pgbench: setting random seed to 5").
	Notices []string
	// Txload are txload's own long options given beside pgbench's, as
	// "--name=value" or "--name", for the caller's flag set.
	Txload []string

	// Connection: -h, -p, -U, and -d (17 and later) or the DBNAME
	// argument; "" when not given (libpq's rules then apply, see
	// pg.ConnParams).
	Host, Port, User, DBName string

	// Initialization (-i).

	// InitSteps are the steps -i runs, in order: -I (default "dtgvp"),
	// without 'v' under -n, with 'f' appended under --foreign-keys. Spaces
	// are kept: pgbench ignores them.
	InitSteps string
	// Scale is -s (default 1); ScaleGiven says it was given (a run then
	// warns that the tables' scale wins).
	Scale      int
	ScaleGiven bool
	Fillfactor int
	// Quiet is -q: one progress line every 5 seconds.
	Quiet       bool
	ForeignKeys bool
	// Partitions is --partitions; PartitionMethod "range" (the default
	// with partitions), "hash", or "" without partitions.
	Partitions      int
	PartitionMethod string
	// Tablespace and IndexTablespace are --tablespace and
	// --index-tablespace; "" for the default tablespace.
	Tablespace, IndexTablespace string
	UnloggedTables              bool
	// NoVacuum is -n: no vacuum step under -i, no pre-run vacuum and
	// truncation of pgbench_history otherwise.
	NoVacuum bool

	// What to run.

	// Scripts are the -b, -N, -S and -f scripts in order, or tpcb-like
	// when none was given; each parsed, with its weight.
	Scripts []Script
	// BuiltinUsed says a builtin script runs: the scale is then read from
	// pgbench_branches (pgbench's GetTableInfo).
	BuiltinUsed bool
	// Defines are the -D variables, each name once (a later -D wins).
	Defines []Define

	// Benchmarking.

	Clients int
	// Jobs is -j as given; Threads is pgbench's number of threads: no
	// more than the clients.
	Jobs, Threads int
	// Connect is -C: a new connection for each transaction.
	Connect bool
	// Transactions is -t per client (10 when neither -t nor -T is given,
	// 0 under -T); Duration is -T in seconds.
	Transactions, Duration int
	// Progress is -P in seconds (0 = none).
	Progress          int
	ProgressTimestamp bool
	// Rate is -R in transactions per second (0 = as fast as possible).
	Rate float64
	// LatencyLimitUS is -L converted as pgbench does: (int64)(ms * 1000)
	// microseconds; 0 = none.
	LatencyLimitUS int64
	// Protocol is -M: simple (the default), extended or prepared.
	Protocol script.Protocol
	// PerCommand is -r.
	PerCommand bool
	// Log is -l; LogPrefix is --log-prefix (default "pgbench_log").
	Log       bool
	LogPrefix string
	// AggregateInterval is --aggregate-interval in seconds (0 = log each
	// transaction); SamplingRate is --sampling-rate (0 = log all).
	AggregateInterval int
	SamplingRate      float64
	// VacuumAll is -v: also VACUUM ANALYZE pgbench_accounts before the run.
	VacuumAll        bool
	FailuresDetailed bool
	// MaxTries is --max-tries (default 1; 0 = unlimited, only with -T or
	// -L).
	MaxTries      uint32
	VerboseErrors bool
	// ExitOnAbort is --exit-on-abort (pgbench 17 and later).
	ExitOnAbort bool
	// RandomSeed seeds pgbench's random functions: --random-seed, else
	// PGBENCH_RANDOM_SEED, else the time. "time" and "rand" are resolved.
	// RandomSeedGiven says one of the first two set it.
	RandomSeed      uint64
	RandomSeedGiven bool
	// Debug is -d (up to 16) or --debug: debugging output.
	Debug bool
}

// Script is one script of the run.
type Script struct {
	// Builtin is the builtin's full name ("tpcb-like"); "" for a file.
	Builtin string
	// File is the path of a -f script as given ("-" is standard input).
	File   string
	Weight int
	// Parsed is the script, parsed, with Weight set.
	Parsed *script.Script
}

// Define is one -D NAME=VALUE.
type Define struct{ Name, Value string }

// Error is a command line pgbench refuses: the lines it prints on stderr
// ("pgbench: error: ...", then any detail and hint), and exits with code 1.
type Error struct{ Lines []string }

func (e *Error) Error() string { return strings.Join(e.Lines, "\n") }

// ExitCode is pgbench's exit status for a refused command line.
func (e *Error) ExitCode() int { return 1 }
