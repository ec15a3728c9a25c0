package append

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/txload/txload/history"
	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// Mode is how an append writes.
type Mode int

// The append modes.
const (
	// Upsert appends with INSERT … ON CONFLICT (id) DO UPDATE.
	Upsert Mode = iota
	// UpdateInsert appends with UPDATE, and INSERT when it found no row.
	UpdateInsert
)

var modeNames = [...]string{"upsert", "update-insert"}

func (m Mode) String() string { return modeNames[m] }

// The bounds of the flags: a key is an INT, its list a TEXT the server
// rewrites on each append.
const (
	maxKeys      = 1_000_000
	maxOps       = 1000
	maxWritesKey = 100_000
)

// config is the workload's configuration, from its flags.
type config struct {
	keys, minOps, maxOps, maxWrites int
	mode                            Mode
	isolation                       pg.Isolation
	history                         string // --history: "" none
	edn                             bool   // write it as EDN
}

// level is the isolation level the checker judges the history against.
func (c *config) level() history.Level {
	switch c.isolation {
	case pg.ReadCommitted:
		return history.ReadCommitted
	case pg.RepeatableRead:
		return history.RepeatableRead
	}
	return history.Serializable
}

type gen struct {
	flags *pflag.FlagSet
	raw   struct{ mode, isolation, format string }
	cfg   config
	// checked is the history check reads, checked before the database is
	// touched (CheckValidate), for its final read.
	checked *checkedHistory
}

func newGenerator() *gen {
	g := &gen{flags: pflag.NewFlagSet("append", pflag.ContinueOnError)}
	f := g.flags
	f.IntVar(&g.cfg.keys, "keys", 10, "transactions draw keys uniformly from a window of this many active keys")
	f.IntVar(&g.cfg.minOps, "min-ops", 1, "least operations (reads and appends) per transaction")
	f.IntVar(&g.cfg.maxOps, "max-ops", 4, "most operations per transaction")
	f.IntVar(&g.cfg.maxWrites, "max-writes-per-key", 32, "appends to a key before it leaves the window for a new one (Elle's default)")
	f.StringVar(&g.raw.mode, "append", "upsert", "how an append writes: upsert (INSERT … ON CONFLICT DO UPDATE) | update-insert (UPDATE, then INSERT when no row)")
	f.StringVar(&g.raw.isolation, "isolation", "serializable", "read committed | repeatable read | serializable (or rc, rr, ser)")
	f.StringVar(&g.cfg.history, "history", "", "run: write the history (every attempt, what each read returned, its outcome) to this file, JSON lines or Elle's EDN for a name ending in .edn; check: the history a run wrote, which the tables are read and held to")
	f.StringVar(&g.raw.format, "history-format", "", "jsonl | edn: the format of --history, whatever its name (check: else from its contents)")
	workload.OnlyFor(f, workload.VerbRun|workload.VerbCheck, "history", "history-format")
	// The transactions' shape: check reads the tables and the history,
	// whatever made them, and says it ignores these (a check is rerun
	// with its run's flags, as the other workloads' checks are).
	shape := []string{"keys", "min-ops", "max-ops", "max-writes-per-key", "append"}
	workload.OnlyFor(f, workload.VerbRun|workload.VerbSweep|workload.VerbCheck, shape...)
	workload.IgnoredBy(f, workload.VerbCheck, shape...)
	workload.IgnoredWhy(f, "it reads the tables and the history, whatever run made them", shape...)
	return g
}

func (g *gen) Flags() *pflag.FlagSet { return g.flags }

// Hooks: the workload is initialised and run; its audit is its history's,
// and the final read of its tables held to the history, at the end of a
// run or by check with the history the run wrote.
func (g *gen) Hooks() workload.Hooks {
	return workload.Hooks{
		Validate:      g.validate,
		CheckValidate: g.validateCheck,
		Init:          g.init,
		Ops:           g.ops,
		Check:         g.check,
		Tables:        tables,
		// An append that finds a key being inserted by another transaction
		// fails on its unique key (update-insert): a failed attempt of the
		// history, not a reason to end the client.
		RunDefaults: workload.RunDefaults{ContinueOnError: true},
		// Load generators started together would draw the same keys and
		// values (each starts above the keys the tables hold), and each
		// history holds one process's attempts only.
		SingleProcess: "its history is one process's: load generators started together would append the same values to the same keys, and each checker and final read would see only its own attempts",
		SessionState: func() string {
			return "append sets default_transaction_isolation on each connection (single-operation transactions run without BEGIN) and prepares its statements"
		},
		Outputs: func() []workload.Input { return []workload.Input{{Flag: "--history", Path: g.cfg.history}} },
	}
}

// validate checks the flags of a run: --history is the file it writes.
func (g *gen) validate() error {
	if err := g.validateFlags(); err != nil {
		return err
	}
	if c := &g.cfg; c.history != "" {
		if err := outfile.Check(c.history); err != nil {
			return fmt.Errorf("--history %s: %w", c.history, err)
		}
	}
	return nil
}

func (g *gen) validateFlags() error {
	c := &g.cfg
	switch {
	case c.keys < 1 || c.keys > maxKeys:
		return fmt.Errorf("--keys must be between 1 and %d, got %d", maxKeys, c.keys)
	case c.minOps < 1 || c.minOps > maxOps:
		return fmt.Errorf("--min-ops must be between 1 and %d, got %d", maxOps, c.minOps)
	case c.maxOps < 1 || c.maxOps > maxOps:
		return fmt.Errorf("--max-ops must be between 1 and %d, got %d", maxOps, c.maxOps)
	case c.minOps > c.maxOps:
		return fmt.Errorf("--min-ops %d is more than --max-ops %d", c.minOps, c.maxOps)
	case c.maxWrites < 1 || c.maxWrites > maxWritesKey:
		return fmt.Errorf("--max-writes-per-key must be between 1 and %d, got %d", maxWritesKey, c.maxWrites)
	}
	switch g.raw.mode {
	case "upsert":
		c.mode = Upsert
	case "update-insert":
		c.mode = UpdateInsert
	default:
		return fmt.Errorf("--append %q is not allowed (allowed: upsert, update-insert)", g.raw.mode)
	}
	if strings.Contains(g.raw.isolation, ",") {
		return fmt.Errorf("--isolation %q: append runs one level at a time (its history is checked against it)", g.raw.isolation)
	}
	iso, err := pg.ParseIsolation(g.raw.isolation)
	if err != nil {
		return fmt.Errorf("--isolation: %w", err)
	}
	c.isolation = iso
	switch g.raw.format {
	case "":
		c.edn = history.FormatOf(c.history) == history.EDN
	case "jsonl":
		c.edn = false
	case "edn":
		c.edn = true
	default:
		return fmt.Errorf("--history-format %q is not allowed (allowed: jsonl, edn)", g.raw.format)
	}
	if g.raw.format != "" && c.history == "" {
		return fmt.Errorf("--history-format %s without --history: give the history file", g.raw.format)
	}
	return nil
}
