package pgio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// Workload is the name of the init marker's row.
const Workload = "pgio"

// InitOptions steers Init.
type InitOptions struct {
	// Drop recreates the tables even if a complete load exists.
	Drop bool
	// TablesSet and ScaleSet say --tables and --scale were given: an
	// existing load is then kept only if it covers what was given (a
	// flag's default is not asked for). Otherwise any complete load is
	// kept.
	TablesSet, ScaleSet bool
	// Log receives progress lines.
	Log io.Writer
}

func (o InitOptions) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format, args...)
	}
}

// Built is what Init made (or found).
type Built struct {
	Server pg.Server
	// Reused: a complete load was there and was kept.
	Reused bool
	Tables int
	Rows   int64 // per table
	// Inserted is the rows the load inserted, all tables (0 when reused).
	Inserted int64
	// TableBytes and IndexBytes are the size of all tables and their
	// indexes; -1 where the dialect does not say.
	TableBytes, IndexBytes int64
	// Layout is each table's physical layout (PostgreSQL).
	Layout []TableLayout
	// Memory is what the regime was judged against.
	Memory  Memory
	Elapsed time.Duration
}

// TableLayout is a table's layout as PostgreSQL's statistics describe it
// after ANALYZE.
type TableLayout struct {
	Name     string
	RelPages int64
	// Correlation is pg_stats.correlation of mykey: how well key order
	// follows heap order (1: sorted; 0: random, as pgio needs).
	Correlation    float64
	HasCorrelation bool
}

// RowsPerBlock is the table's rows over its blocks.
func (l TableLayout) RowsPerBlock(rows int64) float64 {
	if l.RelPages == 0 {
		return 0
	}
	return float64(rows) / float64(l.RelPages)
}

// Init creates and loads the pgio tables pgio1..pgioN of cfg.Scale rows
// each: one row per 8 KiB block on PostgreSQL (fillfactor 10 and a 1 KiB
// filler, as pgio), inserted in random key order, with an index on mykey
// (ASC, a range index, on YugabyteDB). Loading is set-based, spread over
// cfg.LoadJobs connections; on distributed databases in committed batches of
// cfg.BatchRows. The init marker says "loading" until the end, so an
// interrupted init is refused by runs. A complete load is kept unless
// opts.Drop, when it covers what was asked (see InitOptions.TablesSet).
func Init(ctx context.Context, t *pg.Target, cfg Config, opts InitOptions) (*Built, error) {
	start := time.Now()
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	server, err := pg.Detect(ctx, conn)
	if err != nil {
		return nil, err
	}
	b := &Built{Server: server, Tables: cfg.Tables, Rows: cfg.Scale, TableBytes: -1, IndexBytes: -1}
	if !opts.Drop {
		m, err := workload.ReadMarker(ctx, conn, Workload)
		if err != nil {
			return nil, err
		}
		switch {
		case m.Complete():
			tables, scale, err := ParseSettings(m.Settings)
			if err != nil {
				return nil, err
			}
			var asked []string
			if opts.TablesSet && cfg.Tables > tables {
				asked = append(asked, fmt.Sprintf("--tables %d", cfg.Tables))
			}
			if opts.ScaleSet && cfg.Scale > scale {
				asked = append(asked, fmt.Sprintf("--scale %d", cfg.Scale))
			}
			if len(asked) > 0 {
				// Bad usage, as another workload's schema of other
				// settings is: nothing was written (exit 2).
				return nil, &workload.SettingsError{Workload: Workload, Msg: fmt.Sprintf("init pgio: the pgio tables hold %d tables of %d rows, less than asked (%s); --drop recreates them",
					tables, scale, strings.Join(asked, " "))}
			}
			b.Reused, b.Tables, b.Rows = true, tables, scale
			if err := describe(ctx, conn, b); err != nil {
				return nil, err
			}
			b.Elapsed = time.Since(start)
			return b, nil
		case !m.Found:
			names, err := pgioTables(ctx, conn)
			if err != nil {
				return nil, err
			}
			if len(names) > 0 {
				return nil, fmt.Errorf("init pgio: tables %s exist but were not made by txload init; --drop recreates them", strings.Join(names, ", "))
			}
		}
		// A "loading" marker: an interrupted init; load again.
	}
	if err := workload.BeginLoad(ctx, conn, Workload, cfg.Settings()); err != nil {
		return nil, fmt.Errorf("init pgio: %w", err)
	}
	if err := create(ctx, conn, server.Dialect, cfg.Tables, opts); err != nil {
		return nil, fmt.Errorf("init pgio: %w", err)
	}
	n, err := load(ctx, t, server.Dialect, cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("init pgio: %w", err)
	}
	b.Inserted = n
	if err := finish(ctx, t, server.Dialect, cfg, opts); err != nil {
		return nil, fmt.Errorf("init pgio: %w", err)
	}
	if err := describe(ctx, conn, b); err != nil {
		return nil, err
	}
	if err := workload.EndLoad(ctx, conn, Workload, cfg.Settings()); err != nil {
		return nil, fmt.Errorf("init pgio: %w", err)
	}
	b.Elapsed = time.Since(start)
	return b, nil
}

// tableDDL is pgio's table, one row per block on PostgreSQL.
func tableDDL(d pg.Dialect, name string) string {
	ddl := "CREATE TABLE " + name + " (mykey BIGINT, scratch BIGINT, filler CHAR(1024))"
	if d == pg.PostgreSQL {
		// 10% fill: the first row fills a block past the limit, so every row
		// gets a block of its own.
		ddl += " WITH (fillfactor = 10)"
	}
	return ddl
}

// indexDDL is the index the statements range-scan: ASC on YugabyteDB,
// whose default is a hash index that cannot serve a range; on CockroachDB a
// secondary index, the rows staying in the primary index by rowid.
func indexDDL(d pg.Dialect, name string) string {
	col := "mykey"
	if d == pg.YugabyteDB {
		col = "mykey ASC"
	}
	return "CREATE INDEX " + name + "_mykey ON " + name + " (" + col + ")"
}

// The table the server-mode sessions learn their start time from
// (pgio_progress held their progress before it went into NOTICEs: dropped
// with it). UNLOGGED on PostgreSQL: nothing in it outlives a run.
func runTablesDDL(d pg.Dialect) []string {
	unlogged := ""
	if d == pg.PostgreSQL {
		unlogged = "UNLOGGED "
	}
	return []string{
		"DROP TABLE IF EXISTS pgio_progress, pgio_runs",
		"CREATE " + unlogged + `TABLE pgio_runs (
	run         BIGINT NOT NULL,
	phase       INT NOT NULL,
	released_at TIMESTAMPTZ,
	PRIMARY KEY (run, phase))`,
	}
}

// create drops every pgio table and makes tables 1..n; on distributed
// databases with their index, which the batches then maintain.
func create(ctx context.Context, conn *pgx.Conn, d pg.Dialect, n int, opts InitOptions) error {
	old, err := pgioTables(ctx, conn)
	if err != nil {
		return err
	}
	opts.logf("init: creating %s (dropping %d)\n", metrics.Count(n, "pgio table"), len(old))
	// One DDL statement at a time: distributed catalogs are slow to change
	// in bulk, and only the tables that exist are dropped (pgio's setup
	// drops pgio1..pgio8192 whatever exists, which takes minutes there).
	for _, name := range old {
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+name); err != nil {
			return fmt.Errorf("dropping %s: %w", name, err)
		}
	}
	for _, s := range runTablesDDL(d) {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("creating pgio's run tables: %w", err)
		}
	}
	for i := 1; i <= n; i++ {
		stmts := []string{tableDDL(d, Table(i))}
		if d != pg.PostgreSQL {
			stmts = append(stmts, indexDDL(d, Table(i)))
		}
		for _, s := range stmts {
			if _, err := conn.Exec(ctx, s); err != nil {
				return fmt.Errorf("creating %s: %w", Table(i), err)
			}
		}
	}
	return nil
}

// pgioTables lists the tables named like pgio's, pgio<N>, in order.
func pgioTables(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT table_name::TEXT FROM information_schema.tables
		WHERE table_schema = `+workload.SchemaSQL+` AND table_name ~ '^pgio[0-9]+$'
		ORDER BY length(table_name), table_name`)
	if err != nil {
		return nil, fmt.Errorf("listing the pgio tables: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing the pgio tables: %w", err)
	}
	return names, nil
}

// loadSQL inserts the keys $1, $1+$3, $1+2*$3, ... up to $2, in random
// order: the order of a random scratch, as pgio's setup does.
func loadSQL(table string) string {
	return "INSERT INTO " + table + ` (mykey, scratch, filler)
	SELECT g, (random() * 1000000000)::BIGINT AS scratch, repeat('X', 1024)
	FROM generate_series($1::BIGINT, $2::BIGINT, $3::BIGINT) AS g ORDER BY scratch`
}

// chunk is one INSERT of a load: the keys first, first+step, ... up to
// last of a table.
type chunk struct {
	table             string
	first, last, step int64
}

// setRows is the most rows of one set on PostgreSQL.
const setRows = 1 << 16

// chunks splits the load of each table into interleaved sets of keys, each
// inserted in random order by one statement: every set spans the whole key
// range, so however the statements' rows interleave in the heap, heap order
// says nothing of key order (contiguous ranges loaded one after another
// would leave the heap sorted by range). On PostgreSQL one set per
// connection, or more for large tables; on distributed databases sets of about batch rows, each
// committed on its own, which keeps every transaction short (YugabyteDB
// stops a statement after 60 s by default, as pgio's single INSERT finds).
func chunks(d pg.Dialect, tables int, scale int64, jobs int, batch int64) []chunk {
	// On PostgreSQL at least one set per connection, and sets of at most
	// 64Ki rows (512 MiB) so that progress shows.
	sets := max(int64(jobs), (scale+setRows-1)/setRows)
	if d != pg.PostgreSQL {
		sets = (scale + batch - 1) / batch
	}
	sets = min(sets, scale)
	var out []chunk
	for i := 1; i <= tables; i++ {
		for j := int64(1); j <= sets; j++ {
			out = append(out, chunk{table: Table(i), first: j, last: scale, step: sets})
		}
	}
	return out
}

// load runs the chunks over cfg.LoadJobs connections and returns the rows
// inserted.
func load(ctx context.Context, t *pg.Target, d pg.Dialect, cfg Config, opts InitOptions) (int64, error) {
	work := chunks(d, cfg.Tables, cfg.Scale, cfg.LoadJobs, cfg.BatchRows)
	total := int64(cfg.Tables) * cfg.Scale
	opts.logf("init: loading %d rows into %s over %d connections (%d statements)\n", total, metrics.Count(cfg.Tables, "table"), min(cfg.LoadJobs, len(work)), len(work))
	var next, inserted atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				n := inserted.Load()
				opts.logf("init: %d of %d rows (%.0f%%)\n", n, total, 100*float64(n)/float64(total))
			}
		}
	}()
	defer func() { close(done); wg.Wait() }()
	g, gctx := errgroup.WithContext(ctx)
	for j := 0; j < min(cfg.LoadJobs, len(work)); j++ {
		g.Go(func() error {
			conn, err := t.Connect(gctx)
			if err != nil {
				return err
			}
			defer conn.Close(context.WithoutCancel(gctx))
			for {
				i := int(next.Add(1) - 1)
				if i >= len(work) {
					return nil
				}
				c := work[i]
				tag, err := conn.Exec(gctx, loadSQL(c.table), c.first, c.last, c.step)
				if err != nil {
					return fmt.Errorf("loading %s keys %d to %d by %d: %w", c.table, c.first, c.last, c.step, err)
				}
				inserted.Add(tag.RowsAffected())
			}
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	if n := inserted.Load(); n != total {
		return n, fmt.Errorf("loaded %d rows, want %d", n, total)
	}
	return total, nil
}

// finish indexes the tables on PostgreSQL (after the load: faster than
// maintaining the index row by row) and analyzes them, over the load's
// connections. PostgreSQL's tables are vacuumed too, as pgbench -i does:
// otherwise autovacuum's pass over a freshly loaded table (its insert
// threshold) may read every block during the first measured run and
// inflate the database's block counts that pgio reports.
func finish(ctx context.Context, t *pg.Target, d pg.Dialect, cfg Config, opts InitOptions) error {
	if d == pg.CockroachDB {
		return nil // statistics are collected automatically
	}
	if d == pg.PostgreSQL {
		opts.logf("init: indexing, vacuuming and analyzing\n")
	} else {
		opts.logf("init: analyzing\n")
	}
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for j := 0; j < min(cfg.LoadJobs, cfg.Tables); j++ {
		g.Go(func() error {
			conn, err := t.Connect(gctx)
			if err != nil {
				return err
			}
			defer conn.Close(context.WithoutCancel(gctx))
			for {
				i := int(next.Add(1))
				if i > cfg.Tables {
					return nil
				}
				var stmts []string
				if d == pg.PostgreSQL {
					stmts = append(stmts, "SET maintenance_work_mem = '256MB'", indexDDL(d, Table(i)))
				}
				if d == pg.PostgreSQL {
					stmts = append(stmts, "VACUUM (ANALYZE) "+Table(i))
				} else {
					stmts = append(stmts, "ANALYZE "+Table(i))
				}
				for _, s := range stmts {
					if _, err := conn.Exec(gctx, s); err != nil {
						return fmt.Errorf("%s: %w", s, err)
					}
				}
			}
		})
	}
	return g.Wait()
}

// describe fills in sizes, layout and memory, where the dialect tells them.
func describe(ctx context.Context, conn *pgx.Conn, b *Built) error {
	b.Layout = nil
	b.Memory = Memory{SharedBuffers: -1}
	if b.Server.Dialect != pg.PostgreSQL {
		return nil
	}
	for i := 1; i <= b.Tables; i++ {
		l := TableLayout{Name: Table(i)}
		var corr *float64
		err := conn.QueryRow(ctx, `SELECT c.relpages::BIGINT, (SELECT s.correlation::FLOAT8 FROM pg_stats s
				WHERE s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = 'mykey')
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.oid = $1::regclass`, l.Name).Scan(&l.RelPages, &corr)
		if err != nil {
			return fmt.Errorf("reading the layout of %s: %w", l.Name, err)
		}
		if corr != nil {
			l.Correlation, l.HasCorrelation = *corr, true
		}
		b.Layout = append(b.Layout, l)
	}
	err := conn.QueryRow(ctx, `SELECT COALESCE(sum(pg_table_size(c.oid)), 0)::BIGINT, COALESCE(sum(pg_indexes_size(c.oid)), 0)::BIGINT
		FROM pg_class c WHERE c.oid = ANY($1::regclass[])`, tableNames(b.Tables)).Scan(&b.TableBytes, &b.IndexBytes)
	if err != nil {
		return fmt.Errorf("reading the pgio tables' sizes: %w", err)
	}
	m, err := ReadMemory(ctx, conn)
	if err != nil {
		return err
	}
	b.Memory = m
	return nil
}

func tableNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = Table(i + 1)
	}
	return out
}

// Layout verdicts: rows per block within 5% of one, |correlation| < 0.1.
const (
	maxBlockSkew   = 0.05
	maxCorrelation = 0.1
)

// LayoutOK says whether every table is laid out as pgio needs: about one
// row per block, keys uncorrelated with heap order.
func (b *Built) LayoutOK() error {
	var errs []error
	for _, l := range b.Layout {
		if r := l.RowsPerBlock(b.Rows); math.Abs(r-1) > maxBlockSkew {
			errs = append(errs, fmt.Errorf("%s holds %.2f rows per block (%d rows in %d blocks), not 1", l.Name, r, b.Rows, l.RelPages))
		}
		if l.HasCorrelation && math.Abs(l.Correlation) >= maxCorrelation {
			errs = append(errs, fmt.Errorf("%s: mykey's correlation with heap order is %.3f, not about 0", l.Name, l.Correlation))
		}
	}
	return errors.Join(errs...)
}

// Lines says what Init built, one line each.
func (b *Built) Lines() []string {
	var out []string
	what := fmt.Sprintf("loaded in %.1fs", b.Elapsed.Seconds())
	if b.Reused {
		what = "kept (--drop recreates it)"
	}
	unit := "rows"
	if b.Server.Dialect == pg.PostgreSQL {
		unit = "rows (one per 8 KiB block)"
	}
	names := "pgio1"
	if b.Tables > 1 {
		names = fmt.Sprintf("pgio1..pgio%d", b.Tables)
	}
	out = append(out, fmt.Sprintf("pgio schema %s: %s (%s) of %d %s, %d rows in all",
		what, metrics.Count(b.Tables, "table"), names, b.Rows, unit, int64(b.Tables)*b.Rows))
	if b.TableBytes >= 0 {
		out = append(out, fmt.Sprintf("size: tables %s, indexes %s", Bytes(b.TableBytes), Bytes(b.IndexBytes)))
	}
	for _, l := range b.Layout {
		corr := "no statistics"
		if l.HasCorrelation {
			corr = fmt.Sprintf("%.3f", l.Correlation)
		}
		out = append(out, fmt.Sprintf("layout of %s: %.3f rows per block (%d rows, %d blocks), mykey's correlation with heap order %s",
			l.Name, l.RowsPerBlock(b.Rows), b.Rows, l.RelPages, corr))
	}
	if len(b.Layout) > 0 {
		if err := b.LayoutOK(); err != nil {
			out = append(out, "WARNING: the layout is not pgio's: "+strings.ReplaceAll(err.Error(), "\n", "; "))
		} else {
			out = append(out, "layout: as pgio's (one row per block, keys in random heap order)")
		}
	}
	out = append(out, "regime: "+b.Regime())
	return out
}

// Regime says where a run over the whole scale reads its blocks from.
func (b *Built) Regime() string {
	if b.Server.Dialect != pg.PostgreSQL {
		return fmt.Sprintf("not judged on %s: its storage layer is not PostgreSQL's buffers; the measure is rows, not blocks", b.Server.Dialect)
	}
	return b.Memory.Regime(b.TableBytes + b.IndexBytes)
}

// Bytes formats a size in binary units.
func Bytes(n int64) string {
	switch {
	case n < 0:
		return "unknown"
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n < 1<<40:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.2f TiB", float64(n)/(1<<40))
}
