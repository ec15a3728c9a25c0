package lagrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/pg/replica"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/lag"
	"github.com/txload/txload/workload"
)

// The names txload gives what it creates on the embedded pair.
const (
	subscriptionName = "txload_lag"
	standbyName      = "txload_standby"
)

// pair is the two databases of a run, open.
type pair struct {
	src, dst *runner.Conn
	srcURL   string
	dstURL   string
	mode     string // logical, physical, or external
	same     bool   // the destination is the source
	close    []func()
}

func (p *pair) Close() {
	for i := len(p.close) - 1; i >= 0; i-- {
		p.close[i]()
	}
}

// scrub takes both databases' passwords out of err.
func (p *pair) scrub(err error) error {
	return errors.New(p.dst.Target.Scrub(p.src.Target.Scrub(err.Error())))
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

// open connects to one database, through the pooler --pooler names, and
// identifies it.
func open(ctx context.Context, url string, o *Options, log io.Writer) (*runner.Conn, error) {
	r, err := runner.TargetOptions{URLs: []string{url}, Pooler: o.Pooler, Env: o.Env}.Resolve()
	if err != nil {
		return nil, err
	}
	return r.Open(ctx, log)
}

// needConns is the connections a run opens on the source: the clients,
// the marker stream, the views and the runner's own.
func (p *plan) needConns() int { return p.load.Engine.Concurrency + 4 }

// openPair opens the databases: the embedded pair, started, loaded and
// joined, or the user's two.
func (p *plan) openPair(ctx context.Context, pr *pair) error {
	if p.embedded != nil {
		return p.startPair(ctx, pr)
	}
	return p.openExternal(ctx, pr)
}

// startPair starts the embedded source and destination, loads the workload
// on the source and connects them.
func (p *plan) startPair(ctx context.Context, pr *pair) error {
	srcSrv, dstSrv, err := p.startServers(ctx, pr)
	if err != nil {
		return err
	}
	pr.srcURL, pr.dstURL, pr.mode = srcSrv.URL(), dstSrv.URL(), p.o.Replication
	if err := p.loadSource(ctx, pr); err != nil {
		return err
	}
	if pr.mode == "physical" {
		return p.startStandby(ctx, pr, srcSrv, dstSrv)
	}
	return p.subscribe(ctx, pr)
}

// startServers starts the embedded source and destination; pr stops them.
func (p *plan) startServers(ctx context.Context, pr *pair) (src, dst *embedded.Server, err error) {
	stderr := p.load.Stderr
	for _, s := range []struct {
		srv      **embedded.Server
		name     string
		settings []string
	}{{&src, "source", replica.SourceSettings()}, {&dst, "destination", nil}} {
		srv, err := embedded.Start(ctx, embedded.Options{Major: p.embedded.Full, Log: prefixed{stderr, s.name + ": "}, CacheDir: p.o.CacheDir, Settings: s.settings})
		if err != nil {
			return nil, nil, fmt.Errorf("starting the embedded %s: %w", s.name, err)
		}
		pr.close = append(pr.close, func() {
			if err := srv.Stop(); err != nil {
				fmt.Fprintf(stderr, "stopping the embedded %s: %v\n", s.name, err)
			}
		})
		*s.srv = srv
	}
	return src, dst, nil
}

// loadSource opens the embedded source and loads the workload's tables and
// the marker table on it.
func (p *plan) loadSource(ctx context.Context, pr *pair) error {
	log := prefixed{p.load.Stderr, "source: "}
	var err error
	if pr.src, err = open(ctx, pr.srcURL, &p.o, log); err != nil {
		return err
	}
	pr.close = append(pr.close, pr.src.Close)
	if err := pr.src.CheckConnections(ctx, p.needConns(), ""); err != nil {
		return err
	}
	if p.h.Init == nil {
		return fmt.Errorf("workload %s cannot load its schema: give --source and --dest", p.o.Workload.Name)
	}
	if err := p.h.Init(ctx, pr.src.Target, workload.InitOptions{Drop: true, Log: log}); err != nil {
		return err
	}
	srcConn, err := pr.src.Target.Connect(ctx)
	if err != nil {
		return err
	}
	defer srcConn.Close(context.WithoutCancel(ctx))
	return lag.CreateSource(ctx, srcConn)
}

// openDest opens the embedded destination.
func (p *plan) openDest(ctx context.Context, pr *pair) error {
	var err error
	if pr.dst, err = open(ctx, pr.dstURL, &p.o, prefixed{p.load.Stderr, "destination: "}); err != nil {
		return err
	}
	pr.close = append(pr.close, pr.dst.Close)
	return nil
}

// startStandby makes the destination a streaming standby of the source.
func (p *plan) startStandby(ctx context.Context, pr *pair, srcSrv, dstSrv *embedded.Server) error {
	t0 := time.Now()
	if err := replica.Standby(ctx, srcSrv, dstSrv, standbyName); err != nil {
		return err
	}
	fmt.Fprintf(p.load.Stderr, "destination: a streaming standby of the source (base backup and start in %.2fs)\n", time.Since(t0).Seconds())
	return p.openDest(ctx, pr)
}

// subscribe gives the destination the workload's schema, empty, and
// subscribes it to the source's tables and markers: the subscription's
// initial copy fills it.
func (p *plan) subscribe(ctx context.Context, pr *pair) error {
	if err := p.openDest(ctx, pr); err != nil {
		return err
	}
	if err := p.h.Init(ctx, pr.dst.Target, workload.InitOptions{Drop: true, Log: io.Discard}); err != nil {
		return fmt.Errorf("creating the schema on the destination: %w", err)
	}
	dstConn, err := pr.dst.Target.Connect(ctx)
	if err != nil {
		return err
	}
	defer dstConn.Close(context.WithoutCancel(ctx))
	var ids []string
	for _, t := range p.h.Tables {
		ids = append(ids, pgx.Identifier{t}.Sanitize())
	}
	if _, err := dstConn.Exec(ctx, "TRUNCATE "+strings.Join(ids, ", ")); err != nil {
		return fmt.Errorf("emptying the destination's tables: %w", err)
	}
	if err := lag.CreateDest(ctx, dstConn, lag.Table); err != nil {
		return err
	}
	t0 := time.Now()
	tables := append(append([]string(nil), p.h.Tables...), lag.Table)
	if _, err := replica.StartLogical(ctx, pr.srcURL, pr.dstURL, pr.srcURL, subscriptionName, tables); err != nil {
		return err
	}
	fmt.Fprintf(p.load.Stderr, "destination: subscribed to %s (initial copy in %.2fs)\n", strings.Join(tables, ", "), time.Since(t0).Seconds())
	return nil
}

// openExternal connects to the user's source and destination and checks,
// before writing anything, that both hold the workload's tables.
func (p *plan) openExternal(ctx context.Context, pr *pair) error {
	pr.srcURL, pr.dstURL, pr.mode = p.o.Source, p.o.Dest, "external"
	if err := checkURLs(pr); err != nil {
		return err
	}
	var err error
	if pr.src, err = open(ctx, pr.srcURL, &p.o, prefixed{p.load.Stderr, "source: "}); err != nil {
		return err
	}
	pr.close = append(pr.close, pr.src.Close)
	if pr.dst, err = open(ctx, pr.dstURL, &p.o, prefixed{p.load.Stderr, "destination: "}); err != nil {
		return err
	}
	pr.close = append(pr.close, pr.dst.Close)
	srcConn, err := pr.src.Target.Connect(ctx)
	if err != nil {
		return err
	}
	defer srcConn.Close(context.WithoutCancel(ctx))
	dstConn, err := pr.dst.Target.Connect(ctx)
	if err != nil {
		return err
	}
	defer dstConn.Close(context.WithoutCancel(ctx))
	if pr.same, err = lag.SameDatabase(ctx, srcConn, dstConn); err != nil {
		return err
	}
	if err := p.checkExternalTables(ctx, pr, srcConn, dstConn); err != nil {
		return err
	}
	if err := pr.src.CheckConnections(ctx, p.needConns(), ""); err != nil {
		return err
	}
	if p.load.Init == "keep" && p.h.Init != nil {
		// The source's tables with --init keep are loaded (or found of
		// other settings, exit 2) before any marker is written; the run
		// then takes them as they are.
		if err := p.h.Init(ctx, pr.src.Target, workload.InitOptions{Log: p.load.Stderr}); err != nil {
			if se := runner.SettingsErr(err); se != nil {
				return se
			}
			return pr.scrub(err)
		}
		p.load.Init = "skip"
	}
	return p.createMarkers(ctx, pr, srcConn, dstConn)
}

// checkURLs refuses a --source or --dest that is no database URL.
func checkURLs(pr *pair) error {
	for _, u := range []struct{ flag, url string }{{"--source", pr.srcURL}, {"--dest", pr.dstURL}} {
		if _, err := (runner.TargetOptions{URLs: []string{u.url}}).Resolve(); err != nil {
			var ue *runner.UsageError
			if errors.As(err, &ue) {
				return runner.Usagef("%s: %v", u.flag, strings.TrimPrefix(ue.Err.Error(), "parsing --url "))
			}
			return err
		}
	}
	return nil
}

// checkExternalTables refuses a destination that lacks the workload's
// tables, and a source that lacks them when the run will not load them.
func (p *plan) checkExternalTables(ctx context.Context, pr *pair, srcConn, dstConn *pgx.Conn) error {
	var dests []string
	loadsThem := pr.same && p.load.Init != "skip" // the run loads the source, which is the destination
	for _, t := range p.tables {
		dests = append(dests, t.Dest)
		loadsThem = loadsThem && t.Dest == t.Source
	}
	if loadsThem {
		return nil
	}
	missing, err := lag.MissingTables(ctx, dstConn, dests)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return runner.Usagef("--dest %s lacks the tables of %s: %s; create them there and replicate them from the source (--map SRC=DST when they are named otherwise)",
			pr.dst.Target.URLs()[0], p.o.Workload.Name, strings.Join(missing, ", "))
	}
	if p.load.Init != "skip" {
		return nil
	}
	missing, err = lag.MissingTables(ctx, srcConn, p.h.Tables)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return runner.Usagef("--source %s lacks the tables of %s: %s; load them first (txload init), or give --init keep",
			pr.src.Target.URLs()[0], p.o.Workload.Name, strings.Join(missing, ", "))
	}
	return nil
}

// createMarkers creates the marker table on the source, and on the
// destination when it lacks one.
func (p *plan) createMarkers(ctx context.Context, pr *pair, srcConn, dstConn *pgx.Conn) error {
	stderr := p.load.Stderr
	if err := lag.CreateSource(ctx, srcConn); err != nil {
		return err
	}
	if pr.same {
		fmt.Fprintln(stderr, "lag: the destination is the source itself: the figures are the instrument's own floor")
		return nil
	}
	if missing, err := lag.MissingTables(ctx, dstConn, []string{p.marker}); err != nil {
		return err
	} else if len(missing) > 0 {
		if err := lag.CreateDest(ctx, dstConn, p.marker); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "lag: created %s on the destination (without a primary key, so that repeats show): the replication must carry %s to it\n", p.marker, lag.Table)
	}
	return nil
}
