package lagrun

import (
	"strings"
	"time"

	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/lag"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/slo"
	"github.com/txload/txload/workload"
)

// DefaultDrainTimeout is lag's default --drain-timeout: it also bounds how
// long the destination may take to catch up once the load stops.
const DefaultDrainTimeout = 30 * time.Second

// Options is one lag invocation: lag's own flags, the workload with its
// flags parsed, and the load's options. Run validates it before any server
// is touched; every refusal is a runner.UsageError naming the flag.
type Options struct {
	// Workload and Generator are the workload run on the source, its
	// flags parsed. Registry holds the others, for the refusals that name
	// the workloads lag works with.
	Workload  workload.Meta
	Generator workload.Generator
	Registry  *workload.Registry
	// Source and Dest are --source and --dest; both empty: an embedded
	// pair joined by Replication (logical or physical).
	Source, Dest string
	Replication  string
	// ReplicationSet and InitSet say --replication and --init were given
	// (Run.InitSet also says so of a run that --instance made skip).
	ReplicationSet, InitSet bool
	// MarkInterval is how often a marker is written on the source,
	// PollInterval how often the destination is polled for them.
	MarkInterval, PollInterval time.Duration
	// MarkTransactions also writes a marker inside every workload
	// transaction.
	MarkTransactions bool
	// Maps are --map SRC=DST; Tables is --tables (replacing the workload's
	// list).
	Maps, Tables []string
	// SLO is --slo, the objective on the lag ("" = none).
	SLO string
	// EmbeddedVersion (EmbeddedVersionSet: given) and CacheDir are the
	// embedded pair's.
	EmbeddedVersion    string
	EmbeddedVersionSet bool
	CacheDir           string
	// Pooler is --pooler, for both ends.
	Pooler string
	// Env is the environment, for libpq's rule on the password file.
	Env pg.LookupEnv
	// Run is the load's options as the run flags give them: the engine's,
	// --init, --drain-timeout, --json, --html, --histogram, --metrics-addr,
	// Version, Stdout (the report) and Stderr (progress).
	Run runner.Options
	// Config is the flags as given, for --json; never a URL.
	Config map[string]any
}

// plan is a validated Options, and what Run needs derived from it.
type plan struct {
	o Options
	h workload.Hooks
	// tables pairs each table the workload writes with its destination
	// name; marker is the marker table's destination name.
	tables    []lag.Pair
	marker    string
	objective []slo.Condition
	embedded  *embedded.Version // nil: --source and --dest
	// load is the runner's options: lag writes --json, --html and
	// --histogram itself.
	load                  runner.Options
	json, html, histogram string
	drainTimeout          time.Duration
}

// Validate checks every value before any server is touched.
func (o Options) Validate() error {
	_, err := o.plan()
	return err
}

func (o Options) plan() (*plan, error) {
	p := &plan{o: o, h: o.Generator.Hooks(), marker: lag.Table}
	for _, step := range []func() error{p.checkWorkload, p.checkFlags, p.checkTables, p.checkTarget, p.mapTables, p.parseSLO, p.loadOptions} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *plan) external() bool { return p.o.Source != "" }

// checkWorkload refuses a workload that runs no load.
func (p *plan) checkWorkload() error {
	if p.h.Ops != nil {
		return nil
	}
	var ok []string
	for _, m := range p.o.Registry.All() {
		if h := m.New().Hooks(); h.Ops != nil {
			ok = append(ok, m.Name)
		}
	}
	return runner.Usagef("--workload %s: lag needs a workload that runs load (lag works for: %s)", p.o.Workload.Name, strings.Join(ok, ", "))
}

// checkFlags checks lag's own flags.
func (p *plan) checkFlags() error {
	o := &p.o
	switch {
	case o.MarkInterval <= 0:
		return runner.Usagef("--mark-interval must be positive (for example 10ms), got %s", o.MarkInterval)
	case o.PollInterval <= 0:
		return runner.Usagef("--poll-interval must be positive (for example 1ms), got %s", o.PollInterval)
	case o.Replication != "logical" && o.Replication != "physical":
		return runner.Usagef("--replication %q is not allowed (allowed: logical, physical)", o.Replication)
	case (o.Source == "") != (o.Dest == ""):
		if o.Source == "" {
			return runner.Usagef("--dest needs --source: give both, or neither for an embedded pair")
		}
		return runner.Usagef("--source needs --dest: give both, or neither for an embedded pair")
	case o.MarkTransactions && p.h.MarkTransactions == nil:
		return runner.Usagef("--mark-transactions: workload %s cannot write a marker inside its transactions (those that can: %s); the marker stream (--mark-interval) measures the lag",
			o.Workload.Name, strings.Join(markable(o.Registry), ", "))
	}
	return nil
}

// markable lists the workloads that can write a marker inside their
// transactions with their defaults.
func markable(reg *workload.Registry) []string {
	var ok []string
	for _, m := range reg.All() {
		h := m.New().Hooks()
		if h.MarkTransactions == nil || h.Ops == nil || len(h.Tables) == 0 || (h.Validate != nil && h.Validate() != nil) {
			continue
		}
		if h.MarkTransactions() == nil {
			ok = append(ok, m.Name)
		}
	}
	return ok
}

// checkTables settles the tables compared after the run.
func (p *plan) checkTables() error {
	o := &p.o
	for _, t := range o.Tables {
		if strings.TrimSpace(t) == "" {
			return runner.Usagef("--tables %q: give table names separated by commas", strings.Join(o.Tables, ","))
		}
	}
	if len(o.Tables) > 0 {
		p.h.Tables = o.Tables
	}
	if len(p.h.Tables) == 0 {
		return runner.Usagef("--workload %s names no tables it writes: give them with --tables T[,T...] (compared on both sides after the run)", o.Workload.Name)
	}
	if p.h.Init == nil && !p.external() {
		return runner.Usagef("--workload %s creates no tables, and the embedded pair starts empty: give --source and --dest, where its tables exist", o.Workload.Name)
	}
	return nil
}

// checkTarget checks the flags that apply to one kind of pair only.
func (p *plan) checkTarget() error {
	o := &p.o
	if err := runner.CheckPooler(o.Pooler); err != nil {
		return err
	}
	if p.external() {
		if o.ReplicationSet {
			return runner.Usagef("--replication applies to the embedded pair; with --source and --dest the replication is yours")
		}
		if o.EmbeddedVersionSet {
			return runner.Usagef("--embedded-version applies to the embedded pair, not to --source and --dest")
		}
		for _, u := range []struct{ flag, url string }{{"--source", o.Source}, {"--dest", o.Dest}} {
			if strings.TrimSpace(u.url) == "" {
				return runner.Usagef("%s is empty: give a database URL such as postgres://user@host:5432/db", u.flag)
			}
		}
		return nil
	}
	v, err := embedded.Lookup(o.EmbeddedVersion)
	if err != nil {
		return runner.Usagef("--embedded-version: %v", err)
	}
	p.embedded = &v
	if o.InitSet {
		return runner.Usagef("--init applies to --source: the embedded pair is always loaded fresh")
	}
	if len(o.Maps) > 0 {
		return runner.Usagef("--map applies to --source and --dest: the embedded pair names tables alike")
	}
	return nil
}

// mapTables names each table, and the markers', on the destination.
func (p *plan) mapTables() error {
	maps := map[string]string{}
	for _, m := range p.o.Maps {
		src, dst, ok := strings.Cut(m, "=")
		if !ok || src == "" || dst == "" {
			return runner.Usagef("--map %q: want SRC=DST, a source table and its name on the destination", m)
		}
		known := src == lag.Table
		for _, t := range p.h.Tables {
			known = known || t == src
		}
		if !known {
			return runner.Usagef("--map %s: %s is not a table %s writes (it writes: %s, and %s)", m, src, p.o.Workload.Name, strings.Join(p.h.Tables, ", "), lag.Table)
		}
		maps[src] = dst
	}
	for _, t := range p.h.Tables {
		pr := lag.Pair{Source: t, Dest: t}
		if d, ok := maps[t]; ok {
			pr.Dest = d
		}
		p.tables = append(p.tables, pr)
	}
	if d, ok := maps[lag.Table]; ok {
		p.marker = d
	}
	return nil
}

func (p *plan) parseSLO() error {
	if p.o.SLO == "" {
		return nil
	}
	objective, err := slo.Parse(p.o.SLO)
	if err != nil {
		return runner.Usagef("--slo: %v", err)
	}
	p.objective = objective.Conditions()
	return nil
}

// loadOptions checks the load's options and makes the runner's of them.
func (p *plan) loadOptions() error {
	opts := p.o.Run
	opts.Command = "lag"
	if p.external() {
		switch {
		case opts.Init == "fresh" && p.o.InitSet:
			return runner.Usagef("--init fresh would drop and reload the source's tables under the replication: use keep or skip")
		case !p.o.InitSet:
			opts.Init = "skip"
		}
		opts.InitSet = true
	} else {
		opts.Init, opts.InitSet = "skip", true // lag loads the pair itself
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	if err := runner.ValidateHooks(p.h, opts); err != nil {
		return err
	}
	if p.o.MarkTransactions {
		if err := p.h.MarkTransactions(); err != nil {
			return runner.Usage(err)
		}
	}
	p.drainTimeout = opts.Engine.DrainTimeout
	if p.drainTimeout <= 0 {
		return runner.Usagef("--drain-timeout must be positive for lag (the destination's time to catch up), got %s", p.drainTimeout)
	}
	p.json, p.html, p.histogram = opts.JSON, opts.HTML, opts.Histogram
	opts.JSON, opts.HTML, opts.Histogram = "", "", ""
	opts.KeepIntervals = p.json != "" || p.html != ""
	opts.Stderr = runner.Locked(opts.Stderr)
	p.load = opts
	return nil
}
