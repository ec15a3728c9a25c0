package tpcc

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pgtest"
)

// TestPaymentStrings: Payment's own statements, 40 payments of a BC
// customer (its C_DATA filled with their lines and cut at 500), one of
// another BC customer and one of a GC customer, leave the check ok; each
// string Payment writes changed alone is then caught on its line: a
// payment's H_DATA that is not its warehouse's and district's names, a
// BC customer's C_DATA with a line changed or dropped (the fifth
// retest's (8); check: ok on the code before), or two lines of payments
// dated three days apart swapped (the sixth retest's; ok before); two
// lines of payments dated alike swapped pass (either order is possible).
func TestPaymentStrings(t *testing.T) {
	url := loadedDB(t)
	conn := pgtest.Conn(t, url)
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context()) //nolint:errcheck // the test's end
	var bc, bc2, bc3, gc int
	if err := tx.QueryRow(t.Context(), `SELECT min(c_id) FILTER (WHERE c_credit = 'BC'), max(c_id) FILTER (WHERE c_credit = 'BC'), min(c_id) FILTER (WHERE c_credit = 'GC'),
			(SELECT c_id FROM customer WHERE c_w_id = 1 AND c_d_id = 2 AND c_credit = 'BC' ORDER BY c_id OFFSET 1 LIMIT 1)
		FROM customer WHERE c_w_id = 1 AND c_d_id = 2`).Scan(&bc, &bc2, &gc, &bc3); err != nil {
		t.Fatal(err)
	}
	pay := func(d, c int, cents int64) {
		t.Helper()
		amount := string(fixed(nil, cents, 2))
		for _, st := range []struct {
			sql  string
			args []any
		}{
			{payWarehouseSQL, []any{1, amount}},
			{payDistrictSQL, []any{1, d, amount}},
			{paySQL("$5::INT"), []any{1, d, 1, 2, c, amount}},
		} {
			if _, err := tx.Exec(t.Context(), st.sql, st.args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 40 {
		pay(2+i%3, bc, int64(100+i*12345))
	}
	pay(2, bc2, 4321)
	pay(2, gc, 999)
	// Two payments of a third BC customer dated three days apart (its
	// history rows' dates moved, within the dates' margin of the load
	// and now): the newest line first.
	dated := func(cents int64, by string) {
		t.Helper()
		pay(2, bc3, cents)
		if tag, err := tx.Exec(t.Context(), `UPDATE history SET h_date = h_date + $2::INTERVAL
			WHERE h_c_w_id = 1 AND h_c_d_id = 2 AND h_c_id = $1 AND h_amount * 100 = $3 AND strpos(h_data, ' ') > 0`, bc3, by, cents); err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("dating the payment: %v (%s)", err, tag)
		}
	}
	dated(1111, "-36 hours")
	dated(2222, "36 hours")
	var n int
	if err := tx.QueryRow(t.Context(), `SELECT length(c_data) FROM customer WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = $1`, bc).Scan(&n); err != nil || n != 500 {
		t.Fatalf("the BC customer's C_DATA: %d characters (%v), want 500", n, err)
	}
	check := func(t *testing.T, tx pgx.Tx) []string {
		t.Helper()
		res := &checkResult{}
		if err := checkTx(t.Context(), tx, res); err != nil {
			t.Fatal(err)
		}
		return res.violations()
	}
	if v := check(t, tx); len(v) > 0 {
		t.Fatalf("violations after Payment's own statements: %q", v)
	}
	// Each caught on its line, naming the customer.
	const customer, payment = "customer data (a BC customer's C_DATA its payments' lines", "payment (H_AMOUNT within 1.00..5000.00"
	bcs, bc2s, hist := fmt.Sprintf("w_id=1 d_id=2 c_id=%d", bc), fmt.Sprintf("w_id=1 d_id=2 c_id=%d", bc2), fmt.Sprintf("c_w_id=1 c_d_id=2 c_id=%d", bc)
	bc3s := fmt.Sprintf("w_id=1 d_id=2 c_id=%d", bc3)
	// The sixth retest's: two lines swapped, the same lines in the other
	// order (check: ok on the code before).
	const swap = `UPDATE customer SET c_data = regexp_replace(c_data, '^([^|]* \| )([^|]* \| )', '\2\1') WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = $3`
	for _, tc := range []struct{ name, sql, want, eg string }{
		{"a payment's H_DATA of other names", `UPDATE history SET h_data = 'abcdef    ghijkl' WHERE ctid = (SELECT ctid FROM history WHERE h_c_id = $1 AND h_c_d_id = 2 AND strpos(h_data, ' ') > 0 LIMIT 1)`,
			payment, hist},
		{"a payment's H_DATA of another district's names", `UPDATE history SET h_data = (SELECT w_name FROM warehouse) || '    ' || (SELECT d_name FROM district WHERE d_w_id = 1 AND d_id = 9)
			WHERE ctid = (SELECT ctid FROM history WHERE h_c_id = $1 AND h_c_d_id = 2 AND h_d_id = 2 AND strpos(h_data, ' ') > 0 LIMIT 1)`, payment, hist},
		{"a line's amount changed", `UPDATE customer SET c_data = regexp_replace(c_data, '^([0-9]+ [0-9]+ [0-9]+ [0-9]+ [0-9]+ )([0-9]+)', '\1' || '4999') WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = $1`, customer, bcs},
		{"the newest line dropped", `UPDATE customer SET c_data = substr(c_data, strpos(c_data, ' | ') + 3) WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = $1`, customer, bcs},
		{"the only line dropped", `UPDATE customer SET c_data = substr(c_data, strpos(c_data, ' | ') + 3) WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = $2`, customer, bc2s},
		{"two lines swapped, their payments three days apart", swap, customer, bc3s},
		// Payments within two days of each other may have updated the
		// customer in either order: not a violation.
		{"two lines swapped, their payments dated alike", strings.ReplaceAll(swap, "$3", "$1"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub, err := tx.Begin(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Rollback(t.Context()) //nolint:errcheck // undone for the next
			sql := strings.NewReplacer("$1", strconv.Itoa(bc), "$2", strconv.Itoa(bc2), "$3", strconv.Itoa(bc3)).Replace(tc.sql)
			if tag, err := sub.Exec(t.Context(), sql); err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("tampering: %v (%s)", err, tag)
			}
			v := check(t, sub)
			if tc.want == "" {
				if len(v) > 0 {
					t.Fatalf("violations %q, want none", v)
				}
				return
			}
			if len(v) != 1 || !strings.HasPrefix(v[0], tc.want) || !strings.HasSuffix(v[0], "e.g. "+tc.eg) {
				t.Fatalf("violations %q, want one naming %q, e.g. %s", v, tc.want, tc.eg)
			}
		})
	}
}
