package tpcc

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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

// TestTamperEachCondition attacks the check: each of Tamperings breaks
// exactly one consistency condition of a clean load, and the check must
// find that condition, and only it, violated.
func TestTamperEachCondition(t *testing.T) {
	url := loadedDB(t)
	tampers := Tamperings()
	conn := pgtest.Conn(t, url)
	for n := 1; n <= 12; n++ {
		t.Run(conditions[n-1].rule, func(t *testing.T) {
			tx, err := conn.Begin(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(t.Context())
			tag, err := tx.Exec(t.Context(), tampers[n-1])
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

// A customer deleted breaks none of the twelve conditions (each is of the
// rows that are there): the cardinalities of clause 1.2 catch it, and a
// customer, stock row or item added, or a district or warehouse.
func TestCardinality(t *testing.T) {
	url := loadedDB(t)
	conn := pgtest.Conn(t, url)
	for _, tc := range []struct{ sql, want string }{
		// Its history row and order are then of no customer.
		{`DELETE FROM customer WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 17`, "cardinality (clause 1.2): customer holds 29999 rows, want 30000; " +
			"payment (H_AMOUNT within 1.00..5000.00, H_DATE within the load's time and now, give or take two days, of a customer that exists, " +
			"H_DATA the load's (of 12..24 characters, no space, of 10.00 in its customer's district) or the W_NAME and D_NAME of its warehouse and district four spaces apart): " +
			"1 of 30000 history rows violate it, e.g. c_w_id=1 c_d_id=2 c_id=17; " +
			"order (O_C_ID names a customer, O_CARRIER_ID 1..10 or NULL, O_OL_CNT within 5..15, O_ALL_LOCAL 1 if and only if every line is supplied by the order's warehouse (else 0), " +
			"O_ENTRY_D within the load's time and now, give or take two days): 1 of 30000 orders violate it, e.g. w_id=1 d_id=2 o_id=354"},
		{`INSERT INTO item VALUES (100001, 1, 'x', 1.00, 'x')`, "cardinality (clause 1.2): item holds 100001 rows, want 100000; " +
			"item (I_ID within 1..100000 each once, I_PRICE within 1.00..100.00, I_IM_ID within 1..10000, I_NAME of 14..24 characters, no space, " +
			"I_DATA of 26..50 characters, no space): 1 of 100001 items violate it, e.g. i_id=100001"},
		{`DELETE FROM stock WHERE s_w_id = 1 AND s_i_id < 3`, "cardinality (clause 1.2): stock holds 99998 rows, want 100000"},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			res := checkAfter(t, conn, tc.sql)
			if v := strings.Join(res.violations(), "; "); v != tc.want {
				t.Fatalf("violations %q, want %q", v, tc.want)
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
	// The check waits on a lock another session holds, so that it is
	// certainly under way on the server when it is cancelled (a check
	// that ran to its end before the cancel would prove nothing).
	holder := pgtest.Conn(t, url)
	tx, err := holder.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // the test's end
	if _, err := tx.Exec(t.Context(), "LOCK TABLE warehouse IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	active := func() (n int, q *string) {
		t.Helper()
		if err := conn.QueryRow(t.Context(), `SELECT count(*), min(query) FROM pg_stat_activity
			WHERE datname = current_database() AND pid NOT IN (pg_backend_pid(), $1) AND state = 'active'`, holder.PgConn().PID()).Scan(&n, &q); err != nil {
			t.Fatal(err)
		}
		return n, q
	}
	ctx, cancel := context.WithCancel(t.Context())
	checked := make(chan error, 1)
	go func() {
		_, err := runCheck(ctx, target(t, url))
		checked <- err
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if n, _ := active(); n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the check's query never showed in pg_stat_activity")
		}
	}
	cancel()
	err = <-checked
	n, q := active()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("runCheck after cancel = %v, want context.Canceled", err)
	}
	if n > 0 {
		t.Fatalf("%d backends still run the check's queries after it was cancelled: %.80s", n, *q)
	}
}

// TestBeyondConditions: rows the twelve conditions leave free, held to
// what the load and the transactions write, each tampering found alone
// on its own line (every one of them passed the check before).
func TestBeyondConditions(t *testing.T) {
	url := loadedDB(t)
	conn := pgtest.Conn(t, url)
	var (
		order    = "order (" + rules[ruleOrder].rule + "): 1 of 30000 orders violate it, e.g. "
		customer = "customer (" + rules[ruleCustomer].rule + "): 1 of 30000 customers violate it, e.g. "
		payment  = "payment (" + rules[ruleHistory].rule + "): 1 of 30000 history rows violate it, e.g. "
		line     = "line (" + rules[ruleLine].rule + "): 1 of "
		stock    = "stock counts (" + rules[ruleStockCounts].rule + "): 1 of 100000 stock rows violate it, e.g. "
		tax      = "tax (" + rules[ruleTax].rule + "): "
		quantity = "stock quantity (" + rules[ruleQuantity].rule + "): "
		item     = "item (" + rules[rulePrice].rule + "): "
	)
	for _, tc := range []struct{ name, sql, want string }{
		// The hostile retest's (retest3 rows 4, 5 and 14), each alone.
		{"a line twice, its key's constraint dropped", `ALTER TABLE order_line DROP CONSTRAINT order_line_pkey;
			INSERT INTO order_line SELECT * FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 1 AND ol_o_id = 2 AND ol_number = 1;
			UPDATE orders SET o_ol_cnt = o_ol_cnt + 1 WHERE o_w_id = 1 AND o_d_id = 1 AND o_id = 2 AND o_ol_cnt < 15`,
			"keys: 1 row of order_line whose key (ol_w_id, ol_d_id, ol_o_id, ol_number) a row before it has (its primary key's constraint dropped)"},
		{"a payment moved to a customer that does not exist", `WITH h AS (UPDATE history SET h_c_id = 99999 WHERE h_c_w_id = 1 AND h_c_d_id = 1 AND h_c_id = 459 RETURNING h_amount)
			UPDATE customer SET c_balance = c_balance + (SELECT h_amount FROM h), c_ytd_payment = c_ytd_payment - (SELECT h_amount FROM h), c_payment_cnt = 0
			WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 459`, payment + "c_w_id=1 c_d_id=1 c_id=99999"},
		// Row 3's second writer, as the retest wrote it: the payment moved
		// to another customer, whose count it raised, the first's kept.
		{"a payment swapped to another customer", `WITH h AS (UPDATE history SET h_c_id = 2 WHERE h_c_w_id = 1 AND h_c_d_id = 4 AND h_c_id = 1 RETURNING h_amount)
			UPDATE customer SET c_balance = c_balance + CASE c_id WHEN 1 THEN 10 ELSE -10 END, c_ytd_payment = c_ytd_payment + CASE c_id WHEN 1 THEN -10 ELSE 10 END,
				c_payment_cnt = c_payment_cnt + CASE c_id WHEN 1 THEN 0 ELSE 1 END
			WHERE c_w_id = 1 AND c_d_id = 4 AND c_id IN (1, 2)`, strings.Replace(customer, "1 of", "2 of", 1) + "w_id=1 d_id=4 c_id=1"}, // the second: two rows the load's
		{"a payment's count not its history rows", `UPDATE customer SET c_payment_cnt = 2 WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 460`, customer + "w_id=1 d_id=1 c_id=460"},
		{"a payment of -990.00, another's +1000 with it", `UPDATE history SET h_amount = h_amount + CASE h_c_id WHEN 1 THEN -1000 ELSE 1000 END WHERE h_c_w_id = 1 AND h_c_d_id = 3 AND h_c_id IN (1, 2);
			UPDATE customer SET c_balance = c_balance + CASE c_id WHEN 1 THEN 1000 ELSE -1000 END, c_ytd_payment = c_ytd_payment + CASE c_id WHEN 1 THEN -1000 ELSE 1000 END
			WHERE c_w_id = 1 AND c_d_id = 3 AND c_id IN (1, 2)`, strings.Replace(payment, "1 of", "2 of", 1) + "c_w_id=1 c_d_id=3 c_id=1"}, // the +1000: a load's row not of 10.00
		{"a payment dated before the load", `UPDATE history SET h_date = '1970-01-01' WHERE h_c_w_id = 1 AND h_c_d_id = 3 AND h_c_id = 4`, payment + "c_w_id=1 c_d_id=3 c_id=4"},
		{"a carrier of 99", `UPDATE orders SET o_carrier_id = 99 WHERE o_w_id = 1 AND o_d_id = 1 AND o_id = 3`, order + "w_id=1 d_id=1 o_id=3"},
		{"an order of a customer that does not exist", `UPDATE orders SET o_c_id = 99999 WHERE o_w_id = 1 AND o_d_id = 1 AND o_id = 2200`, order + "w_id=1 d_id=1 o_id=2200"},
		{"an order all local 7", `UPDATE orders SET o_all_local = 7 WHERE o_w_id = 1 AND o_d_id = 1 AND o_id = 4`, order + "w_id=1 d_id=1 o_id=4"},
		{"an order of a remote line said all local", `UPDATE order_line SET ol_supply_w_id = 2 WHERE ol_w_id = 1 AND ol_d_id = 1 AND ol_o_id = 5 AND ol_number = 2`,
			line + "30"},
		{"an order entered in 2100", `UPDATE orders SET o_entry_d = '2100-01-01' WHERE o_w_id = 1 AND o_d_id = 1 AND o_id = 6`, order + "w_id=1 d_id=1 o_id=6"},
		{"a line delivered in 1970", `UPDATE order_line SET ol_delivery_d = '1970-01-01' WHERE ol_w_id = 1 AND ol_d_id = 1 AND ol_o_id = 7 AND ol_number = 1`,
			line + "30"},
		{"a line supplied by warehouse 99", `UPDATE order_line SET ol_supply_w_id = 99 WHERE ol_w_id = 1 AND ol_d_id = 1 AND ol_o_id = 8 AND ol_number = 1`, "e.g. w_id=1 d_id=1 o_id=8 ol_number=1"},
		{"a credit XX", `UPDATE customer SET c_credit = 'XX' WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 11`, customer + "w_id=1 d_id=1 c_id=11"},
		{"a discount of 0.99", `UPDATE customer SET c_discount = 0.99 WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 12`, customer + "w_id=1 d_id=1 c_id=12"},
		{"a delivery count of -7", `UPDATE customer SET c_delivery_cnt = -7 WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 13`, customer + "w_id=1 d_id=1 c_id=13"},
		{"a customer since 2100", `UPDATE customer SET c_since = '2100-01-01' WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 14`, customer + "w_id=1 d_id=1 c_id=14"},
		{"a tax of 0.9999", `UPDATE warehouse SET w_tax = 0.9999; UPDATE district SET d_tax = 0.9999 WHERE d_w_id = 1 AND d_id = 2`,
			tax + "10 of 10 districts violate it, e.g. w_id=1 d_id=1"},
		{"a district's tax of 0.21", `UPDATE district SET d_tax = 0.21 WHERE d_w_id = 1 AND d_id = 2`, tax + "1 of 10 districts violate it, e.g. w_id=1 d_id=2"},
		{"a stock's YTD of -5", `UPDATE stock SET s_ytd = -5 WHERE s_w_id = 1 AND s_i_id = 20`, stock + "w_id=1 i_id=20"},
		{"a stock's order count of -3", `UPDATE stock SET s_order_cnt = -3, s_ytd = -3 WHERE s_w_id = 1 AND s_i_id = 21`, stock + "w_id=1 i_id=21"},
		{"a stock's remote count above its orders", `UPDATE stock SET s_remote_cnt = 1 WHERE s_w_id = 1 AND s_i_id = 22`, stock + "w_id=1 i_id=22"},
		// The stock row of a New-Order's line, the order undone whole
		// (the eighth retest's): counts within their ranges, of no line.
		{"a stock's counts of a line that is not there", `UPDATE stock SET s_order_cnt = s_order_cnt + 1, s_ytd = s_ytd + 7 WHERE s_w_id = 1 AND s_i_id = 23`, stock + "w_id=1 i_id=23"},
		{"stock quantity below 10", `UPDATE stock SET s_quantity = 9 WHERE s_w_id = 1 AND s_i_id = 5`,
			quantity + "1 of 100000 stock rows violate it, e.g. w_id=1 i_id=5"},
		{"stock quantity above 100", `UPDATE stock SET s_quantity = 101 WHERE s_w_id = 1 AND s_i_id = 6`, "e.g. w_id=1 i_id=6"},
		{"item price below 0", `UPDATE item SET i_price = -1 WHERE i_id = 7`,
			item + "1 of 100000 items violate it, e.g. i_id=7"},
		{"item price above 100", `UPDATE item SET i_price = 100.01 WHERE i_id = 8`, "e.g. i_id=8"},
		// The load's lines name their items by id: the ids are held too.
		{"item renumbered", `UPDATE item SET i_id = 100001 WHERE i_id = 9`, "1 of 100000 items violate it, e.g. i_id=100001"},
		{"item id twice", `ALTER TABLE item DROP CONSTRAINT item_pkey; UPDATE item SET i_id = 10 WHERE i_id = 11`, "keys: 1 row of item whose key (i_id) a row before it has"},
		{"line of no item", `UPDATE order_line SET ol_i_id = 100001 WHERE ol_w_id = 1 AND ol_d_id = 1 AND ol_o_id = 5 AND ol_number = 1`,
			"line's item (OL_I_ID names an item): 1 of "},
		{"undelivered load line of amount 0", `UPDATE order_line SET ol_amount = 0 WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id = 2500 AND ol_number = 1`,
			"line amount (OL_AMOUNT = OL_QUANTITY × I_PRICE of New-Order's lines, the load's of quantity 5 and amount 0 (delivered) or 0.01..9999.99): 1 of "},
		{"load line of quantity 6", `UPDATE order_line SET ol_quantity = 6 WHERE ol_w_id = 1 AND ol_d_id = 3 AND ol_o_id = 2600 AND ol_number = 2`,
			"e.g. w_id=1 d_id=3 o_id=2600 ol_number=2"},
		{"NULL balance", `ALTER TABLE customer ALTER COLUMN c_balance DROP NOT NULL;
			UPDATE customer SET c_balance = NULL WHERE c_w_id = 1 AND c_d_id = 4 AND c_id = 9`,
			"nulls: 1 row of customer with c_balance NULL (a column the workload always writes a value in)"},
		{"NULL quantities", `ALTER TABLE stock ALTER COLUMN s_quantity DROP NOT NULL; UPDATE stock SET s_quantity = NULL WHERE s_w_id = 1 AND s_i_id < 3`,
			"nulls: 2 rows of stock with s_quantity NULL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := checkAfter(t, conn, tc.sql)
			v := res.violations()
			if len(v) == 0 || !strings.Contains(v[len(v)-1], tc.want) {
				t.Fatalf("violations %q, want one naming %q\n%s", v, tc.want, linesText(res))
			}
			// Each of these breaks two lines: the item's, the line's
			// order's all-local, the customer's payment count.
			if more := map[string]bool{"NULL quantities": true, "item id twice": true, "an order of a remote line said all local": true, "a line supplied by warehouse 99": true,
				"a payment moved to a customer that does not exist": true}; !more[tc.name] && len(v) != 1 {
				t.Fatalf("violations %q, want only the one naming %q", v, tc.want)
			}
		})
	}
	// Text in forms the load and the transactions never write, each
	// line counting its rows (one check: each costs seconds).
	t.Run("text in forms never written", func(t *testing.T) {
		res := checkAfter(t, conn, `UPDATE customer SET c_last = 'SMITH' WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 1500;
			UPDATE customer SET c_last = 'BARBARBAR' WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 2; -- customer 2's is BARBAROUGHT
			UPDATE customer SET c_middle = 'OF' WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 3;
			UPDATE customer SET c_state = 'A' WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 4;
			UPDATE customer SET c_zip = '123456789' WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 5;
			UPDATE customer SET c_phone = 'abcdefghijklmnop' WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 6;
			UPDATE customer SET c_credit_lim = 60000 WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 7;
			UPDATE customer SET c_data = left(c_data, 100) WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 8;
			UPDATE customer SET c_credit = 'GC', c_data = left('9 2 1 2 1 10.00 | ' || c_data, 500) WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 9;
			UPDATE customer SET c_credit = 'BC', c_data = left('11 2 1 2 1 10.00 | ' || c_data, 500) WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 10;
			UPDATE district SET d_name = 'abc' WHERE d_w_id = 1 AND d_id = 3;
			UPDATE warehouse SET w_zip = '1234 1111' WHERE w_id = 1;
			UPDATE stock SET s_dist_05 = 'abc' WHERE s_w_id = 1 AND s_i_id = 30;
			ALTER TABLE stock ALTER s_data TYPE VARCHAR(60); UPDATE stock SET s_data = repeat('a', 51) WHERE s_w_id = 1 AND s_i_id = 31;
			UPDATE item SET i_name = 'an item of mine' WHERE i_id = 32;
			UPDATE item SET i_im_id = 0 WHERE i_id = 33;
			UPDATE history SET h_data = 'paid in cash' WHERE h_c_w_id = 1 AND h_c_d_id = 3 AND h_c_id = 5;
			UPDATE order_line SET ol_dist_info = 'x' WHERE ol_w_id = 1 AND ol_d_id = 1 AND ol_o_id = 9 AND ol_number = 1`)
		want := []string{
			quantity + "2 of 100000 stock rows violate it, e.g. w_id=1 i_id=30",
			item + "2 of 100000 items violate it, e.g. i_id=32",
			tax + "10 of 10 districts violate it, e.g. w_id=1 d_id=1",
			// And customer 5 of district 3: its load's history row no longer the load's.
			strings.Replace(customer, "1 of", "11 of", 1) + "w_id=1 d_id=1 c_id=2",
			payment + "c_w_id=1 c_d_id=3 c_id=5",
			line + "30",
			// Customer 10 made BC, its line of customer 11: no payment of its own.
			"BC customers violate it, e.g. w_id=1 d_id=2 c_id=10",
		}
		v := res.violations()
		if len(v) != len(want) {
			t.Fatalf("violations %q, want %d: %q", v, len(want), want)
		}
		for i, w := range want {
			if !strings.Contains(v[i], w) {
				t.Errorf("violation %q, want one naming %q", v[i], w)
			}
		}
	})
	// A NOT NULL dropped, with no NULL written, is no violation.
	res := checkAfter(t, conn, `ALTER TABLE orders ALTER COLUMN o_ol_cnt DROP NOT NULL`)
	if v := res.violations(); len(v) > 0 || !strings.Contains(linesText(res), "nulls: ok (no NULL in the 90 columns the workload always writes; NOT NULL dropped from orders.o_ol_cnt)") {
		t.Fatalf("violations %q\n%s", v, linesText(res))
	}
}

// checkAfter runs sql in a transaction on conn and checks what it sees;
// the transaction is rolled back when the test ends.
func checkAfter(t *testing.T, conn *pgx.Conn, sql string) *checkResult {
	t.Helper()
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) }) //nolint:errcheck // the test's end
	if _, err := tx.Exec(t.Context(), sql); err != nil {
		t.Fatal(err)
	}
	res := &checkResult{}
	if err := checkTx(t.Context(), tx, res); err != nil {
		t.Fatal(err)
	}
	return res
}
