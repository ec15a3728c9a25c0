package tpcc

import (
	"fmt"
	"strings"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/pg"
)

// The transactions' SQL (clause 2). Each runs inside BEGIN … COMMIT; the
// client sends a transaction's statements in one pipelined exchange, or
// two for New-Order, whose second depends on the first's answer (the
// order id, and whether an item is unused).
const (
	// New-Order, first exchange: the district's next order id (its update
	// is the order's lock), the customer and the warehouse's tax, and the
	// items found (clause 2.4.2.2).
	noDistrictSQL = `UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2 RETURNING d_next_o_id - 1, d_tax`
	noCustomerSQL = `SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse WHERE w_id = $1 AND c_w_id = $1 AND c_d_id = $2 AND c_id = $3`
	noItemsSQL    = `SELECT i_price, i_name, i_data FROM item WHERE i_id = ANY($1::INT[])`
	// New-Order, second exchange: the order, its new order, and each line
	// with its stock's update (S_QUANTITY down by the quantity, or up by 91
	// less it when fewer than 10 would remain).
	noOrderSQL    = `INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) VALUES ($1, $2, $3, $4, now(), NULL, $5, $6)`
	noNewOrderSQL = `INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES ($1, $2, $3)`

	// Payment (clause 2.5.2.2): the warehouse's and district's YTD, the
	// customer's balance (BC credit: the payment prepended to C_DATA), and
	// the history row, in one exchange.
	payWarehouseSQL = `UPDATE warehouse SET w_ytd = w_ytd + $2::NUMERIC WHERE w_id = $1 RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip`
	payDistrictSQL  = `UPDATE district SET d_ytd = d_ytd + $3::NUMERIC WHERE d_w_id = $1 AND d_id = $2 RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip`

	// Delivery (clause 2.7.4.2): the oldest new order of each of the
	// warehouse's 10 districts delivered, in one transaction; a district
	// with none is skipped. It returns the districts delivered. The oldest
	// is locked as it is read: at read committed a Delivery that waited
	// for another's takes the next (without the lock it would skip the
	// district, having read the order the other delivered).
	deliverySQL = `WITH no AS (SELECT d.d, (SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = d.d ORDER BY no_o_id LIMIT 1 FOR UPDATE) AS o
		FROM generate_series(1, 10) AS d(d)),
del AS (DELETE FROM new_order n USING no WHERE n.no_w_id = $1 AND n.no_d_id = no.d AND n.no_o_id = no.o RETURNING n.no_d_id AS d, n.no_o_id AS o),
ord AS (UPDATE orders SET o_carrier_id = $2 FROM del WHERE o_w_id = $1 AND o_d_id = del.d AND o_id = del.o RETURNING o_d_id AS d, o_c_id AS c),
lines AS (UPDATE order_line SET ol_delivery_d = now() FROM del WHERE ol_w_id = $1 AND ol_d_id = del.d AND ol_o_id = del.o RETURNING ol_d_id AS d, ol_amount),
amt AS (SELECT d, sum(ol_amount) AS s FROM lines GROUP BY d),
cust AS (UPDATE customer SET c_balance = c_balance + amt.s, c_delivery_cnt = c_delivery_cnt + 1 FROM ord JOIN amt USING (d)
	WHERE c_w_id = $1 AND c_d_id = ord.d AND c_id = ord.c RETURNING c_d_id)
SELECT count(*) FROM cust`

	// Stock-Level (clause 2.8.2.2): distinct items of the district's last
	// 20 orders whose stock is below the threshold.
	stockLevelSQL = `SELECT count(DISTINCT s_i_id) FROM district
	JOIN order_line ON ol_w_id = d_w_id AND ol_d_id = d_id AND ol_o_id >= d_next_o_id - 20 AND ol_o_id < d_next_o_id
	JOIN stock ON s_w_id = d_w_id AND s_i_id = ol_i_id
WHERE d_w_id = $1 AND d_id = $2 AND s_quantity < $3`
)

// noLinesSQL inserts the order's lines from arrays of items, supplying
// warehouses and quantities, updating each line's stock: its S_DIST_xx is
// the district's ($2).
func noLinesSQL() string {
	return `WITH x AS (SELECT * FROM unnest($4::INT[], $5::INT[], $6::INT[]) WITH ORDINALITY AS x(i_id, w_id, qty, n)),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity - x.qty >= 10 THEN s_quantity - x.qty ELSE s_quantity - x.qty + 91 END,
		s_ytd = s_ytd + x.qty, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + CASE WHEN x.w_id <> $3 THEN 1 ELSE 0 END
	FROM x WHERE s_w_id = x.w_id AND s_i_id = x.i_id
	RETURNING s_i_id, s_w_id, s_quantity, s_data, ` + stockDist("$2::INT", "") + ` AS dist)
INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
SELECT $1, $2, $3, x.n, x.i_id, x.w_id, NULL, x.qty, x.qty * i.i_price, s.dist
FROM x JOIN s ON s.s_i_id = x.i_id AND s.s_w_id = x.w_id JOIN item i ON i.i_id = x.i_id`
}

// stockDist is the S_DIST_xx of district (an SQL expression of 1..10)
// of a stock row, its columns named with prefix ("s."): what New-Order
// copies into OL_DIST_INFO (clause 2.4.2.2).
func stockDist(district, prefix string) string {
	var b strings.Builder
	b.WriteString("CASE " + district)
	for d := 1; d <= districtsPerWH; d++ {
		fmt.Fprintf(&b, " WHEN %d THEN %ss_dist_%02d", d, prefix, d)
	}
	return b.String() + " END"
}

// byLastName is the customer of warehouse $3, district $4 and last name
// $5 that Payment and Order-Status take: the one at position n/2 rounded
// up of those with the name, sorted by first name (clause 2.5.2.2).
const byLastName = `SELECT c_id FROM (SELECT c_id, row_number() OVER (ORDER BY c_first, c_id) AS k, count(*) OVER () AS n
	FROM customer WHERE c_w_id = $3 AND c_d_id = $4 AND c_last = $5) x WHERE k = (n + 1) / 2`

// paySQL is Payment's customer update and history row; pick is the
// customer's id (an expression of $5).
func paySQL(pick string) string {
	return `WITH u AS (UPDATE customer SET c_balance = c_balance - $6::NUMERIC, c_ytd_payment = c_ytd_payment + $6::NUMERIC,
		c_payment_cnt = c_payment_cnt + 1,
		c_data = CASE WHEN c_credit = 'BC' THEN left(c_id || ' ' || c_d_id || ' ' || c_w_id || ' ' || $2::INT || ' ' || $1::INT || ' ' || $6::NUMERIC || ' | ' || c_data, 500) ELSE c_data END
	WHERE c_w_id = $3 AND c_d_id = $4 AND c_id = ` + pick + `
	RETURNING c_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance)
INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
SELECT u.c_id, $4, $3, $2, $1, now(), $6::NUMERIC, (SELECT w_name FROM warehouse WHERE w_id = $1) || '    ' || (SELECT d_name FROM district WHERE d_w_id = $1 AND d_id = $2)
FROM u`
}

// orderStatusSQL is Order-Status (clause 2.6.2.2): the customer, its last
// order and that order's lines; pick is the customer's id (an expression
// of $3).
func orderStatusSQL(pick string) string {
	return `WITH c AS (SELECT c_id, c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = ` + pick + `),
o AS (SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = (SELECT c_id FROM c) ORDER BY o_id DESC LIMIT 1)
SELECT c.c_balance, c.c_first, c.c_middle, c.c_last, o.o_id, o.o_entry_d, o.o_carrier_id,
	l.ol_i_id, l.ol_supply_w_id, l.ol_quantity, l.ol_amount, l.ol_delivery_d
FROM c CROSS JOIN o LEFT JOIN order_line l ON l.ol_w_id = $1 AND l.ol_d_id = $2 AND l.ol_o_id = o.o_id`
}

// statements are the workload's, made once per run: named (prepared once
// per connection) unless a pooler forbids session state.
type statements struct {
	begin, commit, rollback, isolation                            *executor.Stmt
	noDistrict, noCustomer, noItems, noOrder, noNewOrder, noLines *executor.Stmt
	payWarehouse, payDistrict, payByID, payByName                 *executor.Stmt
	osByID, osByName, delivery, stockLevel                        *executor.Stmt
}

func newStatements(iso pg.Isolation, pooled bool) *statements {
	name := func(n string) string {
		if pooled {
			return ""
		}
		return "tpcc_" + n
	}
	st := func(n, sql string) *executor.Stmt { return &executor.Stmt{SQL: sql, Name: name(n)} }
	// Payment and Order-Status address the customer as $3, $4, $5 (its
	// warehouse, district, id or last name); Order-Status's are $1, $2, $3.
	osByName := strings.NewReplacer("$3", "$1", "$4", "$2", "$5", "$3").Replace(byLastName)
	return &statements{
		begin:        &executor.Stmt{SQL: iso.BeginSQL(), Name: name("begin"), Begins: true},
		commit:       &executor.Stmt{SQL: "COMMIT", Name: name("commit"), Commits: true},
		rollback:     st("rollback", "ROLLBACK"),
		isolation:    st("isolation", "SELECT current_setting('transaction_isolation')"),
		noDistrict:   st("no_district", noDistrictSQL),
		noCustomer:   st("no_customer", noCustomerSQL),
		noItems:      st("no_items", noItemsSQL),
		noOrder:      st("no_order", noOrderSQL),
		noNewOrder:   st("no_new_order", noNewOrderSQL),
		noLines:      st("no_lines", noLinesSQL()),
		payWarehouse: st("pay_warehouse", payWarehouseSQL),
		payDistrict:  st("pay_district", payDistrictSQL),
		payByID:      st("pay_by_id", paySQL("$5::INT")),
		payByName:    st("pay_by_name", paySQL("("+byLastName+")")),
		osByID:       st("os_by_id", orderStatusSQL("$3::INT")),
		osByName:     st("os_by_name", orderStatusSQL("("+osByName+")")),
		delivery:     st("delivery", deliverySQL),
		stockLevel:   st("stock_level", stockLevelSQL),
	}
}
