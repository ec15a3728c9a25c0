package pgbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"

	"github.com/txload/txload/internal/pg"
	"github.com/txload/txload/workload"
)

const (
	naccounts = 100000
	ntellers  = 10
	nbranches = 1
)

// tpcbConfig is `init tpcb`'s configuration, shared by the run workloads,
// which load the tables when they are missing.
type tpcbConfig struct {
	scale          int
	foreignKeys    bool
	partitions     int
	partitionRaw   string
	fillfactor     int
	unlogged       bool
	generate       string
	initConns      int
	noVacuum       bool
	scaleExplicit  func() bool
	partitionRange bool
}

func (c *tpcbConfig) register(f *pflag.FlagSet) {
	f.IntVarP(&c.scale, "scale", "s", 1, "scale factor: 100000 × scale accounts, 10 × scale tellers, scale branches")
	f.BoolVar(&c.foreignKeys, "foreign-keys", false, "create foreign keys between the tables")
	f.IntVar(&c.partitions, "partitions", 0, "partition pgbench_accounts into this many partitions (0 = none)")
	f.StringVar(&c.partitionRaw, "partition-method", "range", "range | hash (with --partitions)")
	f.IntVarP(&c.fillfactor, "fillfactor", "F", 100, "fill factor of the tables, 10 to 100")
	f.BoolVar(&c.unlogged, "unlogged-tables", false, "create the tables UNLOGGED")
	f.StringVar(&c.generate, "generate", "client", "client (COPY in parallel over --init-conns) | server (generate_series)")
	f.IntVar(&c.initConns, "init-conns", 2, "connections loading pgbench_accounts in parallel (client-side generation)")
	f.BoolVarP(&c.noVacuum, "no-vacuum", "n", false, "skip VACUUM after loading")
	c.scaleExplicit = func() bool { return f.Changed("scale") }
}

func (c *tpcbConfig) validate() error {
	switch {
	case c.scale < 1:
		return fmt.Errorf("--scale must be at least 1, got %d", c.scale)
	case c.partitions < 0:
		return fmt.Errorf("--partitions must not be negative, got %d", c.partitions)
	case c.fillfactor < 10 || c.fillfactor > 100:
		return fmt.Errorf("--fillfactor must be between 10 and 100, got %d", c.fillfactor)
	case c.initConns < 1:
		return fmt.Errorf("--init-conns must be at least 1, got %d", c.initConns)
	case c.generate != "client" && c.generate != "server":
		return fmt.Errorf("--generate %q is not allowed (allowed: client, server)", c.generate)
	}
	switch c.partitionRaw {
	case "range":
		c.partitionRange = true
	case "hash":
		c.partitionRange = false
	default:
		return fmt.Errorf("--partition-method %q is not allowed (allowed: range, hash)", c.partitionRaw)
	}
	if c.partitions > int(c.scale)*naccounts {
		return fmt.Errorf("--partitions must be at most the number of accounts (%d), got %d", c.scale*naccounts, c.partitions)
	}
	return nil
}

// tpcbGen is the `tpcb` workload: init and check.
type tpcbGen struct {
	flags *pflag.FlagSet
	cfg   tpcbConfig
}

func tpcbMeta() workload.Meta {
	return workload.Meta{
		Name:        "tpcb",
		Description: "pgbench's tables: init them (as pgbench -i does, on every dialect) and check their balances",
		Examples: `  txload init tpcb --scale 50 --foreign-keys --url postgres://localhost/bench
  txload init tpcb --scale 10 --partitions 8 --partition-method hash --generate server
  txload check tpcb --url postgres://localhost/bench`,
		New: func() workload.Generator {
			g := &tpcbGen{flags: pflag.NewFlagSet("tpcb", pflag.ContinueOnError)}
			g.cfg.register(g.flags)
			return g
		},
	}
}

func (g *tpcbGen) Flags() *pflag.FlagSet { return g.flags }
func (g *tpcbGen) Validate() error       { return g.cfg.validate() }

func (g *tpcbGen) Init(ctx context.Context, t *pg.Target, opts workload.InitOptions) error {
	return initTPCB(ctx, t, &g.cfg, opts)
}

func (g *tpcbGen) Check(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
	return checkTPCB(ctx, t)
}

// step is one timed part of init, for pgbench's "done in" line.
type step struct {
	name string
	d    time.Duration
}

func initTPCB(ctx context.Context, t *pg.Target, c *tpcbConfig, opts workload.InitOptions) error {
	conn, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	server, err := pg.Detect(ctx, conn)
	if err != nil {
		return err
	}
	if !opts.Drop {
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT count(*) = 4 FROM information_schema.tables WHERE table_schema = current_schema()
			AND table_name IN ('pgbench_accounts', 'pgbench_branches', 'pgbench_tellers', 'pgbench_history')`).Scan(&exists); err != nil {
			return fmt.Errorf("looking for pgbench's tables: %w", err)
		}
		if exists {
			scale, err := detectScale(ctx, conn)
			if err != nil {
				return err
			}
			logf(opts, "init: pgbench tables already hold scale %d; --drop recreates them\n", scale)
			return nil
		}
	}
	if c.partitions > 0 && server.Dialect == pg.CockroachDB {
		return fmt.Errorf("init tpcb: --partitions uses PostgreSQL's declarative partitioning, which %s does not support", server.Dialect)
	}
	var steps []step
	timed := func(name string, f func() error) error {
		start := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("init tpcb: %s: %w", name, err)
		}
		steps = append(steps, step{name, time.Since(start)})
		return nil
	}
	exec := func(sqls ...string) error {
		for _, s := range sqls {
			if _, err := conn.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	}
	if err := timed("drop tables", func() error {
		logf(opts, "dropping old tables...\n")
		return exec("DROP TABLE IF EXISTS pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers")
	}); err != nil {
		return err
	}
	if err := timed("create tables", func() error {
		logf(opts, "creating tables...\n")
		return exec(createSQL(c, server.Dialect)...)
	}); err != nil {
		return err
	}
	if c.generate == "server" {
		err = timed("server-side generate", func() error {
			logf(opts, "generating data (server-side)...\n")
			return exec(serverGenerateSQL(c.scale)...)
		})
	} else {
		err = timed("client-side generate", func() error {
			logf(opts, "generating data (client-side)...\n")
			return clientGenerate(ctx, t, conn, c)
		})
	}
	if err != nil {
		return err
	}
	if !c.noVacuum && server.Dialect == pg.PostgreSQL {
		if err := timed("vacuum", func() error {
			logf(opts, "vacuuming...\n")
			return vacuum(ctx, t)
		}); err != nil {
			return err
		}
	}
	if err := timed("primary keys", func() error {
		logf(opts, "creating primary keys...\n")
		return primaryKeys(ctx, t, server.Dialect)
	}); err != nil {
		return err
	}
	if c.foreignKeys {
		if err := timed("foreign keys", func() error {
			logf(opts, "creating foreign keys...\n")
			return exec(foreignKeySQL...)
		}); err != nil {
			return err
		}
	}
	var total time.Duration
	var parts []string
	for _, s := range steps {
		total += s.d
		parts = append(parts, fmt.Sprintf("%s %.2f s", s.name, s.d.Seconds()))
	}
	logf(opts, "done in %.2f s (%s).\n", total.Seconds(), strings.Join(parts, ", "))
	return nil
}

func logf(opts workload.InitOptions, format string, args ...any) {
	if opts.Log != nil {
		fmt.Fprintf(opts.Log, format, args...)
	}
}

// createSQL is pgbench's DDL. CockroachDB and YugabyteDB reject or ignore
// storage parameters, so they get none.
func createSQL(c *tpcbConfig, d pg.Dialect) []string {
	aid := "int"
	if c.scale >= 20000 {
		aid = "bigint" // as pgbench: 100000 × 20000 overflows int
	}
	tables := []struct{ name, cols string }{
		{"pgbench_history", "tid int,bid int,aid " + aid + ",delta int,mtime timestamp,filler char(22)"},
		{"pgbench_tellers", "tid int not null,bid int,tbalance int,filler char(84)"},
		{"pgbench_accounts", "aid " + aid + " not null,bid int,abalance int,filler char(84)"},
		{"pgbench_branches", "bid int not null,bbalance int,filler char(88)"},
	}
	unlogged := ""
	if c.unlogged && d == pg.PostgreSQL {
		unlogged = "unlogged "
	}
	var out []string
	for _, tb := range tables {
		u := unlogged
		if tb.name == "pgbench_accounts" && c.partitions > 0 {
			u = "" // a partitioned table cannot be unlogged: its partitions are
		}
		s := fmt.Sprintf("create %stable %s(%s)", u, tb.name, tb.cols)
		if tb.name == "pgbench_accounts" && c.partitions > 0 {
			method := "hash"
			if c.partitionRange {
				method = "range"
			}
			s += fmt.Sprintf(" partition by %s (aid)", method)
		} else if tb.name != "pgbench_history" && d == pg.PostgreSQL {
			s += fmt.Sprintf(" with (fillfactor=%d)", c.fillfactor)
		}
		out = append(out, s)
	}
	for p := 1; p <= c.partitions; p++ {
		var bounds string
		if c.partitionRange {
			size := (int64(c.scale)*naccounts + int64(c.partitions) - 1) / int64(c.partitions)
			lo, hi := "minvalue", "maxvalue"
			if p > 1 {
				lo = strconv.FormatInt(int64(p-1)*size+1, 10)
			}
			if p < c.partitions {
				hi = strconv.FormatInt(int64(p)*size+1, 10)
			}
			bounds = fmt.Sprintf("for values from (%s) to (%s)", lo, hi)
		} else {
			bounds = fmt.Sprintf("for values with (modulus %d, remainder %d)", c.partitions, p-1)
		}
		out = append(out, fmt.Sprintf("create %stable pgbench_accounts_%d partition of pgbench_accounts %s with (fillfactor=%d)",
			unlogged, p, bounds, c.fillfactor))
	}
	return out
}

// serverGenerateSQL generates the rows with expressions every dialect
// evaluates the same way: CockroachDB's "/" yields a DECIMAL, so pgbench's
// (tid - 1) / 10 + 1 fails there; FLOOR and a cast do not.
func serverGenerateSQL(scale int) []string {
	return []string{
		fmt.Sprintf("insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, %d) as bid", nbranches*scale),
		fmt.Sprintf("insert into pgbench_tellers(tid,bid,tbalance) select tid, CAST(FLOOR((tid - 1) / %d) AS INT) + 1, 0 from generate_series(1, %d) as tid",
			ntellers, ntellers*scale),
		fmt.Sprintf("insert into pgbench_accounts(aid,bid,abalance,filler) select aid, CAST(FLOOR((aid - 1) / %d) AS INT) + 1, 0, '' from generate_series(1, %d) as aid",
			naccounts, naccounts*scale),
	}
}

// clientGenerate loads branches and tellers in one statement each and the
// accounts by COPY over several connections, each a slice of the aids.
func clientGenerate(ctx context.Context, t *pg.Target, conn *pgx.Conn, c *tpcbConfig) error {
	small := serverGenerateSQL(c.scale)[:2]
	for _, s := range small {
		if _, err := conn.Exec(ctx, s); err != nil {
			return err
		}
	}
	total := int64(c.scale) * naccounts
	n := int64(c.initConns)
	grp, gctx := errgroup.WithContext(ctx)
	for i := int64(0); i < n; i++ {
		from, to := total*i/n+1, total*(i+1)/n
		grp.Go(func() error {
			cn, err := t.Connect(gctx)
			if err != nil {
				return err
			}
			defer cn.Close(context.WithoutCancel(gctx))
			return copyAccounts(gctx, cn.PgConn(), from, to)
		})
	}
	return grp.Wait()
}

// copyAccounts streams accounts [from, to] in COPY's text format, the way
// pgbench does: aid, bid, abalance 0, an empty filler.
func copyAccounts(ctx context.Context, c *pgconn.PgConn, from, to int64) error {
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriterSize(pw, 256<<10)
		buf := make([]byte, 0, 64)
		for aid := from; aid <= to; aid++ {
			buf = strconv.AppendInt(buf[:0], aid, 10)
			buf = append(buf, '\t')
			buf = strconv.AppendInt(buf, (aid-1)/naccounts+1, 10)
			buf = append(buf, "\t0\t\n"...)
			if _, err := w.Write(buf); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(w.Flush())
	}()
	_, err := c.CopyFrom(ctx, pr, "COPY pgbench_accounts (aid, bid, abalance, filler) FROM STDIN")
	pr.Close()
	if err != nil {
		return fmt.Errorf("copying accounts %d to %d: %w", from, to, err)
	}
	return nil
}

// maintenanceMem is the session's memory for VACUUM and index builds: the
// server's default (64MB) makes the primary key of a large scale sort on
// disk. It is a session setting: the server's configuration is untouched.
const maintenanceMem = "SET maintenance_work_mem = '1GB'"

// vacuum runs pgbench's VACUUM ANALYZE, one table per connection at once.
func vacuum(ctx context.Context, t *pg.Target) error {
	return parallel(ctx, t, []string{
		"vacuum analyze pgbench_branches", "vacuum analyze pgbench_tellers",
		"vacuum analyze pgbench_accounts", "vacuum analyze pgbench_history",
	})
}

// primaryKeys adds pgbench's primary keys, each on its own connection, so
// the big index builds while the small ones do.
func primaryKeys(ctx context.Context, t *pg.Target, d pg.Dialect) error {
	return parallel(ctx, t, []string{
		"alter table pgbench_branches add primary key (bid)",
		"alter table pgbench_tellers add primary key (tid)",
		"alter table pgbench_accounts add primary key (aid)",
	})
}

func parallel(ctx context.Context, t *pg.Target, sqls []string) error {
	grp, gctx := errgroup.WithContext(ctx)
	for _, s := range sqls {
		grp.Go(func() error {
			cn, err := t.Connect(gctx)
			if err != nil {
				return err
			}
			defer cn.Close(context.WithoutCancel(gctx))
			// Best effort: a dialect without the setting still runs s.
			_, _ = cn.Exec(gctx, maintenanceMem)
			if _, err := cn.Exec(gctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
			return nil
		})
	}
	return grp.Wait()
}

var foreignKeySQL = []string{
	"alter table pgbench_tellers add constraint pgbench_tellers_bid_fkey foreign key (bid) references pgbench_branches",
	"alter table pgbench_accounts add constraint pgbench_accounts_bid_fkey foreign key (bid) references pgbench_branches",
	"alter table pgbench_history add constraint pgbench_history_bid_fkey foreign key (bid) references pgbench_branches",
	"alter table pgbench_history add constraint pgbench_history_tid_fkey foreign key (tid) references pgbench_tellers",
	"alter table pgbench_history add constraint pgbench_history_aid_fkey foreign key (aid) references pgbench_accounts",
}

// detectScale reads the scale from pgbench_branches, as pgbench does.
func detectScale(ctx context.Context, conn *pgx.Conn) (int, error) {
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pgbench_branches").Scan(&n); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" {
			return 0, fmt.Errorf("pgbench_branches does not exist: run `txload init tpcb` first")
		}
		return 0, fmt.Errorf("reading the scale from pgbench_branches: %w", err)
	}
	if n == 0 {
		return 0, fmt.Errorf("pgbench_branches is empty: run `txload init tpcb --drop`")
	}
	return n, nil
}

// checkTPCB verifies that every delta landed everywhere:
// sum(abalance) = sum(bbalance) = sum(tbalance) = sum(history.delta).
func checkTPCB(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var a, b, tl, h, rows int64
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT
			(SELECT COALESCE(sum(abalance), 0) FROM pgbench_accounts),
			(SELECT COALESCE(sum(bbalance), 0) FROM pgbench_branches),
			(SELECT COALESCE(sum(tbalance), 0) FROM pgbench_tellers),
			(SELECT COALESCE(sum(delta), 0) FROM pgbench_history),
			(SELECT count(*) FROM pgbench_history)`).Scan(&a, &b, &tl, &h, &rows)
	})
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" {
			return nil, fmt.Errorf("no pgbench tables in this database: run `txload init tpcb` first")
		}
		return nil, fmt.Errorf("check tpcb: %w", err)
	}
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	res := &workload.CheckResult{
		Lines: []workload.Line{
			{Label: "sum(abalance)", Value: i(a)},
			{Label: "sum(bbalance)", Value: i(b)},
			{Label: "sum(tbalance)", Value: i(tl)},
			{Label: "sum(history.delta)", Value: i(h)},
			{Label: "history rows", Value: i(rows)},
		},
		Values: map[string]int64{"sum_abalance": a, "sum_bbalance": b, "sum_tbalance": tl, "sum_delta": h, "history_rows": rows},
	}
	if a != h || b != h || tl != h {
		res.Violations = append(res.Violations, fmt.Sprintf("balances disagree: accounts %d, branches %d, tellers %d, history %d", a, b, tl, h))
	}
	return res, nil
}
