package tpcc

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/pflag"

	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// markerName is the workload's row of the init marker.
const markerName = "tpcc"

// Meta registers the workload.
func Meta() workload.Meta {
	return workload.Meta{
		Name:        "tpcc",
		Description: "TPC-C (rev. 5.11): its nine tables, the five transactions dealt from a deck, wait times with --wait, tpmC, and the twelve consistency conditions checked",
		Examples: `  txload init tpcc --warehouses 10 --url postgres://localhost/tpcc
  txload run tpcc --concurrency 16 --duration 5m --url postgres://localhost/tpcc
  txload run tpcc --wait --warehouses 10 --duration 10m --url postgres://localhost/tpcc
  txload check tpcc --url postgres://localhost/tpcc`,
		New: func() workload.Generator { return newGenerator() },
	}
}

// config is the workload's settings, validated.
type config struct {
	warehouses int
	partitions int
	fks        bool
	loadJobs   int
	isolation  pg.Isolation
	// wait scales the spec's keying and think times (clause 5.2.5); 0
	// runs without them.
	wait float64
}

// settings are those that shape the data, canonical, for the marker.
func (c *config) settings() string {
	return fmt.Sprintf("warehouses=%d partitions=%d fks=%t", c.warehouses, c.partitions, c.fks)
}

// shape says how the tables are laid out, for the log.
func (c *config) shape() string {
	parts := "not partitioned"
	if c.partitions > 1 {
		parts = fmt.Sprintf("%d partitions by warehouse", c.partitions)
	}
	fks := "no foreign keys"
	if c.fks {
		fks = "foreign keys"
	}
	return parts + ", " + fks
}

type tpcc struct {
	flags *pflag.FlagSet
	cfg   config
	raw   struct{ isolation string }
}

func newGenerator() *tpcc {
	g := &tpcc{flags: pflag.NewFlagSet("tpcc", pflag.ContinueOnError)}
	f := g.flags
	f.IntVar(&g.cfg.warehouses, "warehouses", 1, "warehouses (TPC-C's scale: 10 districts, 30,000 customers and 100,000 stock rows each); run takes the database's when not given, check always")
	f.IntVar(&g.cfg.partitions, "partitions", 0, "init: partition every table but item by warehouse into this many ranges (PostgreSQL; 0 or 1: none)")
	f.BoolVar(&g.cfg.fks, "fks", false, "init: add the spec's foreign keys (clause 1.3) after the load")
	f.IntVar(&g.cfg.loadJobs, "load-jobs", min(runtime.NumCPU(), 16), "init: connections that load the warehouses in parallel (COPY), then build the keys")
	f.StringVar(&g.raw.isolation, "isolation", "read committed", "read committed | repeatable read | serializable (or rc, rr, ser)")
	f.Float64Var(&g.cfg.wait, "wait", 0, "run as the spec's terminals: 10 per warehouse, each with its keying and think times scaled by this factor (1: the spec's; 0.1: a tenth); 0 = back to back")
	workload.OnlyFor(f, workload.VerbRun|workload.VerbSweep|workload.VerbFailover, "isolation", "wait")
	workload.OnlyFor(f, workload.VerbInit|workload.VerbRun|workload.VerbSweep|workload.VerbFailover, "partitions", "fks", "load-jobs")
	// check audits the warehouses init loaded, whatever is given.
	workload.IgnoredBy(f, workload.VerbCheck, "warehouses")
	return g
}

func (g *tpcc) Flags() *pflag.FlagSet { return g.flags }

// Hooks: TPC-C is initialised, run and checked.
func (g *tpcc) Hooks() workload.Hooks {
	return workload.Hooks{
		Validate:    g.validate,
		Init:        g.initTPCC,
		Ops:         g.ops,
		ValidateRun: g.validateRun,
		Check:       g.check,
		RunDefaults: workload.RunDefaults{Init: workload.InitKeep},
		Tables:      []string{"warehouse", "district", "customer", "history", "new_order", "orders", "order_line", "item", "stock"},
		Clients:     g.clients,
		// Every transaction is one explicit transaction: its marker goes
		// in the pipeline of its COMMIT (a New-Order rolled back on
		// purpose writes none).
		MarkTransactions: func() error { return nil },
	}
}

// terminalsPerWH is the spec's number of terminals per warehouse
// (clause 4.2.2).
const terminalsPerWH = 10

// maxWarehouses keeps every key an INT and 10 terminals per warehouse
// countable.
const maxWarehouses = 100000

func (g *tpcc) validate() error {
	c := &g.cfg
	if c.warehouses < 1 || c.warehouses > maxWarehouses {
		return fmt.Errorf("--warehouses must be between 1 and %d, got %d", maxWarehouses, c.warehouses)
	}
	if c.partitions < 0 || c.partitions > c.warehouses {
		return fmt.Errorf("--partitions must be between 0 (none) and --warehouses (%d), got %d", c.warehouses, c.partitions)
	}
	if c.loadJobs < 1 || c.loadJobs > 64 {
		return fmt.Errorf("--load-jobs must be between 1 and 64, got %d", c.loadJobs)
	}
	if math.IsNaN(c.wait) || math.IsInf(c.wait, 0) || c.wait < 0 || c.wait > 100 {
		return fmt.Errorf("--wait must be 0 (no wait times) or a factor of the spec's keying and think times up to 100 (1: as the spec), got %g", c.wait)
	}
	iso, err := pg.ParseIsolation(g.raw.isolation)
	if err != nil {
		return fmt.Errorf("--isolation: %w", err)
	}
	c.isolation = iso
	return nil
}

// clients: with --wait, 10 terminals per warehouse.
func (g *tpcc) clients() (int, string) {
	if g.cfg.wait == 0 {
		return 0, ""
	}
	return terminalsPerWH * g.cfg.warehouses, "--wait (10 terminals per warehouse)"
}

// state is what a database holds of the schema.
type state struct {
	marker   workload.Marker
	settings map[string]string
	tables   int // tables of the schema that exist
}

func readState(ctx context.Context, conn *pgx.Conn) (state, error) {
	var s state
	m, err := workload.ReadMarker(ctx, conn, markerName)
	if err != nil {
		return s, err
	}
	s.marker = m
	s.settings = parseSettings(m.Settings)
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = `+workload.SchemaSQL+` AND table_name = ANY($1)`, tableNames()).Scan(&s.tables); err != nil {
		return s, fmt.Errorf("looking for the tpcc tables: %w", err)
	}
	return s, nil
}

func parseSettings(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Fields(s) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// adopt takes the database's settings for the flags not given, and
// refuses (bad usage: nothing was written) a flag given with another
// value than the database holds.
func (c *config) adopt(have map[string]string, fs *pflag.FlagSet, command string) error {
	return c.take(have, fs, command, false)
}

// take is adopt; with recreate (init --drop), a flag given wins over the
// database's value, and the others keep it: a run at --init fresh or an
// init --drop without --warehouses reloads the database's warehouses,
// not one.
func (c *config) take(have map[string]string, fs *pflag.FlagSet, command string, recreate bool) error {
	w, err1 := strconv.Atoi(have["warehouses"])
	p, err2 := strconv.Atoi(have["partitions"])
	fks, err3 := strconv.ParseBool(have["fks"])
	if err1 != nil || err2 != nil || err3 != nil {
		return fmt.Errorf("%s: the tpcc schema's marker holds settings txload cannot read (%q): run `txload init tpcc --drop`", command, settingsString(have))
	}
	if recreate {
		if !fs.Changed("warehouses") {
			c.warehouses = w
		}
		if !fs.Changed("fks") {
			c.fks = fks
		}
		if !fs.Changed("partitions") && p <= c.warehouses {
			c.partitions = p
		}
		return nil
	}
	var differ []string
	if fs.Changed("warehouses") && c.warehouses != w {
		differ = append(differ, fmt.Sprintf("--warehouses %d", c.warehouses))
	}
	if fs.Changed("partitions") && c.partitions != p {
		differ = append(differ, fmt.Sprintf("--partitions %d", c.partitions))
	}
	if fs.Changed("fks") && c.fks != fks {
		differ = append(differ, fmt.Sprintf("--fks=%t", c.fks))
	}
	if len(differ) > 0 {
		have := config{warehouses: w, partitions: p, fks: fks}
		return &workload.SettingsError{Workload: markerName, Msg: fmt.Sprintf(
			"the database holds the tpcc schema of %s (%s), not the %s asked: give its values, or recreate it with `txload init tpcc --drop`",
			plural(w, "warehouse"), have.shape(), strings.Join(differ, " "))}
	}
	c.warehouses, c.partitions, c.fks = w, p, fks
	return nil
}

// plural is n things.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

func settingsString(m map[string]string) string {
	var parts []string
	for _, k := range []string{"warehouses", "partitions", "fks"} {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}

// require reads the schema a run works on: complete, and with
// the settings given.
func (g *tpcc) require(ctx context.Context, conn *pgx.Conn, command string) error {
	st, err := requireSchema(ctx, conn)
	if err != nil {
		return err
	}
	return g.cfg.adopt(st.settings, g.flags, command)
}

// requireSchema reads the schema's state, refusing one init did not
// complete.
func requireSchema(ctx context.Context, conn *pgx.Conn) (state, error) {
	st, err := readState(ctx, conn)
	if err != nil {
		return st, err
	}
	return st, st.marker.Require(markerName)
}

// check audits the data at any time: the twelve conditions, over the
// warehouses init recorded (--warehouses is ignored, as the other
// workloads' checks ignore their settings).
func (g *tpcc) check(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
	conn, err := connect(ctx, t)
	if err != nil {
		return nil, err
	}
	if _, err := requireSchema(ctx, conn); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	conn.Close(context.WithoutCancel(ctx))
	if res, err := workload.CheckColumns(ctx, t, initColumns()); res != nil || err != nil {
		return res, err
	}
	res, err := runCheck(ctx, t)
	if err != nil {
		return nil, err
	}
	return res.result(nil), nil
}
