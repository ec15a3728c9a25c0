package tpcc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// loadSeed seeds the load's data: the same warehouses hold the same rows
// whatever the parallelism, and so do two loads.
const loadSeed = 0x7c0c_2023

// connect opens one of txload's own sessions, whose queries are cancelled
// on the server when ctx ends (pg's own sessions do so: a backend busy
// with a long aggregate or an index build would otherwise run on alone).
func connect(ctx context.Context, t *pg.Target) (*pgx.Conn, error) {
	return t.Connect(ctx)
}

// unit is one COPY's worth of the load, or several that belong together.
type unit struct {
	what string
	run  func(ctx context.Context, conn *pgx.Conn, rows *atomic.Int64) error
}

// copyRows runs COPY table FROM STDIN with n rows made by row.
func copyRows(ctx context.Context, conn *pgx.Conn, table string, n int, rows *atomic.Int64, row func(dst []byte, i int) []byte) error {
	tag, err := conn.PgConn().CopyFrom(ctx, newRowReader(n, rows, row), "COPY "+table+" FROM STDIN")
	if err != nil {
		return fmt.Errorf("copying %s: %w", table, err)
	}
	if int(tag.RowsAffected()) != n {
		return fmt.Errorf("copying %s: %d rows copied, want %d", table, tag.RowsAffected(), n)
	}
	return nil
}

// units are the load's COPYs: the items, then per warehouse its stock,
// its customers with their history, and its orders with their lines.
func units(warehouses int, c CValues, now string) []unit {
	out := []unit{{what: "item", run: func(ctx context.Context, conn *pgx.Conn, rows *atomic.Int64) error {
		g := newGen(loadSeed, 0)
		return copyRows(ctx, conn, "item", items, rows, g.itemRow)
	}}}
	for w := 1; w <= warehouses; w++ {
		seed := func(k uint64) *gen { return newGen(loadSeed, uint64(w)<<4|k) }
		out = append(out,
			unit{what: fmt.Sprintf("stock of warehouse %d", w), run: func(ctx context.Context, conn *pgx.Conn, rows *atomic.Int64) error {
				g := seed(1)
				return copyRows(ctx, conn, "stock", items, rows, func(dst []byte, i int) []byte { return g.stockRow(dst, w, i) })
			}},
			unit{what: fmt.Sprintf("customers of warehouse %d", w), run: func(ctx context.Context, conn *pgx.Conn, rows *atomic.Int64) error {
				g := seed(2)
				if err := copyRows(ctx, conn, "warehouse", 1, rows, func(dst []byte, _ int) []byte { return g.warehouseRow(dst, w) }); err != nil {
					return err
				}
				if err := copyRows(ctx, conn, "district", districtsPerWH, rows, func(dst []byte, i int) []byte { return g.districtRow(dst, w, i+1) }); err != nil {
					return err
				}
				n := districtsPerWH * customersPerDistrict
				if err := copyRows(ctx, conn, "customer", n, rows, func(dst []byte, i int) []byte {
					return g.customerRow(dst, w, i/customersPerDistrict+1, i%customersPerDistrict+1, c.Last, now)
				}); err != nil {
					return err
				}
				return copyRows(ctx, conn, "history", n, rows, func(dst []byte, i int) []byte {
					return g.historyRow(dst, w, i/customersPerDistrict+1, i%customersPerDistrict+1, now)
				})
			}},
			unit{what: fmt.Sprintf("orders of warehouse %d", w), run: func(ctx context.Context, conn *pgx.Conn, rows *atomic.Int64) error {
				return copyOrders(ctx, conn, seed(3), w, now, rows)
			}},
		)
	}
	return out
}

// copyOrders loads warehouse w's orders, their lines and the new orders:
// each district's orders go to its customers in a random permutation,
// with 5 to 15 lines each (clause 4.3.3.1).
func copyOrders(ctx context.Context, conn *pgx.Conn, g *gen, w int, now string, rows *atomic.Int64) error {
	const n = districtsPerWH * ordersPerDistrict
	cust := make([]int32, 0, n)
	cnt := make([]uint8, n)
	lines := 0
	for range districtsPerWH {
		cust = append(cust, permutation(g.r, customersPerDistrict)...)
	}
	for i := range cnt {
		cnt[i] = uint8(randInt(g.r, 5, 15))
		lines += int(cnt[i])
	}
	if err := copyRows(ctx, conn, "orders", n, rows, func(dst []byte, i int) []byte {
		return g.orderRow(dst, w, i/ordersPerDistrict+1, i%ordersPerDistrict+1, int(cust[i]), int(cnt[i]), now)
	}); err != nil {
		return err
	}
	order, line := 0, 0 // the order and line of the next row
	if err := copyRows(ctx, conn, "order_line", lines, rows, func(dst []byte, _ int) []byte {
		dst = g.orderLineRow(dst, w, order/ordersPerDistrict+1, order%ordersPerDistrict+1, line+1, now)
		if line++; line == int(cnt[order]) {
			order, line = order+1, 0
		}
		return dst
	}); err != nil {
		return err
	}
	return copyRows(ctx, conn, "new_order", districtsPerWH*newOrdersPerDistrict, rows, func(dst []byte, i int) []byte {
		return newOrderRow(dst, w, i/newOrdersPerDistrict+1, firstNewOrder+i%newOrdersPerDistrict)
	})
}

// rowsPerWarehouse is about how many rows a warehouse holds after the
// load (its order lines are drawn: 10 an order on average).
const rowsPerWarehouse = items + 1 + districtsPerWH*(2*customersPerDistrict+ordersPerDistrict*11+newOrdersPerDistrict)

// initTPCC creates the schema and loads it (clause 4.3), then checks it.
func (g *tpcc) initTPCC(ctx context.Context, t *pg.Target, opts workload.InitOptions) error {
	conn, err := connect(ctx, t)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	have, err := readState(ctx, conn)
	if err != nil {
		return err
	}
	if opts.Drop && have.marker.Found {
		// What --drop recreates keeps the database's settings not given;
		// a marker txload cannot read is no reason not to recreate.
		_ = g.cfg.take(have.settings, g.flags, "init tpcc", true)
	}
	if !opts.Drop {
		switch {
		case have.marker.Complete():
			if err := g.cfg.adopt(have.settings, g.flags, "init tpcc"); err != nil {
				return err
			}
			opts.Logf("init: the tpcc schema already holds %s; --drop recreates it\n", plural(g.cfg.warehouses, "warehouse"))
			return nil
		case !have.marker.Found && have.tables > 0:
			return fmt.Errorf("init tpcc: tables of the tpcc schema exist (%d of %d) but were not made by txload init; --drop recreates them", have.tables, len(tables))
		}
		// A "loading" marker: an init was interrupted; load again.
	}
	server, err := pg.Detect(ctx, conn)
	if err != nil {
		return err
	}
	c := &g.cfg
	if c.partitions > 1 && server.Dialect != pg.PostgreSQL {
		return fmt.Errorf("init tpcc: --partitions needs PostgreSQL's declarative partitioning; %s has none", server.Dialect)
	}
	start := time.Now()
	if err := workload.BeginLoad(ctx, conn, markerName, c.settings()); err != nil {
		return fmt.Errorf("init tpcc: %w", err)
	}
	load := loadC(rand.New(rand.NewPCG(loadSeed, uint64(c.warehouses))))
	opts.Logf("init: creating the 9 tpcc tables for %s (%s)\n", plural(c.warehouses, "warehouse"), c.shape())
	if err := create(ctx, conn, c, load); err != nil {
		return fmt.Errorf("init tpcc: %w", err)
	}
	n, err := copyAll(ctx, t, c, load, opts)
	if err != nil {
		return fmt.Errorf("init tpcc: %w", err)
	}
	loaded := time.Since(start)
	opts.Logf("init: loaded %d rows in %.1fs (%.0f rows/s)\n", n, loaded.Seconds(), float64(n)/loaded.Seconds())
	if err := finish(ctx, t, c, server.Dialect, opts); err != nil {
		return fmt.Errorf("init tpcc: %w", err)
	}
	checkStart := time.Now()
	res, err := runCheck(ctx, t)
	if err != nil {
		return fmt.Errorf("init tpcc: checking the load: %w", err)
	}
	if v := res.violations(); len(v) > 0 {
		return fmt.Errorf("init tpcc: the load breaks consistency conditions: %s", strings.Join(v, "; "))
	}
	opts.Logf("init: the %d consistency conditions hold (checked in %.1fs)\n", len(conditions), time.Since(checkStart).Seconds())
	if err := workload.EndLoad(ctx, conn, markerName, c.settings()); err != nil {
		return fmt.Errorf("init tpcc: %w", err)
	}
	opts.Logf("init: %s in %.1fs; NURand's C values of the load: %s\n", plural(c.warehouses, "warehouse"), time.Since(start).Seconds(), load)
	return nil
}

// create drops the tables and makes them anew, without keys, in one
// transaction, with the meta row.
func create(ctx context.Context, conn *pgx.Conn, c *config, load CValues) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+strings.Join(tableNames(), ", ")+" CASCADE"); err != nil {
			return fmt.Errorf("dropping the tpcc tables: %w", err)
		}
		for _, tb := range tables {
			for _, s := range tb.createDDL(c.warehouses, c.partitions) {
				if _, err := tx.Exec(ctx, s); err != nil {
					return fmt.Errorf("creating %s: %w", tb.name, err)
				}
			}
		}
		if _, err := tx.Exec(ctx, metaDDL); err != nil {
			return fmt.Errorf("creating %s: %w", metaTable, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+metaTable+` (warehouses, c_last, c_id, c_item) VALUES ($1, $2, $3, $4)`,
			c.warehouses, load.Last, load.CID, load.Item); err != nil {
			return fmt.Errorf("writing %s: %w", metaTable, err)
		}
		return nil
	})
}

// copyAll runs the load's units over --load-jobs connections, and says
// how far it got every few seconds.
func copyAll(ctx context.Context, t *pg.Target, c *config, load CValues, opts workload.InitOptions) (int64, error) {
	now := time.Now().UTC().Format("2006-01-02 15:04:05.000000")
	work := units(c.warehouses, load, now)
	jobs := min(c.loadJobs, len(work))
	total := int64(items) + int64(c.warehouses)*rowsPerWarehouse
	opts.Logf("init: loading about %d rows over %d connections (COPY)\n", total, jobs)
	var rows atomic.Int64
	stop := progress(opts, &rows, total)
	defer stop()
	var next atomic.Int64
	grp, gctx := errgroup.WithContext(ctx)
	for range jobs {
		grp.Go(func() error {
			conn, err := connect(gctx, t)
			if err != nil {
				return err
			}
			defer conn.Close(context.WithoutCancel(gctx))
			for {
				i := int(next.Add(1) - 1)
				if i >= len(work) {
					return nil
				}
				if err := work[i].run(gctx, conn, &rows); err != nil {
					return fmt.Errorf("loading the %s: %w", work[i].what, err)
				}
			}
		})
	}
	if err := grp.Wait(); err != nil {
		return 0, firstCause(ctx, err)
	}
	return rows.Load(), nil
}

// firstCause is err, or the interruption when ctx ended: the other
// connections' errors then only echo it.
func firstCause(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

// progress prints the rows loaded and their rate every 5 seconds until
// stopped.
func progress(opts workload.InitOptions, rows *atomic.Int64, total int64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		start, last, lastAt := time.Now(), int64(0), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				n := rows.Load()
				opts.Logf("init: %6.1fs  %d of about %d rows (%.0f%%)  %.0f rows/s\n", now.Sub(start).Seconds(), n, total,
					100*float64(n)/float64(total), float64(n-last)/now.Sub(lastAt).Seconds())
				last, lastAt = n, now
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// finish builds the keys and indexes (after the data: faster than
// maintaining them row by row), then the foreign keys, and analyzes the
// tables, over the load's connections.
func finish(ctx context.Context, t *pg.Target, c *config, d pg.Dialect, opts workload.InitOptions) error {
	start := time.Now()
	var keys []string
	for _, tb := range tables {
		keys = append(keys, tb.keyDDL()...)
	}
	// The largest first: the others fill in beside them.
	order := []string{"order_line", "stock", "customer", "orders", "history", "new_order", "item", "district", "warehouse"}
	sortBy(keys, order)
	if err := parallelDDL(ctx, t, c.loadJobs, keys, d); err != nil {
		return err
	}
	if c.fks {
		if err := parallelDDL(ctx, t, c.loadJobs, foreignKeyDDL(), d); err != nil {
			return err
		}
	}
	var analyze []string
	for _, name := range order {
		if d == pg.PostgreSQL {
			analyze = append(analyze, "VACUUM (ANALYZE) "+name)
		} else {
			analyze = append(analyze, "ANALYZE "+name)
		}
	}
	if d != pg.CockroachDB {
		if err := parallelDDL(ctx, t, c.loadJobs, analyze, d); err != nil {
			return err
		}
	}
	what := "keys and indexes"
	if c.fks {
		what = "keys, indexes and foreign keys"
	}
	opts.Logf("init: %s built, tables analyzed in %.1fs\n", what, time.Since(start).Seconds())
	return nil
}

// sortBy orders statements by the first table of order each names.
func sortBy(stmts []string, order []string) {
	rank := func(s string) int {
		for i, name := range order {
			if strings.Contains(s, " "+name+" ") || strings.HasSuffix(s, " "+name) {
				return i
			}
		}
		return len(order)
	}
	for i := 1; i < len(stmts); i++ {
		for j := i; j > 0 && rank(stmts[j]) < rank(stmts[j-1]); j-- {
			stmts[j], stmts[j-1] = stmts[j-1], stmts[j]
		}
	}
}

// parallelDDL runs stmts over jobs connections.
func parallelDDL(ctx context.Context, t *pg.Target, jobs int, stmts []string, d pg.Dialect) error {
	var next atomic.Int64
	grp, gctx := errgroup.WithContext(ctx)
	for range min(jobs, len(stmts)) {
		grp.Go(func() error {
			conn, err := connect(gctx, t)
			if err != nil {
				return err
			}
			defer conn.Close(context.WithoutCancel(gctx))
			if d == pg.PostgreSQL && !t.Pooled() {
				// A session setting: index builds sort in memory.
				if _, err := conn.Exec(gctx, "SET maintenance_work_mem = '256MB'"); err != nil {
					return fmt.Errorf("setting maintenance_work_mem: %w", err)
				}
			}
			for {
				i := int(next.Add(1) - 1)
				if i >= len(stmts) {
					return nil
				}
				if _, err := conn.Exec(gctx, stmts[i]); err != nil {
					return fmt.Errorf("%s: %w", stmts[i], err)
				}
			}
		})
	}
	return firstCause(ctx, grp.Wait())
}
