package append

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/txload/txload/history"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// checkedHistory is the history check holds the tables to: read and
// checked, its checker closed and waiting for the final read.
type checkedHistory struct {
	file    *history.File
	checker *history.Checker
	// level is the one it is judged at: --isolation, else the one the
	// file records, else serializable; note says so when it is not the
	// file's own (history.File.JudgedAt).
	level history.Level
	note  string
}

// validateCheck checks the flags of check: --history, if given, is the
// file a run wrote, read and checked here, before the database is touched
// (a file that cannot be checked is bad input).
func (g *gen) validateCheck() error {
	if err := g.validateFlags(); err != nil {
		return err
	}
	c := &g.cfg
	if c.history == "" {
		return nil // the tables alone
	}
	format := history.FormatOf(c.history)
	switch g.raw.format {
	case "jsonl":
		format = history.JSONL
	case "edn":
		format = history.EDN
	}
	f, err := os.Open(c.history)
	if err != nil {
		return fmt.Errorf("--history: %w", err)
	}
	defer f.Close()
	file, checker, err := history.CheckFileForFinal(f, c.history, format)
	if err != nil {
		return fmt.Errorf("--history: %w", err)
	}
	g.checked = &checkedHistory{file: file, checker: checker}
	g.checked.level, g.checked.note = file.JudgedAt(c.level(), g.flags.Changed("isolation"))
	return nil
}

// check reads every key of the history's range from the tables in one
// snapshot and holds the lists to the history: what changed in the
// database since the run (or behind it) shows, as the run's own final read
// would have shown it. Without a history, it reads every key and reports
// what the tables show alone.
func (g *gen) check(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
	marker, err := g.marker(ctx, t)
	if err != nil {
		return nil, err
	}
	if res, err := workload.CheckColumns(ctx, t, workload.ColumnsOf(schemaDDL)); res != nil || err != nil {
		return res, err
	}
	out, err := g.checkTables(ctx, t)
	if err != nil {
		return nil, err
	}
	out.Violations = append(marker, out.Violations...)
	return out, nil
}

// marker requires a complete init, and holds the settings its marker
// recorded to the tables the check reads: a marker saying other tables
// is a violation, and so is a txn table beside them.
func (g *gen) marker(ctx context.Context, t *pg.Target) ([]string, error) {
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	s := g.schema()
	m, err := workload.ReadMarker(ctx, conn, s.Workload)
	if err == nil {
		err = m.Require(s.Workload)
	}
	if err != nil {
		return nil, err
	}
	var found []string
	if m.Settings != s.Settings {
		found = append(found, fmt.Sprintf("the append tables are %s (%s), but init recorded %s in %s: the marker was changed after init",
			strings.Join(tables, ", "), s.Settings, m.Settings, workload.MarkerTable))
	}
	// A key lives in the table its hash selects of the three: init makes
	// no other txn relation, and no run does.
	var others []string
	if err := conn.QueryRow(ctx, othersSQL, tables).Scan(&others); err != nil {
		return nil, fmt.Errorf("listing the txn tables: %w", err)
	}
	if len(others) > 0 {
		found = append(found, fmt.Sprintf("%s beside the append tables %s: %s (init makes those three, no run makes another, and no transaction or check reads one)",
			metrics.Count(len(others), "relation"), strings.Join(tables, ", "), strings.Join(others, ", ")))
	}
	return found, nil
}

// othersSQL lists the relations of the tables' schema named as append's
// are, in any case, of any kind that holds or shows rows (a table, a
// view, a materialized view, a sequence, a foreign or partitioned table, a
// composite type): txn, txn3, TXN3, txn03, txn_extra, txn3_x, but not
// txnlog. The three tables are left out; indexes too (each belongs to a
// relation, named here if it is one of these), each of the others named
// with its kind.
const othersSQL = `SELECT COALESCE(array_agg(format('%s %I', CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view'
	WHEN 'S' THEN 'sequence' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'c' THEN 'composite type' ELSE 'relation' END,
	c.relname) ORDER BY c.relname), '{}')
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = ` + workload.SchemaSQL + ` AND pg_catalog.lower(c.relname) ~ '^txn[0-9]*($|_)' AND c.relname <> ALL($1::TEXT[])
	AND c.relkind NOT IN ('i', 'I')`

// checkTables is check's reading of the tables, held to the history if
// one is given.
func (g *gen) checkTables(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
	h := g.checked
	if h == nil {
		final, err := tablesAlone(ctx, t)
		if err != nil {
			return nil, err
		}
		out := &workload.CheckResult{Values: map[string]int64{}, Lines: []workload.Line{{Label: "history",
			Value: "none given: --history FILE, the file a run wrote, holds each list to it; the tables alone show rows no transaction writes and a value twice"}}}
		judge(out, final.res, final, g.cfg.level(), func(i int) string { return fmt.Sprintf("attempt %d", i) })
		return out, nil
	}
	// The keys from the history's least to the largest it must find a
	// list for: every run starts above the keys the tables hold, so a
	// later run's keys are above those.
	lo, hi, ok := h.checker.FinalRange()
	if !ok { // nothing to read: a range of no INT key, no rows above it
		lo, hi = math.MaxInt32+1, math.MaxInt32
	}
	final, err := finalRead(ctx, t, h.checker, lo, hi, true)
	if err != nil {
		return nil, err
	}
	out := historyBlock(final.res, fmt.Sprintf("read from %s (%s)", g.cfg.history, h.file.Format))
	keys := fmt.Sprintf("%d to %d, from the history's least key to the largest it committed an append to", lo, hi)
	if !ok {
		keys = "none: the history committed no append"
	}
	out.Lines = append(out.Lines, workload.Line{Label: "keys", Value: keys})
	if l, ok := final.outside.line(out.Values); ok {
		out.Lines = append(out.Lines, l)
	}
	if h.note != "" {
		out.Lines = append(out.Lines, workload.Line{Label: "level", Value: h.note})
	}
	if note := h.file.ClientsNote(); note != "" {
		out.Lines = append(out.Lines, workload.Line{Label: "clients", Value: note})
	}
	out.Values["final_read_rows_above"] = final.above
	judge(out, final.res, final, h.level, h.file.Name)
	if b := h.file.Beyond(); b != "" {
		out.Violations = append(out.Violations, "history: attempts "+b)
	}
	return out, nil
}

// line is the line of the keys outside the history's, if the tables hold
// any: an earlier run's and a later run's (each run starts above the keys
// the tables hold), held to what the tables show alone; its figures go to
// values.
func (o *outsideRows) line(values map[string]int64) (workload.Line, bool) {
	a := o.alone
	values["final_read_outside_keys"] = int64(o.below + o.above)
	values["final_read_outside_stray_rows"] = int64(len(a.strays))
	if o.below+o.above+len(a.strays) == 0 {
		return workload.Line{}, false
	}
	found := a.res.Final.Found()
	if len(a.strays) > 0 {
		found = append(found, metrics.Count(len(a.strays), "row")+" no transaction wrote")
	}
	verdict := "ok"
	if len(found) > 0 {
		verdict = strings.Join(found, ", ")
	}
	return workload.Line{Label: "outside", Value: fmt.Sprintf("%s below the history's and %d above (an earlier run's, a later run's: "+
		"each run starts above the keys the tables hold), %s: not held to the history, but to what the tables show alone: %s",
		metrics.Count(o.below, "key"), o.above, metrics.Count(a.res.Final.Elements, "element"), verdict)}, true
}
