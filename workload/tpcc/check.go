package tpcc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// condition is one of the twelve consistency conditions of clause 3.3.2:
// what it says, what it is checked over, and the key of that unit.
type condition struct {
	rule string
	unit string   // what the count of violations counts: "districts"
	key  []string // the unit's key columns, for the example
}

var conditions = [12]condition{
	{"W_YTD = sum(D_YTD)", "warehouses", []string{"w_id"}},
	{"D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)", "districts", []string{"w_id", "d_id"}},
	{"max(NO_O_ID) - min(NO_O_ID) + 1 = count of NEW-ORDER rows", "districts", []string{"w_id", "d_id"}},
	{"sum(O_OL_CNT) = count of ORDER-LINE rows", "districts", []string{"w_id", "d_id"}},
	{"O_CARRIER_ID is null if and only if a NEW-ORDER row exists", "orders", []string{"w_id", "d_id", "o_id"}},
	{"O_OL_CNT = count of its ORDER-LINE rows", "orders", []string{"w_id", "d_id", "o_id"}},
	{"OL_DELIVERY_D is null if and only if O_CARRIER_ID is null", "order lines", []string{"w_id", "d_id", "o_id", "ol_number"}},
	{"W_YTD = sum(H_AMOUNT)", "warehouses", []string{"w_id"}},
	{"D_YTD = sum(H_AMOUNT)", "districts", []string{"w_id", "d_id"}},
	{"C_BALANCE = sum(OL_AMOUNT delivered) - sum(H_AMOUNT)", "customers", []string{"w_id", "d_id", "c_id"}},
	{"count(ORDER) - count(NEW-ORDER) = 2100", "districts", []string{"w_id", "d_id"}},
	{"C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT delivered)", "customers", []string{"w_id", "d_id", "c_id"}},
}

// The audits beyond the twelve conditions: what the load and the
// transactions write, held to every row (the spec's conditions leave
// these rows free). Each is reported on a line of its own, by its label.
const (
	ruleQuantity     = iota // stock
	rulePrice               // items
	ruleLineItem            // order lines
	ruleLineAmount          // order lines
	ruleStockCounts         // stock
	ruleTax                 // districts
	ruleCustomer            // customers
	ruleHistory             // history rows
	ruleOrder               // orders
	ruleLine                // order lines
	ruleCustomerData        // BC customers
	nRules
)

var ruleLabels = [nRules]string{"stock quantity", "item", "line's item", "line amount", "stock counts", "tax", "customer", "payment", "order", "line", "customer data"}

var rules = [nRules]condition{
	// New-Order takes OL_QUANTITY (1..10) off S_QUANTITY and adds 91 when
	// fewer than 10 would be left (clause 2.4.2.2); the load draws 10..100.
	// No transaction writes S_DIST_xx or S_DATA: the load's a-strings.
	{"S_QUANTITY within 10..100, S_DIST_01..10 " + sizedSays(24, 24) + ", S_DATA " + sizedSays(26, 50), "stock rows", []string{"w_id", "i_id"}},
	// No transaction writes an item; the load makes items 1..100000, of
	// a price drawn in 1.00..100.00, an image id in 1..10000, a name and
	// data of a-strings.
	{"I_ID within 1..100000 each once, I_PRICE within 1.00..100.00, I_IM_ID within 1..10000, I_NAME " + sizedSays(14, 24) + ", I_DATA " + sizedSays(26, 50),
		"items", []string{"i_id"}},
	{"OL_I_ID names an item", "order lines", []string{"w_id", "d_id", "o_id", "ol_number"}},
	// Each line held to what wrote it: New-Order (orders after the load's
	// 3000) OL_QUANTITY × I_PRICE, of quantity 1..10; the load, quantity 5
	// and amount 0 for the 2100 orders it delivered, a drawn amount of
	// 0.01..9999.99 for the 900 it did not.
	{"OL_AMOUNT = OL_QUANTITY × I_PRICE of New-Order's lines, the load's of quantity 5 and amount 0 (delivered) or 0.01..9999.99", "order lines",
		[]string{"w_id", "d_id", "o_id", "ol_number"}},
	// Each of New-Order's lines (orders after the load's 3000) adds 1 to
	// its stock row's S_ORDER_CNT, its quantity to S_YTD, and 1 to
	// S_REMOTE_CNT when its supplying warehouse is not the order's, in the
	// transaction that writes the line; the load writes 0 in all three,
	// and no other transaction writes them or deletes a line. So each
	// stock row's three are exactly its lines' (a New-Order undone whole,
	// its order, lines and new order deleted and D_NEXT_O_ID lowered,
	// leaves them counted: the eighth outside retest).
	{"S_ORDER_CNT, S_YTD and S_REMOTE_CNT = the count, the sum of OL_QUANTITY and the count supplied to another warehouse of New-Order's lines it supplies (the load writes 0)",
		"stock rows", []string{"w_id", "i_id"}},
	// Only the load writes them, drawn in 0.0000..0.2000 (clause 4.3.3.1),
	// and their names and addresses (a-strings, the state two letters,
	// the zip four digits and 11111).
	{"W_TAX and D_TAX within 0..0.2, W_NAME and D_NAME " + aStrings(6, 10) + ", their addresses " + addressSays, "districts", []string{"w_id", "d_id"}},
	// The load writes GC or BC, a discount drawn in 0.0000..0.5000, one
	// payment (its history row) and no delivery; Payment adds 1 to
	// C_PAYMENT_CNT with each history row, Delivery 1 to C_DELIVERY_CNT
	// with each order it delivers (the load's 2101..3000 and New-Order's).
	// Its strings are the load's (clause 4.3.3.1: C_LAST of customers
	// 1..1000 the syllables of c_id - 1, of the others those of a number
	// drawn by NURand), but C_DATA, to which Payment adds a line in front
	// for a BC customer, keeping 500 characters.
	{"C_CREDIT GC or BC, C_DISCOUNT within 0..0.5, C_PAYMENT_CNT = its history rows, one of them the load's, C_DELIVERY_CNT = its orders delivered since the load, C_SINCE " + dated +
		", C_CREDIT_LIM 50000.00, C_MIDDLE OE, C_LAST three syllables (customers 1..1000: those of c_id - 1), C_FIRST " + sizedSays(8, 16) +
		", C_PHONE 16 digits, its address " + sizedAddressSays + ", C_DATA " + sizedSays(300, 500) + " (a BC customer's: Payment's lines in front)",
		"customers", []string{"w_id", "d_id", "c_id"}},
	// The load's history rows are of 10.00, one per customer in its own
	// district, Payment's of 1.00..5000.00 (clause 2.5.1.3), each of a
	// customer. H_DATA: the load's a-string (no space), or Payment's
	// warehouse and district names apart by four spaces (clause 2.5.2.2):
	// no transaction writes a name.
	{"H_AMOUNT within 1.00..5000.00, H_DATE " + dated + ", of a customer that exists, H_DATA the load's (" + sizedSays(12, 24) +
		", of 10.00 in its customer's district) or the W_NAME and D_NAME of its warehouse and district four spaces apart",
		"history rows", []string{"c_w_id", "c_d_id", "c_id"}},
	// The load's carriers are drawn in 1..10 and Delivery's (clause
	// 2.7.1.2); an order has 5..15 lines (clauses 4.3.3.1, 2.4.1.3), and
	// is all local if and only if each line's supplying warehouse is its own.
	{"O_C_ID names a customer, O_CARRIER_ID 1..10 or NULL, O_OL_CNT within 5..15, O_ALL_LOCAL 1 if and only if every line is supplied by the order's warehouse (else 0), O_ENTRY_D " + dated,
		"orders", []string{"w_id", "d_id", "o_id"}},
	// The load's lines are supplied by their own warehouse; New-Order's by
	// one of the warehouses loaded. OL_DIST_INFO is the load's a-string
	// (drawn, clause 4.3.3.1: no other row records it), or New-Order's
	// copy of its stock row's S_DIST_xx, xx the order's district (clause
	// 2.4.2.2; no transaction writes S_DIST_xx).
	{"OL_SUPPLY_W_ID a warehouse loaded (the load's lines: their own), OL_DELIVERY_D " + dated + ", OL_DIST_INFO " + sizedSays(24, 24) +
		" (New-Order's: the S_DIST_xx of its stock row, xx its district)",
		"order lines", []string{"w_id", "d_id", "o_id", "ol_number"}},
	// Payment puts a line in front of a BC customer's C_DATA and keeps
	// 500 characters (clause 2.5.2.2): cdataHeld.
	{"a BC customer's C_DATA its payments' lines (C_ID C_D_ID C_W_ID D_ID W_ID H_AMOUNT |), each of a history row of its own, " +
		"none behind a line whose payment is dated more than two days before its own, in front of the load's string, " +
		"every payment's while that string is there, 500 characters at most", "BC customers", []string{"w_id", "d_id", "c_id"}},
}

// aStrings says what a column of the load's a-strings (clause 4.3.2.2:
// random alphanumerics) of lo..hi characters holds; aString is its SQL.
func aStrings(lo, hi int) string { return "an a-string of " + span(lo, hi) }

// sizedSays says what sized holds a column to.
func sizedSays(lo, hi int) string { return "of " + span(lo, hi) + " characters, no space" }

func span(lo, hi int) string {
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d..%d", lo, hi)
}

func aString(col string, lo, hi int) string {
	// A length and a class of characters not in it: a regular expression
	// of bounded repeats ({24}) costs PostgreSQL ten times the check.
	return fmt.Sprintf("(length(%[1]s) BETWEEN %[2]d AND %[3]d AND %[1]s !~ '[^a-zA-Z0-9]')", col, lo, hi)
}

// sized is aString for the large tables' columns (customers and more):
// the length, and no space (what the transactions' strings have); a
// regular expression over each of their rows would double the check.
func sized(col string, lo, hi int) string {
	return fmt.Sprintf("(length(%[1]s) BETWEEN %[2]d AND %[3]d AND strpos(%[1]s, ' ') = 0)", col, lo, hi)
}

// addressSays is what the load writes in an address (clause 4.3.3.1);
// addressSQL holds the address of columns prefix_street_1 ... prefix_zip
// to it.
const (
	addressSays      = "(streets and city an a-string of 10..20, state 2 letters, zip 4 digits and 11111)"
	sizedAddressSays = "(streets and city of 10..20 characters, no space, state 2 letters, zip 4 digits and 11111)"
)

func addressSQL(prefix string, aString func(col string, lo, hi int) string) string {
	return aString(prefix+"_street_1", 10, 20) + " AND " + aString(prefix+"_street_2", 10, 20) + " AND " + aString(prefix+"_city", 10, 20) +
		fmt.Sprintf(` AND %[1]s_state ~ '^[A-Z][A-Z]$' AND %[1]s_zip ~ '^[0-9][0-9][0-9][0-9]11111$'`, prefix)
}

// lastNameSQL is the syllables of a number of 0..999, an SQL expression
// of n (clause 4.3.2.3).
func lastNameSQL(n string) string {
	arr := "(ARRAY['" + strings.Join(syllables[:], "', '") + "'])"
	return fmt.Sprintf("%[1]s[(%[2]s) / 100 + 1] || %[1]s[(%[2]s) / 10 %% 10 + 1] || %[1]s[(%[2]s) %% 10 + 1]", arr, n)
}

// dated is what every date the workload writes is held to: the load's
// time or a transaction's now(), within a margin of two days either side
// (the load's time is the client's clock, and a TIMESTAMP column holds the
// writing session's local time: time zones differ by up to 26 hours).
const dated = "within the load's time and now, give or take two days"

// finding is what the check found of one condition.
type finding struct {
	violations int64
	example    []int64 // the first violating unit's key; nil when none
	over       int64   // the units checked
	applies    bool
	why        string // when it does not apply
}

// checkResult is the twelve findings, and how long the check took.
type checkResult struct {
	found      [12]finding
	beyond     [nRules]finding
	nulls      nullFinding
	keys       keyFinding
	deliveries int64 // sum(C_DELIVERY_CNT): 0 right after the load
	// The tables no transaction adds rows to or deletes them from, counted
	// against the cardinalities of clause 1.2 for the warehouses loaded.
	warehouses int64
	meta       []string // what tpcc_meta holds that the load did not write (readMeta)
	counts     [5]int64 // warehouses, districts, customers, items, stock
	took       time.Duration
}

// cardinalities names the counted tables, with their rows per warehouse
// (items: in all) as clause 1.2 gives them.
var cardinalities = [5]struct {
	table string
	per   int64
}{{"warehouse", 1}, {"district", districtsPerWH}, {"customer", districtsPerWH * customersPerDistrict}, {"item", 0}, {"stock", items}}

// want is the rows table i holds for the warehouses loaded.
func (r *checkResult) want(i int) int64 {
	if cardinalities[i].per == 0 {
		return items
	}
	return cardinalities[i].per * r.warehouses
}

// cardinality describes the counted tables that do not hold what they
// should (nil when all do).
func (r *checkResult) cardinality() []string {
	var out []string
	for i, c := range cardinalities {
		if r.counts[i] != r.want(i) {
			out = append(out, fmt.Sprintf("%s holds %d rows, want %d", c.table, r.counts[i], r.want(i)))
		}
	}
	return out
}

// The check's queries, each over one kind of unit, all in one snapshot.
// Every condition gives its count of violations and the least violating
// key (min over key arrays: the first in key order).
var (
	warehouseSQL = `WITH d AS (SELECT d_w_id AS w, sum(d_ytd) AS s FROM district GROUP BY 1),
h AS (SELECT h_w_id AS w, sum(h_amount) AS s FROM history GROUP BY 1)
SELECT count(*),
	count(*) FILTER (WHERE w.w_ytd <> COALESCE(d.s, 0)), min(ARRAY[w.w_id]) FILTER (WHERE w.w_ytd <> COALESCE(d.s, 0)),
	count(*) FILTER (WHERE w.w_ytd <> COALESCE(h.s, 0)), min(ARRAY[w.w_id]) FILTER (WHERE w.w_ytd <> COALESCE(h.s, 0))
FROM warehouse w LEFT JOIN d ON d.w = w.w_id LEFT JOIN h ON h.w = w.w_id`

	districtSQL = `WITH o AS (SELECT o_w_id AS w, o_d_id AS d, max(o_id) AS mx, count(*) AS n, sum(o_ol_cnt) AS lines FROM orders GROUP BY 1, 2),
n AS (SELECT no_w_id AS w, no_d_id AS d, max(no_o_id) AS mx, min(no_o_id) AS mn, count(*) AS n FROM new_order GROUP BY 1, 2),
l AS (SELECT ol_w_id AS w, ol_d_id AS d, count(*) AS n FROM order_line GROUP BY 1, 2),
h AS (SELECT h_w_id AS w, h_d_id AS d, sum(h_amount) AS s FROM history GROUP BY 1, 2),
x AS (SELECT ARRAY[t.d_w_id, t.d_id] AS k,
	t.d_next_o_id - 1 IS DISTINCT FROM o.mx OR n.mx <> t.d_next_o_id - 1 AS c2,
	n.n > 0 AND n.mx - n.mn + 1 <> n.n AS c3,
	COALESCE(o.lines, 0) <> COALESCE(l.n, 0) AS c4,
	t.d_ytd <> COALESCE(h.s, 0) AS c9,
	COALESCE(o.n, 0) - COALESCE(n.n, 0) <> 2100 AS c11,
	(t.d_tax BETWEEN 0 AND 0.2 AND ` + aString("t.d_name", 6, 10) + ` AND ` + addressSQL("t.d", aString) + `
		AND (SELECT bool_and(w_tax BETWEEN 0 AND 0.2 AND ` + aString("w_name", 6, 10) + ` AND ` + addressSQL("w", aString) + `) FROM warehouse WHERE w_id = t.d_w_id)) IS NOT TRUE AS tax
	FROM district t LEFT JOIN o ON (o.w, o.d) = (t.d_w_id, t.d_id) LEFT JOIN n ON (n.w, n.d) = (t.d_w_id, t.d_id)
	LEFT JOIN l ON (l.w, l.d) = (t.d_w_id, t.d_id) LEFT JOIN h ON (h.w, h.d) = (t.d_w_id, t.d_id))
SELECT count(*),
	count(*) FILTER (WHERE c2), min(k) FILTER (WHERE c2),
	count(*) FILTER (WHERE c3), min(k) FILTER (WHERE c3),
	count(*) FILTER (WHERE c4), min(k) FILTER (WHERE c4),
	count(*) FILTER (WHERE c9), min(k) FILTER (WHERE c9),
	count(*) FILTER (WHERE c11), min(k) FILTER (WHERE c11),
	count(*) FILTER (WHERE tax), min(k) FILTER (WHERE tax)
FROM x`

	// itemSQL and stockSQL hold each item's id and price and stock
	// row's quantity to their ranges (a NULL is out of them); an item id
	// twice counts once a violation.
	itemSQL = `SELECT count(*), count(*) FILTER (WHERE bad) + count(*) - count(DISTINCT i_id), min(ARRAY[i_id]) FILTER (WHERE bad)
FROM (SELECT i_id, (i_id BETWEEN 1 AND 100000 AND i_price BETWEEN 1 AND 100 AND i_im_id BETWEEN 1 AND 10000
	AND ` + sized("i_name", 14, 24) + ` AND ` + sized("i_data", 26, 50) + `) IS NOT TRUE AS bad FROM item) x`
	// The stock counts are held to New-Order's lines, summed per stock
	// row they name.
	stockSQL = `WITH nl AS (SELECT ol_supply_w_id AS w, ol_i_id AS i, count(*) AS n, sum(ol_quantity) AS q, count(*) FILTER (WHERE ol_supply_w_id <> ol_w_id) AS r
	FROM order_line WHERE ol_o_id > 3000 GROUP BY 1, 2)
SELECT count(*), count(*) FILTER (WHERE bad), min(ARRAY[s_w_id, s_i_id]) FILTER (WHERE bad),
	count(*) FILTER (WHERE badcnt), min(ARRAY[s_w_id, s_i_id]) FILTER (WHERE badcnt)
FROM (SELECT s_w_id, s_i_id, (s_quantity BETWEEN 10 AND 100
		AND length(s_dist_01) + length(s_dist_02) + length(s_dist_03) + length(s_dist_04) + length(s_dist_05)
			+ length(s_dist_06) + length(s_dist_07) + length(s_dist_08) + length(s_dist_09) + length(s_dist_10) = 240
		AND ` + sized("s_data", 26, 50) + `) IS NOT TRUE AS bad,
	(s_order_cnt = COALESCE(nl.n, 0) AND s_ytd = COALESCE(nl.q, 0) AND s_remote_cnt = COALESCE(nl.r, 0)) IS NOT TRUE AS badcnt
	FROM stock LEFT JOIN nl ON (nl.w, nl.i) = (s_w_id, s_i_id)) x`

	// newOrderSQL: condition 5, each order against the new orders.
	newOrderSQL = `SELECT count(*),
	count(*) FILTER (WHERE (o.o_carrier_id IS NULL) <> (n.no_o_id IS NOT NULL)),
	min(ARRAY[o.o_w_id, o.o_d_id, o.o_id]) FILTER (WHERE (o.o_carrier_id IS NULL) <> (n.no_o_id IS NOT NULL))
FROM orders o LEFT JOIN new_order n ON (n.no_w_id, n.no_d_id, n.no_o_id) = (o.o_w_id, o.o_d_id, o.o_id)`

	// orderSQL: conditions 6 and 7 per order, 10 and 12 per customer,
	// from one pass over the order lines: each order's lines counted, its
	// delivered amount summed. An order line whose delivery date disagrees
	// with its order's carrier violates 7; the example is the first such
	// line of the first such order. As the spec words them, the conditions
	// are of each order (5, 6, 7) and each district (4): an order line of
	// no order counts in its district's lines (4) only.
	// The same pass holds each line of an order to its item (one that
	// exists; its amount as what wrote the line made it: the load's
	// orders of a district are 1..2100, delivered, then 2101..3000,
	// firstNewOrder and ordersPerDistrict). Only New-Order's lines are
	// joined to their items (all 300,000 a warehouse would make the
	// query half as slow again): the load's name an item by its id,
	// which itemSQL holds to 1..100000, each once.
	orderSQL = `WITH li AS (SELECT ol_w_id, ol_d_id, ol_o_id, ol_number, ol_delivery_d, ol_amount, ol_supply_w_id <> ol_w_id AS remote,
		(ol_i_id BETWEEN 1 AND 100000) IS NOT TRUE AS noitem,
		(CASE WHEN ol_o_id <= 2100 THEN ol_quantity = 5 AND ol_amount = 0
			ELSE ol_quantity = 5 AND ol_amount BETWEEN 0.01 AND 9999.99 END) IS NOT TRUE AS badamt,
		(ol_supply_w_id = ol_w_id AND COALESCE(ol_delivery_d BETWEEN ` + loSQL + ` AND ` + hiSQL + `, true) AND ` + sized("ol_dist_info", 24, 24) + `) IS NOT TRUE AS badline
	FROM order_line WHERE ol_o_id <= 3000
	UNION ALL
	SELECT ol_w_id, ol_d_id, ol_o_id, ol_number, ol_delivery_d, ol_amount, ol_supply_w_id <> ol_w_id, i.i_id IS NULL,
		i.i_id IS NOT NULL AND (ol_quantity BETWEEN 1 AND 10 AND ol_amount = ol_quantity * i.i_price) IS NOT TRUE,
		(ol_supply_w_id BETWEEN 1 AND ` + whSQL + ` AND COALESCE(ol_delivery_d BETWEEN ` + loSQL + ` AND ` + hiSQL + `, true)
			AND ol_dist_info = ` + stockDist("ol_d_id", "s.") + `) IS NOT TRUE
	FROM order_line LEFT JOIN item i ON i.i_id = ol_i_id LEFT JOIN stock s ON (s.s_w_id, s.s_i_id) = (ol_supply_w_id, ol_i_id) WHERE ol_o_id > 3000),
l AS (SELECT ol_w_id AS w, ol_d_id AS d, ol_o_id AS o, count(*) AS n,
		count(*) FILTER (WHERE ol_delivery_d IS NULL) AS undelivered,
		min(ol_number) FILTER (WHERE ol_delivery_d IS NULL) AS first_undelivered,
		min(ol_number) FILTER (WHERE ol_delivery_d IS NOT NULL) AS first_delivered,
		COALESCE(sum(ol_amount) FILTER (WHERE ol_delivery_d IS NOT NULL), 0) AS delivered,
		count(*) FILTER (WHERE noitem) AS noitem, min(ol_number) FILTER (WHERE noitem) AS first_noitem,
		count(*) FILTER (WHERE badamt) AS badamt, min(ol_number) FILTER (WHERE badamt) AS first_badamt,
		count(*) FILTER (WHERE badline) AS badline, min(ol_number) FILTER (WHERE badline) AS first_badline, bool_or(remote) AS remote
	FROM li GROUP BY 1, 2, 3),
ol AS MATERIALIZED (SELECT o.o_w_id, o.o_d_id, o.o_id, o.o_c_id, o.o_ol_cnt, o.o_carrier_id,
		l.n, l.undelivered, l.first_undelivered, l.first_delivered, COALESCE(l.delivered, 0) AS delivered,
		l.noitem, l.first_noitem, l.badamt, l.first_badamt, l.badline, l.first_badline,
		((o.o_carrier_id BETWEEN 1 AND 10 OR o.o_carrier_id IS NULL) AND o.o_ol_cnt BETWEEN 5 AND 15
			AND o.o_all_local = CASE WHEN COALESCE(l.remote, false) THEN 0 ELSE 1 END
			AND o.o_entry_d BETWEEN ` + loSQL + ` AND ` + hiSQL + `) IS NOT TRUE AS badorder
	FROM orders o LEFT JOIN l ON (l.w, l.d, l.o) = (o.o_w_id, o.o_d_id, o.o_id)),
per AS (SELECT count(*) FILTER (WHERE o_ol_cnt IS DISTINCT FROM n) AS n6,
		COALESCE(sum(noitem), 0) AS nitem, min(ARRAY[o_w_id, o_d_id, o_id, first_noitem]) FILTER (WHERE noitem > 0) AS eitem,
		COALESCE(sum(badamt), 0) AS namt, min(ARRAY[o_w_id, o_d_id, o_id, first_badamt]) FILTER (WHERE badamt > 0) AS eamt,
		COALESCE(sum(badline), 0) AS nline, min(ARRAY[o_w_id, o_d_id, o_id, first_badline]) FILTER (WHERE badline > 0) AS eline,
		count(*) FILTER (WHERE badorder) AS nord, min(ARRAY[o_w_id, o_d_id, o_id]) FILTER (WHERE badorder) AS eord,
		min(ARRAY[o_w_id, o_d_id, o_id]) FILTER (WHERE o_ol_cnt IS DISTINCT FROM n) AS e6,
		COALESCE(sum(n), 0) AS lines,
		COALESCE(sum(CASE WHEN o_carrier_id IS NULL THEN n - undelivered ELSE undelivered END), 0) AS n7,
		min(ARRAY[o_w_id, o_d_id, o_id, CASE WHEN o_carrier_id IS NULL THEN first_delivered ELSE first_undelivered END])
			FILTER (WHERE CASE WHEN o_carrier_id IS NULL THEN n - undelivered ELSE undelivered END > 0) AS e7
	FROM ol),
cust AS MATERIALIZED (SELECT o_w_id, o_d_id, o_c_id, sum(delivered) AS s,
		count(*) FILTER (WHERE o_id >= ` + firstNewOrderSQL + ` AND o_carrier_id IS NOT NULL) AS delivered, count(*) FILTER (WHERE NOT badorder) AS good, min(o_id) AS first
	FROM ol GROUP BY 1, 2, 3),
names AS (SELECT d_w_id AS w, d_id AS d, w_name || '    ' || d_name AS names FROM district JOIN warehouse ON w_id = d_w_id),
h AS MATERIALIZED (SELECT h_c_w_id, h_c_d_id, h_c_id, sum(h_amount) AS s, count(*) AS n, count(*) FILTER (WHERE strpos(h_data, ' ') = 0) AS loaded,
		count(*) FILTER (WHERE (h_amount BETWEEN 1 AND 5000 AND h_date BETWEEN ` + loSQL + ` AND ` + hiSQL + `
			AND (` + sized("h_data", 12, 24) + ` AND h_amount = 10 AND (h_d_id, h_w_id) = (h_c_d_id, h_c_w_id) OR h_data = names.names)) IS NOT TRUE) AS bad
	FROM history LEFT JOIN names ON (names.w, names.d) = (h_w_id, h_d_id) GROUP BY 1, 2, 3),
c AS (SELECT ARRAY[c.c_w_id, c.c_d_id, c.c_id] AS k, c.c_delivery_cnt, COALESCE(h.bad, 0) AS hbad,
		c.c_balance <> COALESCE(cust.s, 0) - COALESCE(h.s, 0) AS c10,
		c.c_balance + c.c_ytd_payment <> COALESCE(cust.s, 0) AS c12,
		(c.c_credit IN ('GC', 'BC') AND c.c_discount BETWEEN 0 AND 0.5 AND c.c_payment_cnt = COALESCE(h.n, 0) AND h.loaded = 1
			AND c.c_delivery_cnt = COALESCE(cust.delivered, 0) AND c.c_since BETWEEN ` + loSQL + ` AND ` + hiSQL + `
			AND c.c_credit_lim = 50000 AND c.c_middle = 'OE'
			AND CASE WHEN c.c_id <= 1000 THEN c.c_last = ` + lastNameSQL("c.c_id - 1") + ` ELSE c.c_last IN (SELECT ` + lastNameSQL("n") + ` FROM generate_series(0, 999) n) END
			AND ` + sized("c.c_first", 8, 16) + ` AND ` + addressSQL("c.c", sized) + ` AND length(c.c_phone) = 16 AND c.c_phone !~ '[^0-9]'
			AND length(c.c_data) BETWEEN 300 AND 500 AND (strpos(c.c_data, ' ') = 0 OR c.c_credit = 'BC'
				AND c.c_data LIKE c.c_id || ' ' || c.c_d_id || ' ' || c.c_w_id || ' %' AND c.c_data ~ '^[0-9]+ [0-9]+ [0-9]+ [0-9]+ [0-9]+ [0-9]+\.[0-9][0-9] \| ')) IS NOT TRUE AS badcust
	FROM customer c LEFT JOIN cust ON (cust.o_w_id, cust.o_d_id, cust.o_c_id) = (c.c_w_id, c.c_d_id, c.c_id)
	LEFT JOIN h ON (h.h_c_w_id, h.h_c_d_id, h.h_c_id) = (c.c_w_id, c.c_d_id, c.c_id)),
pc AS (SELECT count(*) AS customers, COALESCE(sum(c_delivery_cnt), 0) AS deliveries,
		count(*) FILTER (WHERE c10) AS n10, min(k) FILTER (WHERE c10) AS e10,
		count(*) FILTER (WHERE c12) AS n12, min(k) FILTER (WHERE c12) AS e12,
		count(*) FILTER (WHERE badcust) AS ncust, min(k) FILTER (WHERE badcust) AS ecust,
		COALESCE(sum(hbad), 0) AS nhist, min(k) FILTER (WHERE hbad > 0) AS ehist
	FROM c),
-- The orders and history rows of a customer that does not exist.
oo AS (SELECT COALESCE(sum(good), 0) AS n, min(ARRAY[o_w_id, o_d_id, first]) AS e FROM cust
	WHERE NOT EXISTS (SELECT 1 FROM customer c WHERE (c.c_w_id, c.c_d_id, c.c_id) = (cust.o_w_id, cust.o_d_id, cust.o_c_id))),
oh AS (SELECT COALESCE(sum(n), 0) AS n, min(ARRAY[h_c_w_id, h_c_d_id, h_c_id]) AS e FROM h
	WHERE NOT EXISTS (SELECT 1 FROM customer c WHERE (c.c_w_id, c.c_d_id, c.c_id) = (h.h_c_w_id, h.h_c_d_id, h.h_c_id)))
SELECT per.n6, per.e6, per.lines, per.n7, per.e7, pc.customers, pc.deliveries, pc.n10, pc.e10, pc.n12, pc.e12,
	per.nitem, per.eitem, per.namt, per.eamt, per.nline, per.eline, per.nord + oo.n, LEAST(per.eord, oo.e),
	pc.ncust, pc.ecust, pc.nhist + oh.n, LEAST(pc.ehist, oh.e), (SELECT COALESCE(sum(n), 0) FROM h) FROM per, pc, oo, oh`
)

// The bounds the check's queries hold values to, each evaluated once: the
// warehouses loaded, and the earliest and latest time a date may be
// (dated).
const (
	whSQL            = `(SELECT min(warehouses) FROM ` + metaTable + `)`
	loSQL            = `(SELECT min(loaded_at)::TIMESTAMP - INTERVAL '2 days' FROM ` + metaTable + `)`
	hiSQL            = `(SELECT clock_timestamp()::TIMESTAMP + INTERVAL '2 days')`
	firstNewOrderSQL = "2101" // firstNewOrder: the load's first order not delivered
)

// errNoSchema is a check of a database without the tables.
var errNoSchema = errors.New("no tpcc schema in this database: run `txload init tpcc` first")

// runCheck checks the twelve conditions in one snapshot on a connection
// of its own, whose queries are cancelled on the server if ctx ends.
func runCheck(ctx context.Context, t *pg.Target) (*checkResult, error) {
	start := time.Now()
	conn, err := connect(ctx, t)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	server, err := pg.Detect(ctx, conn)
	if err != nil {
		return nil, err
	}
	res := &checkResult{}
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := workload.CatalogFirst(ctx, tx); err != nil {
			return err
		}
		if server.Dialect == pg.PostgreSQL && !t.Pooled() {
			// The per-order and per-customer aggregates hash in memory.
			if _, err := tx.Exec(ctx, "SET LOCAL work_mem = '256MB'"); err != nil {
				return fmt.Errorf("setting work_mem: %w", err)
			}
		}
		return checkTx(ctx, tx, res)
	})
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "42P01":
		return nil, errNoSchema
	case err != nil:
		return nil, fmt.Errorf("check tpcc: %w", firstCause(ctx, err))
	}
	res.took = time.Since(start)
	return res, nil
}

// checkTx runs the check's queries in tx and fills res.
func checkTx(ctx context.Context, tx pgx.Tx, res *checkResult) error {
	f, b := &res.found, &res.beyond
	if err := res.readMeta(ctx, tx); err != nil {
		return err
	}
	if err := tx.QueryRow(ctx, itemSQL).Scan(&res.counts[3], &b[rulePrice].violations, &b[rulePrice].example); err != nil {
		return fmt.Errorf("checking the items: %w", err)
	}
	if err := tx.QueryRow(ctx, stockSQL).Scan(&res.counts[4], &b[ruleQuantity].violations, &b[ruleQuantity].example,
		&b[ruleStockCounts].violations, &b[ruleStockCounts].example); err != nil {
		return fmt.Errorf("checking the stock: %w", err)
	}
	b[rulePrice].over, b[ruleQuantity].over, b[ruleStockCounts].over = res.counts[3], res.counts[4], res.counts[4]
	var whs int64
	if err := tx.QueryRow(ctx, warehouseSQL).Scan(&whs, &f[0].violations, &f[0].example, &f[7].violations, &f[7].example); err != nil {
		return fmt.Errorf("checking conditions 1 and 8: %w", err)
	}
	f[0].over, f[7].over = whs, whs
	var districts int64
	if err := tx.QueryRow(ctx, districtSQL).Scan(&districts, &f[1].violations, &f[1].example, &f[2].violations, &f[2].example,
		&f[3].violations, &f[3].example, &f[8].violations, &f[8].example, &f[10].violations, &f[10].example,
		&b[ruleTax].violations, &b[ruleTax].example); err != nil {
		return fmt.Errorf("checking conditions 2, 3, 4, 9 and 11: %w", err)
	}
	b[ruleTax].over = districts
	for _, i := range []int{1, 2, 3, 8, 10} {
		f[i].over = districts
	}
	var orders int64
	if err := tx.QueryRow(ctx, newOrderSQL).Scan(&orders, &f[4].violations, &f[4].example); err != nil {
		return fmt.Errorf("checking condition 5: %w", err)
	}
	var lines, customers int64
	if err := tx.QueryRow(ctx, orderSQL).Scan(&f[5].violations, &f[5].example, &lines, &f[6].violations, &f[6].example,
		&customers, &res.deliveries, &f[9].violations, &f[9].example, &f[11].violations, &f[11].example,
		&b[ruleLineItem].violations, &b[ruleLineItem].example, &b[ruleLineAmount].violations, &b[ruleLineAmount].example,
		&b[ruleLine].violations, &b[ruleLine].example, &b[ruleOrder].violations, &b[ruleOrder].example,
		&b[ruleCustomer].violations, &b[ruleCustomer].example, &b[ruleHistory].violations, &b[ruleHistory].example, &b[ruleHistory].over); err != nil {
		return fmt.Errorf("checking conditions 6, 7, 10 and 12, the orders, customers, payments and order lines: %w", err)
	}
	b[ruleLineItem].over, b[ruleLineAmount].over, b[ruleLine].over = lines, lines, lines
	b[ruleOrder].over, b[ruleCustomer].over = orders, customers
	f[4].over, f[5].over, f[6].over = orders, orders, lines
	f[9].over, f[11].over = customers, customers
	res.counts[0], res.counts[1], res.counts[2] = whs, districts, customers
	for i := range f {
		f[i].applies = true
	}
	if err := checkCustomerData(ctx, tx, &b[ruleCustomerData]); err != nil {
		return err
	}
	if err := checkNulls(ctx, tx, &res.nulls); err != nil {
		return err
	}
	if err := checkKeys(ctx, tx, &res.keys); err != nil {
		return err
	}
	// Condition 11 holds until the first Delivery (clause 3.3.2.11).
	if res.deliveries > 0 {
		f[10].applies = false
		f[10].why = fmt.Sprintf("not checked: it holds until the first Delivery, and %d orders were delivered since the load", res.deliveries)
	}
	return nil
}

// violations describes every condition that does not hold.
func (r *checkResult) violations() []string {
	var out []string
	out = append(out, r.meta...)
	if c := r.cardinality(); len(c) > 0 {
		out = append(out, "cardinality (clause 1.2): "+strings.Join(c, ", "))
	}
	for i, f := range r.found {
		if f.applies && f.violations > 0 {
			out = append(out, fmt.Sprintf("consistency condition %d (%s): %s", i+1, conditions[i].rule, f.describe(conditions[i])))
		}
	}
	for i, f := range r.beyond {
		if f.violations > 0 {
			out = append(out, fmt.Sprintf("%s (%s): %s", ruleLabels[i], rules[i].rule, f.describe(rules[i])))
		}
	}
	if r.nulls.violated() {
		out = append(out, "nulls: "+r.nulls.describe())
	}
	if r.keys.violated() {
		out = append(out, "keys: "+r.keys.describe())
	}
	return out
}

// describe says how many units violate c, and the first.
func (f finding) describe(c condition) string {
	s := fmt.Sprintf("%d of %d %s violate it", f.violations, f.over, c.unit)
	if f.violations > 0 && len(f.example) > 0 {
		var kv []string
		for i, v := range f.example {
			name := "?"
			if i < len(c.key) {
				name = c.key[i]
			}
			kv = append(kv, name+"="+strconv.FormatInt(v, 10))
		}
		s += ", e.g. " + strings.Join(kv, " ")
	}
	return s
}

// lines are the check's report: one line per condition.
func (r *checkResult) lines() []workload.Line {
	card := fmt.Sprintf("ok (%s, %d districts, %d customers, %d items, %d stock rows)", plural(int(r.warehouses), "warehouse"),
		r.counts[1], r.counts[2], r.counts[3], r.counts[4])
	if c := r.cardinality(); len(c) > 0 {
		card = "VIOLATED: " + strings.Join(c, ", ")
	}
	out := []workload.Line{{Label: "cardinality", Value: card}}
	for i, f := range r.found {
		c := conditions[i]
		v := ""
		switch {
		case !f.applies:
			v = fmt.Sprintf("%s: %s", c.rule, f.why)
		case f.violations == 0:
			v = fmt.Sprintf("%s: ok (%d %s)", c.rule, f.over, c.unit)
		default:
			v = fmt.Sprintf("%s: VIOLATED: %s", c.rule, f.describe(c))
		}
		out = append(out, workload.Line{Label: fmt.Sprintf("condition %2d", i+1), Value: v})
	}
	for i, f := range r.beyond {
		v := fmt.Sprintf("%s: ok (%d %s)", rules[i].rule, f.over, rules[i].unit)
		if f.violations > 0 {
			v = fmt.Sprintf("%s: VIOLATED: %s", rules[i].rule, f.describe(rules[i]))
		}
		out = append(out, workload.Line{Label: ruleLabels[i], Value: v})
	}
	nulls := "ok (" + r.nulls.describe() + ")"
	if r.nulls.violated() {
		nulls = "VIOLATED: " + r.nulls.describe()
	}
	out = append(out, workload.Line{Label: "nulls", Value: nulls})
	keys := "ok (" + r.keys.describe() + ")"
	if r.keys.violated() {
		keys = "VIOLATED: " + r.keys.describe()
	}
	out = append(out, workload.Line{Label: "keys", Value: keys})
	out = append(out, workload.Line{Label: "check time", Value: fmt.Sprintf("%.1fs (one snapshot, repeatable read)", r.took.Seconds())})
	return out
}

// values are the findings by key, for JSON.
func (r *checkResult) values() map[string]int64 {
	v := map[string]int64{"check_ms": r.took.Milliseconds(), "deliveries_since_load": r.deliveries, "cardinality_violations": int64(len(r.cardinality()))}
	for i, f := range r.found {
		if f.applies {
			v["condition_"+strconv.Itoa(i+1)+"_violations"] = f.violations
		}
	}
	for i, f := range r.beyond {
		v[strings.ReplaceAll(strings.ReplaceAll(ruleLabels[i], "'s", ""), " ", "_")+"_violations"] = f.violations
	}
	v["null_violations"] = r.nulls.rows()
	v["key_violations"] = r.keys.rows()
	return v
}

// result is the check as the report shows it.
func (r *checkResult) result(lines []workload.Line) *workload.CheckResult {
	res := &workload.CheckResult{Lines: append(lines, r.lines()...), Violations: r.violations(), Values: r.values()}
	return res
}
