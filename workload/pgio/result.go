package pgio

import (
	"fmt"
	"math"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// Result is what a pgio run measured.
type Result struct {
	// Config is the run's settings, with the tables and scale it ran on.
	Config  Config
	Dialect pg.Dialect
	Mode    Mode // ModeServer or ModeClient
	// Elapsed is the measured period.
	Elapsed time.Duration
	// Kinds are the measured statements by kind; Warmup counts the
	// warm-up's, Drain those in flight at the window's end.
	Kinds  [numKinds]KindStats
	Warmup [numKinds]int64
	Drain  [numKinds]Drained
	// Intervals are the progress intervals, warm-up first, of the
	// measured ones the first keptIntervals: enough to list them all in
	// the report when they are few. MeasuredIntervals is their number.
	Intervals         []*Interval
	MeasuredIntervals int
	// StartSpread is the time between the first and the last session's
	// start; -1 when fewer than two are known.
	StartSpread time.Duration
	// Counters is what the server's counters gained over the measured
	// period; DB and Stmts say which were read (DBWhy and StmtsWhy why
	// not). Database is the run's database.
	Counters        Counters
	DB, Stmts       bool
	DBWhy, StmtsWhy string
	Database        string
	// Notes qualify the counters: how exact their period is.
	Notes []string
	// Disk is the device of the tables' file, whose counters Counters.Disk
	// holds; nil when not read, and DiskWhy says why.
	Disk    *Disk
	DiskWhy string
	// Failures are the sessions that ended on an error; Measured is the
	// start of the measured period, on the run's timeline.
	Failures []SessionFailure
	Measured time.Time
	// SizesBefore and SizesAfter are the tables' sizes around the run
	// (HaveSizes: PostgreSQL).
	SizesBefore, SizesAfter Sizes
	HaveSizes               bool
}

// rate is n per second of d.
func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Statements is every measured statement.
func (r *Result) Statements() int64 { return r.Kinds[Select].Statements + r.Kinds[Update].Statements }

// BlocksSource is the counters the headline LIOPS come from: the run's own
// statements where pg_stat_statements is read and kept every entry through
// the run, else the database's.
func (r *Result) BlocksSource() (Blocks, string, bool) {
	switch {
	case r.Stmts && r.Counters.Dealloc == 0:
		return r.Counters.StmtBlocks(), "the run's statements, pg_stat_statements", true
	case r.DB:
		return r.Counters.DB.Blocks, "pg_stat_database of " + r.Database, true
	case r.Stmts:
		return r.Counters.StmtBlocks(), "the run's statements, pg_stat_statements, which evicted entries during the run", true
	}
	return Blocks{}, "", false
}

// Headline is the one line that says what the run sustained.
func (r *Result) Headline() string {
	if r.Dialect != pg.PostgreSQL {
		return fmt.Sprintf("rows read %.0f/s, rows written %.0f/s (on %s rows are the measure, as ybio's RIOPS: PostgreSQL's block counters do not describe its storage layer)",
			rate(r.Kinds[Select].Rows, r.Elapsed), rate(r.Kinds[Update].Rows, r.Elapsed), r.Dialect)
	}
	b, src, ok := r.BlocksSource()
	if !ok {
		return fmt.Sprintf("rows read %.0f/s, rows written %.0f/s (no block counters: %s)",
			rate(r.Kinds[Select].Rows, r.Elapsed), rate(r.Kinds[Update].Rows, r.Elapsed), r.StmtsWhy)
	}
	return fmt.Sprintf("LIOPS %.0f/s, PIOPS %.0f/s, hit ratio %s (%s)",
		rate(b.Logical(), r.Elapsed), rate(b.Read, r.Elapsed), pct(b.HitRatio(), b.Logical()), src)
}

func pct(ratio float64, n int64) string {
	if n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f%%", 100*ratio)
}

func latency(h *hdr.Histogram) string {
	if h.TotalCount() == 0 {
		return "no statements"
	}
	return fmt.Sprintf("p50 %s, p99 %s, p99.9 %s, max %s", metrics.Micros(h.ValueAtQuantile(50)), metrics.Micros(h.ValueAtQuantile(99)),
		metrics.Micros(h.ValueAtQuantile(99.9)), metrics.Micros(h.Max()))
}

// Lines is the run's report block.
func (r *Result) Lines() []workload.Line {
	c := r.Config
	var out []workload.Line
	add := func(label, format string, args ...any) {
		out = append(out, workload.Line{Label: label, Value: fmt.Sprintf(format, args...)})
	}
	how := "client mode: prepared statements from txload"
	if r.Mode == ModeServer {
		how = "server mode: pgio's loop in a PL/pgSQL procedure per session"
	}
	shape := "each statement its own transaction (--commit statement)"
	if c.Commit == CommitRun {
		shape = "the whole test one transaction per session, as pgio's mypgio() (--commit run)"
	}
	_, sw := c.Span(Select)
	_, uw := c.Span(Update)
	rng := "exactly a work unit of rows (--range exact)"
	if c.Range == RangePgio {
		rng = "BETWEEN k AND k+work unit, as pgio (--range pgio)"
	}
	add("pgio", "%s × %s, %d rows per table, work unit %d (%s a SELECT), update work unit %d (%s an UPDATE): %s; %d%% updates; %s; %s",
		metrics.Count(c.Tables, "table"), metrics.Count(c.SessionsPerTable, "session"), c.Scale, c.WorkUnit, metrics.Count(sw, "row"), c.UpdateWorkUnit, metrics.Count(uw, "row"), rng,
		c.UpdatePct, how, shape)
	if c.Sessions() > 1 && r.StartSpread >= 0 {
		add("sessions started", "within %s of each other", spread(r.StartSpread))
	}
	add("headline", "%s", r.Headline())
	for k := Select; k < numKinds; k++ {
		ks := r.Kinds[k]
		if ks.Statements == 0 {
			add(k.String(), "no statements")
			continue
		}
		v := fmt.Sprintf("%d statements (%.1f/s), %d rows (%.0f/s); %s", ks.Statements, rate(ks.Statements, r.Elapsed),
			ks.Rows, rate(ks.Rows, r.Elapsed), latency(ks.Latency))
		if r.Stmts {
			sc := r.Counters.Stmts[k]
			per := 0.0
			if sc.Calls > 0 {
				per = float64(sc.Logical()) / float64(sc.Calls)
			}
			v += fmt.Sprintf("; blocks hit %d, read %d (%.1f per statement)", sc.Hit, sc.Read, per)
		}
		add(k.String(), "%s", v)
	}
	if r.Stmts {
		b := r.Counters.StmtBlocks()
		add("statements' blocks", "LIOPS %.0f/s, PIOPS %.0f/s, hit ratio %s: %d hit, %d read (pg_stat_statements: the run's SELECT and UPDATE, heap and index blocks)",
			rate(b.Logical(), r.Elapsed), rate(b.Read, r.Elapsed), pct(b.HitRatio(), b.Logical()), b.Hit, b.Read)
	} else {
		add("statements' blocks", "not measured: %s", r.StmtsWhy)
	}
	if r.DB {
		d := r.Counters.DB
		add("database blocks", "LIOPS %.0f/s, PIOPS %.0f/s, hit ratio %s: %d hit, %d read; tuples returned %.0f/s, fetched %.0f/s, updated %.0f/s (pg_stat_database of %s: every session in it, catalogs and txload's own queries included)",
			rate(d.Logical(), r.Elapsed), rate(d.Read, r.Elapsed), pct(d.HitRatio(), d.Logical()), d.Hit, d.Read,
			rate(d.TupReturned, r.Elapsed), rate(d.TupFetched, r.Elapsed), rate(d.TupUpdated, r.Elapsed), r.Database)
	} else {
		add("database blocks", "not measured: %s", r.DBWhy)
	}
	if r.DB {
		d := r.Counters.DB
		secs := int64(math.Round(r.Elapsed.Seconds()))
		add("runit.sh", "DBNAME:  %s. %d schemas, %d threads(each). Run time: %d seconds. RIOPS >%d< CACHE_HITS/s >%d< (pgio's own summary: pg_stat_database's blks_read and blks_hit per second)",
			r.Database, c.Tables, c.SessionsPerTable, secs, int64(rate(d.Read, r.Elapsed)), int64(rate(d.Hit, r.Elapsed)))
	}
	if r.Disk != nil {
		d := r.Counters.Disk.Rates(r.Elapsed)
		add("disk", "%s (the device of %s's file, /proc/diskstats): reads %.1f/s (%.2f MiB/s), writes %.1f/s (%.2f MiB/s), busy %.1f%% of the time (every process's I/O on the device)",
			r.Disk.Name, Table(1), d.ReadsPerSec, d.ReadMiBPerSec, d.WritesPerSec, d.WriteMiBPerSec, d.Util)
	} else {
		add("disk", "not measured: %s", r.DiskWhy)
	}
	if r.HaveSizes {
		b, a := r.SizesBefore, r.SizesAfter
		add("tables", "heap %d → %d blocks, indexes %d → %d blocks (pg_relation_size of the run's tables before and after it)", b.Heap, a.Heap, b.Index, a.Index)
	}
	for _, f := range r.Failures {
		when := fmt.Sprintf("at %.2fs", f.At.Sub(r.Measured).Seconds())
		switch {
		case f.At.IsZero():
			when = "before its start"
		case f.Phase == 0:
			when = "in the warm-up"
		}
		v := fmt.Sprintf("session %d on %s %s: %s", f.Session, f.Table, when, oneLine(f.Err.Error()))
		if c.Commit == CommitRun {
			v += fmt.Sprintf("; its transaction rolled back, undoing every update it made in the %s (%d reported before it ended)", map[int]string{0: "warm-up", 1: "measured period"}[f.Phase], f.Updates)
		}
		add("session ended", "%s", v)
	}
	for _, n := range r.Notes {
		add("note", "%s", n)
	}
	n := r.Nominal()
	add("pgio counters", "loop_iterations %d, sql_selects %d, sql_updates %d, select_blk_touch_cnt %d, update_blk_touch_cnt %d, sql_select_max_tm %.6f, sql_update_max_tm %.6f (pgio's nominal counts: a work unit of blocks per statement)",
		n.LoopIterations, n.SQLSelects, n.SQLUpdates, n.SelectBlkTouch, n.UpdateBlkTouch, n.SelectMax.Seconds(), n.UpdateMax.Seconds())
	if w := r.Warmup[Select] + r.Warmup[Update]; w > 0 {
		add("warm-up", "%d statements, not in the figures above", w)
	}
	if d := r.Drain[Select].Statements + r.Drain[Update].Statements; d > 0 {
		add("drain", "%s in flight at the window's end (%s, %s), not in the figures above; the server's counters hold their blocks", metrics.Count(d, "statement"),
			metrics.Count(r.Drain[Select].Statements, "select"), metrics.Count(r.Drain[Update].Statements, "update"))
	}
	measured := r.MeasuredIntervals
	if measured > 0 && measured <= maxReportIntervals {
		for _, iv := range r.Intervals {
			if !iv.Warmup {
				out = append(out, workload.Line{Label: fmt.Sprintf("%7.1fs", iv.Label().Seconds()), Value: r.IntervalLine(iv)})
			}
		}
	} else if measured > maxReportIntervals {
		add("intervals", "%d: see the progress lines", measured)
	}
	return out
}

// maxReportIntervals bounds the intervals listed in the report.
const maxReportIntervals = 30

func spread(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%dµs", d.Microseconds())
	}
	return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1e3)
}

// Nominal is pgio's own per-session counters, summed: statements, and the
// blocks pgio supposes they touched (a work unit each).
type Nominal struct {
	LoopIterations, SQLSelects, SQLUpdates int64
	SelectBlkTouch, UpdateBlkTouch         int64
	SelectMax, UpdateMax                   time.Duration
}

// Nominal returns pgio's counters for the measured statements.
func (r *Result) Nominal() Nominal {
	s, u := r.Kinds[Select], r.Kinds[Update]
	return Nominal{
		LoopIterations: s.Statements + u.Statements, SQLSelects: s.Statements, SQLUpdates: u.Statements,
		SelectBlkTouch: s.Statements * r.Config.WorkUnit, UpdateBlkTouch: u.Statements * r.Config.UpdateWorkUnit,
		SelectMax: time.Duration(s.Latency.Max()) * time.Microsecond, UpdateMax: time.Duration(u.Latency.Max()) * time.Microsecond,
	}
}

// IntervalLine is an interval's figures on one line.
func (r *Result) IntervalLine(iv *Interval) string {
	return intervalLine(r.Dialect, iv, blocksLive(r.Mode, r.Config.Commit, r.Stmts, r.DB))
}

// blocksLive says which block counters move as a run goes: pg_stat_statements'
// ("stmts"), pg_stat_database's in client mode with a commit per statement
// ("db": every session flushes them at each interval's end), or none (the
// procedures' backends flush them only when their call returns, and no
// backend flushes them inside a transaction).
func blocksLive(m Mode, commit Commit, stmts, db bool) string {
	switch {
	case stmts:
		return "stmts"
	case db && m == ModeClient && commit == CommitStatement:
		return "db"
	}
	return ""
}

func intervalLine(d pg.Dialect, iv *Interval, live string) string {
	el := iv.End - iv.Start
	s, u := iv.Kinds[Select], iv.Kinds[Update]
	var b strings.Builder
	fmt.Fprintf(&b, "select %8.1f/s  update %8.1f/s  rows %9.0f/s", rate(s.Statements, el), rate(u.Statements, el), rate(s.Rows+u.Rows, el))
	if d == pg.PostgreSQL && iv.HaveCounters && live != "" {
		blocks := iv.Counters.DB.Blocks
		if live == "stmts" {
			blocks = iv.Counters.StmtBlocks()
		}
		fmt.Fprintf(&b, "  LIOPS %9.0f  PIOPS %7.0f  hit %s", rate(blocks.Logical(), el), rate(blocks.Read, el), pct(blocks.HitRatio(), blocks.Logical()))
		if sc := iv.Counters.Stmts[Select]; live == "stmts" && sc.Calls > 0 {
			fmt.Fprintf(&b, "  blk/select %.1f", float64(sc.Logical())/float64(sc.Calls))
		}
	}
	for _, k := range []Kind{Select, Update} {
		if h := iv.Kinds[k].Latency; h.TotalCount() > 0 {
			fmt.Fprintf(&b, "  %s p99 %s", k, metrics.Micros(h.ValueAtQuantile(99)))
		}
	}
	return b.String()
}

// Figures gives an interval's figures, those of its progress line, to set
// as gauges named pgio_*; live is blocksLive's.
func Figures(d pg.Dialect, iv *Interval, live string, set func(name, help string, value float64)) {
	el := iv.End - iv.Start
	s, u := iv.Kinds[Select], iv.Kinds[Update]
	set("pgio_selects_per_second", "pgio's SELECT statements per second in the last progress interval.", rate(s.Statements, el))
	set("pgio_updates_per_second", "pgio's UPDATE statements per second in the last progress interval.", rate(u.Statements, el))
	set("pgio_rows_per_second", "Rows pgio's statements read or wrote per second in the last progress interval.", rate(s.Rows+u.Rows, el))
	if d == pg.PostgreSQL && iv.HaveCounters && live != "" {
		blocks := iv.Counters.DB.Blocks
		if live == "stmts" {
			blocks = iv.Counters.StmtBlocks()
		}
		set("pgio_liops", "Logical I/Os (shared buffer hits and reads) per second in the last progress interval, from the server's counters.", rate(blocks.Logical(), el))
		set("pgio_piops", "Physical I/Os (shared buffer reads) per second in the last progress interval, from the server's counters.", rate(blocks.Read, el))
		if blocks.Logical() > 0 {
			set("pgio_hit_ratio", "Share of logical I/Os served from shared_buffers in the last progress interval.", blocks.HitRatio())
		}
	}
}

// ProgressLine is an interval as a progress line on stderr; live is
// blocksLive's.
func ProgressLine(d pg.Dialect, iv *Interval, live string) string {
	phase := ""
	if iv.Warmup {
		phase = " (warm-up)"
	}
	return fmt.Sprintf("pgio %6.1fs  %s%s", iv.Label().Seconds(), intervalLine(d, iv, live), phase)
}

// Values are the run's figures by key, for JSON: counts, rates per second,
// latencies in µs, ratios in parts per million.
func (r *Result) Values() map[string]int64 {
	v := map[string]int64{
		"sessions":   int64(r.Config.Sessions()),
		"elapsed_us": r.Elapsed.Microseconds(),
	}
	if r.StartSpread >= 0 {
		v["start_spread_us"] = r.StartSpread.Microseconds()
	}
	for k := Select; k < numKinds; k++ {
		ks := r.Kinds[k]
		n := k.String()
		v[n+"_statements"] = ks.Statements
		v[n+"_rows"] = ks.Rows
		v[n+"_warmup_statements"] = r.Warmup[k]
		v[n+"_drain_statements"], v[n+"_drain_rows"] = r.Drain[k].Statements, r.Drain[k].Rows
		if ks.Statements > 0 {
			v[n+"_p50_us"] = ks.Latency.ValueAtQuantile(50)
			v[n+"_p99_us"] = ks.Latency.ValueAtQuantile(99)
			v[n+"_p999_us"] = ks.Latency.ValueAtQuantile(99.9)
			v[n+"_max_us"] = ks.Latency.Max()
		}
		if r.Stmts {
			v[n+"_blks_hit"] = r.Counters.Stmts[k].Hit
			v[n+"_blks_read"] = r.Counters.Stmts[k].Read
			v[n+"_calls"] = r.Counters.Stmts[k].Calls
		}
	}
	v["rows_read_per_s"] = int64(math.Round(rate(r.Kinds[Select].Rows, r.Elapsed)))
	v["rows_written_per_s"] = int64(math.Round(rate(r.Kinds[Update].Rows, r.Elapsed)))
	if r.Stmts {
		b := r.Counters.StmtBlocks()
		v["stmt_blks_hit"], v["stmt_blks_read"] = b.Hit, b.Read
		v["stmt_liops"] = int64(math.Round(rate(b.Logical(), r.Elapsed)))
		v["stmt_piops"] = int64(math.Round(rate(b.Read, r.Elapsed)))
		v["stmt_hit_ratio_ppm"] = int64(math.Round(1e6 * b.HitRatio()))
		v["stmt_dealloc"] = r.Counters.Dealloc
	}
	if r.DB {
		d := r.Counters.DB
		v["db_blks_hit"], v["db_blks_read"] = d.Hit, d.Read
		v["db_liops"] = int64(math.Round(rate(d.Logical(), r.Elapsed)))
		v["db_piops"] = int64(math.Round(rate(d.Read, r.Elapsed)))
		v["db_hit_ratio_ppm"] = int64(math.Round(1e6 * d.HitRatio()))
		v["db_tup_updated"] = d.TupUpdated
	}
	if b, _, ok := r.BlocksSource(); ok {
		v["liops"] = int64(math.Round(rate(b.Logical(), r.Elapsed)))
		v["piops"] = int64(math.Round(rate(b.Read, r.Elapsed)))
		v["hit_ratio_ppm"] = int64(math.Round(1e6 * b.HitRatio()))
	}
	if r.DB {
		v["riops"] = int64(rate(r.Counters.DB.Read, r.Elapsed))
		v["cache_hits_per_s"] = int64(rate(r.Counters.DB.Hit, r.Elapsed))
	}
	if r.Disk != nil {
		d := r.Counters.Disk
		v["disk_reads"], v["disk_read_bytes"], v["disk_writes"], v["disk_write_bytes"], v["disk_busy_ms"] =
			d.Reads, d.ReadSectors*512, d.Writes, d.WriteSectors*512, d.BusyMs
	}
	if r.HaveSizes {
		v["heap_blocks_before"], v["heap_blocks_after"] = r.SizesBefore.Heap, r.SizesAfter.Heap
		v["index_blocks_before"], v["index_blocks_after"] = r.SizesBefore.Index, r.SizesAfter.Index
	}
	v["failed_sessions"] = int64(len(r.Failures))
	n := r.Nominal()
	v["loop_iterations"], v["sql_selects"], v["sql_updates"] = n.LoopIterations, n.SQLSelects, n.SQLUpdates
	v["select_blk_touch_cnt"], v["update_blk_touch_cnt"] = n.SelectBlkTouch, n.UpdateBlkTouch
	return v
}
