package append

import (
	"context"
	"fmt"
	"math"
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
}

// finalRead reads every key from lo to hi of the three tables in one
// snapshot (Jepsen's final read) and holds each key's list to the history
// c checked (closed, expecting it), and counts the rows above hi.
func finalRead(ctx context.Context, t *pg.Target, c *history.Checker, lo, hi int64) (*finalResult, error) {
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
	return out, nil
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
	fr := &history.FinalRead{Counts: map[history.Class]int{}}
	var example *history.Example
	out := &finalResult{res: &history.Result{Final: fr}}
	err := readTables(ctx, t, func(tx pgx.Tx) error {
		var err error
		out.strays, err = scanKeys(ctx, tx, math.MinInt32, math.MaxInt32, func(key int64, list []int64) error {
			fr.Keys++
			fr.Elements += len(list)
			seen := make(map[int64]bool, len(list))
			for _, v := range list {
				if seen[v] {
					if fr.Counts[history.DuplicateElements]++; example == nil {
						example = &history.Example{
							Txns: []history.ExampleTxn{{Name: "T1", Index: -1, Final: true,
								Attempt: history.Attempt{Outcome: history.Committed, Ops: []history.Op{history.R(key, list...)}}}},
							Lines: []string{fmt.Sprintf("T1 read key %d as %v, which holds %d more than once: each value is appended once", key, list, v)},
						}
					}
					break
				}
				seen[v] = true
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	if n := fr.Counts[history.DuplicateElements]; n > 0 {
		out.res.Findings = []history.Finding{{Class: history.DuplicateElements, Count: n, Example: example}}
	}
	return out, nil
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

// strayViolation says what rows no transaction wrote the final read found.
func (f *finalResult) strayViolation() string {
	const shown = 3
	s := fmt.Sprintf("final read: %s no transaction of the workload wrote: %s", metrics.Count(len(f.strays), "row"),
		strings.Join(f.strays[:min(shown, len(f.strays))], "; "))
	if len(f.strays) > shown {
		s += fmt.Sprintf("; and %d more", len(f.strays)-shown)
	}
	return s
}
