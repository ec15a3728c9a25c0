package tpcc

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// TestInitLoadsConsistentData: init loads one warehouse as clause 4.3 says
// (its cardinalities), and the check finds the twelve conditions hold.
func TestInitLoadsConsistentData(t *testing.T) {
	url := loadedDB(t)
	t.Logf("init:\n%s", loaded.log)
	conn := pgtest.Conn(t, url)
	for _, tc := range []struct {
		sql  string
		want int64
	}{
		{"SELECT count(*) FROM warehouse", 1},
		{"SELECT count(*) FROM district", 10},
		{"SELECT count(*) FROM customer", 30000},
		{"SELECT count(*) FROM history", 30000},
		{"SELECT count(*) FROM orders", 30000},
		{"SELECT count(*) FROM new_order", 9000},
		{"SELECT count(*) FROM item", 100000},
		{"SELECT count(*) FROM stock", 100000},
		{"SELECT sum(o_ol_cnt) - (SELECT count(*) FROM order_line) FROM orders", 0},
		{"SELECT count(DISTINCT c_last) FROM customer WHERE c_id <= 1000", 1000},
		{"SELECT count(*) FROM customer WHERE c_credit = 'BC'", 3000}, // about 10%: checked apart
	} {
		var got int64
		if err := conn.QueryRow(t.Context(), tc.sql).Scan(&got); err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if strings.Contains(tc.sql, "'BC'") {
			if got < 2700 || got > 3300 {
				t.Errorf("%s = %d, want about 3000", tc.sql, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s = %d, want %d", tc.sql, got, tc.want)
		}
	}
	res, err := runCheck(t.Context(), target(t, url))
	if err != nil {
		t.Fatal(err)
	}
	if v := res.violations(); len(v) > 0 {
		t.Fatalf("violations after init: %v", v)
	}
	for i, f := range res.found {
		if !f.applies || f.over == 0 {
			t.Errorf("condition %d: applies %t over %d", i+1, f.applies, f.over)
		}
	}
	t.Logf("check took %s", res.took)
}

// TestTamperEachCondition attacks the check: each statement below breaks
// exactly one consistency condition of a clean load (those that cannot be
// broken alone by one table's change carry the others along in CTEs),
// and the check must find that condition, and only it, violated.
func TestTamperEachCondition(t *testing.T) {
	url := loadedDB(t)
	tampers := map[int]string{
		// A history row moved to a district that does not exist, its
		// district's YTD lowered to match: the districts no longer add up
		// to their warehouse.
		1: `WITH h AS (UPDATE history SET h_d_id = 99 WHERE ctid = (SELECT ctid FROM history WHERE h_w_id = 1 AND h_d_id = 3 LIMIT 1) RETURNING h_amount)
			UPDATE district SET d_ytd = d_ytd - (SELECT h_amount FROM h) WHERE d_w_id = 1 AND d_id = 3`,
		2: `UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 4`,
		// Order 2500 delivered out of turn, as Delivery would have: a gap
		// in the district's new orders.
		3: `WITH n AS (DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 5 AND no_o_id = 2500 RETURNING no_o_id),
			o AS (UPDATE orders SET o_carrier_id = 1 WHERE o_w_id = 1 AND o_d_id = 5 AND o_id = (SELECT no_o_id FROM n) RETURNING o_c_id),
			l AS (UPDATE order_line SET ol_delivery_d = now() WHERE ol_w_id = 1 AND ol_d_id = 5 AND ol_o_id = 2500 RETURNING ol_amount)
			UPDATE customer SET c_balance = c_balance + (SELECT sum(ol_amount) FROM l), c_delivery_cnt = c_delivery_cnt + 1
			WHERE c_w_id = 1 AND c_d_id = 5 AND c_id = (SELECT o_c_id FROM o)`,
		// An order line of no order.
		4: `INSERT INTO order_line VALUES (5000, 6, 1, 1, 1, 1, NULL, 5, 10.00, 'x')`,
		// A delivered order undelivered, its lines too (their amounts are 0).
		5: `WITH l AS (UPDATE order_line SET ol_delivery_d = NULL WHERE ol_w_id = 1 AND ol_d_id = 7 AND ol_o_id = 10)
			UPDATE orders SET o_carrier_id = NULL WHERE o_w_id = 1 AND o_d_id = 7 AND o_id = 10`,
		// A line moved to another order of its district.
		6: `UPDATE order_line SET ol_o_id = 12, ol_number = 99 WHERE ol_w_id = 1 AND ol_d_id = 8 AND ol_o_id = 11 AND ol_number = 1`,
		7: `UPDATE order_line SET ol_delivery_d = NULL WHERE ol_w_id = 1 AND ol_d_id = 9 AND ol_o_id = 20 AND ol_number = 2`,
		// A payment to a district that does not exist.
		8: `INSERT INTO history VALUES (9999, 1, 1, 99, 1, now(), 5.00, 'x')`,
		// A payment booked in another district of its warehouse.
		9: `UPDATE history SET h_d_id = 2 WHERE ctid = (SELECT ctid FROM history WHERE h_w_id = 1 AND h_d_id = 1 LIMIT 1)`,
		// A payment's amount moved from the YTD to the balance.
		10: `UPDATE customer SET c_balance = c_balance + 1, c_ytd_payment = c_ytd_payment - 1 WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 7`,
		// The oldest new order delivered without counting the delivery.
		11: `WITH n AS (DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 3 AND no_o_id = 2101 RETURNING no_o_id),
			o AS (UPDATE orders SET o_carrier_id = 1 WHERE o_w_id = 1 AND o_d_id = 3 AND o_id = (SELECT no_o_id FROM n) RETURNING o_c_id),
			l AS (UPDATE order_line SET ol_delivery_d = now() WHERE ol_w_id = 1 AND ol_d_id = 3 AND ol_o_id = 2101 RETURNING ol_amount)
			UPDATE customer SET c_balance = c_balance + (SELECT sum(ol_amount) FROM l)
			WHERE c_w_id = 1 AND c_d_id = 3 AND c_id = (SELECT o_c_id FROM o)`,
		12: `UPDATE customer SET c_ytd_payment = c_ytd_payment + 1 WHERE c_w_id = 1 AND c_d_id = 10 AND c_id = 3000`,
	}
	conn := pgtest.Conn(t, url)
	for n := 1; n <= 12; n++ {
		t.Run(conditions[n-1].rule, func(t *testing.T) {
			tx, err := conn.Begin(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(t.Context())
			tag, err := tx.Exec(t.Context(), tampers[n])
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("tampering: %v (%s)", err, tag)
			}
			res := &checkResult{}
			if err := checkTx(t.Context(), tx, res); err != nil {
				t.Fatal(err)
			}
			var broken []int
			for i, f := range res.found {
				if f.applies && f.violations > 0 {
					broken = append(broken, i+1)
				}
			}
			if !slices.Equal(broken, []int{n}) {
				t.Fatalf("conditions violated: %v, want [%d]\n%s", broken, n, linesText(res))
			}
			v := strings.Join(res.violations(), "; ")
			if !strings.Contains(v, "consistency condition "+strconv.Itoa(n)+" ") || !strings.Contains(v, "e.g. w_id=1") {
				t.Fatalf("violation %q does not name condition %d and its example", v, n)
			}
		})
	}
}

func linesText(r *checkResult) string {
	var b strings.Builder
	for _, l := range r.lines() {
		b.WriteString(l.Label + ": " + l.Value + "\n")
	}
	return b.String()
}

// TestCheckCancelledOnServer: a check interrupted in the middle of its
// queries has stopped them on the server by the time it returns: the
// process may exit at once (pgx's default closes the socket and sends the
// cancel request from a goroutine, which an exiting process never runs;
// the server then computes the aggregate to its end).
func TestCheckCancelledOnServer(t *testing.T) {
	url := loadedDB(t)
	conn := pgtest.Conn(t, url) // open before: looking must not take a connection's time
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(700*time.Millisecond, cancel)
	_, err := runCheck(ctx, target(t, url))
	var n int
	var q *string
	if err := conn.QueryRow(t.Context(), `SELECT count(*), min(query) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE '%FILTER%'`).Scan(&n, &q); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("runCheck after cancel = %v, want context.Canceled", err)
	}
	if n > 0 {
		t.Fatalf("%d backends still run the check's queries after it was cancelled: %.80s", n, *q)
	}
}
