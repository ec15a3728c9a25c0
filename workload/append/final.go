package append

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/history"
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
// c checked (closed, expecting it), and counts the rows above hi. A key's
// list is its row in the table it lives in; any other row of a key (in
// another table, a second one in its own) is a stray, as is a row whose sk
// is not its id: no transaction of the workload writes one.
func finalRead(ctx context.Context, t *pg.Target, c *history.Checker, lo, hi int64) (*finalResult, error) {
	q := make([]string, len(tables))
	above := make([]string, len(tables))
	for i, tb := range tables {
		q[i] = fmt.Sprintf("SELECT %d AS tb, id, sk, val FROM %s WHERE id BETWEEN $1::BIGINT AND $2::BIGINT", i, tb)
		above[i] = "SELECT count(*) AS n FROM " + tb + " WHERE id > $1::BIGINT"
	}
	query := strings.Join(q, " UNION ALL ") + " ORDER BY id, tb"
	out := &finalResult{}
	noSchema := fmt.Errorf("the append tables are missing: run `txload init append`")
	err := workload.ReadSnapshot(ctx, t, "the final read of the append tables", noSchema, func(tx pgx.Tx) error {
		if hi < math.MaxInt32 {
			if err := tx.QueryRow(ctx, "SELECT sum(n)::BIGINT FROM ("+strings.Join(above, " UNION ALL ")+") a", hi).Scan(&out.above); err != nil {
				return err
			}
		}
		res, err := c.CheckFinal(lo, hi, func(read func(int64, []int64) error) error {
			rows, err := tx.Query(ctx, query, lo, hi)
			if err != nil {
				return err
			}
			defer rows.Close()
			var (
				tb      int
				id, sk  int64
				val     []byte
				last    int64 = -1
				fed     bool  // last's list was read
				scanned bool
			)
			for rows.Next() {
				if err := rows.Scan(&tb, &id, &sk, &val); err != nil {
					return err
				}
				if !scanned || id != last {
					last, fed, scanned = id, false, true
				}
				switch home := table(id); {
				case tb != home:
					out.strays = append(out.strays, fmt.Sprintf("key %d has a row in %s, where it does not live (its table is %s)", id, tables[tb], tables[home]))
				case fed:
					out.strays = append(out.strays, fmt.Sprintf("key %d has a second row in %s", id, tables[tb]))
				default:
					if sk != id { // a change no read sees, but no transaction's
						out.strays = append(out.strays, fmt.Sprintf("key %d's row in %s has sk %d (the workload writes sk = id)", id, tables[tb], sk))
					}
					list, err := parseList(val)
					if err != nil {
						return fmt.Errorf("key %d in %s: %w", id, tables[tb], err)
					}
					fed = true
					if err := read(id, list); err != nil {
						return err
					}
				}
			}
			return rows.Err()
		})
		out.res = res
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// line is the final read's line of the report; its figures go to values.
func (f *finalResult) line(values map[string]int64) workload.Line {
	fr := f.res.Final
	found := fr.Found()
	if len(f.strays) > 0 {
		found = append(found, fmt.Sprintf("%d row%s no transaction wrote", len(f.strays), plural(len(f.strays))))
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
		missing = fmt.Sprintf(", %d key%s with committed appends not found", fr.Missing, plural(fr.Missing))
	}
	// "final", as short as the block's other labels: their column stays.
	return workload.Line{Label: "final", Value: fmt.Sprintf("read %d key%s in one snapshot, %d element%s%s: %s",
		fr.Keys, plural(fr.Keys), fr.Elements, plural(fr.Elements), missing, verdict)}
}

// strayViolation says what rows no transaction wrote the final read found.
func (f *finalResult) strayViolation() string {
	const shown = 3
	s := fmt.Sprintf("final read: %d row%s no transaction of the workload wrote: %s", len(f.strays), plural(len(f.strays)),
		strings.Join(f.strays[:min(shown, len(f.strays))], "; "))
	if len(f.strays) > shown {
		s += fmt.Sprintf("; and %d more", len(f.strays)-shown)
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
