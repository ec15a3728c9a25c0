package history_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/history"
	"github.com/txload/txload/internal/pgtest"
)

// TestRealServer runs a small list-append load against a real PostgreSQL
// at each level and checks its history: no class the level forbids may
// show (PostgreSQL 18 has no known isolation bug), whatever the level
// allows may. The load is a sketch of the workload to come: 8 clients,
// keys in a window of 4, each retired after 12 appends, 1 to 4 reads and
// appends per transaction.
func TestRealServer(t *testing.T) {
	srv := pgtest.OwnServer(t) // skips under -short
	for _, tc := range []struct {
		level history.Level
		sql   string
	}{
		{history.Serializable, "SERIALIZABLE"},
		{history.RepeatableRead, "REPEATABLE READ"},
		{history.ReadCommitted, "READ COMMITTED"},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			attempts := appendLoad(t, srv.URL(), tc.sql, 8, 300, time.Minute)
			r, err := history.Check(attempts)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			_ = r.WriteText(&b, tc.level, nil)
			t.Logf("%d attempts:\n%s", len(attempts), b.String())
			if n := overlapping(attempts); r.Committed < 300 || n < 100 {
				t.Errorf("%d committed, %d attempts ran beside another: too little to check", r.Committed, n)
			}
			if v := r.Verdict(tc.level); v.Violation || len(v.Undecided) > 0 {
				t.Errorf("PostgreSQL at %s shows %v (not ruled out: %v)", tc.level, v.Forbidden, v.Undecided)
			}
		})
	}
}

// appendLoad runs clients until want attempts committed (or d passed) and
// returns their attempts in the order they completed.
func appendLoad(t *testing.T, url, level string, clients, want int, d time.Duration) []history.Attempt {
	ctx := context.Background()
	setup, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close(ctx)
	if _, err := setup.Exec(ctx, "DROP TABLE IF EXISTS txn; CREATE TABLE txn (id int PRIMARY KEY, val text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		window   = []int64{0, 1, 2, 3}
		nextKey  = int64(4)
		nextVal  = map[int64]int64{}
		attempts []history.Attempt
		done     int
	)
	start := time.Now()
	// plan draws a transaction's operations, with fresh values.
	plan := func(r *rand.Rand) []history.Op {
		mu.Lock()
		defer mu.Unlock()
		ops := make([]history.Op, 1+r.IntN(4))
		for i := range ops {
			k := window[r.IntN(len(window))]
			if r.IntN(2) == 0 {
				ops[i] = history.Op{Kind: history.Read, Key: k}
				continue
			}
			nextVal[k]++
			ops[i] = history.A(k, nextVal[k])
			if nextVal[k] == 12 {
				for j, w := range window {
					if w == k {
						window[j] = nextKey
						nextKey++
					}
				}
			}
		}
		return ops
	}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close(ctx)
			r := rand.New(rand.NewPCG(uint64(c), 7))
			for time.Since(start) < d {
				mu.Lock()
				enough := done >= want
				mu.Unlock()
				if enough {
					return
				}
				a := history.Attempt{Client: c, Ops: plan(r)}
				a.Invoke = time.Since(start)
				a.Intended = a.Invoke
				err := runTxn(ctx, conn, level, a.Ops)
				a.Complete = time.Since(start)
				var pe *pgconn.PgError
				switch {
				case err == nil:
					a.Outcome = history.Committed
				case errors.As(err, &pe):
					a.Outcome, a.SQLState = history.Failed, pe.Code
				default:
					t.Error(err)
					return
				}
				mu.Lock()
				attempts = append(attempts, a)
				if a.Outcome == history.Committed {
					done++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return attempts
}

// runTxn runs ops in one transaction, filling in what the reads return.
func runTxn(ctx context.Context, conn *pgx.Conn, level string, ops []history.Op) error {
	if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL "+level); err != nil {
		return err
	}
	for i, op := range ops {
		var err error
		if op.Kind == history.Append {
			_, err = conn.Exec(ctx, "INSERT INTO txn AS t (id, val) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET val = t.val || ',' || excluded.val",
				op.Key, strconv.FormatInt(op.Value, 10))
		} else {
			var val string
			err = conn.QueryRow(ctx, "SELECT val FROM txn WHERE id = $1", op.Key).Scan(&val)
			if errors.Is(err, pgx.ErrNoRows) {
				err = nil
			}
			if err == nil {
				ops[i].List, err = parseList(val)
			}
		}
		if err != nil {
			_, _ = conn.Exec(ctx, "ROLLBACK")
			return err
		}
	}
	_, err := conn.Exec(ctx, "COMMIT")
	return err
}

func parseList(val string) ([]int64, error) {
	list := []int64{}
	if val == "" {
		return list, nil
	}
	for _, f := range strings.Split(val, ",") {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("reading %q: %w", val, err)
		}
		list = append(list, v)
	}
	return list, nil
}

// overlapping counts the attempts that began before an earlier one ended.
func overlapping(attempts []history.Attempt) int {
	sorted := slices.SortedFunc(slices.Values(attempts), func(a, b history.Attempt) int { return cmp.Compare(a.Invoke, b.Invoke) })
	n := 0
	var end time.Duration
	for i, a := range sorted {
		if i > 0 && a.Invoke < end {
			n++
		}
		end = max(end, a.Complete)
	}
	return n
}
