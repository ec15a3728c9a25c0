package pgbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sync/errgroup"

	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// The initialization steps pgbench -i knows, and its default.
const (
	AllInitSteps     = "dtgGvpf"
	DefaultInitSteps = "dtgvp"
)

// InitConfig is what pgbench -i does: its steps and the options that shape
// the tables.
type InitConfig struct {
	// Steps are -I's letters, run in order; spaces are ignored.
	Steps string
	// Scale, Fillfactor and Partitions are -s, -F and --partitions;
	// PartitionMethod is "range" or "hash" (with Partitions).
	Scale, Fillfactor, Partitions int
	PartitionMethod               string
	UnloggedTables                bool
	// Tablespace and IndexTablespace are --tablespace and
	// --index-tablespace ("" = the default).
	Tablespace, IndexTablespace string
	// Quiet is -q: one progress line every 5 seconds.
	Quiet bool
	// Major is the pgbench whose lines are printed: from 17 a progress
	// line names its table. 0 = 18.
	Major int
	// Terminal says the log is a terminal: progress lines overwrite each
	// other, as pgbench's do.
	Terminal bool
	// Conns above 1 is txload's own: pgbench_accounts is loaded, vacuumed
	// and indexed over that many connections at once (no COPY FREEZE).
	// 1 is pgbench's single connection and transaction.
	Conns int

	// markerManaged: `init tpcb` keeps txload's init marker itself.
	markerManaged bool
}

// CheckInitSteps is pgbench's checkInitSteps, with its messages.
func CheckInitSteps(steps string) error {
	if steps == "" {
		return errors.New("no initialization steps specified")
	}
	for i := 0; i < len(steps); i++ {
		if !strings.ContainsRune(AllInitSteps+" ", rune(steps[i])) {
			return fmt.Errorf("unrecognized initialization step \"%c\" (allowed step characters are: \"%s\")", steps[i], AllInitSteps)
		}
	}
	return nil
}

// initRun is one RunInitSteps.
type initRun struct {
	c       InitConfig
	t       *pg.Target
	conn    *pgx.Conn
	log     io.Writer
	dialect pg.Dialect
	version int // server_version_num, 0 when unknown
}

// RunInitSteps runs pgbench's initialization steps in order on one
// connection, as pgbench's runInitSteps does: each step prints its line
// ("dropping old tables...", "creating tables...", "creating N
// partitions...", "generating data (client-side)...", the progress of the
// accounts every 100000 rows or every 5 s under -q, "vacuuming...",
// "creating primary keys...", "creating foreign keys..."), the server's
// notices are printed as libpq prints them, and the run ends with "done in
// X s (step X s, ...).". On other dialects the SQL is adapted as `init
// tpcb` does.
func RunInitSteps(ctx context.Context, t *pg.Target, c InitConfig, log io.Writer) error {
	if err := CheckInitSteps(c.Steps); err != nil {
		return err
	}
	if c.Conns < 1 {
		c.Conns = 1
	}
	if c.Major == 0 {
		c.Major = 18
	}
	if c.Partitions > 0 && c.PartitionMethod == "" {
		c.PartitionMethod = "range"
	}
	var mu sync.Mutex
	conn, err := t.ConnectWith(ctx, func(cfg *pgx.ConnConfig) {
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			mu.Lock()
			defer mu.Unlock()
			printNotice(log, n)
		}
	})
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	server, err := pg.Detect(ctx, conn)
	if err != nil {
		return err
	}
	r := &initRun{c: c, t: t, conn: conn, log: log, dialect: server.Dialect}
	var num string
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')").Scan(&num); err == nil {
		r.version, _ = strconv.Atoi(num)
	}
	if c.Partitions > 0 && r.dialect == pg.CockroachDB {
		return fmt.Errorf("--partitions uses PostgreSQL's declarative partitioning, which %s does not support", r.dialect)
	}
	var stats []string
	var total float64
	for i := 0; i < len(c.Steps); i++ {
		var op string
		var step func(context.Context) error
		switch c.Steps[i] {
		case 'd':
			op, step = "drop tables", r.drop
		case 't':
			op, step = "create tables", r.create
		case 'g':
			op, step = "client-side generate", r.generateClient
		case 'G':
			op, step = "server-side generate", r.generateServer
		case 'v':
			op, step = "vacuum", r.vacuum
		case 'p':
			op, step = "primary keys", r.primaryKeys
		case 'f':
			op, step = "foreign keys", r.foreignKeys
		default:
			continue
		}
		start := time.Now()
		if err := step(ctx); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		d := time.Since(start).Seconds()
		total += d
		stats = append(stats, fmt.Sprintf("%s %.2f s", op, d))
	}
	fmt.Fprintf(log, "done in %.2f s (%s).\n", total, strings.Join(stats, ", "))
	return nil
}

// printNotice prints a notice as libpq's default notice processor does
// (pg.LibpqNotice): "NOTICE:  message", then its detail and hint.
func printNotice(w io.Writer, n *pgconn.Notice) {
	fmt.Fprint(w, pg.LibpqNotice((*pgconn.PgError)(n), "", ""))
}

func (r *initRun) exec(ctx context.Context, sqls ...string) error {
	for _, s := range sqls {
		if _, err := r.conn.Exec(ctx, s); err != nil {
			return &QueryError{SQL: s, Err: err}
		}
	}
	return nil
}

// QueryError is a statement of the init steps that failed.
type QueryError struct {
	SQL string
	Err error
}

func (e *QueryError) Error() string { return e.SQL + ": " + e.Err.Error() }
func (e *QueryError) Unwrap() error { return e.Err }

// Pgbench is the error as pgbench's executeStatement prints it, prog
// naming the program: "query failed: " and libpq's message, then "Query
// was: " and the statement.
func (e *QueryError) Pgbench(prog string) string {
	return fmt.Sprintf("%s: error: query failed: %s%s: detail: Query was: %s\n", prog, pg.LibpqMessage(e.Err, e.SQL, "UTF8"), prog, e.SQL)
}

func (r *initRun) logf(format string, args ...any) { fmt.Fprintf(r.log, format, args...) }

func (r *initRun) drop(ctx context.Context) error {
	r.logf("dropping old tables...\n")
	if err := r.exec(ctx, "drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers"); err != nil {
		return err
	}
	if !r.c.markerManaged {
		// What `txload init tpcb` recorded of the tables it made no longer
		// holds: the tables are judged by the catalog, as pgbench's own.
		if err := workload.ForgetMarker(ctx, r.conn, tpcbMarker); err != nil {
			return err
		}
	}
	return nil
}

func (r *initRun) create(ctx context.Context) error {
	r.logf("creating tables...\n")
	ddl := tableDDL(r.c, r.dialect, r.version)
	if err := r.exec(ctx, ddl[:4]...); err != nil {
		return err
	}
	if r.c.Partitions > 0 {
		r.logf("creating %d partitions...\n", r.c.Partitions)
		return r.exec(ctx, ddl[4:]...)
	}
	return nil
}

// quoteIdent quotes a name as PQescapeIdentifier does.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// initColumns are the columns init makes (pgbench's own init too: aid an
// integer of either size).
func initColumns() []workload.Column {
	return workload.ColumnsOf(strings.Join(tableDDL(InitConfig{Scale: 1}, pg.PostgreSQL, 0), ";"))
}

// tableDDL is pgbench's initCreateTables and createPartitions. Unlogged
// tables: pgbench up to 17 makes the partitioned pgbench_accounts unlogged
// too, which PostgreSQL 18 refuses ("partitioned tables cannot be
// unlogged"); from server 18 it stays permanent and its partitions are
// unlogged, as pgbench 18 does. CockroachDB and YugabyteDB get no storage
// parameters.
func tableDDL(c InitConfig, d pg.Dialect, version int) []string {
	aid := "int"
	if c.Scale >= 20000 {
		aid = "bigint" // as pgbench: 100000 × 20000 overflows int
	}
	tables := []struct{ name, cols string }{
		{"pgbench_history", "tid int,bid int,aid " + aid + ",delta int,mtime timestamp,filler char(22)"},
		{"pgbench_tellers", "tid int not null,bid int,tbalance int,filler char(84)"},
		{"pgbench_accounts", "aid " + aid + " not null,bid int,abalance int,filler char(84)"},
		{"pgbench_branches", "bid int not null,bbalance int,filler char(88)"},
	}
	unlogged := ""
	if c.UnloggedTables && d == pg.PostgreSQL {
		unlogged = "unlogged "
	}
	ts := ""
	if c.Tablespace != "" && d == pg.PostgreSQL {
		ts = " tablespace " + quoteIdent(c.Tablespace)
	}
	var out []string
	for _, tb := range tables {
		u := unlogged
		parted := tb.name == "pgbench_accounts" && c.Partitions > 0
		if parted && version >= 180000 {
			u = ""
		}
		s := fmt.Sprintf("create %stable %s(%s)", u, tb.name, tb.cols)
		switch {
		case parted:
			s += fmt.Sprintf(" partition by %s (aid)", c.PartitionMethod)
		case tb.name != "pgbench_history" && d == pg.PostgreSQL:
			s += fmt.Sprintf(" with (fillfactor=%d)", c.Fillfactor)
		}
		out = append(out, s+ts)
	}
	for p := 1; p <= c.Partitions; p++ {
		var bounds string
		if c.PartitionMethod == "range" {
			size := (int64(c.Scale)*naccounts + int64(c.Partitions) - 1) / int64(c.Partitions)
			lo, hi := "minvalue", "maxvalue"
			if p > 1 {
				lo = strconv.FormatInt(int64(p-1)*size+1, 10)
			}
			if p < c.Partitions {
				hi = strconv.FormatInt(int64(p)*size+1, 10)
			}
			bounds = fmt.Sprintf("for values from (%s) to (%s)", lo, hi)
		} else {
			bounds = fmt.Sprintf("for values with (modulus %d, remainder %d)", c.Partitions, p-1)
		}
		out = append(out, fmt.Sprintf("create %stable pgbench_accounts_%d\n  partition of pgbench_accounts\n  %s with (fillfactor=%d)",
			unlogged, p, bounds, c.Fillfactor))
	}
	return out
}

// progress prints pgbench's progress of a table's load: a line every
// 100000 rows, or under -q every 5 seconds (checked every 100 rows).
type progress struct {
	mu       sync.Mutex
	log      io.Writer
	table    string
	total    int64
	done     int64
	start    time.Time
	quiet    bool
	named    bool // the line names the table (pgbench 17 and later)
	eol      string
	interval int
	chars    int
}

func (r *initRun) newProgress(table string, total int64) *progress {
	eol := "\n"
	if r.c.Terminal {
		eol = "\r"
	}
	return &progress{log: r.log, table: table, total: total, start: time.Now(), quiet: r.c.Quiet,
		named: r.c.Major >= 17, eol: eol, interval: 1}
}

// add counts n rows loaded (from any connection) and prints what pgbench
// would have printed on the way.
func (p *progress) add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := int64(0); i < n; {
		// Jump to the next row pgbench looks at: a multiple of 100000 (of
		// 100 under -q), or the last row.
		step := int64(100000)
		if p.quiet {
			step = 100
		}
		next := (p.done/step + 1) * step
		if next > p.done+n-i {
			p.done += n - i
			return
		}
		i += next - p.done
		p.done = next
		elapsed := time.Since(p.start).Seconds()
		if p.quiet && p.done != p.total && elapsed < float64(p.interval*5) {
			continue
		}
		remaining := float64(p.total-p.done) * elapsed / float64(p.done)
		var line string
		if p.named {
			line = fmt.Sprintf("%d of %d tuples (%d%%) of %s done (elapsed %.2f s, remaining %.2f s)",
				p.done, p.total, p.done*100/p.total, p.table, elapsed, remaining)
		} else {
			line = fmt.Sprintf("%d of %d tuples (%d%%) done (elapsed %.2f s, remaining %.2f s)",
				p.done, p.total, p.done*100/p.total, elapsed, remaining)
		}
		if p.chars > len(line) && p.eol == "\r" {
			line += strings.Repeat(" ", p.chars-len(line))
		}
		p.chars = len(line)
		fmt.Fprint(p.log, line+p.eol)
		if p.quiet {
			p.interval = int(math.Ceil(elapsed / 5))
		}
	}
}

// finish ends a terminal's progress line.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.chars != 0 && p.eol == "\r" {
		fmt.Fprintf(p.log, "%s\r", strings.Repeat(" ", p.chars))
	}
}

// rowFunc writes row k (from 0) of a table in COPY's text format.
type rowFunc func(buf []byte, k int64) []byte

func branchRow(buf []byte, k int64) []byte {
	buf = strconv.AppendInt(buf, k+1, 10)
	return append(buf, "\t0\t\\N\n"...)
}

func tellerRow(buf []byte, k int64) []byte {
	buf = strconv.AppendInt(buf, k+1, 10)
	buf = append(buf, '\t')
	buf = strconv.AppendInt(buf, k/ntellers+1, 10)
	return append(buf, "\t0\t\\N\n"...)
}

func accountRow(buf []byte, k int64) []byte {
	buf = strconv.AppendInt(buf, k+1, 10)
	buf = append(buf, '\t')
	buf = strconv.AppendInt(buf, k/naccounts+1, 10)
	return append(buf, "\t0\t\n"...)
}

// copyRows streams rows [from, to) of a table through COPY, counting them
// in p.
func copyRows(ctx context.Context, c *pgconn.PgConn, stmt string, from, to int64, row rowFunc, p *progress) error {
	pr, pw := io.Pipe()
	written := make(chan struct{})
	go func() {
		defer close(written)
		w := bufio.NewWriterSize(pw, 256<<10)
		buf := make([]byte, 0, 64)
		var pending int64
		for k := from; k < to; k++ {
			buf = row(buf[:0], k)
			if _, err := w.Write(buf); err != nil {
				pw.CloseWithError(err)
				return
			}
			if pending++; pending == 100 && p != nil {
				p.add(pending)
				pending = 0
			}
		}
		if p != nil && pending > 0 {
			p.add(pending)
		}
		pw.CloseWithError(w.Flush())
	}()
	_, err := c.CopyFrom(ctx, pr, stmt)
	pr.Close() // a writer still writing stops at its next write
	<-written
	if err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

// generateClient is pgbench's initGenerateDataClientSide: in one
// transaction, truncate the tables and COPY branches, tellers and accounts
// (with FREEZE from PostgreSQL 14, unless partitioned). With Conns above 1
// the accounts load over several connections instead, outside it.
func (r *initRun) generateClient(ctx context.Context) error {
	r.logf("generating data (client-side)...\n")
	scale := int64(r.c.Scale)
	if r.c.Conns > 1 || r.dialect != pg.PostgreSQL {
		if err := r.exec(ctx, truncateSQL); err != nil {
			return err
		}
		for _, s := range serverGenerateSQL(r.c.Scale)[:2] {
			if err := r.exec(ctx, s); err != nil {
				return err
			}
		}
		p := r.newProgress("pgbench_accounts", scale*naccounts)
		defer p.finish()
		total, n := scale*naccounts, int64(r.c.Conns)
		grp, gctx := errgroup.WithContext(ctx)
		for i := int64(0); i < n; i++ {
			from, to := total*i/n, total*(i+1)/n
			grp.Go(func() error {
				cn, err := r.t.Connect(gctx)
				if err != nil {
					return err
				}
				defer cn.Close(context.WithoutCancel(gctx))
				return copyRows(gctx, cn.PgConn(), "copy pgbench_accounts (aid, bid, abalance, filler) from stdin", from, to, accountRow, p)
			})
		}
		return grp.Wait()
	}
	if err := r.exec(ctx, "begin", truncateSQL); err != nil {
		return err
	}
	for _, tb := range []struct {
		name string
		base int64
		row  rowFunc
	}{{"pgbench_branches", nbranches, branchRow}, {"pgbench_tellers", ntellers, tellerRow}, {"pgbench_accounts", naccounts, accountRow}} {
		stmt := "copy " + tb.name + " from stdin"
		if r.version >= 140000 && (tb.name != "pgbench_accounts" || r.c.Partitions == 0) {
			stmt += " with (freeze on)"
		}
		var p *progress
		if tb.name == "pgbench_accounts" || r.c.Major >= 17 {
			// pgbench up to 16 inserts branches and tellers row by row,
			// without progress lines.
			p = r.newProgress(tb.name, tb.base*scale)
		}
		err := copyRows(ctx, r.conn.PgConn(), stmt, 0, tb.base*scale, tb.row, p)
		if p != nil {
			p.finish()
		}
		if err != nil {
			_, _ = r.conn.Exec(context.WithoutCancel(ctx), "rollback")
			return err
		}
	}
	return r.exec(ctx, "commit")
}

const truncateSQL = "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers"

// generateServer is pgbench's initGenerateDataServerSide: in one
// transaction, truncate and insert from generate_series. CockroachDB's "/"
// yields a DECIMAL: other dialects get expressions every dialect evaluates
// alike.
func (r *initRun) generateServer(ctx context.Context) error {
	r.logf("generating data (server-side)...\n")
	sqls := serverGenerateSQL(r.c.Scale)
	if r.dialect == pg.PostgreSQL {
		sqls = []string{
			fmt.Sprintf("insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, %d) as bid", nbranches*r.c.Scale),
			fmt.Sprintf("insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / %d + 1, 0 from generate_series(1, %d) as tid", ntellers, ntellers*r.c.Scale),
			fmt.Sprintf("insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / %d + 1, 0, '' from generate_series(1, %d) as aid", naccounts, int64(naccounts)*int64(r.c.Scale)),
		}
	}
	if err := r.exec(ctx, "begin", truncateSQL); err != nil {
		return err
	}
	if err := r.exec(ctx, sqls...); err != nil {
		_, _ = r.conn.Exec(context.WithoutCancel(ctx), "rollback")
		return err
	}
	return r.exec(ctx, "commit")
}

// vacuum is pgbench's initVacuum; other dialects have nothing to vacuum.
func (r *initRun) vacuum(ctx context.Context) error {
	r.logf("vacuuming...\n")
	if r.dialect != pg.PostgreSQL {
		return nil
	}
	sqls := []string{"vacuum analyze pgbench_branches", "vacuum analyze pgbench_tellers",
		"vacuum analyze pgbench_accounts", "vacuum analyze pgbench_history"}
	if r.c.Conns > 1 {
		return parallel(ctx, r.t, sqls)
	}
	return r.exec(ctx, sqls...)
}

// primaryKeys is pgbench's initCreatePKeys.
func (r *initRun) primaryKeys(ctx context.Context) error {
	r.logf("creating primary keys...\n")
	var sqls []string
	for _, s := range []string{
		"alter table pgbench_branches add primary key (bid)",
		"alter table pgbench_tellers add primary key (tid)",
		"alter table pgbench_accounts add primary key (aid)",
	} {
		if r.c.IndexTablespace != "" && r.dialect == pg.PostgreSQL {
			s += " using index tablespace " + quoteIdent(r.c.IndexTablespace)
		}
		sqls = append(sqls, s)
	}
	if r.c.Conns > 1 {
		return parallel(ctx, r.t, sqls)
	}
	return r.exec(ctx, sqls...)
}

// foreignKeys is pgbench's initCreateFKeys. From PostgreSQL 18 a
// partitioned pgbench_accounts cannot be unlogged, and a permanent table
// cannot reference an unlogged one: with unlogged tables the accounts'
// reference to the branches is made on each (unlogged) partition instead,
// where pgbench 18 fails.
func (r *initRun) foreignKeys(ctx context.Context) error {
	r.logf("creating foreign keys...\n")
	sqls := append([]string(nil), foreignKeySQL...)
	if r.c.UnloggedTables && r.c.Partitions > 0 && r.version >= 180000 && r.dialect == pg.PostgreSQL {
		sqls = sqls[:0]
		for _, s := range foreignKeySQL {
			if !strings.HasPrefix(s, "alter table pgbench_accounts ") {
				sqls = append(sqls, s)
				continue
			}
			for p := 1; p <= r.c.Partitions; p++ {
				sqls = append(sqls, fmt.Sprintf("alter table pgbench_accounts_%d add constraint pgbench_accounts_%d_bid_fkey foreign key (bid) references pgbench_branches", p, p))
			}
		}
	}
	return r.exec(ctx, sqls...)
}
