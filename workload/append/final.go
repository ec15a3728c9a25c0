package append

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/history"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// finalResult is what the final read found: the history's result with its
// anomalies added, and the rows no transaction of the workload writes.
type finalResult struct {
	res    *history.Result
	strays []string // each described: "key 105 has a row in txn0, …"
	// above counts the rows above the keys read, in the same snapshot:
	// check cannot tell a later run's keys from rows nobody wrote.
	above int64
	// outside, when check read the keys outside the history's, is what
	// they show alone (as check without a history reads every key).
	outside *outsideRows
}

// outsideRows are the keys below and above the history's, read in the
// final read's snapshot and held to what the tables show alone.
type outsideRows struct {
	below, above int // keys read
	alone        *finalResult
}

// finalRead reads every key from lo to hi of the three tables in one
// snapshot (Jepsen's final read) and holds each key's list to the history
// c checked (closed, expecting it), and counts the rows above hi; with
// outside, it reads the other keys too, in the same snapshot, and holds
// them to what the tables show alone: a history never weakens the check.
func finalRead(ctx context.Context, t *pg.Target, c *history.Checker, lo, hi int64, outside bool) (*finalResult, error) {
	above := make([]string, len(tables))
	for i, tb := range tables {
		above[i] = "SELECT count(*) AS n FROM " + tb + " WHERE id > $1::BIGINT"
	}
	out := &finalResult{}
	err := readTables(ctx, t, func(tx pgx.Tx) error {
		if hi < math.MaxInt32 {
			if err := tx.QueryRow(ctx, "SELECT sum(n)::BIGINT FROM ("+strings.Join(above, " UNION ALL ")+") a", hi).Scan(&out.above); err != nil {
				return err
			}
		}
		if outside {
			o := &outsideRows{alone: newAlone()}
			var err error
			if lo > math.MinInt32 {
				if o.below, err = o.alone.scan(ctx, tx, math.MinInt32, lo-1); err != nil {
					return err
				}
			}
			if hi < math.MaxInt32 {
				if o.above, err = o.alone.scan(ctx, tx, hi+1, math.MaxInt32); err != nil {
					return err
				}
			}
			out.outside = o
		}
		res, err := c.CheckFinal(lo, hi, func(read func(int64, []int64) error) error {
			var err error
			out.strays, err = scanKeys(ctx, tx, lo, hi, read)
			return err
		})
		out.res = res
		return err
	})
	if err != nil {
		return nil, err
	}
	if o := out.outside; o != nil && out.res != nil {
		out.res.Findings = mergeFindings(out.res.Findings, o.alone.res.Findings)
	}
	return out, nil
}

// mergeFindings adds more's findings to fs, in class order: a class in
// both is counted once, with fs's example.
func mergeFindings(fs, more []history.Finding) []history.Finding {
	for _, m := range more {
		if i := slices.IndexFunc(fs, func(f history.Finding) bool { return f.Class == m.Class }); i >= 0 {
			fs[i].Count += m.Count
			continue
		}
		fs = append(fs, m)
	}
	order := history.Classes()
	slices.SortStableFunc(fs, func(a, b history.Finding) int {
		return slices.Index(order, a.Class) - slices.Index(order, b.Class)
	})
	return fs
}

// readTables runs read in one snapshot of the tables.
func readTables(ctx context.Context, t *pg.Target, read func(pgx.Tx) error) error {
	noSchema := fmt.Errorf("the append tables are missing: run `txload init append`")
	return workload.ReadSnapshot(ctx, t, "the final read of the append tables", noSchema, read)
}

// scanKeys reads the rows of keys lo to hi and gives read each key's list:
// its row in the table it lives in. Any other row of a key (in another
// table, a second one in its own) is a stray, as is a row whose sk is not
// its id: no transaction of the workload writes one.
func scanKeys(ctx context.Context, tx pgx.Tx, lo, hi int64, read func(int64, []int64) error) (strays []string, err error) {
	q := make([]string, len(tables))
	for i, tb := range tables {
		q[i] = fmt.Sprintf("SELECT %d AS tb, id, sk, val FROM %s WHERE id BETWEEN $1::BIGINT AND $2::BIGINT", i, tb)
	}
	rows, err := tx.Query(ctx, strings.Join(q, " UNION ALL ")+" ORDER BY id, tb", lo, hi)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		tb      int
		id, sk  int64
		val     []byte
		last    int64
		fed     bool // last's list was read
		scanned bool
	)
	for rows.Next() {
		if err := rows.Scan(&tb, &id, &sk, &val); err != nil {
			return strays, err
		}
		if !scanned || id != last {
			last, fed, scanned = id, false, true
		}
		switch home := table(id); {
		case id < 1 && !fed:
			strays = append(strays, fmt.Sprintf("key %d has a row in %s: the workload writes keys from 1 up", id, tables[tb]))
			fed = true
		case tb != home:
			strays = append(strays, fmt.Sprintf("key %d has a row in %s, where it does not live (its table is %s)", id, tables[tb], tables[home]))
		case fed:
			strays = append(strays, fmt.Sprintf("key %d has a second row in %s", id, tables[tb]))
		default:
			if sk != id { // a change no read sees, but no transaction's
				strays = append(strays, fmt.Sprintf("key %d's row in %s has sk %d (the workload writes sk = id)", id, tables[tb], sk))
			}
			fed = true
			list, err := parseList(val)
			if err != nil {
				strays = append(strays, fmt.Sprintf("key %d's row in %s: %v", id, tables[tb], err))
			}
			if list == nil {
				continue
			}
			if err := read(id, list); err != nil {
				return strays, err
			}
		}
	}
	return strays, rows.Err()
}

// tablesAlone reads every key of the tables in one snapshot, with no
// history to hold the lists to: what the tables show alone, rows no
// transaction writes and a list holding a value twice.
func tablesAlone(ctx context.Context, t *pg.Target) (*finalResult, error) {
	out := newAlone()
	err := readTables(ctx, t, func(tx pgx.Tx) error {
		_, err := out.scan(ctx, tx, math.MinInt32, math.MaxInt32)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// newAlone is an empty reading of the tables alone, for scan to add to.
func newAlone() *finalResult {
	return &finalResult{res: &history.Result{Final: &history.FinalRead{Counts: map[history.Class]int{}}}}
}

// scan adds what the keys lo to hi show alone: rows no transaction
// writes, and a list holding a value twice (one example kept); it says
// how many keys' lists it read.
func (f *finalResult) scan(ctx context.Context, tx pgx.Tx, lo, hi int64) (int, error) {
	if lo > hi {
		return 0, nil
	}
	fr := f.res.Final
	keys := fr.Keys
	strays, err := scanKeys(ctx, tx, lo, hi, func(key int64, list []int64) error {
		fr.Keys++
		fr.Elements += len(list)
		seen := make(map[int64]bool, len(list))
		for _, v := range list {
			if !seen[v] {
				seen[v] = true
				continue
			}
			fr.Counts[history.DuplicateElements]++
			if len(f.res.Findings) == 0 {
				f.res.Findings = []history.Finding{{Class: history.DuplicateElements, Example: &history.Example{
					Txns: []history.ExampleTxn{{Name: "T1", Index: -1, Final: true,
						Attempt: history.Attempt{Outcome: history.Committed, Ops: []history.Op{history.R(key, list...)}}}},
					Lines: []string{fmt.Sprintf("T1 read key %d as %v, which holds %d more than once: each value is appended once", key, list, v)},
				}}}
			}
			break
		}
		return nil
	})
	f.strays = append(f.strays, strays...)
	if len(f.res.Findings) > 0 {
		f.res.Findings[0].Count = fr.Counts[history.DuplicateElements]
	}
	return fr.Keys - keys, err
}

// line is the final read's line of the report; its figures go to values.
func (f *finalResult) line(values map[string]int64) workload.Line {
	fr := f.res.Final
	found := fr.Found()
	if len(f.strays) > 0 {
		found = append(found, metrics.Count(len(f.strays), "row")+" no transaction wrote")
	}
	verdict := "ok"
	if len(found) > 0 {
		verdict = strings.Join(found, ", ")
	}
	anomalies := 0
	for _, n := range fr.Counts {
		anomalies += n
	}
	values["final_read_keys"] = int64(fr.Keys)
	values["final_read_elements"] = int64(fr.Elements)
	values["final_read_missing_keys"] = int64(fr.Missing)
	values["final_read_anomalies"] = int64(anomalies)
	values["final_read_stray_rows"] = int64(len(f.strays))
	missing := ""
	if fr.Missing > 0 {
		missing = ", " + metrics.Count(fr.Missing, "key") + " with committed appends not found"
	}
	// "final", as short as the block's other labels: their column stays.
	return workload.Line{Label: "final", Value: fmt.Sprintf("read %s in one snapshot, %s%s: %s",
		metrics.Count(fr.Keys, "key"), metrics.Count(fr.Elements, "element"), missing, verdict)}
}

// allStrays are the rows no transaction wrote the final read found, the
// keys outside the history's included.
func (f *finalResult) allStrays() []string {
	if f.outside == nil {
		return f.strays
	}
	return append(slices.Clip(f.strays), f.outside.alone.strays...)
}

// strayViolation says what rows no transaction wrote the final read found.
func (f *finalResult) strayViolation() string {
	const shown = 3
	strays := f.allStrays()
	s := fmt.Sprintf("final read: %s no transaction of the workload wrote: %s", metrics.Count(len(strays), "row"),
		strings.Join(strays[:min(shown, len(strays))], "; "))
	if len(strays) > shown {
		s += fmt.Sprintf("; and %d more", len(strays)-shown)
	}
	return s
}
