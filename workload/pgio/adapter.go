package pgio

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// This file adapts the plain functions above to the workload contract:
// flags, hooks, and a QueryLoad whose Drive runs the sessions of either
// mode through the engine's sessions, so that the engine's summary, JSON
// and interval logs see every statement (operations "select" and "update").

// Meta registers the workload.
func Meta() workload.Meta {
	return workload.Meta{
		Name:        "pgio",
		Description: "PGIO (the SLOB method): random index range reads and updates of one-row-per-block tables, logical and physical I/O per second, in the server (PL/pgSQL) or from txload",
		Examples: `  txload init pgio --scale 8G --tables 4 --url postgres://localhost/bench
  txload run pgio --work-unit 1000 --duration 1m --warmup 10s
  txload run pgio --update-pct 20 --sessions-per-table 2 --mode client
  txload run pgio --mode client --rate 2000 --duration 30s`,
		New: func() workload.Generator { return newGenerator() },
	}
}

type gen struct {
	flags  *pflag.FlagSet
	cfg    Config
	scale  string
	mode   string
	commit string
	rng    string
}

func newGenerator() *gen {
	g := &gen{flags: pflag.NewFlagSet("pgio", pflag.ContinueOnError)}
	f, c := g.flags, &g.cfg
	f.IntVar(&c.Tables, "tables", 1, "tables pgio1..pgioN (pgio's NUM_SCHEMAS); run: all those loaded unless given")
	f.StringVar(&g.scale, "scale", "512M", "rows per table: 8 KiB blocks (2000) or a size (512M, 8G); run: the whole table unless given")
	f.Int64Var(&c.WorkUnit, "work-unit", 255, "pgio's WORK_UNIT: a SELECT reads rows k to k+WORK_UNIT (WORK_UNIT+1 rows, as pgio; --range exact: WORK_UNIT rows)")
	f.Int64Var(&c.UpdateWorkUnit, "update-work-unit", 8, "pgio's UPDATE_WORK_UNIT: an UPDATE changes rows k to k+UPDATE_WORK_UNIT (--range exact: UPDATE_WORK_UNIT rows)")
	f.IntVar(&c.UpdatePct, "update-pct", 0, "percentage of statements that are updates, exact in every 100 of a session (pgio's UPDATE_PCT)")
	f.IntVar(&c.SessionsPerTable, "sessions-per-table", 1, "sessions on each table (pgio's NUM_THREADS); the run has tables × this many")
	f.StringVar(&g.mode, "mode", "auto", "server (pgio's loop in a PL/pgSQL procedure) | client (prepared statements from txload) | auto (server unless --rate or CockroachDB)")
	f.StringVar(&g.commit, "commit", string(CommitStatement), "statement (each statement its own transaction) | run (pgio's shape: the whole test one transaction per session; with updates the tables grow)")
	f.StringVar(&g.rng, "range", string(RangePgio), "pgio (BETWEEN k AND k+WORK_UNIT, k from 1 to scale-WORK_UNIT-1, as pgio's mypgio) | exact (exactly WORK_UNIT rows, k over the whole table)")
	f.Int64Var(&c.Statements, "statements", 0, "end each session after this many measured statements (0: at --duration)")
	f.IntVar(&c.LoadJobs, "load-jobs", 4, "init: connections the tables are loaded over")
	f.Int64Var(&c.BatchRows, "batch-rows", 10000, "init: rows per committed batch on YugabyteDB and CockroachDB")
	// What shapes a run only: init neither lists nor takes them.
	workload.OnlyFor(f, workload.VerbRun|workload.VerbSweep, "work-unit", "update-work-unit", "update-pct", "sessions-per-table",
		"mode", "commit", "range", "statements")
	return g
}

func (g *gen) Flags() *pflag.FlagSet { return g.flags }

// Hooks: pgio is initialised and run; a run keeps the tables it finds.
func (g *gen) Hooks() workload.Hooks {
	return workload.Hooks{
		Validate:    g.validate,
		Init:        g.init,
		Ops:         g.ops,
		RunDefaults: workload.RunDefaults{Init: workload.InitKeep},
		// --tables is a lower bound: a run takes every table it finds.
		Clients:       func() (int, string) { return g.cfg.Sessions(), sessionFlags },
		Timed:         "its I/O counters are sampled over a timed period, and in the server its sessions loop for that period",
		SingleProcess: singleProcess,
	}
}

const sessionFlags = "--tables or --sessions-per-table"

func (g *gen) validate() error {
	scale, err := ParseScale(g.scale)
	if err != nil {
		return err
	}
	g.cfg.Scale = scale
	g.cfg.Mode, g.cfg.Commit, g.cfg.Range = Mode(g.mode), Commit(g.commit), Range(g.rng)
	return g.cfg.Validate()
}

func (g *gen) init(ctx context.Context, t *pg.Target, o workload.InitOptions) error {
	b, err := Init(ctx, t, g.cfg, InitOptions{Drop: o.Drop, TablesSet: g.flags.Changed("tables"), ScaleSet: g.flags.Changed("scale"), Log: o.Log})
	if err != nil {
		return err
	}
	for _, l := range b.Lines() {
		o.Logf("init: %s\n", l)
	}
	return nil
}

// singleProcess is why pgio runs in one txload process only.
const singleProcess = "its sessions start together behind one barrier"

func (g *gen) ops(ctx context.Context, t *pg.Target, o workload.RunOptions) (*workload.QueryLoad, error) {
	if o.Instances > 1 {
		return nil, errors.New("pgio runs in one txload process: " + singleProcess)
	}
	run, err := Prepare(ctx, t, g.cfg, RunOptions{Duration: o.Duration, Warmup: o.Warmup, Interval: o.Progress, Rate: o.Rate,
		ScaleSet: g.flags.Changed("scale"), TablesSet: g.flags.Changed("tables"), Seed: o.Seed, Log: o.Log, Figure: o.Figure})
	if err != nil {
		return nil, err
	}
	n := run.Sessions()
	d := &drive{run: run, next: make([]atomic.Int32, n)}
	var once sync.Once
	load := &workload.QueryLoad{
		Ops:     []string{Select.String(), Update.String()},
		Clients: n,
		Drive:   d.drive,
		Report: func(ctx context.Context, _ *metrics.Snapshot) (*workload.CheckResult, error) {
			res, err := run.Finish(ctx)
			if err != nil {
				return nil, err
			}
			return &workload.CheckResult{Lines: res.Lines(), Values: res.Values(), Figures: true}, nil
		},
		Close: func() { once.Do(func() { run.Close(context.WithoutCancel(ctx)) }) },
	}
	pct := run.Config().UpdatePct
	// Client mode prepares its measured statements (BEGIN and COMMIT go
	// as Query messages); server mode's CALL of each session's procedure
	// is a statement pgx prepares.
	load.Protocol = workload.ProtocolPrepared
	if run.Mode() == ModeClient {
		load.Chooser = func(id int) func() int {
			c := NewChooser(pct, rand.New(rand.NewPCG(o.Seed, 1<<32+uint64(id))))
			return func() int { return int(c.Next()) }
		}
	} else {
		// Server mode replays the procedures' statements: each one's kind
		// is set before the engine is asked to start it.
		load.Chooser = func(id int) func() int { return func() int { return int(d.next[id].Load()) } }
	}
	return load, nil
}

// drive runs the sessions of a run through the engine's sessions.
type drive struct {
	run  *Run
	next []atomic.Int32 // server mode: the kind of each session's next statement
	used atomic.Bool
}

// session is an engine session with the lock of its group: the sessions of
// a group are called one at a time.
type session struct {
	workload.Session
	mu *sync.Mutex
}

func (d *drive) drive(ctx context.Context, cs workload.Clients) error {
	groups, ready := cs.Groups, cs.Ready
	if d.used.Swap(true) {
		return errors.New("pgio: a load runs once (sweep is not supported)")
	}
	n := d.run.Sessions()
	sessions := make([]session, n)
	count := 0
	for _, g := range groups {
		mu := &sync.Mutex{}
		for _, s := range g {
			if id := s.ID(); id >= 0 && id < n {
				sessions[id] = session{Session: s, mu: mu}
				count++
			}
		}
	}
	if count != n {
		return fmt.Errorf("pgio: the run has %d clients, its sessions are %d (tables × sessions per table)", count, n)
	}
	// An interrupt ends the measured window, as it ends the engine's.
	stop := context.AfterFunc(ctx, func() { d.run.Cut(time.Now()) })
	defer stop()
	if d.run.Mode() == ModeServer {
		return d.server(ctx, sessions, ready)
	}
	return d.client(ctx, cs)
}

// server replays each statement the procedures ran into its session, as
// RunServer hands them on: a start at the statement's start, and its end a
// duration later.
func (d *drive) server(ctx context.Context, sessions []session, ready func(time.Time)) error {
	replay := func(s int, k Kind, at time.Time, dur time.Duration, err error) {
		ss := sessions[s]
		ss.mu.Lock()
		defer ss.mu.Unlock()
		d.next[s].Store(int32(k))
		if step := ss.Next(at); step.Kind == workload.Start {
			ss.Done(at.Add(dur), err, -1)
		}
	}
	return d.run.RunServer(ctx, ServerHooks{
		Ready:     ready,
		Statement: func(s int, k Kind, at time.Time, dur time.Duration) { replay(s, k, at, dur, nil) },
		Failed:    func(s int, at time.Time, err error) { replay(s, Select, at, 0, err) },
	})
}

// client runs the sessions on the executor, each as the engine's session
// says (when to start a statement, closed or open loop; when to retry,
// reconnect or stop) with pgio's own work around it (see client); a
// session ends after --statements.
func (d *drive) client(ctx context.Context, cs workload.Clients) error {
	r := d.run
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	clients := make([]*client, r.Sessions())
	groups := make([][]workload.Session, len(cs.Groups))
	for i, g := range cs.Groups {
		for _, s := range g {
			c := r.newClient(s.ID(), s)
			clients[s.ID()] = c
			groups[i] = append(groups[i], clientSession{c})
		}
	}
	var startErr error
	ready := func(start time.Time) {
		cs.Ready(start)
		if startErr = r.StartClient(ctx, start); startErr != nil {
			cancel()
		}
	}
	err := executor.Run(ctx, r.target, workload.Clients{Groups: groups, Ready: ready, Spin: cs.Spin},
		func(id int) workload.Program { return clients[id] })
	if err != nil {
		return fmt.Errorf("starting the sessions: %w", err)
	}
	if startErr != nil {
		return startErr
	}
	for _, c := range clients {
		c.end() // a session the run stopped before it closed
	}
	if err := r.end(ctx, time.Time{}); err != nil {
		return err
	}
	return r.Failure()
}
