package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/pg/replica"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/lag"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/htmlreport"
	"github.com/txload/txload/slo"
	"github.com/txload/txload/workload"
)

// lagDrainTimeout is lag's default --drain-timeout: it also bounds how long
// the destination may take to catch up once the load stops.
const lagDrainTimeout = 30 * time.Second

// The names txload gives what it creates on the embedded pair.
const (
	lagSubscription = "txload_lag"
	lagStandby      = "txload_standby"
)

// lagFlags are lag's own flags; the run flags and the workload's come
// beside them.
type lagFlags struct {
	source, dest     string
	workload         string
	replication      string
	markInterval     time.Duration
	pollInterval     time.Duration
	markTransactions bool
	maps             []string
	tables           []string
	slo              string
}

func (f *lagFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.source, "source", "", "URL of the source database the workload writes to (with --dest); default: an embedded pair")
	fs.StringVar(&f.dest, "dest", "", "URL of the destination database the writes reach (with --source)")
	fs.StringVar(&f.workload, "workload", "tpcb-like", "workload run on the source: tpcb-like, simple-update, bank, vote, ...")
	fs.StringVar(&f.replication, "replication", "logical", "embedded pair only: logical (publication and subscription) | physical (a streaming standby)")
	fs.DurationVar(&f.markInterval, "mark-interval", 10*time.Millisecond, "write a marker on the source this often, each in its own transaction")
	fs.DurationVar(&f.pollInterval, "poll-interval", time.Millisecond, "look for new markers on the destination this often: the measurement's precision")
	fs.BoolVar(&f.markTransactions, "mark-transactions", false, "also write a marker inside every workload transaction (per-transaction lag)")
	fs.StringArrayVar(&f.maps, "map", nil, "SRC=DST: the destination holds source table SRC as DST; repeatable")
	fs.StringSliceVar(&f.tables, "tables", nil, "T[,T...]: the tables the workload writes, compared after the run (needed for --workload script, which names none; replaces a builtin's list)")
	fs.StringVar(&f.slo, "slo", "", "objective on the lag, comma-separated conditions "+slo.Grammar+"; exit 1 when broken")
}

const lagLong = `lag runs a workload on a source database and measures how long its writes
take to become visible on a destination (a replica, a subscriber, the far end
of a CDC pipeline), then proves that every row arrived.

A marker stream writes a row into txload_lag_marker on the source every
--mark-interval, each in its own transaction; a reader polls the destination
every --poll-interval for markers it has not seen. Lag = when the reader saw a
marker − when the source acknowledged its COMMIT, both on txload's own clock:
no clock skew between machines enters the figure. It is over-estimated by at
most one poll period plus one query round trip (the report measures both).
Progress lines (stderr) give lag p50/p99/max per interval, the age of the
oldest marker not seen yet, and the servers' own view (pg_stat_replication's
replay_lag, pg_stat_subscription's message delay) where there is one.

With --mark-transactions each client of the workload also writes a marker
inside each of its transactions, just before COMMIT (tpcb-like,
simple-update, bank; pgbench scripts whose statements all run in BEGIN ...
END blocks): the lag is then measured per transaction, reported apart from
the stream's, and a lost transaction shows as a marker gap.

When the load stops, lag waits (up to --drain-timeout) until the destination
has every marker, then compares each table the workload writes on both
sides: row counts and checksums by ranges of key hashes, then the rows of the
ranges that differ, reported as missing, extra or differing by key; and the
marker sequences, for gaps (lost transactions) and repeats (transactions
applied twice: the destination's marker table has no primary key for that).

With no --source and --dest, lag starts two embedded PostgreSQL servers and
connects them with logical replication of the workload's tables and the
marker table (the initial copy fills the destination), or with
--replication physical makes the second a streaming standby of the first.

With --source and --dest, the replication is yours: the destination must
hold the workload's tables (--map SRC=DST for other names) and carry
txload_lag_marker from the source (lag creates it on both sides if missing).
The source's tables are used as they are (--init skip) unless --init keep.

Exit status: 0 when the destination converged and the --slo holds; 1 when
rows are missing, extra or differ, markers are missing or repeated, the
--slo is broken, or the run failed; 2 for bad usage.`

func lagCommand(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "lag [--workload NAME] [--source URL --dest URL] [flags]",
		Short: "Measure replication lag under load, and prove every row arrived",
		Long:  lagLong,
		Example: `  txload lag --workload tpcb-like --scale 10 --partitions 10 --rate 2500 --duration 60s --slo "p99<=1s"
  txload lag --workload bank --replication physical --duration 30s
  txload lag --source postgres://src/db --dest postgres://dst/db --workload tpcb-like --rate 500 --slo "p99<=1s,max<5s"`,
		// The workload's flags depend on --workload: lag parses its
		// arguments itself.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, help, err := parseLag(env, args)
			if err != nil {
				return runErr(err)
			}
			if help != "" {
				_, err := fmt.Fprint(env.Stdout, cmd.Long+"\n\nUsage:\n  txload "+cmd.Use+"\n\nExamples:\n"+cmd.Example+"\n\nFlags:\n"+help)
				return err
			}
			return runErr(cfg.run(cmd.Context()))
		},
	}
}

// lagConfig is a validated lag invocation.
type lagConfig struct {
	env   Env
	flags lagFlags
	runf  runFlags
	m     workload.Meta
	g     workload.Generator
	h     workload.Hooks
	opts  runner.Options
	// tables pairs each table the workload writes with its destination
	// name; marker is the marker table's destination name.
	tables       []lag.Pair
	marker       string
	drainTimeout time.Duration
	objective    []slo.Condition
	jsonPath     string
	htmlPath     string
	histPath     string
	config       map[string]any
	embedded     *embedded.Version
}

// workloadArg finds --workload in args, before they can be parsed.
func workloadArg(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--workload="); ok {
			return v
		}
		if a == "--workload" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return "tpcb-like"
}

// parseLag parses and validates lag's arguments without touching any
// server. For --help it returns the flags' usage instead.
func parseLag(env Env, args []string) (*lagConfig, string, error) {
	c := &lagConfig{env: env}
	name := workloadArg(args)
	m, err := env.Registry.Get(name)
	if err != nil {
		return nil, "", usagef("--workload: %v", err)
	}
	c.m, c.g = m, m.New()
	c.h = c.g.Hooks()
	if c.h.Ops == nil {
		var ok []string
		for _, m := range env.Registry.All() {
			if h := m.New().Hooks(); h.Ops != nil {
				ok = append(ok, m.Name)
			}
		}
		return nil, "", usagef("--workload %s: lag needs a workload that runs load (lag works for: %s)", name, strings.Join(ok, ", "))
	}

	fs := pflag.NewFlagSet("lag", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	c.flags.register(fs)
	// Run's flags, less those that make no sense here.
	rfs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	c.runf.register(rfs)
	rfs.VisitAll(func(fl *pflag.Flag) {
		switch fl.Name {
		case "url", "output", "failures-detailed", "report-per-statement":
			return
		}
		fs.AddFlag(fl)
	})
	fs.AddFlagSet(c.g.Flags())
	for name, v := range c.h.RunDefaults {
		if fl := fs.Lookup(name); fl != nil && name != "init" {
			_ = fl.Value.Set(v) // the workload's own defaults: valid by construction
			fl.DefValue = v
		}
	}
	if fl := fs.Lookup("drain-timeout"); fl != nil {
		_ = fl.Value.Set(lagDrainTimeout.String())
		fl.DefValue = lagDrainTimeout.String()
	}
	fs.BoolP("help", "h", false, "help for lag")
	if err := fs.Parse(args); err != nil {
		return nil, "", usageErr(err)
	}
	if h, _ := fs.GetBool("help"); h {
		return nil, fs.FlagUsages(), nil
	}
	if fs.NArg() > 0 {
		return nil, "", usagef("lag takes no arguments, got %q (the workload is --workload NAME)", fs.Arg(0))
	}
	return c, "", c.validate(fs)
}

// validate checks every value before any server is touched.
func (c *lagConfig) validate(fs *pflag.FlagSet) error {
	f := &c.flags
	switch {
	case f.markInterval <= 0:
		return usagef("--mark-interval must be positive (for example 10ms), got %s", f.markInterval)
	case f.pollInterval <= 0:
		return usagef("--poll-interval must be positive (for example 1ms), got %s", f.pollInterval)
	case f.replication != "logical" && f.replication != "physical":
		return usagef("--replication %q is not allowed (allowed: logical, physical)", f.replication)
	case (f.source == "") != (f.dest == ""):
		if f.source == "" {
			return usagef("--dest needs --source: give both, or neither for an embedded pair")
		}
		return usagef("--source needs --dest: give both, or neither for an embedded pair")
	case f.markTransactions && c.h.MarkTransactions == nil:
		var ok []string
		for _, m := range c.env.Registry.All() {
			h := m.New().Hooks()
			if h.MarkTransactions == nil || h.Ops == nil || len(h.Tables) == 0 || (h.Validate != nil && h.Validate() != nil) {
				continue
			}
			if h.MarkTransactions() == nil { // with its defaults
				ok = append(ok, m.Name)
			}
		}
		return usagef("--mark-transactions: workload %s cannot write a marker inside its transactions (those that can: %s); the marker stream (--mark-interval) measures the lag", c.m.Name, strings.Join(ok, ", "))
	}
	external := f.source != ""
	for _, t := range f.tables {
		if strings.TrimSpace(t) == "" {
			return usagef("--tables %q: give table names separated by commas", strings.Join(f.tables, ","))
		}
	}
	if len(f.tables) > 0 {
		c.h.Tables = f.tables
	}
	if len(c.h.Tables) == 0 {
		return usagef("--workload %s names no tables it writes: give them with --tables T[,T...] (compared on both sides after the run)", c.m.Name)
	}
	if c.h.Init == nil && !external {
		return usagef("--workload %s creates no tables, and the embedded pair starts empty: give --source and --dest, where its tables exist", c.m.Name)
	}
	if external {
		if fs.Changed("replication") {
			return usagef("--replication applies to the embedded pair; with --source and --dest the replication is yours")
		}
		if fs.Changed("embedded-version") {
			return usagef("--embedded-version applies to the embedded pair, not to --source and --dest")
		}
		for flag, u := range map[string]string{"--source": f.source, "--dest": f.dest} {
			if strings.TrimSpace(u) == "" {
				return usagef("%s is empty: give a database URL such as postgres://user@host:5432/db", flag)
			}
		}
	} else {
		v, err := embedded.Lookup(c.runf.load.target.embeddedVersion)
		if err != nil {
			return usagef("--embedded-version: %v", err)
		}
		c.embedded = &v
		if fs.Changed("init") {
			return usagef("--init applies to --source: the embedded pair is always loaded fresh")
		}
		if len(f.maps) > 0 {
			return usagef("--map applies to --source and --dest: the embedded pair names tables alike")
		}
	}
	maps := map[string]string{}
	for _, m := range f.maps {
		src, dst, ok := strings.Cut(m, "=")
		if !ok || src == "" || dst == "" {
			return usagef("--map %q: want SRC=DST, a source table and its name on the destination", m)
		}
		known := src == lag.Table
		for _, t := range c.h.Tables {
			known = known || t == src
		}
		if !known {
			return usagef("--map %s: %s is not a table %s writes (it writes: %s, and %s)", m, src, c.m.Name, strings.Join(c.h.Tables, ", "), lag.Table)
		}
		maps[src] = dst
	}
	for _, t := range c.h.Tables {
		p := lag.Pair{Source: t, Dest: t}
		if d, ok := maps[t]; ok {
			p.Dest = d
		}
		c.tables = append(c.tables, p)
	}
	c.marker = lag.Table
	if d, ok := maps[lag.Table]; ok {
		c.marker = d
	}
	if f.slo != "" {
		objective, err := slo.Parse(f.slo)
		if err != nil {
			return usagef("--slo: %v", err)
		}
		c.objective = objective.Conditions()
	}
	opts, err := c.runf.options(c.env)
	if err != nil {
		return err
	}
	opts.Command = "lag"
	if external {
		switch {
		case opts.Init == "fresh" && fs.Changed("init"):
			return usagef("--init fresh would drop and reload the source's tables under the replication: use keep or skip")
		case !fs.Changed("init"):
			opts.Init = "skip"
		}
		opts.InitSet = true
	} else {
		opts.Init, opts.InitSet = "skip", true // lag loads the pair itself
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	if c.h.Validate != nil {
		if err := c.h.Validate(); err != nil {
			return usageErr(err)
		}
	}
	if f.markTransactions {
		if err := c.h.MarkTransactions(); err != nil {
			return usageErr(err)
		}
	}
	c.drainTimeout = opts.Engine.DrainTimeout
	if c.drainTimeout <= 0 {
		return usagef("--drain-timeout must be positive for lag (the destination's time to catch up), got %s", c.drainTimeout)
	}
	// lag writes --json and --histogram itself: the runner gets neither.
	c.jsonPath, c.htmlPath, c.histPath = opts.JSON, opts.HTML, opts.Histogram
	opts.JSON, opts.HTML, opts.Histogram = "", "", ""
	opts.KeepIntervals = c.jsonPath != "" || c.htmlPath != ""
	opts.Stderr = runner.Locked(c.env.Stderr)
	c.opts = opts
	c.config = map[string]any{}
	fs.VisitAll(func(fl *pflag.Flag) {
		switch fl.Name {
		case "help":
		case "source", "dest", "url":
		default:
			c.config[fl.Name] = fl.Value.String()
		}
	})
	return nil
}

// prefixed writes each line with a prefix.
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	s := strings.TrimSuffix(string(b), "\n")
	s = p.prefix + strings.ReplaceAll(s, "\n", "\n"+p.prefix) + "\n"
	if _, err := io.WriteString(p.w, s); err != nil {
		return 0, err
	}
	return len(b), nil
}

// lagPair is the two databases of a run, open.
type lagPair struct {
	src, dst *runner.Conn
	srcURL   string
	dstURL   string
	mode     string // logical, physical, or external
	same     bool   // the destination is the source
	close    []func()
}

func (p *lagPair) Close() {
	for i := len(p.close) - 1; i >= 0; i-- {
		p.close[i]()
	}
}

func (c *lagConfig) run(ctx context.Context) error {
	stderr := c.opts.Stderr
	// Listening comes first: an address in use is refused before either
	// database is touched.
	stopMetrics, err := runner.StartMetrics(&c.opts, c.m.Name)
	if err != nil {
		return err
	}
	defer stopMetrics()
	pair := &lagPair{}
	defer pair.Close()
	if c.embedded != nil {
		err = c.startPair(ctx, pair)
	} else {
		err = c.openExternal(ctx, pair)
	}
	if err != nil {
		if ctx.Err() != nil {
			return runner.ErrInterrupted
		}
		return err
	}
	scrub := func(err error) error {
		return errors.New(pair.dst.Target.Scrub(pair.src.Target.Scrub(err.Error())))
	}

	srcConn, err := pair.src.Target.Connect(ctx)
	if err != nil {
		return err
	}
	defer srcConn.Close(context.WithoutCancel(ctx))
	first, err := lag.FirstWriter(ctx, srcConn)
	if err != nil {
		return scrub(err)
	}

	// The instrument: the marker stream on the source, the reader on the
	// destination, the servers' views, the progress ticker.
	start := time.Now()
	// Writer 0 is the marker stream; with --mark-transactions client i
	// writes as 1+i (the table's first+1+i), its figures kept apart.
	writers := 1
	opts := c.opts
	if c.flags.markTransactions {
		writers += c.clients()
	}
	tracker := lag.NewSplitTracker(start, writers, 1, c.drainTimeout)
	if c.flags.markTransactions {
		marks := lag.NewTxMarks(tracker, 1, first+1)
		n := writers - 1
		opts.Marks = func(id int) workload.TxMarker {
			if id < 0 || id >= n {
				return nil
			}
			return marks.Client(id)
		}
	}
	mctx, stopMeasuring := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopMeasuring(); wg.Wait() }()
	var polled atomic.Bool
	reader := &lag.Reader{Target: pair.dst.Target, Tracker: tracker, FirstWriter: first, Table: c.marker, Poll: c.flags.pollInterval,
		Ready: func() { polled.Store(true) }}
	var rstats lag.ReaderStats
	readerErr := make(chan error, 1)
	wg.Go(func() {
		var err error
		rstats, err = reader.Run(mctx)
		readerErr <- err
	})
	// The markers start once the reader polls: those written while it
	// connects would carry its connection time as lag.
	if err := waitFor(ctx, c.drainTimeout, readerErr, polled.Load); err != nil {
		if ctx.Err() != nil {
			return runner.ErrInterrupted
		}
		if errors.Is(err, errTimedOut) {
			return fmt.Errorf("the marker reader could not poll %s on the destination within %s", c.marker, c.drainTimeout)
		}
		return scrub(err)
	}
	views := &lag.Views{Source: pair.src.Target, Dest: pair.dst.Target}
	wg.Go(func() { views.Run(mctx) })
	stream := &lag.Stream{Target: pair.src.Target, Tracker: tracker, W: 0, Writer: first, Interval: c.flags.markInterval}
	stopStream := make(chan struct{})
	streamDone := make(chan struct{})
	var sstats lag.StreamStats
	var streamErr error
	sctx, stopStreamCtx := context.WithCancel(ctx)
	defer stopStreamCtx()
	go func() {
		sstats, streamErr = stream.Run(sctx, stopStream)
		close(streamDone)
	}()
	endStream := func() {
		select {
		case <-stopStream:
		default:
			close(stopStream)
		}
	}
	defer func() { endStream(); stopStreamCtx(); <-streamDone }()

	// The first marker must arrive before the load starts: otherwise the
	// replication does not carry the marker table.
	if err := waitFor(ctx, c.drainTimeout, readerErr, func() bool { return tracker.Counts().Measured > 0 }); err != nil {
		if ctx.Err() != nil {
			return runner.ErrInterrupted
		}
		if errors.Is(err, errTimedOut) {
			return fmt.Errorf("no marker reached the destination within %s: does the replication carry %s from the source to %s on the destination?", c.drainTimeout, lag.Table, c.marker)
		}
		return scrub(err)
	}
	fmt.Fprintf(stderr, "lag: markers every %s on %s, polled every %s on %s\n", c.flags.markInterval, pair.src.Target.URLs()[0], c.flags.pollInterval, pair.dst.Target.URLs()[0])

	ticker, err := c.startTicker(mctx, &wg, tracker, views, start)
	if err != nil {
		return err
	}

	outcome, runErr := runner.RunOne(ctx, pair.src, c.m, workload.Variant{Generator: c.g}, opts, false)
	loadEnd := time.Now()

	// Drain: the last marker, then every marker seen.
	endStream()
	dctx, cancelDrain := context.WithDeadline(ctx, loadEnd.Add(c.drainTimeout))
	defer cancelDrain()
	select {
	case <-streamDone:
	case <-dctx.Done():
		stopStreamCtx()
		<-streamDone
	}
	caughtUp := waitFor(dctx, c.drainTimeout, readerErr, func() bool { n, _ := tracker.Pending(); return n == 0 }) == nil
	catchUp := time.Since(loadEnd)
	stopMeasuring()
	wg.Wait()
	ticker.finish(time.Now())
	select {
	case err := <-readerErr:
		if err != nil && runErr == nil {
			runErr = err
		}
	default:
	}
	if streamErr != nil && runErr == nil {
		runErr = streamErr
	}
	interrupted := ctx.Err() != nil

	w := c.env.Stdout
	res := lagResult{
		pair: pair, counts: tracker.CountsOf(0), total: tracker.Total(), reader: rstats, stream: sstats,
		streamLag: tracker.TotalOf(0), txCounts: tracker.CountsOf(1), txLag: tracker.TotalOf(1), writers: writers,
		views: views, caughtUp: caughtUp, catchUp: catchUp, outcome: outcome, interrupted: interrupted,
	}
	res.pending, _ = tracker.Pending()
	for _, cond := range c.objective {
		v := cond.Metric.Value(res.total)
		// No lag measured is no evidence the objective holds.
		res.sloVerdicts = append(res.sloVerdicts, sloVerdict{cond: cond, value: v, pass: cond.Holds(v) && res.total.TotalCount() > 0})
	}
	c.printLag(w, &res)

	var failures []string
	if !interrupted && runErr == nil {
		conv, err := c.converge(ctx, pair, first, writers, loadEnd)
		if err != nil {
			runErr = err
		} else {
			res.conv = conv
			printConvergence(w, conv)
			if f := conv.failures(); len(f) > 0 {
				failures = append(failures, "the destination differs from the source: "+strings.Join(f, "; "))
			}
		}
	}
	if !res.caughtUp && !interrupted {
		failures = append(failures, fmt.Sprintf("%d markers had not reached the destination %s after the load stopped", res.pending, c.drainTimeout))
	}
	for _, v := range res.sloVerdicts {
		if !v.pass {
			failures = append(failures, fmt.Sprintf("the lag breaks the objective %s (%s)", v.cond, report.MicrosF(v.value)))
		}
	}
	res.points = ticker.points
	if err := c.writeDocument(&res); err != nil && runErr == nil {
		runErr = err
	}
	switch {
	case interrupted:
		return runner.ErrInterrupted
	case runErr != nil:
		return scrub(runErr)
	case outcome != nil && outcome.Result != nil && outcome.Result.Aborted > 0:
		return fmt.Errorf("%d clients aborted: %v", outcome.Result.Aborted, scrub(outcome.Result.AbortErr))
	case outcome != nil && outcome.Check != nil && len(outcome.Check.Violations) > 0:
		return &runner.ViolationError{Violations: outcome.Check.Violations}
	case len(failures) > 0:
		return errors.New(strings.Join(failures, "; "))
	}
	return nil
}

var errTimedOut = errors.New("timed out")

// waitFor polls cond every millisecond until it holds, d passes, ctx ends or
// the reader fails.
func waitFor(ctx context.Context, d time.Duration, readerErr chan error, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		select {
		case err := <-readerErr:
			readerErr <- err // for whoever looks next
			if err != nil {
				return err
			}
			return errors.New("the marker reader stopped")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errTimedOut
		}
	}
	return nil
}

// startPair starts the embedded source and destination, loads the workload
// on the source and connects them.
func (c *lagConfig) startPair(ctx context.Context, p *lagPair) error {
	stderr := c.opts.Stderr
	cache := c.env.Getenv("TXLOAD_CACHE_DIR")
	srcSrv, err := embedded.Start(ctx, embedded.Options{Major: c.embedded.Full, Log: prefixed{stderr, "source: "}, CacheDir: cache, Settings: replica.SourceSettings()})
	if err != nil {
		return fmt.Errorf("starting the embedded source: %w", err)
	}
	p.close = append(p.close, func() {
		if err := srcSrv.Stop(); err != nil {
			fmt.Fprintf(stderr, "stopping the embedded source: %v\n", err)
		}
	})
	dstSrv, err := embedded.Start(ctx, embedded.Options{Major: c.embedded.Full, Log: prefixed{stderr, "destination: "}, CacheDir: cache})
	if err != nil {
		return fmt.Errorf("starting the embedded destination: %w", err)
	}
	p.close = append(p.close, func() {
		if err := dstSrv.Stop(); err != nil {
			fmt.Fprintf(stderr, "stopping the embedded destination: %v\n", err)
		}
	})
	p.srcURL, p.dstURL, p.mode = srcSrv.URL(), dstSrv.URL(), c.flags.replication
	if p.src, err = open(ctx, p.srcURL, prefixed{stderr, "source: "}); err != nil {
		return err
	}
	p.close = append(p.close, p.src.Close)
	if err := p.src.CheckConnections(ctx, c.needConns(), ""); err != nil {
		return err
	}
	if c.h.Init == nil {
		return fmt.Errorf("workload %s cannot load its schema: give --source and --dest", c.m.Name)
	}
	if err := c.h.Init(ctx, p.src.Target, workload.InitOptions{Drop: true, Log: prefixed{stderr, "source: "}}); err != nil {
		return err
	}
	srcConn, err := p.src.Target.Connect(ctx)
	if err != nil {
		return err
	}
	defer srcConn.Close(context.WithoutCancel(ctx))
	if err := lag.CreateSource(ctx, srcConn); err != nil {
		return err
	}
	switch p.mode {
	case "physical":
		t0 := time.Now()
		if err := replica.Standby(ctx, srcSrv, dstSrv, lagStandby); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "destination: a streaming standby of the source (base backup and start in %.2fs)\n", time.Since(t0).Seconds())
		if p.dst, err = open(ctx, p.dstURL, prefixed{stderr, "destination: "}); err != nil {
			return err
		}
		p.close = append(p.close, p.dst.Close)
	default:
		if p.dst, err = open(ctx, p.dstURL, prefixed{stderr, "destination: "}); err != nil {
			return err
		}
		p.close = append(p.close, p.dst.Close)
		// The same schema, emptied: the subscription's initial copy fills it.
		if err := c.h.Init(ctx, p.dst.Target, workload.InitOptions{Drop: true, Log: io.Discard}); err != nil {
			return fmt.Errorf("creating the schema on the destination: %w", err)
		}
		dstConn, err := p.dst.Target.Connect(ctx)
		if err != nil {
			return err
		}
		defer dstConn.Close(context.WithoutCancel(ctx))
		var ids []string
		for _, t := range c.h.Tables {
			ids = append(ids, pgx.Identifier{t}.Sanitize())
		}
		if _, err := dstConn.Exec(ctx, "TRUNCATE "+strings.Join(ids, ", ")); err != nil {
			return fmt.Errorf("emptying the destination's tables: %w", err)
		}
		if err := lag.CreateDest(ctx, dstConn, lag.Table); err != nil {
			return err
		}
		t0 := time.Now()
		tables := append(append([]string(nil), c.h.Tables...), lag.Table)
		if _, err := replica.StartLogical(ctx, p.srcURL, p.dstURL, p.srcURL, lagSubscription, tables); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "destination: subscribed to %s (initial copy in %.2fs)\n", strings.Join(tables, ", "), time.Since(t0).Seconds())
	}
	return nil
}

// clients is the number of the workload's clients: one marker writer each
// with --mark-transactions.
func (c *lagConfig) clients() int { return c.opts.Engine.Concurrency }

// needConns is the connections a run opens on the source: the clients,
// the marker stream, the views and the runner's own.
func (c *lagConfig) needConns() int { return c.opts.Engine.Concurrency + 4 }

// open connects to one database and identifies it.
func open(ctx context.Context, url string, log io.Writer) (*runner.Conn, error) {
	r, err := runner.TargetOptions{URLs: []string{url}}.Resolve()
	if err != nil {
		return nil, err
	}
	return r.Open(ctx, log)
}

// openExternal connects to the user's source and destination and checks,
// before writing anything, that both hold the workload's tables.
func (c *lagConfig) openExternal(ctx context.Context, p *lagPair) error {
	stderr := c.opts.Stderr
	p.srcURL, p.dstURL, p.mode = c.flags.source, c.flags.dest, "external"
	for _, u := range []struct{ flag, url string }{{"--source", p.srcURL}, {"--dest", p.dstURL}} {
		if _, err := (runner.TargetOptions{URLs: []string{u.url}}).Resolve(); err != nil {
			var ue *runner.UsageError
			if errors.As(err, &ue) {
				return usagef("%s: %v", u.flag, strings.TrimPrefix(ue.Err.Error(), "parsing --url "))
			}
			return err
		}
	}
	var err error
	if p.src, err = open(ctx, p.srcURL, prefixed{stderr, "source: "}); err != nil {
		return err
	}
	p.close = append(p.close, p.src.Close)
	if p.dst, err = open(ctx, p.dstURL, prefixed{stderr, "destination: "}); err != nil {
		return err
	}
	p.close = append(p.close, p.dst.Close)
	srcConn, err := p.src.Target.Connect(ctx)
	if err != nil {
		return err
	}
	defer srcConn.Close(context.WithoutCancel(ctx))
	dstConn, err := p.dst.Target.Connect(ctx)
	if err != nil {
		return err
	}
	defer dstConn.Close(context.WithoutCancel(ctx))
	if p.same, err = lag.SameDatabase(ctx, srcConn, dstConn); err != nil {
		return err
	}
	var dests []string
	for _, t := range c.tables {
		dests = append(dests, t.Dest)
	}
	missing, err := lag.MissingTables(ctx, dstConn, dests)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return usagef("--dest %s lacks the tables of %s: %s; create them there and replicate them from the source (--map SRC=DST when they are named otherwise)",
			p.dst.Target.URLs()[0], c.m.Name, strings.Join(missing, ", "))
	}
	if c.opts.Init == "skip" {
		missing, err := lag.MissingTables(ctx, srcConn, c.h.Tables)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			return usagef("--source %s lacks the tables of %s: %s; load them first (txload init), or give --init keep",
				p.src.Target.URLs()[0], c.m.Name, strings.Join(missing, ", "))
		}
	}
	if err := p.src.CheckConnections(ctx, c.needConns(), ""); err != nil {
		return err
	}
	if err := lag.CreateSource(ctx, srcConn); err != nil {
		return err
	}
	if p.same {
		fmt.Fprintln(stderr, "lag: the destination is the source itself: the figures are the instrument's own floor")
		return nil
	}
	if missing, err := lag.MissingTables(ctx, dstConn, []string{c.marker}); err != nil {
		return err
	} else if len(missing) > 0 {
		if err := lag.CreateDest(ctx, dstConn, c.marker); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "lag: created %s on the destination (without a primary key, so that repeats show): the replication must carry %s to it\n", c.marker, lag.Table)
	}
	return nil
}

// lagTicker prints lag progress lines and writes the lag's interval
// histograms.
type lagTicker struct {
	c       *lagConfig
	tracker *lag.Tracker
	views   *lag.Views
	start   time.Time
	h       *hdr.Histogram
	hlog    *hdr.HistogramLogWriter
	file    *os.File
	last    time.Time
	mu      sync.Mutex
	// points are the lag per interval, for the document's chart.
	points []report.SeriesPoint
}

func (c *lagConfig) startTicker(ctx context.Context, wg *sync.WaitGroup, tr *lag.Tracker, v *lag.Views, start time.Time) (*lagTicker, error) {
	t := &lagTicker{c: c, tracker: tr, views: v, start: start, h: metrics.NewHistogram(), last: time.Now()}
	every := c.opts.Engine.Progress
	if c.histPath != "" {
		f, err := outfile.Create(c.histPath)
		if err != nil {
			return nil, fmt.Errorf("--histogram: %w", err)
		}
		t.file = f
		t.hlog = hdr.NewHistogramLogWriter(f)
		ms := start.UnixMilli()
		t.hlog.SetBaseTime(ms)
		for _, fn := range []func() error{
			t.hlog.OutputLogFormatVersion,
			func() error {
				return t.hlog.OutputComment("txload lag interval histograms: replication lag in microseconds")
			},
			func() error { return t.hlog.OutputStartTime(ms) },
			func() error { return t.hlog.OutputBaseTime(ms) },
			t.hlog.OutputLegend,
		} {
			if err := fn(); err != nil {
				f.Close()
				return nil, fmt.Errorf("--histogram: %w", err)
			}
		}
		if every <= 0 {
			every = time.Second
		}
	}
	if every <= 0 {
		every = time.Second // intervals still expire markers
	}
	wg.Go(func() {
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				// The clock now, not the tick's: markers acknowledged since
				// the tick fired would seem to come from the future.
				t.tick(time.Now(), false)
			}
		}
	})
	return t, nil
}

func (t *lagTicker) tick(now time.Time, final bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	iv := t.tracker.Tick(now, t.h)
	if t.hlog != nil {
		iv.Lag.SetTag("replication-lag")
		iv.Lag.SetStartTimeMs(t.last.UnixMilli())
		iv.Lag.SetEndTimeMs(now.UnixMilli())
		if err := t.hlog.OutputIntervalHistogram(iv.Lag); err != nil {
			fmt.Fprintf(t.c.opts.Stderr, "--histogram: %v\n", err)
		}
	}
	t.last = now
	t.export(iv)
	if iv.Measured > 0 || iv.Pending > 0 {
		at := now.Sub(t.start).Seconds()
		t.points = append(t.points, report.SeriesPoint{At: at, Values: []float64{
			float64(iv.Lag.ValueAtQuantile(50)), float64(iv.Lag.ValueAtQuantile(99)), float64(iv.Lag.Max()), float64(iv.Behind.Microseconds())}})
	}
	if final || t.c.opts.Engine.Progress <= 0 {
		return
	}
	line := fmt.Sprintf("%6.1fs  lag", now.Sub(t.start).Seconds())
	if iv.Measured == 0 {
		line += "  none seen"
	} else {
		line += fmt.Sprintf("  p50 %s  p99 %s  max %s  markers %d", report.Micros(iv.Lag.ValueAtQuantile(50)),
			report.Micros(iv.Lag.ValueAtQuantile(99)), report.Micros(iv.Lag.Max()), iv.Measured)
	}
	if iv.Pending > 0 {
		line += fmt.Sprintf("  behind %s (%d pending)", report.Micros(iv.Behind.Microseconds()), iv.Pending)
	}
	s := t.views.Last()
	if s.Replay >= 0 {
		line += "  replay_lag " + report.Micros(s.Replay.Microseconds())
	}
	if s.Behind >= 0 {
		line += "  replay behind " + bytesString(s.Behind)
	}
	if s.Delay >= 0 {
		line += "  subscription delay " + report.Micros(s.Delay.Microseconds())
	}
	fmt.Fprintln(t.c.opts.Stderr, line)
}

// export sets lag's gauges of the interval on the --metrics-addr exporter.
func (t *lagTicker) export(iv lag.Interval) {
	exp := t.c.opts.Metrics
	if exp == nil {
		return
	}
	seconds := func(us int64) float64 { return float64(us) / 1e6 }
	if iv.Measured > 0 {
		exp.SetFigure("replication_lag_p50_seconds", "Replication lag of the markers seen in the last interval: median.", seconds(iv.Lag.ValueAtQuantile(50)))
		exp.SetFigure("replication_lag_p99_seconds", "Replication lag of the markers seen in the last interval: 99th percentile.", seconds(iv.Lag.ValueAtQuantile(99)))
		exp.SetFigure("replication_lag_max_seconds", "Replication lag of the markers seen in the last interval: maximum.", seconds(iv.Lag.Max()))
	}
	exp.SetFigure("replication_markers_seen", "Markers seen on the destination in the last interval.", float64(iv.Measured))
	exp.SetFigure("replication_markers_pending", "Markers committed on the source and not yet seen on the destination.", float64(iv.Pending))
	exp.SetFigure("replication_behind_seconds", "Age of the oldest marker not yet seen on the destination (0: none pending).", iv.Behind.Seconds())
	s := t.views.Last()
	if s.Replay >= 0 {
		exp.SetFigure("replication_replay_lag_seconds", "The server's own view: pg_stat_replication's replay_lag.", s.Replay.Seconds())
	}
	if s.Behind >= 0 {
		exp.SetFigure("replication_replay_behind_bytes", "The server's own view: WAL bytes the standby has yet to replay.", float64(s.Behind))
	}
	if s.Delay >= 0 {
		exp.SetFigure("replication_subscription_delay_seconds", "The server's own view: pg_stat_subscription's message delay.", s.Delay.Seconds())
	}
}

// finish writes the last interval and closes the log.
func (t *lagTicker) finish(now time.Time) {
	t.tick(now, true)
	if t.file != nil {
		if err := t.file.Close(); err != nil {
			fmt.Fprintf(t.c.opts.Stderr, "--histogram: %v\n", err)
		} else {
			fmt.Fprintf(t.c.opts.Stderr, "wrote %s\n", t.c.histPath)
		}
	}
}

// lagResult is what a lag run measured.
type lagResult struct {
	pair   *lagPair
	points []report.SeriesPoint // lag per interval
	// counts are the marker stream's; total the lag of every marker,
	// which the SLO judges; streamLag the stream's alone. With
	// --mark-transactions, txCounts and txLag are the markers inside the
	// transactions.
	counts      lag.Counts
	total       *hdr.Histogram
	streamLag   *hdr.Histogram
	txCounts    lag.Counts
	txLag       *hdr.Histogram
	writers     int
	reader      lag.ReaderStats
	stream      lag.StreamStats
	views       *lag.Views
	caughtUp    bool
	catchUp     time.Duration
	pending     int
	interrupted bool
	outcome     *runner.Outcome
	sloVerdicts []sloVerdict
	conv        *convergence
}

type sloVerdict struct {
	cond  slo.Condition
	value float64
	pass  bool
}

// printLag writes the lag block of the report and judges the SLO.
func (c *lagConfig) printLag(w io.Writer, r *lagResult) {
	var how string
	switch r.pair.mode {
	case "logical":
		how = "logical replication between two embedded servers"
	case "physical":
		how = "a streaming standby of an embedded server"
	default:
		how = "your replication"
		if r.pair.same {
			how = "the source itself"
		}
	}
	n := r.counts
	fmt.Fprintf(w, "replication lag (%s): %d markers written every %s, %d acknowledged, %d seen on the destination\n",
		how, n.Sent, c.flags.markInterval, n.Acked, n.Measured)
	marked := c.flags.markTransactions
	if marked {
		t := r.txCounts
		line := fmt.Sprintf("  and a marker inside every transaction: %d written, %d committed, %d rolled back", t.Sent, t.Acked, t.Failed+t.Ambiguous)
		if t.Ambiguous > 0 {
			line += fmt.Sprintf(" (%d with their COMMIT's outcome unknown, %d of those arrived)", t.Ambiguous, t.AmbiguousSeen)
		}
		if open := t.Sent - t.Acked - t.Failed - t.Ambiguous; open > 0 {
			line += fmt.Sprintf(", %d in flight when the load stopped", open)
		}
		fmt.Fprintf(w, "%s, %d seen on the destination\n", line, t.Measured)
	}
	rows := [][]string{report.HistHeader()}
	switch {
	case marked:
		if r.streamLag.TotalCount() > 0 {
			rows = append(rows, report.HistRow("lag (stream)", r.streamLag))
		}
		if r.txLag.TotalCount() > 0 {
			rows = append(rows, report.HistRow("lag per transaction", r.txLag))
		}
	case r.total.TotalCount() > 0:
		rows = append(rows, report.HistRow("lag", r.total))
	}
	report.Table(w, "  ", rows)
	rs := r.reader
	if rs.Polls > 0 {
		fmt.Fprintf(w, "  precision: a marker is seen at most one poll after it became visible: polls every %s (p99 %s), each taking %s (p99 %s)\n",
			report.MicrosF(rs.Period.Mean()), report.Micros(rs.Period.ValueAtQuantile(99)),
			report.MicrosF(rs.RoundTrip.Mean()), report.Micros(rs.RoundTrip.ValueAtQuantile(99)))
	}
	if marked {
		n.Early += r.txCounts.Early
		n.Late += r.txCounts.Late
		n.Expired += r.txCounts.Expired
	}
	if n.Early > 0 {
		fmt.Fprintf(w, "  %d markers were visible before their COMMIT's acknowledgement reached txload (recorded as 0)\n", n.Early)
	}
	if n.Failed+n.Ambiguous > 0 {
		fmt.Fprintf(w, "  %d marker writes failed, %d of them with their COMMIT's outcome unknown (%d of those arrived)\n", n.Failed+n.Ambiguous, n.Ambiguous, n.AmbiguousSeen)
	}
	if n.Late+n.Expired > 0 {
		fmt.Fprintf(w, "  the destination reordered markers: %d found late, %d never seen while later ones were\n", n.Late, n.Expired)
	}
	if rs.Errors > 0 {
		fmt.Fprintf(w, "  %d polls of the destination failed; the first: %s\n", rs.Errors, flat(r.pair.dst.Target.Scrub(rs.FirstErr.Error())))
	}
	if r.stream.Errors > 0 {
		fmt.Fprintf(w, "  %d marker writes on the source failed; the first: %s\n", r.stream.Errors, flat(r.pair.src.Target.Scrub(r.stream.FirstErr.Error())))
	}
	switch {
	case r.interrupted:
		fmt.Fprintf(w, "  INTERRUPTED: %d acknowledged markers not seen on the destination yet; convergence not checked\n", r.pending)
	case r.caughtUp:
		fmt.Fprintf(w, "  the destination had every marker %s after the load stopped\n", report.Micros(r.catchUp.Microseconds()))
	default:
		fmt.Fprintf(w, "  DRAIN TIMEOUT: %d acknowledged markers had not reached the destination %s after the load stopped\n", r.pending, c.drainTimeout)
	}
	for _, s := range r.views.Senders() {
		line := fmt.Sprintf("  server: pg_stat_replication %s: %d samples", s.Name, s.Samples)
		if s.Replay.TotalCount() > 0 {
			line += fmt.Sprintf(", replay_lag p50 %s p99 %s max %s", report.Micros(s.Replay.ValueAtQuantile(50)),
				report.Micros(s.Replay.ValueAtQuantile(99)), report.Micros(s.Replay.Max()))
		}
		if s.Idle > 0 {
			line += fmt.Sprintf(", %d with replay_lag NULL", s.Idle)
		}
		if s.Behind.TotalCount() > 0 {
			line += fmt.Sprintf("; replay_lsn behind the source's WAL p50 %s p99 %s max %s", bytesString(s.Behind.ValueAtQuantile(50)),
				bytesString(s.Behind.ValueAtQuantile(99)), bytesString(s.Behind.Max()))
		}
		fmt.Fprintln(w, line)
	}
	for _, s := range r.views.Subscriptions() {
		line := fmt.Sprintf("  server: pg_stat_subscription %s: %d samples", s.Name, s.Samples)
		if s.Delay.TotalCount() > 0 {
			line += fmt.Sprintf(", last message sent → received p50 %s p99 %s max %s", report.Micros(s.Delay.ValueAtQuantile(50)),
				report.Micros(s.Delay.ValueAtQuantile(99)), report.Micros(s.Delay.Max()))
		}
		fmt.Fprintln(w, line)
	}
	for _, v := range r.sloVerdicts {
		verdict := "PASS"
		if !v.pass {
			verdict = "FAIL"
		}
		of := ""
		if marked {
			of = " (every marker, stream and transactions)"
		}
		fmt.Fprintf(w, "slo %s on lag%s: %s (%s)\n", v.cond, of, verdict, report.MicrosF(v.value))
	}
	fmt.Fprintln(w)
}

// convergence is what comparing the two sides found.
type convergence struct {
	tables  []*lag.Diff
	markers *lag.MarkerDiff
	// compared counts the comparisons of each table (rechecks included).
	compared []int
	took     time.Duration
}

func (c *convergence) failures() []string {
	var out []string
	for _, d := range c.tables {
		if d.OK() {
			continue
		}
		var parts []string
		for _, p := range []struct {
			n    int64
			what string
		}{{d.Missing, "missing"}, {d.Extra, "extra"}, {d.Differing, "differing"}} {
			if p.n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
			}
		}
		if len(d.MissingColumns) > 0 {
			parts = append(parts, "columns missing: "+strings.Join(d.MissingColumns, ", "))
		}
		if len(parts) == 0 {
			parts = append(parts, fmt.Sprintf("%d rows against %d", d.DestRows, d.SourceRows))
		}
		out = append(out, fmt.Sprintf("%s: %s", d.Source, strings.Join(parts, ", ")))
	}
	if m := c.markers; m != nil && !m.OK() {
		out = append(out, fmt.Sprintf("markers: %d gaps, %d repeats, %d extra", m.Gaps, m.Repeats, m.Extra))
	}
	return out
}

// converge compares every table and the markers. With a replication of
// the user's, tables that differ are compared again, a second apart, up to
// three times while the drain timeout allows: a pipeline that does not keep
// the source's commit order may still be applying them when the last
// marker arrives. PostgreSQL's own replication keeps it: once the last
// marker is there, so is everything committed before it.
func (c *lagConfig) converge(ctx context.Context, p *lagPair, first, writers int, loadEnd time.Time) (*convergence, error) {
	src, err := p.src.Target.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer src.Close(context.WithoutCancel(ctx))
	dst, err := p.dst.Target.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer dst.Close(context.WithoutCancel(ctx))
	conv := &convergence{}
	t0 := time.Now()
	defer func() { conv.took = time.Since(t0) }()
	for _, t := range c.tables {
		var d *lag.Diff
		for try := 0; ; try++ {
			if d, err = lag.CompareTable(ctx, src, dst, t, lag.CompareOptions{}); err != nil {
				return nil, err
			}
			if try == 0 {
				conv.compared = append(conv.compared, 0)
			}
			conv.compared[len(conv.compared)-1]++
			if d.OK() || p.mode != "external" || p.same || try == 3 || time.Now().Add(time.Second).After(loadEnd.Add(c.drainTimeout)) {
				break
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Second):
			}
		}
		conv.tables = append(conv.tables, d)
	}
	if conv.markers, err = lag.CompareMarkers(ctx, src, dst, c.marker, first, writers, 10); err != nil {
		return nil, err
	}
	return conv, nil
}

func printConvergence(w io.Writer, conv *convergence) {
	rows := [][]string{{"table", "source rows", "dest rows", "missing", "extra", "differing", "ranges"}}
	for _, d := range conv.tables {
		name := d.Source
		if d.Dest != d.Source {
			name += " → " + d.Dest
		}
		rows = append(rows, []string{name, itoa(d.SourceRows), itoa(d.DestRows), itoa(d.Missing), itoa(d.Extra), itoa(d.Differing), strconv.Itoa(d.Ranges)})
	}
	report.Table(w, "", rows)
	for i, d := range conv.tables {
		for _, k := range []struct {
			what string
			keys []string
			n    int64
		}{{"MISSING", d.MissingKeys, d.Missing}, {"EXTRA", d.ExtraKeys, d.Extra}, {"DIFFERING", d.DifferingKeys, d.Differing}} {
			for _, key := range k.keys {
				fmt.Fprintf(w, "%s %s: %s\n", k.what, d.Source, key)
			}
			if more := k.n - int64(len(k.keys)); more > 0 {
				fmt.Fprintf(w, "%s %s: ... and %d more\n", k.what, d.Source, more)
			}
		}
		if len(d.MissingColumns) > 0 {
			fmt.Fprintf(w, "MISSING COLUMNS %s: %s\n", d.Dest, strings.Join(d.MissingColumns, ", "))
		}
		if n := conv.compared[i]; n > 1 && !d.OK() {
			fmt.Fprintf(w, "%s still differed after %d comparisons a second apart\n", d.Source, n)
		}
	}
	m := conv.markers
	fmt.Fprintf(w, "markers: %d on the source, %d on the destination: %d gaps, %d repeats, %d extra\n", m.Source, m.Dest, m.Gaps, m.Repeats, m.Extra)
	for _, k := range []struct {
		what string
		keys []string
	}{{"GAP (lost)", m.GapKeys}, {"REPEAT (applied twice)", m.RepeatKeys}, {"EXTRA marker", m.ExtraKeys}} {
		for _, key := range k.keys {
			fmt.Fprintf(w, "%s: %s\n", k.what, key)
		}
	}
	if f := conv.failures(); len(f) > 0 {
		fmt.Fprintf(w, "convergence: FAILED: %s (compared in %s)\n", strings.Join(f, "; "), report.Seconds(conv.took))
	} else {
		fmt.Fprintf(w, "convergence: ok, the destination holds exactly the source's rows (compared in %s)\n", report.Seconds(conv.took))
	}
}

// lagDoc is lag's --json: the run's document, and the lag beside it.
type lagDoc struct {
	report.Document
	Lag lagJSON `json:"lag"`
}

type lagJSON struct {
	Replication  string         `json:"replication"` // logical, physical, external
	SameDatabase bool           `json:"same_database,omitempty"`
	MarkInterval string         `json:"mark_interval"`
	PollInterval string         `json:"poll_interval"`
	Markers      markersJSON    `json:"markers"`
	Lag          report.HistDoc `json:"lag"`
	// TxMarkers and TxLag are the markers inside the workload's
	// transactions (--mark-transactions): then Markers are the stream's and
	// Lag is every marker's.
	TxMarkers      *markersJSON    `json:"transaction_markers,omitempty"`
	TxLag          *report.HistDoc `json:"transaction_lag,omitempty"`
	PollPeriod     report.HistDoc  `json:"poll_period"`
	PollRoundTrip  report.HistDoc  `json:"poll_round_trip"`
	CaughtUp       bool            `json:"caught_up"`
	CatchUpSeconds float64         `json:"catch_up_seconds"`
	Senders        []senderJSON    `json:"pg_stat_replication,omitempty"`
	Subscriptions  []subJSON       `json:"pg_stat_subscription,omitempty"`
	SLO            []sloJSON       `json:"slo,omitempty"`
	Convergence    *convergeJSON   `json:"convergence,omitempty"`
}

type markersJSON struct {
	Sent          int64 `json:"sent"`
	Acked         int64 `json:"acknowledged"`
	Failed        int64 `json:"failed"`
	Ambiguous     int64 `json:"ambiguous"`
	AmbiguousSeen int64 `json:"ambiguous_seen"`
	Measured      int64 `json:"measured"`
	Early         int64 `json:"seen_before_acknowledged"`
	Late          int64 `json:"found_late"`
	Expired       int64 `json:"never_seen"`
	Unknown       int64 `json:"unknown"`
}

type senderJSON struct {
	Name    string         `json:"application_name"`
	Samples int64          `json:"samples"`
	Idle    int64          `json:"idle_samples"`
	Write   report.HistDoc `json:"write_lag"`
	Flush   report.HistDoc `json:"flush_lag"`
	Replay  report.HistDoc `json:"replay_lag"`
	// Behind is in bytes, not µs.
	Behind report.HistDoc `json:"replay_behind_bytes"`
}

type subJSON struct {
	Name    string         `json:"subname"`
	Samples int64          `json:"samples"`
	Delay   report.HistDoc `json:"message_delay"`
}

type sloJSON struct {
	Condition string  `json:"condition"`
	ValueUS   float64 `json:"value_us"`
	Pass      bool    `json:"pass"`
}

type convergeJSON struct {
	OK      bool            `json:"ok"`
	Tables  []*lag.Diff     `json:"tables"`
	Markers *lag.MarkerDiff `json:"markers"`
}

// writeDocument writes lag's document as --json and draws it as --html,
// whichever were asked for.
func (c *lagConfig) writeDocument(r *lagResult) error {
	if c.jsonPath == "" && c.htmlPath == "" {
		return nil
	}
	doc, err := c.document(r)
	if err != nil {
		return err
	}
	if c.jsonPath != "" {
		if err := runner.WriteFile(c.opts.Stderr, c.jsonPath, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(doc)
		}); err != nil {
			return fmt.Errorf("writing --json: %w", err)
		}
	}
	if c.htmlPath != "" {
		if err := runner.WriteFile(c.opts.Stderr, c.htmlPath, func(w io.Writer) error {
			return htmlreport.Write(w, []*report.Document{&doc.Document}, htmlreport.Options{Names: []string{c.m.Name}, Version: c.env.Version})
		}); err != nil {
			return fmt.Errorf("writing --html: %w", err)
		}
	}
	return nil
}

// document is lag's --json: the run's document, its lag over time as a
// series, and the lag section.
func (c *lagConfig) document(r *lagResult) (*lagDoc, error) {
	config := map[string]any{}
	for k, v := range c.config {
		config[k] = v
	}
	config["source"] = r.pair.src.Target.URLs()[0]
	config["dest"] = r.pair.dst.Target.URLs()[0]
	doc := &lagDoc{Document: report.Document{Version: c.env.Version, Command: "lag", Workload: c.m.Name, Config: config, Server: r.pair.src.Server, RunID: report.NewRunID()}}
	if o := r.outcome; o != nil && o.Result != nil {
		rd, err := runner.RunDocOf(*o)
		if err != nil {
			return nil, err
		}
		doc.Runs = append(doc.Runs, rd)
	}
	if len(r.points) > 0 {
		doc.Series = append(doc.Series, report.SeriesDoc{Title: "replication lag", Unit: "us",
			Lines: []string{"p50", "p99", "max", "oldest pending"}, Points: r.points})
	}
	n := r.counts
	l := &doc.Lag
	l.Replication, l.SameDatabase = r.pair.mode, r.pair.same
	l.MarkInterval, l.PollInterval = c.flags.markInterval.String(), c.flags.pollInterval.String()
	l.Markers = markersJSON{Sent: n.Sent, Acked: n.Acked, Failed: n.Failed, Ambiguous: n.Ambiguous, AmbiguousSeen: n.AmbiguousSeen,
		Measured: n.Measured, Early: n.Early, Late: n.Late, Expired: n.Expired, Unknown: n.Unknown}
	l.CaughtUp, l.CatchUpSeconds = r.caughtUp, r.catchUp.Seconds()
	type histOut struct {
		to *report.HistDoc
		h  *hdr.Histogram
	}
	hists := []histOut{{&l.Lag, r.total}, {&l.PollPeriod, r.reader.Period}, {&l.PollRoundTrip, r.reader.RoundTrip}}
	if c.flags.markTransactions {
		t := r.txCounts
		l.TxMarkers = &markersJSON{Sent: t.Sent, Acked: t.Acked, Failed: t.Failed, Ambiguous: t.Ambiguous, AmbiguousSeen: t.AmbiguousSeen,
			Measured: t.Measured, Early: t.Early, Late: t.Late, Expired: t.Expired, Unknown: t.Unknown}
		l.TxLag = &report.HistDoc{}
		hists = append(hists, histOut{l.TxLag, r.txLag})
	}
	senders := r.views.Senders()
	l.Senders = make([]senderJSON, len(senders))
	for i, s := range senders {
		j := &l.Senders[i]
		*j = senderJSON{Name: s.Name, Samples: s.Samples, Idle: s.Idle}
		hists = append(hists, histOut{&j.Write, s.Write}, histOut{&j.Flush, s.Flush}, histOut{&j.Replay, s.Replay}, histOut{&j.Behind, s.Behind})
	}
	subs := r.views.Subscriptions()
	l.Subscriptions = make([]subJSON, len(subs))
	for i, s := range subs {
		l.Subscriptions[i] = subJSON{Name: s.Name, Samples: s.Samples}
		hists = append(hists, histOut{&l.Subscriptions[i].Delay, s.Delay})
	}
	for _, p := range hists {
		if p.h == nil {
			continue
		}
		d, err := report.HistogramDoc(p.h)
		if err != nil {
			return nil, err
		}
		*p.to = d
	}
	for _, v := range r.sloVerdicts {
		l.SLO = append(l.SLO, sloJSON{Condition: v.cond.String(), ValueUS: v.value, Pass: v.pass})
	}
	if r.conv != nil {
		l.Convergence = &convergeJSON{OK: len(r.conv.failures()) == 0, Tables: r.conv.tables, Markers: r.conv.markers}
	}
	return doc, nil
}

// flat puts a message on one line.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// bytesString formats a WAL distance.
func bytesString(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%dB", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1fkB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1fMB", float64(n)/(1<<20))
}
