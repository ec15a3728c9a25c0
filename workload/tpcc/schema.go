package tpcc

import (
	"fmt"
	"strings"

	"github.com/txload/txload/workload"
)

// table is one of TPC-C's nine tables (clause 1.3): its columns, its
// primary key, the column that holds the warehouse (partitioning, "" for
// item), and the secondary indexes the transactions need.
type table struct {
	name      string
	columns   string
	key       string
	warehouse string
	indexes   []string
}

// The nine tables, in load order. Types as clause 1.3 gives them:
// numeric(p, s) for the decimals, timestamps for dates.
var tables = []table{
	{name: "item", columns: `
	i_id    INT NOT NULL,
	i_im_id INT NOT NULL,
	i_name  VARCHAR(24) NOT NULL,
	i_price NUMERIC(5, 2) NOT NULL,
	i_data  VARCHAR(50) NOT NULL`, key: "i_id"},
	{name: "warehouse", columns: `
	w_id       INT NOT NULL,
	w_name     VARCHAR(10) NOT NULL,
	w_street_1 VARCHAR(20) NOT NULL,
	w_street_2 VARCHAR(20) NOT NULL,
	w_city     VARCHAR(20) NOT NULL,
	w_state    CHAR(2) NOT NULL,
	w_zip      CHAR(9) NOT NULL,
	w_tax      NUMERIC(4, 4) NOT NULL,
	w_ytd      NUMERIC(12, 2) NOT NULL`, key: "w_id", warehouse: "w_id"},
	{name: "district", columns: `
	d_id        INT NOT NULL,
	d_w_id      INT NOT NULL,
	d_name      VARCHAR(10) NOT NULL,
	d_street_1  VARCHAR(20) NOT NULL,
	d_street_2  VARCHAR(20) NOT NULL,
	d_city      VARCHAR(20) NOT NULL,
	d_state     CHAR(2) NOT NULL,
	d_zip       CHAR(9) NOT NULL,
	d_tax       NUMERIC(4, 4) NOT NULL,
	d_ytd       NUMERIC(12, 2) NOT NULL,
	d_next_o_id INT NOT NULL`, key: "d_w_id, d_id", warehouse: "d_w_id"},
	{name: "customer", columns: `
	c_id           INT NOT NULL,
	c_d_id         INT NOT NULL,
	c_w_id         INT NOT NULL,
	c_first        VARCHAR(16) NOT NULL,
	c_middle       CHAR(2) NOT NULL,
	c_last         VARCHAR(16) NOT NULL,
	c_street_1     VARCHAR(20) NOT NULL,
	c_street_2     VARCHAR(20) NOT NULL,
	c_city         VARCHAR(20) NOT NULL,
	c_state        CHAR(2) NOT NULL,
	c_zip          CHAR(9) NOT NULL,
	c_phone        CHAR(16) NOT NULL,
	c_since        TIMESTAMP NOT NULL,
	c_credit       CHAR(2) NOT NULL,
	c_credit_lim   NUMERIC(12, 2) NOT NULL,
	c_discount     NUMERIC(4, 4) NOT NULL,
	c_balance      NUMERIC(12, 2) NOT NULL,
	c_ytd_payment  NUMERIC(12, 2) NOT NULL,
	c_payment_cnt  INT NOT NULL,
	c_delivery_cnt INT NOT NULL,
	c_data         VARCHAR(500) NOT NULL`, key: "c_w_id, c_d_id, c_id", warehouse: "c_w_id",
		// Payment and Order-Status by last name.
		indexes: []string{"c_w_id, c_d_id, c_last, c_first"}},
	{name: "history", columns: `
	h_c_id   INT NOT NULL,
	h_c_d_id INT NOT NULL,
	h_c_w_id INT NOT NULL,
	h_d_id   INT NOT NULL,
	h_w_id   INT NOT NULL,
	h_date   TIMESTAMP NOT NULL,
	h_amount NUMERIC(6, 2) NOT NULL,
	h_data   VARCHAR(24) NOT NULL`, warehouse: "h_w_id"},
	{name: "orders", columns: `
	o_id         INT NOT NULL,
	o_d_id       INT NOT NULL,
	o_w_id       INT NOT NULL,
	o_c_id       INT NOT NULL,
	o_entry_d    TIMESTAMP NOT NULL,
	o_carrier_id INT,
	o_ol_cnt     INT NOT NULL,
	o_all_local  INT NOT NULL`, key: "o_w_id, o_d_id, o_id", warehouse: "o_w_id",
		// Order-Status: a customer's last order.
		indexes: []string{"o_w_id, o_d_id, o_c_id, o_id"}},
	{name: "new_order", columns: `
	no_o_id INT NOT NULL,
	no_d_id INT NOT NULL,
	no_w_id INT NOT NULL`, key: "no_w_id, no_d_id, no_o_id", warehouse: "no_w_id"},
	{name: "order_line", columns: `
	ol_o_id        INT NOT NULL,
	ol_d_id        INT NOT NULL,
	ol_w_id        INT NOT NULL,
	ol_number      INT NOT NULL,
	ol_i_id        INT NOT NULL,
	ol_supply_w_id INT NOT NULL,
	ol_delivery_d  TIMESTAMP,
	ol_quantity    INT NOT NULL,
	ol_amount      NUMERIC(6, 2) NOT NULL,
	ol_dist_info   CHAR(24) NOT NULL`, key: "ol_w_id, ol_d_id, ol_o_id, ol_number", warehouse: "ol_w_id"},
	{name: "stock", columns: `
	s_i_id       INT NOT NULL,
	s_w_id       INT NOT NULL,
	s_quantity   INT NOT NULL,
	s_dist_01    CHAR(24) NOT NULL,
	s_dist_02    CHAR(24) NOT NULL,
	s_dist_03    CHAR(24) NOT NULL,
	s_dist_04    CHAR(24) NOT NULL,
	s_dist_05    CHAR(24) NOT NULL,
	s_dist_06    CHAR(24) NOT NULL,
	s_dist_07    CHAR(24) NOT NULL,
	s_dist_08    CHAR(24) NOT NULL,
	s_dist_09    CHAR(24) NOT NULL,
	s_dist_10    CHAR(24) NOT NULL,
	s_ytd        INT NOT NULL,
	s_order_cnt  INT NOT NULL,
	s_remote_cnt INT NOT NULL,
	s_data       VARCHAR(50) NOT NULL`, key: "s_w_id, s_i_id", warehouse: "s_w_id"},
}

// metaTable keeps what the load drew and a run needs: the C values of
// NURand (clause 2.1.6.1), and the number of warehouses.
const metaTable = "tpcc_meta"

const metaDDL = `CREATE TABLE ` + metaTable + ` (
	warehouses INT NOT NULL,
	c_last     INT NOT NULL,
	c_id       INT NOT NULL,
	c_item     INT NOT NULL,
	loaded_at  TIMESTAMPTZ NOT NULL DEFAULT now()
)`

// initColumns are the columns init makes, for workload.CheckColumns.
func initColumns() []workload.Column {
	ddl := []string{metaDDL}
	for _, t := range tables {
		ddl = append(ddl, t.createDDL(1, 1)...)
	}
	return workload.ColumnsOf(strings.Join(ddl, ";\n"))
}

// tableNames lists every table the schema creates, in an order they can be
// dropped in.
func tableNames() []string {
	out := []string{metaTable}
	for i := len(tables) - 1; i >= 0; i-- {
		out = append(out, tables[i].name)
	}
	return out
}

// createDDL is table t's CREATE TABLE, without its keys (made after the
// load); partitioned by warehouse in parts ranges of the warehouses'
// ids when parts > 1.
func (t table) createDDL(warehouses, parts int) []string {
	if parts <= 1 || t.warehouse == "" {
		return []string{fmt.Sprintf("CREATE TABLE %s (%s\n)", t.name, t.columns)}
	}
	out := []string{fmt.Sprintf("CREATE TABLE %s (%s\n) PARTITION BY RANGE (%s)", t.name, t.columns, t.warehouse)}
	for i, r := range ranges(warehouses, parts) {
		out = append(out, fmt.Sprintf("CREATE TABLE %s_p%d PARTITION OF %s FOR VALUES FROM (%d) TO (%d)", t.name, i+1, t.name, r[0], r[1]+1))
	}
	return out
}

// ranges splits warehouses 1..n into parts ranges [lo, hi] of sizes that
// differ by one at most.
func ranges(n, parts int) [][2]int {
	out := make([][2]int, 0, parts)
	lo := 1
	for i := range parts {
		size := n/parts + btoi(i < n%parts)
		out = append(out, [2]int{lo, lo + size - 1})
		lo += size
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// keyDDL is table t's primary key and secondary indexes, one statement
// each, built after the load.
func (t table) keyDDL() []string {
	var out []string
	if t.key != "" {
		out = append(out, fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s_pkey PRIMARY KEY (%s)", t.name, t.name, t.key))
	}
	for i, cols := range t.indexes {
		out = append(out, fmt.Sprintf("CREATE INDEX %s_idx%d ON %s (%s)", t.name, i+1, t.name, cols))
	}
	return out
}

// foreignKeys are clause 1.3's references, for --fks.
var foreignKeys = []struct{ table, columns, refTable, refColumns string }{
	{"district", "d_w_id", "warehouse", "w_id"},
	{"customer", "c_w_id, c_d_id", "district", "d_w_id, d_id"},
	{"history", "h_c_w_id, h_c_d_id, h_c_id", "customer", "c_w_id, c_d_id, c_id"},
	{"history", "h_w_id, h_d_id", "district", "d_w_id, d_id"},
	{"new_order", "no_w_id, no_d_id, no_o_id", "orders", "o_w_id, o_d_id, o_id"},
	{"orders", "o_w_id, o_d_id, o_c_id", "customer", "c_w_id, c_d_id, c_id"},
	{"order_line", "ol_w_id, ol_d_id, ol_o_id", "orders", "o_w_id, o_d_id, o_id"},
	{"order_line", "ol_supply_w_id, ol_i_id", "stock", "s_w_id, s_i_id"},
	{"stock", "s_w_id", "warehouse", "w_id"},
	{"stock", "s_i_id", "item", "i_id"},
}

// foreignKeyDDL is the ALTER TABLE of each foreign key.
func foreignKeyDDL() []string {
	out := make([]string, len(foreignKeys))
	for i, fk := range foreignKeys {
		name := fmt.Sprintf("%s_fk_%s", fk.table, strings.ReplaceAll(strings.ReplaceAll(fk.columns, ", ", "_"), " ", ""))
		out[i] = fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s FOREIGN KEY (%s) REFERENCES %s (%s)", fk.table, name, fk.columns, fk.refTable, fk.refColumns)
	}
	return out
}
