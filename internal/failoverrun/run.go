package failoverrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/pg/failover"
	"github.com/txload/txload/internal/pg/replica"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/lag"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// Run runs a failover invocation: for each replication mode (the embedded
// pair) or once (a cluster), the load with its failover, the report of
// both on o.Run.Stdout; with several modes, the comparison; then the
// --json and --html files. The error is the run's verdict: a
// runner.UsageError for bad input, runner.ErrInterrupted, or what went
// wrong or was lost. The results are there for every mode that ran.
func Run(ctx context.Context, o Options) ([]*Result, error) {
	p, err := o.plan()
	if err != nil {
		return nil, err
	}
	stop, err := runner.StartMetrics(&p.load, o.Workload.Name)
	if err != nil {
		return nil, err
	}
	defer stop()
	var results []*Result
	var runErr error
	modes := p.repls
	if p.external() {
		modes = []replica.Replication{-1}
	}
	p.load.Live.Extend(liveModes(modes))
	for i, r := range modes {
		if len(modes) > 1 {
			fmt.Fprintf(p.load.Stderr, "replication %d/%d: %s\n", i+1, len(modes), r)
		}
		res, err := p.runMode(ctx, r)
		if res != nil {
			results = append(results, res)
			writeResult(p.load.Stdout, res)
			p.export(res)
		}
		if err != nil {
			runErr = err
			break
		}
		if ctx.Err() != nil {
			break
		}
	}
	if len(results) > 1 {
		writeComparison(p.load.Stdout, results)
	}
	if len(results) > 0 {
		if err := p.writeDocument(ctx, results); err != nil && runErr == nil {
			runErr = err
		}
	}
	if ctx.Err() != nil {
		return results, runner.ErrInterrupted
	}
	if runErr != nil {
		return results, runErr
	}
	return results, verdict(results)
}

// verdict is the error the results make the run end with.
func verdict(results []*Result) error {
	var msgs []string
	for _, r := range results {
		msgs = append(msgs, r.Failures()...)
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// session is one mode's run under way: what the load and the failover
// share.
type session struct {
	p      *plan
	res    *Result
	conn   *runner.Conn
	pair   *replica.Pair
	prober *failover.Prober
	ledger *ledger
	probe  *probe
	tl     *timeline
	lagMu  sync.Mutex
	lag    *LagSample
	// newAddr is the node named as the new primary ("host:port" as the
	// URL names it), once there is one: the audit and the markers are
	// read there (see pinNew).
	newAddr atomic.Pointer[string]
}

// runMode runs the load once, with its failover: r is the embedded pair's
// replication (-1: a cluster).
func (p *plan) runMode(ctx context.Context, r replica.Replication) (*Result, error) {
	s := &session{p: p, tl: newTimeline()}
	mode := "cluster"
	if r >= 0 {
		mode = r.String()
	}
	s.res = &Result{Workload: p.o.Workload.Name, Mode: mode, Plan: p.describe(r), Fault: p.o.Fault, ProbeInterval: p.o.ProbeInterval}
	closeAll, err := s.open(ctx, r)
	defer closeAll()
	if err != nil {
		if ctx.Err() != nil {
			return nil, runner.ErrInterrupted
		}
		return nil, err
	}
	defer func() {
		if s.ledger != nil {
			_ = s.ledger.close()
		}
	}()
	if err := s.prepare(ctx); err != nil {
		return nil, scrub(s.conn, err)
	}
	return s.run(ctx)
}

// open starts the embedded pair, or probes the cluster, and opens the
// runner's connection to the writable node.
func (s *session) open(ctx context.Context, r replica.Replication) (func(), error) {
	p := s.p
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	url := p.o.URL
	stderr := p.load.Stderr
	if !p.external() {
		t0 := time.Now()
		pair, err := replica.StartPair(ctx, replica.PairOptions{Replication: r, Proxy: p.o.HoldStandby > 0,
			Server: embedded.Options{Major: p.embedded.Full, CacheDir: p.o.CacheDir, Log: stderr}})
		if err != nil {
			return closeAll, fmt.Errorf("starting the embedded primary and standby: %w", err)
		}
		closers = append(closers, func() {
			if err := pair.Stop(); err != nil {
				fmt.Fprintf(stderr, "stopping the embedded pair: %v\n", err)
			}
		})
		s.pair, url = pair, pair.URL()
		fmt.Fprintf(stderr, "embedded primary and standby (%s) streaming after %.2fs\n", r, time.Since(t0).Seconds())
	}
	rs, err := runner.TargetOptions{URLs: []string{url}, Env: s.p.o.Env}.Resolve()
	if err != nil {
		return closeAll, err
	}
	conn, err := rs.Open(ctx, stderr)
	if err != nil {
		return closeAll, err
	}
	closers = append(closers, conn.Close)
	s.conn = conn
	s.res.Server = conn.Server
	s.res.URL = conn.Target.URLs()[0]
	if err := conn.CheckConnections(ctx, p.load.Engine.Concurrency+4, ""); err != nil {
		return closeAll, err
	}
	if s.prober, err = failover.NewProber([]string{url}); err != nil {
		return closeAll, err
	}
	if p.o.Env != nil && pg.PassfileWarning(url, p.o.Env) != "" {
		s.prober.IgnorePassfile() // as the target does, warned at its Open
	}
	return closeAll, nil
}

// prepare checks the cluster has one primary and a standby streaming from
// it, and creates the marker table.
func (s *session) prepare(ctx context.Context) error {
	before := s.prober.Probe(ctx)
	s.res.Before = before.String()
	if _, ok := before.Primary(); !ok {
		return fmt.Errorf("no single primary to fail over: %s", before)
	}
	sample, err := s.sampleLag(ctx)
	if err != nil {
		return err
	}
	var states []string
	streaming, hidden := 0, 0
	for _, l := range sample.Standbys {
		switch l.State {
		case "streaming":
			streaming++
		case "":
			hidden++ // a role without pg_read_all_stats sees the rows, not their columns
		default:
			states = append(states, l.Name+" "+l.State)
		}
	}
	switch {
	case streaming == 0 && hidden > 0:
		fmt.Fprintf(s.p.load.Stderr, "pg_stat_replication shows %d standbys but not their state or position (grant pg_monitor to see them): the replication before the fault is not measured\n", hidden)
	case streaming == 0 && len(states) > 0:
		return fmt.Errorf("no standby streams from the primary (pg_stat_replication: %s): a failover now would promote a standby that is not up to date", strings.Join(states, ", "))
	case streaming == 0:
		return errors.New("no standby streams from the primary (pg_stat_replication shows none streaming): a failover would have nothing up to date to promote")
	}
	if s.p.schema != nil {
		if err := s.p.schema(ctx, s.conn.Target, workload.InitOptions{Drop: true, Log: s.p.load.Stderr}); err != nil {
			return err
		}
	}
	if s.p.load.Init == "keep" && s.p.h.Init != nil {
		// The tables with --init keep are loaded (or found of other
		// settings, exit 2) before the marker table is made and before
		// the failover is waited for; the run then takes them as they are.
		if err := s.p.h.Init(ctx, s.conn.Target, workload.InitOptions{Log: s.p.load.Stderr}); err != nil {
			return err
		}
		s.p.load.Init = "skip"
	}
	conn, err := s.conn.Target.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := lag.CreateSource(ctx, conn); err != nil {
		return err
	}
	first, err := lag.FirstWriter(ctx, conn)
	if err != nil {
		return err
	}
	if s.ledger, err = newLedger(first, "", func(err error) {
		fmt.Fprintf(s.p.load.Stderr, "%v: the run goes on, but cannot count its lost commits (stop it with Ctrl-C)\n", err)
	}); err != nil {
		return err
	}
	s.phase(0)
	s.probe = &probe{target: s.conn.Target, w: s.ledger.writer(s.ledger.probeWriter()), interval: s.p.o.ProbeInterval}
	return nil
}

// run runs the load with the probe, the lag sampler and the failover
// beside it, then compares the markers.
func (s *session) run(ctx context.Context) (*Result, error) {
	p, res := s.p, s.res
	opts := p.load
	opts.Marks, opts.TxnLog = s.ledger.marks, s.tl
	side, stopSide := context.WithCancel(ctx)
	defer stopSide()
	stopProbe := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.probe.run(ctx, stopProbe) }()
	go func() { defer wg.Done(); s.sampleEvery(side, time.Second) }()
	over := make(chan struct{})
	var foErr error
	go func() {
		foErr = s.failover(side)
		close(over)
	}()
	// The audit waits for the failover (at most --failover-timeout after
	// the load), so that it reads the new primary.
	wait := func(ctx context.Context) {
		timer := time.NewTimer(p.o.FailoverTimeout)
		defer timer.Stop()
		select {
		case <-over:
		case <-ctx.Done():
		case <-timer.C:
		}
	}
	g := awaited{Generator: p.o.Generator, wait: wait, before: func(context.Context) { s.pinNew() }, after: s.identify}
	outcome, runErr := runner.RunOne(ctx, s.conn, p.o.Workload, workload.Variant{Generator: g}, opts, false)
	res.Outcome = outcome
	res.LoadEnd = time.Now()
	wait(ctx)
	stopSide()
	<-over
	stopSide()
	close(stopProbe)
	wg.Wait()
	if ctx.Err() != nil {
		// Interrupted: the markers are still counted (as the workload's
		// audit still runs), for what ran.
		res.Interrupted = true
		if err := s.count(ctx); err != nil {
			res.uncounted = scrub(s.conn, err).Error()
			fmt.Fprintf(p.load.Stderr, "after the interrupt: %s\n", res.uncounted)
		}
		if p.o.inspect != nil {
			p.o.inspect(s.pair, res)
		}
		return res, runner.ErrInterrupted
	}
	if foErr != nil && runErr == nil {
		runErr = foErr
	}
	if runErr != nil {
		res.Err = s.conn.Target.Scrub(runErr.Error())
	}
	if err := s.count(ctx); err != nil {
		err = scrub(s.conn, err)
		res.uncounted = err.Error()
		if res.Err == "" {
			res.Err = res.uncounted
		}
		return res, err
	}
	if p.o.inspect != nil {
		p.o.inspect(s.pair, res)
	}
	if se := runner.SettingsErr(runErr); se != nil {
		return res, se // the tables exist with other settings: exit 2, as run
	}
	if runErr != nil {
		return res, errors.New(res.Err)
	}
	return res, nil
}

// failover causes the failover (the embedded pair's fault and promotion,
// the user's command) at --at, or waits for one, and notes its times.
func (s *session) failover(ctx context.Context) error {
	var start time.Time
	select {
	case start = <-s.tl.started:
	case <-ctx.Done():
		return nil
	}
	o := s.p.o
	if o.started != nil {
		o.started()
	}
	at := start.Add(o.At)
	if s.pair != nil {
		return s.failPair(ctx, at)
	}
	if o.FailoverCommand != "" {
		return s.command(ctx, at)
	}
	return s.watch(ctx, start)
}

// sleepUntil waits for t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// failPair holds the standby back if asked, brings the primary down at
// at and promotes the standby --promote-after later.
func (s *session) failPair(ctx context.Context, at time.Time) error {
	o, res := s.p.o, s.res
	if o.HoldStandby > 0 {
		if !sleepUntil(ctx, at.Add(-o.HoldStandby)) {
			return nil
		}
		res.HeldAt = time.Now() // Pause stops the bytes at once, then waits for writes under way
		s.pair.Link.Pause()
	}
	if !sleepUntil(ctx, at) {
		return nil
	}
	s.sampleNow(ctx)
	s.tl.fault.Store(time.Now().UnixNano())
	s.phase(1)
	ev, err := s.pair.Fail(ctx, s.p.fault)
	if err != nil {
		return err
	}
	res.FaultSent, res.FaultLogged, res.FaultDown = ev.Sent, ev.Logged, ev.Down
	if !sleepUntil(ctx, ev.Sent.Add(o.PromoteAfter)) {
		return nil
	}
	pr, err := s.pair.Promote(ctx)
	if err != nil {
		return err
	}
	res.PromoteSent, res.PromoteRequested, res.NewPrimary, res.Timeline = pr.Sent, pr.Requested, pr.Ready, pr.Timeline
	port := ":" + strconv.Itoa(s.pair.Standby.Port())
	for _, a := range s.prober.Addrs() {
		if strings.HasSuffix(a, port) {
			s.newAddr.Store(&a)
		}
	}
	s.tl.back.Store(pr.Ready.UnixNano())
	s.phase(2)
	return nil
}

// command runs --failover-command at at and waits until the prober sees
// the new primary.
func (s *session) command(ctx context.Context, at time.Time) error {
	o, res := s.p.o, s.res
	before := s.prober.Probe(ctx)
	if !sleepUntil(ctx, at) {
		return nil
	}
	s.sampleNow(ctx)
	cctx, cancel := context.WithTimeout(ctx, o.FailoverTimeout)
	defer cancel()
	res.FaultSent = time.Now()
	s.tl.fault.Store(res.FaultSent.UnixNano())
	s.phase(1)
	var out tail
	cmd := exec.CommandContext(cctx, "sh", "-c", o.FailoverCommand)
	cmd.Stdout, cmd.Stderr = &out, &out
	// A child of the shell that outlives it (a timeout kills the shell
	// only) must not hold the run by its end of the output pipe.
	cmd.WaitDelay = time.Second
	inGroup(cmd)
	done := make(chan error, 1)
	go func() {
		err := cmd.Run()
		if cctx.Err() != nil {
			endGroup(cmd) // nothing of it runs on after a timeout or an interrupt
		}
		done <- err
	}()
	type seenState struct {
		st  failover.State
		err error
	}
	wctx, stopWait := context.WithCancel(cctx)
	defer stopWait()
	waited := make(chan seenState, 1)
	go func() {
		st, err := s.prober.Wait(wctx, before, max(o.ProbeInterval, 50*time.Millisecond))
		waited <- seenState{st, err}
	}()
	var err error
	var w seenState
	select {
	case err = <-done:
		res.CommandDone = time.Now()
		if err != nil {
			stopWait()
		}
		w = <-waited
	case w = <-waited:
		err = <-done
		res.CommandDone = time.Now()
	}
	res.CommandOutput = out.String()
	switch {
	case ctx.Err() != nil:
		return nil
	case cctx.Err() != nil && err != nil:
		return fmt.Errorf("--failover-command did not complete within --failover-timeout %s: %s", o.FailoverTimeout, lastLine(out.String()))
	case err != nil:
		return fmt.Errorf("--failover-command failed (%v): %s", err, lastLine(out.String()))
	case w.err != nil:
		return fmt.Errorf("--failover-command succeeded, but no new primary showed within --failover-timeout %s (last seen: %s)", o.FailoverTimeout, w.st)
	}
	s.seen(before, w.st)
	return nil
}

// watch waits, from the load's start to its end, for the cluster's
// primary to change: the fault is when the old primary was first seen
// gone, the promotion when the new one was.
func (s *session) watch(ctx context.Context, start time.Time) error {
	e := s.p.load.Engine
	end := start.Add(e.Warmup + e.Duration)
	wctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	before := s.prober.Probe(ctx)
	old, _ := before.Primary()
	interval := max(s.p.o.ProbeInterval, 50*time.Millisecond)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		now := s.prober.Probe(wctx)
		if s.res.FaultSent.IsZero() {
			if n := nodeAt(now, old.Addr); !n.Writable() || n.Timeline != old.Timeline {
				s.res.FaultSent = now.At
				s.tl.fault.Store(now.At.UnixNano())
				s.phase(1)
			}
		}
		if failover.Changed(before, now) {
			s.seen(before, now)
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wctx.Done():
			return fmt.Errorf("no failover happened during the load (--duration %s): the primary stayed %s", e.Duration, old.Addr)
		case <-tick.C:
		}
	}
}

func nodeAt(st failover.State, addr string) failover.Node {
	for _, n := range st.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	return failover.Node{Addr: addr, Err: errors.New("not probed")}
}

// seen notes the new primary the prober saw in st (before: the state
// before the failover).
func (s *session) seen(before, st failover.State) {
	n, _ := failover.NewPrimary(before, st)
	s.res.NewPrimary, s.res.Timeline, s.res.After = st.At, n.Timeline, st.String()
	s.newAddr.Store(&n.Addr)
	s.tl.back.Store(st.At.UnixNano())
	s.phase(2)
}

// phase says on /metrics where the failover is: 0 before the fault, 1
// after it, 2 once the new primary takes writes.
func (s *session) phase(v float64) {
	if exp := s.p.load.Metrics; exp != nil {
		exp.SetFigure("failover_phase", "0 before the fault, 1 after it, 2 once the new primary takes writes", v)
	}
}

// tail keeps the output of a command (its last 4 kB).
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "(no output)"
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[i+1:])
	}
	return s
}

var _ io.Writer = (*tail)(nil)

// sampleNow takes a sample of the replication just before the fault.
func (s *session) sampleNow(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, _ = s.sampleLag(sctx)
}

// sampleEvery samples the replication every period until the fault.
func (s *session) sampleEvery(ctx context.Context, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if s.tl.fault.Load() != 0 {
			return
		}
		sctx, cancel := context.WithTimeout(ctx, period)
		_, _ = s.sampleLag(sctx)
		cancel()
	}
}

// LagSample is the primary's pg_stat_replication at one moment.
type LagSample struct {
	At       time.Time    `json:"at"`
	Standbys []StandbyLag `json:"standbys"`
}

// StandbyLag is one standby's row: the WAL it had not flushed or
// replayed (bytes behind the primary's current position), and the
// server's own replay_lag.
type StandbyLag struct {
	Name         string  `json:"application_name"`
	State        string  `json:"state"`
	SyncState    string  `json:"sync_state"`
	NotFlushed   int64   `json:"not_flushed_bytes"`
	NotReplayed  int64   `json:"not_replayed_bytes"`
	ReplayLagSec float64 `json:"replay_lag_seconds"`
}

const lagSQL = `SELECT COALESCE(application_name, ''), COALESCE(state, ''), COALESCE(sync_state, ''),
	COALESCE(pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn), 0)::bigint,
	COALESCE(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), 0)::bigint,
	COALESCE(extract(epoch FROM replay_lag), 0)::float8
	FROM pg_stat_replication`

// sampleLag reads pg_stat_replication on the primary, and keeps it as the
// last sample.
func (s *session) sampleLag(ctx context.Context) (*LagSample, error) {
	conn, err := s.conn.Target.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, lagSQL)
	if err != nil {
		return nil, fmt.Errorf("reading pg_stat_replication on the primary: %w", err)
	}
	sample := &LagSample{}
	for rows.Next() {
		var l StandbyLag
		if err := rows.Scan(&l.Name, &l.State, &l.SyncState, &l.NotFlushed, &l.NotReplayed, &l.ReplayLagSec); err != nil {
			return nil, fmt.Errorf("reading pg_stat_replication on the primary: %w", err)
		}
		sample.Standbys = append(sample.Standbys, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading pg_stat_replication on the primary: %w", err)
	}
	sample.At = time.Now()
	s.lagMu.Lock()
	defer s.lagMu.Unlock()
	if f := s.tl.fault.Load(); f == 0 || sample.At.UnixNano() <= f {
		s.lag = sample // the last sample before the fault
	}
	return sample, nil
}

// count reads the markers the new primary holds and works out the
// failover's figures.
func (s *session) count(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	s.lagMu.Lock()
	s.res.Lag = s.lag
	s.lagMu.Unlock()
	s.pinNew()
	conn, err := s.conn.Target.Connect(cctx)
	if err != nil {
		return fmt.Errorf("reading the markers on the node taking writes: %w", err)
	}
	defer conn.Close(cctx)
	if s.res.Tally, err = s.ledger.tally(cctx, conn); err != nil {
		return err
	}
	s.splitBrain(cctx)
	s.readOld(ctx)
	return s.analyse()
}

// pinNew sends every connection the run opens from now on (the audit's,
// the markers') to the node named as the new primary, once there is one:
// the multi-host URL's first writable host need not be it (a split
// brain's old primary, writable again, comes first).
func (s *session) pinNew() {
	addr := s.newAddr.Load()
	if addr == nil {
		return
	}
	s.res.NewAddr = *addr
	if err := s.conn.Target.Pin(*addr); err != nil {
		fmt.Fprintf(s.p.load.Stderr, "%v: the audit reads the first writable node\n", err)
	}
}

// identify redoes the workload's reconciliation by identity (its
// Reconciled, from counts) once its audit has run: the client markers on
// the node audited say which transactions txload saw commit are missing
// and which of unknown outcome committed, so that a lost commit is never
// netted against an ambiguous one that committed.
func (s *session) identify(ctx context.Context, chk *workload.CheckResult) {
	if chk.Reconciled == nil {
		return
	}
	fail := func(err error) {
		fmt.Fprintf(s.p.load.Stderr, "reconciling by the markers: %s: the check's count stands\n", scrub(s.conn, err))
	}
	conn, err := s.conn.Target.Connect(ctx)
	if err != nil {
		fail(err)
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	t, err := s.ledger.tallyClients(ctx, conn)
	if err != nil {
		fail(err)
		return
	}
	on := "the primary"
	if s.newAddr.Load() != nil {
		on = "the new primary"
	}
	chk.Identify(t.Lost, t.Survived+t.Found, on)
}

// splitBrain looks, once the run is over, for a node other than the new
// primary that takes writes too: the markers were read on the new
// primary; those the other holds, and how many it acknowledged after the
// new primary took writes, say that two nodes took the run's writes.
func (s *session) splitBrain(ctx context.Context) {
	addr := s.newAddr.Load()
	if addr == nil {
		return
	}
	st := s.prober.Probe(ctx)
	var newNode failover.Node
	var others []failover.Node
	for _, n := range st.Nodes {
		switch {
		case n.Addr == *addr:
			newNode = n
		case n.Writable():
			others = append(others, n)
		}
	}
	t := &s.res.Tally
	var parts []string
	took := false
	for _, n := range others {
		held, after, err := s.heldBy(ctx, n.Addr, t.LostIDs)
		what := fmt.Sprintf("%s (timeline %d), which took %d of the run's acknowledged commits after the new primary took writes (it holds %d of the %d lost commits)", n.Addr, n.Timeline, after, held, t.Lost)
		switch {
		case err != nil:
			what = fmt.Sprintf("%s (timeline %d), whose markers could not be read: %s", n.Addr, n.Timeline, scrub(s.conn, err))
		case after == 0:
			what = fmt.Sprintf("%s (timeline %d), which took none of the run's commits after the new primary took writes (it holds %d of the %d lost commits)", n.Addr, n.Timeline, held, t.Lost)
		}
		took = took || after > 0
		parts = append(parts, what)
	}
	if len(parts) == 0 {
		return
	}
	verb := "are writable"
	if took {
		verb = "took writes"
	}
	s.res.SplitBrain = fmt.Sprintf("two nodes %s after the failover: the new primary %s (timeline %d) and %s", verb, *addr, newNode.Timeline, strings.Join(parts, "; "))
}

// heldBy counts the commits the node at addr holds, and of them those
// acknowledged after the new primary took writes.
func (s *session) heldBy(ctx context.Context, addr string, commits []Commit) (held, after int64, err error) {
	conn, err := s.prober.Connect(ctx, addr)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	on, err := markersOn(ctx, conn, commits, addr)
	if err != nil {
		return 0, 0, err
	}
	for _, c := range commits {
		if _, ok := on[lag.Marker{Writer: c.Writer, Seq: c.Seq}]; ok && c.At.After(s.res.NewPrimary) {
			after++
		}
	}
	return int64(len(on)), after, nil
}

// scrub takes the target's passwords out of err.
func scrub(conn *runner.Conn, err error) error {
	if conn == nil {
		return err
	}
	var ue *runner.UsageError
	if errors.As(err, &ue) {
		return err
	}
	if se := runner.SettingsErr(err); se != nil {
		return se // exit 2, as run; its message names no password
	}
	return errors.New(conn.Target.Scrub(err.Error()))
}

// awaited is the workload with its audit held until the failover is over:
// a load that ends while no node takes writes (a slow kill, a long
// promotion) would otherwise audit a cluster with no primary.
type awaited struct {
	workload.Generator
	wait func(ctx context.Context)
	// before runs once the failover is over, before the audit; after
	// with what the audit found.
	before func(ctx context.Context)
	after  func(ctx context.Context, chk *workload.CheckResult)
}

func (a awaited) Hooks() workload.Hooks {
	h := a.Generator.Hooks()
	ops := h.Ops
	if ops == nil {
		return h
	}
	if check := h.Check; check != nil {
		// The audit of a workload without a Report (the runner's Load).
		h.Check = func(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
			a.wait(ctx)
			return check(ctx, t)
		}
	}
	h.Ops = func(ctx context.Context, t *pg.Target, o workload.RunOptions) (*workload.QueryLoad, error) {
		load, err := ops(ctx, t, o)
		if err != nil || load == nil || load.Report == nil {
			return load, err
		}
		report := load.Report
		load.Report = func(ctx context.Context, total *metrics.Snapshot) (*workload.CheckResult, error) {
			a.wait(ctx)
			if a.before != nil {
				a.before(ctx)
			}
			chk, err := report(ctx, total)
			if err == nil && chk != nil && a.after != nil {
				a.after(ctx, chk)
			}
			return chk, err
		}
		return load, nil
	}
	return h
}
