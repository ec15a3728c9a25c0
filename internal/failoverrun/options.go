package failoverrun

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/pg/failover"
	"github.com/txload/txload/internal/pg/replica"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// Defaults of failover's own flags.
const (
	DefaultAt              = 5 * time.Second
	DefaultPromoteAfter    = 300 * time.Millisecond
	DefaultProbeInterval   = 10 * time.Millisecond
	DefaultFailoverTimeout = 60 * time.Second
	DefaultDuration        = 15 * time.Second
)

// Options is one failover invocation: failover's flags, the workload with
// its flags parsed, and the load's options. Run validates it before any
// server is touched; every refusal is a runner.UsageError naming the flag.
type Options struct {
	// Workload and Generator are the workload, its flags parsed; Registry
	// the others, for the refusals that name the workloads failover runs.
	Workload  workload.Meta
	Generator workload.Generator
	Registry  *workload.Registry
	// Schema, if set, loads the tables the embedded pair's workload runs
	// on when the workload creates none itself (script files run on
	// pgbench's tables: tpcb, with the script's --scale).
	Schema workload.Generator
	// URL is --url: a multi-host target ("" = the embedded pair).
	URL string
	// Env is the environment, for libpq's rule on the password file.
	Env pg.LookupEnv
	// Replications are --replication's modes (embedded pair: async, sync),
	// each run in turn; Fault is --fault, At --at (from the start of the
	// load), PromoteAfter --promote-after (from the fault), HoldStandby
	// --hold-standby (the standby's link paused this long before the
	// fault). The Set fields say the flag was given.
	Replications                                  []string
	Fault                                         string
	At, PromoteAfter, HoldStandby                 time.Duration
	ReplicationSet, FaultSet, PromoteSet, HoldSet bool
	// FailoverCommand is run through sh -c at --at on a cluster; "" =
	// wait for a failover and detect it. FailoverTimeout bounds both.
	FailoverCommand string
	FailoverTimeout time.Duration
	// ProbeInterval is how often the probe commits a marker of its own,
	// and how often the cluster's nodes are probed.
	ProbeInterval time.Duration
	// EmbeddedVersion (EmbeddedVersionSet: given) and CacheDir are the
	// embedded pair's.
	EmbeddedVersion    string
	EmbeddedVersionSet bool
	CacheDir           string
	// Run is the load's options as the run flags give them.
	Run runner.Options
	// Config is the flags as given, for --json; never a URL.
	Config map[string]any
	// inspect, if set, is called with the embedded pair (nil for a
	// cluster) and the result once the markers are counted (an
	// interrupted run's too): the tests look at the servers there.
	inspect func(*replica.Pair, *Result)
	// started, if set, is called when the load starts: the tests
	// interrupt the run there.
	started func()
}

// plan is a validated Options.
type plan struct {
	o        Options
	h        workload.Hooks
	repls    []replica.Replication
	fault    replica.Fault
	embedded *embedded.Version // nil: --url
	load     runner.Options
	// schema loads the embedded pair's tables for a workload that creates
	// none (nil: the workload's own Init, run by the runner).
	schema func(ctx context.Context, t *pg.Target, opts workload.InitOptions) error
	// json and html are written by failover itself.
	json, html string
}

// Validate checks every value before any server is touched.
func (o Options) Validate() error {
	_, err := o.plan()
	return err
}

func (o Options) plan() (*plan, error) {
	p := &plan{o: o, h: o.Generator.Hooks()}
	for _, step := range []func() error{p.checkWorkload, p.checkTimes, p.checkTarget, p.loadOptions} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *plan) external() bool { return p.o.URL != "" }

// checkWorkload refuses a workload whose transactions cannot carry a
// marker: their commits could not be told apart.
func (p *plan) checkWorkload() error {
	h := p.h
	if h.Ops != nil && h.MarkTransactions != nil {
		return p.markable()
	}
	var ok []string
	for _, m := range p.o.Registry.All() {
		if h := m.New().Hooks(); h.Ops != nil && h.MarkTransactions != nil {
			ok = append(ok, m.Name)
		}
	}
	return runner.Usagef("workload %s cannot write a marker inside its transactions, which failover needs to tell which commits were lost (failover runs: %s)", p.o.Workload.Name, strings.Join(ok, ", "))
}

// markable refuses a configuration whose transactions cannot carry a
// marker (a script's statement outside BEGIN ... END), in failover's words:
// the workload says why in lag's (--mark-transactions).
func (p *plan) markable() error {
	err := p.h.MarkTransactions()
	if err == nil {
		return nil
	}
	msg := strings.TrimPrefix(err.Error(), "--mark-transactions: ")
	if i := strings.Index(msg, " (the marker stream"); i >= 0 {
		msg = msg[:i]
	}
	return runner.Usagef("%s: failover writes a marker inside every transaction, to tell which commits a failover lost, and cannot here: %s", p.o.Workload.Name, msg)
}

// positive refuses what no duration flag can be: pflag reads none of NaN,
// infinity or an overflow as a duration, but a caller may set anything.
func positive(flag string, d time.Duration, zero bool) error {
	if d < 0 || (d == 0 && !zero) || d == math.MaxInt64 {
		if zero {
			return runner.Usagef("%s must be 0 or more (a duration such as 5s), got %s", flag, d)
		}
		return runner.Usagef("%s must be positive (a duration such as 5s), got %s", flag, d)
	}
	return nil
}

// checkTimes checks the schedule: the failover happens inside the load.
func (p *plan) checkTimes() error {
	o := &p.o
	e := o.Run.Engine
	for _, c := range []struct {
		flag string
		d    time.Duration
		zero bool
	}{{"--at", o.At, false}, {"--promote-after", o.PromoteAfter, true}, {"--hold-standby", o.HoldStandby, true},
		{"--failover-timeout", o.FailoverTimeout, false}, {"--probe-interval", o.ProbeInterval, false}} {
		if err := positive(c.flag, c.d, c.zero); err != nil {
			return err
		}
	}
	if e.Transactions > 0 {
		return runner.Usagef("failover runs for a --duration, not a number of --transactions: the failover happens --at a time of it")
	}
	load := e.Warmup + e.Duration
	if o.At >= load {
		return runner.Usagef("--at %s is not before the end of the load (--warmup %s + --duration %s): the failover must happen while the load runs", o.At, e.Warmup, e.Duration)
	}
	if !p.external() && o.At+o.PromoteAfter >= load {
		return runner.Usagef("--at %s + --promote-after %s is not before the end of the load (--warmup %s + --duration %s): the new primary must take writes while the load runs", o.At, o.PromoteAfter, e.Warmup, e.Duration)
	}
	if o.HoldStandby > o.At {
		return runner.Usagef("--hold-standby %s is longer than --at %s: the standby is held back from the load's start at most", o.HoldStandby, o.At)
	}
	return nil
}

// checkTarget checks the flags that apply to one kind of target only.
func (p *plan) checkTarget() error {
	o := &p.o
	if p.external() {
		for _, f := range []struct {
			set  bool
			flag string
		}{{o.ReplicationSet, "--replication"}, {o.FaultSet, "--fault"}, {o.PromoteSet, "--promote-after"}, {o.HoldSet, "--hold-standby"}, {o.EmbeddedVersionSet, "--embedded-version"}} {
			if f.set {
				return runner.Usagef("%s applies to the embedded pair; with --url the failover is the cluster's (--failover-command, or txload waits for one)", f.flag)
			}
		}
		if strings.TrimSpace(o.URL) == "" {
			return runner.Usagef("--url is empty: give the cluster's nodes, e.g. postgres://user@a:5432,b:5432/db?target_session_attrs=read-write")
		}
		pr, err := failover.NewProber([]string{o.URL})
		if err != nil {
			return runner.Usagef("--url: %v", err)
		}
		if n := len(pr.Addrs()); n < 2 {
			return runner.Usagef("--url names one host (%s): failover needs every node of the cluster in one URL (host=a,b or postgres://a,b/db) with target_session_attrs=read-write, so that the clients find the new primary", strings.Join(pr.Addrs(), ""))
		}
		if !strings.Contains(o.URL, "target_session_attrs=read-write") && !strings.Contains(o.URL, "target_session_attrs=primary") {
			return runner.Usagef("--url lacks target_session_attrs=read-write: without it a client may land on a standby, or stay on the old primary")
		}
		return nil
	}
	if o.FailoverCommand != "" {
		return runner.Usagef("--failover-command applies to --url: the embedded pair fails over by --fault and --promote-after")
	}
	v, err := embedded.Lookup(o.EmbeddedVersion)
	if err != nil {
		return runner.Usagef("--embedded-version: %v", err)
	}
	p.embedded = &v
	if len(o.Replications) == 0 {
		return runner.Usagef("--replication is empty: give async, sync or async,sync")
	}
	seen := map[replica.Replication]bool{}
	for _, s := range o.Replications {
		r, err := replica.ParseReplication(strings.TrimSpace(s))
		if err != nil {
			return runner.Usagef("--replication: %v", err)
		}
		if seen[r] {
			return runner.Usagef("--replication names %s twice", r)
		}
		seen[r] = true
		p.repls = append(p.repls, r)
	}
	f, err := replica.ParseFault(o.Fault)
	if err != nil {
		return runner.Usagef("--fault: %v", err)
	}
	p.fault = f
	if f == replica.Fast && o.HoldStandby > 0 {
		return runner.Usagef("--fault fast with --hold-standby: a fast shutdown waits until the standby has all the WAL, which the held link never delivers; use immediate or kill")
	}
	if o.Run.InitSet && o.Run.Init != "fresh" {
		return runner.Usagef("--init applies to --url: the embedded pair is always loaded fresh")
	}
	return nil
}

// loadOptions checks the load's options and makes the runner's of them.
func (p *plan) loadOptions() error {
	opts := p.o.Run
	opts.Command = "failover"
	if !p.external() {
		opts.Init, opts.InitSet = "fresh", true
	}
	if opts.Engine.Instances > 1 {
		return runner.Usagef("--instance: failover runs as one process (its markers are counted by one)")
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	if err := runner.ValidateHooks(p.h, opts); err != nil {
		return err
	}
	if p.h.Init == nil && !p.external() {
		if p.o.Schema == nil || p.o.Schema.Hooks().Init == nil {
			return runner.Usagef("workload %s creates no tables, and the embedded pair starts empty: give --url, where its tables exist", p.o.Workload.Name)
		}
		p.schema = p.o.Schema.Hooks().Init
	}
	if err := p.markable(); err != nil {
		return err
	}
	p.json, p.html = opts.JSON, opts.HTML
	opts.JSON, opts.HTML = "", ""
	opts.KeepIntervals = p.json != "" || p.html != ""
	opts.Stderr = runner.Locked(opts.Stderr)
	p.load = opts
	return nil
}

// describe is the failover's plan in one line, for the report's header.
func (p *plan) describe(r replica.Replication) string {
	o := p.o
	if p.external() {
		if o.FailoverCommand != "" {
			return fmt.Sprintf("the cluster's failover, by --failover-command at %s", o.At)
		}
		return "a failover of the cluster, waited for"
	}
	s := fmt.Sprintf("embedded primary and standby, %s replication; primary %s at %s, standby promoted %s later", r, describeFault(p.fault), o.At, o.PromoteAfter)
	if o.HoldStandby > 0 {
		s += fmt.Sprintf("; standby held back for %s before the fault", o.HoldStandby)
	}
	return s
}

func describeFault(f replica.Fault) string {
	switch f {
	case replica.Kill:
		return "killed (SIGKILL)"
	case replica.Fast:
		return "shut down (fast)"
	}
	return "shut down (immediate)"
}
