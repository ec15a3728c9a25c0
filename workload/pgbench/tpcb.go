package pgbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"

	"github.com/txload/txload/pg"
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
	scale           int
	foreignKeys     bool
	partitions      int
	partitionRaw    string
	fillfactor      int
	unlogged        bool
	tablespace      string
	indexTablespace string
	initSteps       string
	quiet           bool
	generate        string
	initConns       int
	noVacuum        bool
	// changed says a flag was given (the others keep their defaults, or
	// under --drop the existing tables' settings).
	changed       func(name string) bool
	scaleExplicit func() bool
}

func (c *tpcbConfig) register(f *pflag.FlagSet) {
	f.IntVarP(&c.scale, "scale", "s", 1, "scale factor: 100000 × scale accounts, 10 × scale tellers, scale branches")
	f.BoolVar(&c.foreignKeys, "foreign-keys", false, "create foreign keys between the tables")
	f.IntVar(&c.partitions, "partitions", 0, "partition pgbench_accounts into this many partitions (0 = none)")
	f.StringVar(&c.partitionRaw, "partition-method", "range", "range | hash (with --partitions)")
	f.IntVarP(&c.fillfactor, "fillfactor", "F", 100, "fill factor of the tables, 10 to 100")
	f.BoolVar(&c.unlogged, "unlogged-tables", false, "create the tables UNLOGGED")
	f.StringVar(&c.tablespace, "tablespace", "", "create the tables in this tablespace")
	f.StringVar(&c.indexTablespace, "index-tablespace", "", "create the primary key indexes in this tablespace")
	f.StringVarP(&c.initSteps, "init-steps", "I", "", "pgbench's initialization steps, in order (d drop, t create, g/G generate client/server-side, v vacuum, p primary keys, f foreign keys; default dtgvp)")
	f.BoolVarP(&c.quiet, "quiet", "q", false, "print the load's progress every 5 seconds rather than every 100000 rows")
	f.StringVar(&c.generate, "generate", "client", "client (COPY in parallel over --init-conns) | server (generate_series)")
	f.IntVar(&c.initConns, "init-conns", 2, "connections loading, vacuuming and indexing pgbench_accounts at once (1 = pgbench's single connection and COPY FREEZE)")
	f.BoolVarP(&c.noVacuum, "no-vacuum", "n", false, "skip VACUUM after loading")
	// check audits the tables as they are (the scale is the number of
	// branches): it takes these, so one command line serves every verb,
	// and says it ignored them.
	workload.IgnoredBy(f, workload.VerbCheck, "scale", "foreign-keys", "partitions", "partition-method", "fillfactor", "unlogged-tables",
		"tablespace", "index-tablespace", "init-steps", "quiet", "generate", "init-conns", "no-vacuum")
	c.changed = f.Changed
	c.scaleExplicit = func() bool { return f.Changed("scale") }
}

func (c *tpcbConfig) given(name string) bool { return c.changed != nil && c.changed(name) }

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
	case c.given("partition-method") && c.partitions == 0:
		// pgbench: "--partition-method requires greater than zero --partitions".
		return fmt.Errorf("--partition-method requires greater than zero --partitions")
	case c.given("init-steps") && c.given("generate"):
		return fmt.Errorf("--generate and --init-steps both choose how the data is generated: give one (g client-side, G server-side)")
	}
	if c.given("init-steps") {
		if err := CheckInitSteps(c.initSteps); err != nil {
			return fmt.Errorf("--init-steps: %w", err)
		}
	}
	switch strings.ToLower(c.partitionRaw) {
	case "range", "hash":
		c.partitionRaw = strings.ToLower(c.partitionRaw)
	default:
		return fmt.Errorf("--partition-method %q is not allowed (allowed: range, hash)", c.partitionRaw)
	}
	if c.partitions > int(c.scale)*naccounts {
		return fmt.Errorf("--partitions must be at most the number of accounts (%d), got %d", c.scale*naccounts, c.partitions)
	}
	return nil
}

// steps are the initialization steps the configuration asks for, as
// pgbench derives them: -I (default dtgvp, G for --generate server),
// without v under --no-vacuum, with f appended under --foreign-keys.
func (c *tpcbConfig) steps() string {
	steps := c.initSteps
	if !c.given("init-steps") {
		steps = DefaultInitSteps
		if c.generate == "server" {
			steps = "dtGvp"
		}
	}
	if c.noVacuum {
		steps = strings.ReplaceAll(steps, "v", " ")
	}
	if c.foreignKeys && !strings.Contains(steps, "f") {
		steps += "f"
	}
	return steps
}

// initConfig is the configuration as RunInitSteps takes it.
func (c *tpcbConfig) initConfig() InitConfig {
	ic := InitConfig{Steps: c.steps(), Scale: c.scale, Fillfactor: c.fillfactor, Partitions: c.partitions,
		UnloggedTables: c.unlogged, Tablespace: c.tablespace, IndexTablespace: c.indexTablespace,
		Quiet: c.quiet, Conns: c.initConns}
	if c.partitions > 0 {
		ic.PartitionMethod = c.partitionRaw
	}
	return ic
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

// Hooks: tpcb is init and check; the builtins run on its tables.
func (g *tpcbGen) Hooks() workload.Hooks {
	return workload.Hooks{
		Validate: g.cfg.validate,
		Init: func(ctx context.Context, t *pg.Target, opts workload.InitOptions) error {
			return initTPCB(ctx, t, &g.cfg, opts)
		},
		Check:  checkTPCB,
		Tables: tpcbTables,
	}
}

// tpcbTables are pgbench's tables.
var tpcbTables = []string{"pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history"}

// tpcbMarker is the key of pgbench's tables in the init marker table.
const tpcbMarker = "tpcb"

func (c *tpcbConfig) settings() string {
	return c.current().String()
}

// tpcbSettings are the settings that shape pgbench's tables, as asked for
// or as found in the catalog.
type tpcbSettings struct {
	scale, partitions, fillfactor int
	method                        string // "range", "hash", "" without partitions
	unlogged, foreignKeys         bool
	tablespace, indexTablespace   string
}

func (s tpcbSettings) String() string {
	out := fmt.Sprintf("scale=%d partitions=%d", s.scale, s.partitions)
	if s.partitions > 0 {
		out += " method=" + s.method
	}
	out += fmt.Sprintf(" fillfactor=%d unlogged=%t foreign-keys=%t", s.fillfactor, s.unlogged, s.foreignKeys)
	if s.tablespace != "" {
		out += " tablespace=" + s.tablespace
	}
	if s.indexTablespace != "" {
		out += " index-tablespace=" + s.indexTablespace
	}
	return out
}

// current is what the flags ask for.
func (c *tpcbConfig) current() tpcbSettings {
	s := tpcbSettings{scale: c.scale, partitions: c.partitions, fillfactor: c.fillfactor, unlogged: c.unlogged,
		foreignKeys: strings.Contains(c.steps(), "f"), tablespace: c.tablespace, indexTablespace: c.indexTablespace}
	if c.partitions > 0 {
		s.method = c.partitionRaw
	}
	return s
}

// differences lists what the given flags ask for that the existing tables
// do not have: "scale 10 (asked 2)".
func (c *tpcbConfig) differences(have tpcbSettings) []string {
	want := c.current()
	var out []string
	diff := func(flag, what string, had, asked any) {
		if c.given(flag) && fmt.Sprint(had) != fmt.Sprint(asked) {
			out = append(out, fmt.Sprintf("%s %v (asked %v)", what, had, asked))
		}
	}
	diff("scale", "scale", have.scale, want.scale)
	diff("partitions", "partitions", have.partitions, want.partitions)
	if have.partitions > 0 && want.partitions > 0 {
		diff("partition-method", "partition method", have.method, want.method)
	}
	diff("fillfactor", "fillfactor", have.fillfactor, want.fillfactor)
	diff("unlogged-tables", "unlogged", have.unlogged, want.unlogged)
	diff("foreign-keys", "foreign keys", have.foreignKeys, want.foreignKeys)
	diff("tablespace", "tablespace", quoted(have.tablespace), quoted(want.tablespace))
	diff("index-tablespace", "index tablespace", quoted(have.indexTablespace), quoted(want.indexTablespace))
	return out
}

func quoted(s string) string {
	if s == "" {
		return "(default)"
	}
	return strconv.Quote(s)
}

// adopt takes the existing tables' settings for the flags not given: a
// fresh load keeps the scale and options unless told otherwise.
func (c *tpcbConfig) adopt(have tpcbSettings) {
	if !c.given("scale") {
		c.scale = have.scale
	}
	if !c.given("partitions") {
		c.partitions = have.partitions
		if !c.given("partition-method") && have.method != "" {
			c.partitionRaw = have.method
		}
	}
	if !c.given("fillfactor") {
		c.fillfactor = have.fillfactor
	}
	if !c.given("unlogged-tables") {
		c.unlogged = have.unlogged
	}
	if !c.given("foreign-keys") && !c.given("init-steps") {
		c.foreignKeys = have.foreignKeys
	}
	if !c.given("tablespace") {
		c.tablespace = have.tablespace
	}
	if !c.given("index-tablespace") {
		c.indexTablespace = have.indexTablespace
	}
}

// detectSettings reads the settings of the existing tables from the
// catalog, whoever made them. Dialects without PostgreSQL's catalog give
// the scale only.
func detectSettings(ctx context.Context, conn *pgx.Conn) (tpcbSettings, error) {
	var s tpcbSettings
	scale, err := detectScale(ctx, conn)
	if err != nil {
		return s, err
	}
	s.scale, s.fillfactor = scale, 100
	var ff, strat string
	err = conn.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pg_inherits WHERE inhparent = 'pgbench_accounts'::regclass)::int,
		COALESCE((SELECT partstrat::text FROM pg_partitioned_table WHERE partrelid = 'pgbench_accounts'::regclass), ''),
		COALESCE((SELECT split_part(o, '=', 2) FROM pg_class c, unnest(c.reloptions) o
			WHERE c.oid = 'pgbench_branches'::regclass AND o LIKE 'fillfactor=%'), '100'),
		(SELECT relpersistence = 'u' FROM pg_class WHERE oid = 'pgbench_branches'::regclass),
		EXISTS (SELECT FROM pg_constraint WHERE contype = 'f' AND conrelid = 'pgbench_history'::regclass),
		COALESCE((SELECT spcname FROM pg_class c JOIN pg_tablespace t ON t.oid = c.reltablespace WHERE c.oid = 'pgbench_branches'::regclass), ''),
		COALESCE((SELECT spcname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_tablespace t ON t.oid = c.reltablespace
			WHERE i.indrelid = 'pgbench_branches'::regclass AND i.indisprimary), '')`).
		Scan(&s.partitions, &strat, &ff, &s.unlogged, &s.foreignKeys, &s.tablespace, &s.indexTablespace)
	if err != nil {
		return tpcbSettings{scale: scale, fillfactor: 100}, nil // not PostgreSQL's catalog
	}
	s.fillfactor, _ = strconv.Atoi(ff)
	switch strat {
	case "r":
		s.method = "range"
	case "h":
		s.method = "hash"
	}
	return s, nil
}

// requireTables fails with one line unless pgbench's tables can be run on:
// an init txload began and did not finish is refused; tables without a
// marker were made by pgbench itself and must have their primary keys.
func requireTables(ctx context.Context, conn *pgx.Conn) error {
	m, err := workload.ReadMarker(ctx, conn, tpcbMarker)
	if err != nil {
		return err
	}
	if m.Found {
		return m.Require(tpcbMarker)
	}
	var tables, keys int
	if err := conn.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM information_schema.tables WHERE table_schema = `+workload.SchemaSQL+` AND table_name = ANY($1)),
		(SELECT count(*) FROM information_schema.table_constraints WHERE table_schema = `+workload.SchemaSQL+`
			AND constraint_type = 'PRIMARY KEY' AND table_name IN ('pgbench_accounts', 'pgbench_branches', 'pgbench_tellers'))`,
		tpcbTables).Scan(&tables, &keys); err != nil {
		return fmt.Errorf("looking for pgbench's tables: %w", err)
	}
	switch {
	case tables == 0:
		return &workload.IncompleteError{Workload: tpcbMarker, Msg: "pgbench's tables do not exist in this database: initialize them first (`txload init tpcb`, or `pgbench -i`), or give --init fresh"}
	case tables < len(tpcbTables) || keys < 3:
		return &workload.IncompleteError{Workload: tpcbMarker, Msg: fmt.Sprintf(
			"pgbench's tables are incomplete (%d of 4 tables, %d of 3 primary keys: an init was interrupted?): run `txload init tpcb --drop`", tables, keys)}
	}
	return nil
}

func initTPCB(ctx context.Context, t *pg.Target, c *tpcbConfig, opts workload.InitOptions) error {
	conn, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if requireTables(ctx, conn) == nil {
		have, err := detectSettings(ctx, conn)
		if err != nil {
			return err
		}
		if !opts.Drop {
			if diffs := c.differences(have); len(diffs) > 0 {
				return &workload.SettingsError{Workload: tpcbMarker, Msg: fmt.Sprintf(
					"init tpcb: pgbench's tables exist with other settings: %s; --drop recreates them", strings.Join(diffs, ", "))}
			}
			opts.Logf("init: pgbench tables already hold scale %d; --drop recreates them\n", have.scale)
			return nil
		}
		c.adopt(have)
		opts.Logf("init: recreating pgbench's tables with %s\n", c.current())
	}
	// Until the end, the marker says the tables are being loaded: an
	// interrupted init is refused by the runs that follow.
	if err := workload.BeginLoad(ctx, conn, tpcbMarker, c.settings()); err != nil {
		return fmt.Errorf("init tpcb: %w", err)
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	ic := c.initConfig()
	ic.markerManaged = true
	if err := RunInitSteps(ctx, t, ic, log); err != nil {
		return fmt.Errorf("init tpcb: %w", err)
	}
	if err := recordInit(ctx, conn, strings.ContainsAny(ic.Steps, "tgG")); err != nil {
		return fmt.Errorf("init tpcb: %w", err)
	}
	if err := workload.EndLoad(ctx, conn, tpcbMarker, c.settings()); err != nil {
		return fmt.Errorf("init tpcb: %w", err)
	}
	return nil
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

// maintenanceMem is the session's memory for VACUUM and index builds: the
// server's default (64MB) makes the primary key of a large scale sort on
// disk. It is a session setting: the server's configuration is untouched.
const maintenanceMem = "SET maintenance_work_mem = '1GB'"

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
			// Behind a pooler a session setting would outlive us.
			if !t.Pooled() {
				_, _ = cn.Exec(gctx, maintenanceMem)
			}
			if _, err := cn.Exec(gctx, s); err != nil {
				return &QueryError{SQL: s, Err: err}
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
