package tpcc

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// The five transaction types of the report, and the spec's response-time
// bound of each at the 90th percentile (clause 5.2.5.3), in seconds.
var (
	typeNames  = [5]string{"new-order", "payment", "order-status", "delivery", "stock-level"}
	typeOfOp   = [numOps]int{0, 1, 2, 3, 4, 0}
	p90Bound   = [5]float64{5, 5, 5, 5, 20}
	minimumMix = [5]float64{0, 43, 4, 4, 4} // clause 5.2.3; New-Order takes the rest
	quantiles  = [...]float64{50, 90, 95, 99, 99.9}
)

// tpmCPerWH is the most tpmC a warehouse's 10 terminals reach with the
// spec's wait times: the base of the efficiency.
const tpmCPerWH = 12.86

func percentOf(n, of int64) float64 { return 100 * float64(n) / float64(max(of, 1)) }

// perType is a transaction type's figures in the measured window: the
// New-Order's include those rolled back on purpose.
type perType struct {
	ok, rolledBack, failed, retries int64
	response                        *hdr.Histogram
}

func byType(w *metrics.Snapshot) ([5]perType, error) {
	var out [5]perType
	for i := range out {
		out[i].response = metrics.NewHistogram()
	}
	for op, s := range w.Ops {
		if op >= numOps {
			break
		}
		t := &out[typeOfOp[op]]
		if op == opNewOrderRollback {
			t.rolledBack += s.OK
		} else {
			t.ok += s.OK
		}
		t.failed += s.FailedTotal()
		t.retries += s.Retries
		if dropped := t.response.Merge(s.Response); dropped != 0 {
			return out, fmt.Errorf("merging %s's latencies: %d values out of range", s.Name, dropped)
		}
	}
	return out, nil
}

// runReport is the run's TPC-C figures, its cross-check against the
// server, and the consistency conditions.
func (g *tpcc) runReport(ctx context.Context, t *pg.Target, all *metrics.Snapshot, obs *observed, b before, runC CValues) (*workload.CheckResult, error) {
	if res, err := workload.CheckColumns(ctx, t, initColumns()); res != nil || err != nil {
		return res, err
	}
	conn, err := connect(ctx, t)
	if err != nil {
		return nil, err
	}
	var nextOrders, history int64
	err = conn.QueryRow(ctx, `SELECT (SELECT sum(d_next_o_id) FROM district), (SELECT count(*) FROM history)`).Scan(&nextOrders, &history)
	conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return nil, fmt.Errorf("run tpcc: reading the districts' order ids: %w", err)
	}
	chk, err := runCheck(ctx, t)
	if err != nil {
		return nil, err
	}
	w := obs.window
	if w == nil {
		w = all
	}
	types, err := byType(w)
	if err != nil {
		return nil, err
	}
	c := obs.counts()
	minutes := w.Elapsed.Minutes()
	var total, dealt int64
	for _, t := range types {
		total += t.ok + t.rolledBack
		dealt += t.ok + t.rolledBack + t.failed
	}
	tpmC := float64(types[0].ok) / max(minutes, 1e-9)
	values := map[string]int64{"tpmc": int64(tpmC + 0.5), "tpm_total": int64(float64(total)/max(minutes, 1e-9) + 0.5)}
	lines := []workload.Line{
		{Label: "tpmC", Value: fmt.Sprintf("%.1f (New-Orders committed per minute of the %.1fs measured)", tpmC, w.Elapsed.Seconds())},
		{Label: "tpmTotal", Value: fmt.Sprintf("%.1f (transactions of every type, the New-Orders rolled back on purpose included)", float64(total)/max(minutes, 1e-9))},
	}
	if g.cfg.wait > 0 {
		// The spec's efficiency at --wait 1; scaled waits scale the most
		// the terminals can reach.
		most := tpmCPerWH * float64(g.cfg.warehouses) / g.cfg.wait
		eff := 100 * tpmC / most
		values["efficiency_pct_x100"] = int64(eff*100 + 0.5)
		v := fmt.Sprintf("%.1f%% of the %.2f tpmC the terminals of %s reach at the spec's wait times (12.86 each)", eff, most, plural(g.cfg.warehouses, "warehouse"))
		if g.cfg.wait != 1 {
			v = fmt.Sprintf("%.1f%% of the %.1f tpmC the terminals of %s reach at --wait %g (12.86 each at the spec's wait times, --wait 1)", eff, most, plural(g.cfg.warehouses, "warehouse"), g.cfg.wait)
		}
		lines = append(lines, workload.Line{Label: "efficiency", Value: v})
	}
	lines = append(lines, typeTable(types, values)...)
	lines = append(lines, rule(types, values), mix(types, dealt, values))
	lines = append(lines, inputs(c, values)...)
	lines = append(lines, workload.Line{Label: "NURand C (run)", Value: fmt.Sprintf("%s; the load's: %s (C_LAST 65 to 119 apart, not 96 or 112)", runC, b.load)})
	// Every New-Order that committed raised its district's next order id
	// by one; every Payment wrote one history row.
	orders := workload.Reconcile(all.Ops[opNewOrder], nextOrders-b.nextOrders)
	payments := workload.Reconcile(all.Ops[opPayment], history-b.history)
	lines = append(lines, serverLine("new orders (server)", "sum(d_next_o_id) rose", orders),
		serverLine("payments (server)", "history gained", payments))
	lines = append(lines, obs.Notes(g.cfg.isolation)...)
	res := chk.result(lines)
	for k, v := range values {
		res.Values[k] = v
	}
	// Each count is of one type of transaction: res has no Reconciled,
	// which a failover would redo by the markers, of every type.
	for _, rc := range []struct {
		key, what string
		r         workload.Reconciliation
	}{{"new_orders", "new orders", orders}, {"payments", "payments", payments}} {
		var part workload.CheckResult
		rc.r.Into(&part)
		for k, v := range part.Values {
			res.Values[rc.key+"_"+k] = v
		}
		for _, v := range part.Violations {
			res.Violations = append(res.Violations, rc.what+" against the server: "+v)
		}
	}
	return res, nil
}

// typeTable is the per-type table: counts and response-time percentiles.
func typeTable(types [5]perType, values map[string]int64) []workload.Line {
	rows := [][]string{{"", "ok", "rolled back", "failed", "retries", "p50", "p90", "p95", "p99", "p99.9", "max"}}
	for i, t := range types {
		row := []string{typeNames[i], strconv.FormatInt(t.ok, 10), "", strconv.FormatInt(t.failed, 10), strconv.FormatInt(t.retries, 10)}
		if i == 0 {
			row[2] = strconv.FormatInt(t.rolledBack, 10)
		}
		for _, q := range quantiles {
			row = append(row, latency(t, q))
		}
		row = append(row, latency(t, 100))
		rows = append(rows, row)
		key := strings.ReplaceAll(typeNames[i], "-", "_")
		values[key+"_ok"], values[key+"_failed"], values[key+"_retries"] = t.ok, t.failed, t.retries
		values[key+"_p90_us"] = t.response.ValueAtQuantile(90)
		if i == 0 {
			values["new_order_rolled_back"] = t.rolledBack
		}
	}
	return columns("transactions", rows)
}

// latency is a percentile of t's response times ("-" when none).
func latency(t perType, q float64) string {
	if t.response.TotalCount() == 0 {
		return "-"
	}
	if q == 100 {
		return metrics.Micros(t.response.Max())
	}
	return metrics.Micros(t.response.ValueAtQuantile(q))
}

// columns lays rows out as aligned lines: the first row, the header, is
// the line labelled label; each other row's first cell is its label.
func columns(label string, rows [][]string) []workload.Line {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	var out []workload.Line
	for k, r := range rows {
		var b strings.Builder
		for i := 1; i < len(r); i++ {
			if i > 1 {
				b.WriteString("  ")
			}
			fmt.Fprintf(&b, "%*s", widths[i], r[i])
		}
		l := "  " + r[0]
		if k == 0 {
			l = label
		}
		out = append(out, workload.Line{Label: l, Value: b.String()})
	}
	return out
}

// rule is the spec's response-time constraint: the 90th percentile of
// each type within its bound.
func rule(types [5]perType, values map[string]int64) workload.Line {
	var over []string
	for i, t := range types {
		if t.response.TotalCount() == 0 {
			continue
		}
		if p90 := float64(t.response.ValueAtQuantile(90)) / 1e6; p90 > p90Bound[i] {
			over = append(over, fmt.Sprintf("%s p90 %s > %gs", typeNames[i], metrics.Micros(t.response.ValueAtQuantile(90)), p90Bound[i]))
		}
	}
	values["response_rule_met"] = int64(btoi(len(over) == 0))
	if len(over) > 0 {
		return workload.Line{Label: "response times", Value: "FAIL: " + strings.Join(over, ", ") + " (the spec: p90 at most 5s, Stock-Level 20s)"}
	}
	return workload.Line{Label: "response times", Value: "pass: every type's p90 within the spec's bound (5s, Stock-Level 20s)"}
}

// mix is each type's share of the transactions dealt in the window against
// the spec's minimum.
func mix(types [5]perType, dealt int64, values map[string]int64) workload.Line {
	var parts []string
	short := false
	for i, t := range types {
		n := t.ok + t.rolledBack + t.failed
		pct := percentOf(n, dealt)
		values[strings.ReplaceAll(typeNames[i], "-", "_")+"_mix_pct_x100"] = int64(pct*100 + 0.5)
		part := fmt.Sprintf("%s %.1f%%", typeNames[i], pct)
		if minimumMix[i] > 0 {
			part += fmt.Sprintf(" (≥ %g%%)", minimumMix[i])
			if dealt > 0 && pct < minimumMix[i] {
				short = true
			}
		}
		parts = append(parts, part)
	}
	v := strings.Join(parts, ", ")
	if short {
		v = "BELOW THE SPEC'S MINIMUMS: " + v + " (a run this short deals too few decks)"
	}
	return workload.Line{Label: "mix (dealt)", Value: v}
}

// inputs are the shares of the inputs the spec fixes, of the
// transactions that committed: remote order lines (1%), remote payments
// (15%), customers by last name (60%), deliveries' skipped districts.
func inputs(c counts, values map[string]int64) []workload.Line {
	values["remote_order_lines"], values["order_lines"] = c.remoteLines, c.orderLines
	values["remote_payments"], values["payments_by_last_name"] = c.remotePayments, c.paymentsByName
	values["delivery_districts_skipped"] = c.districtsSkipped
	return []workload.Line{
		{Label: "inputs", Value: fmt.Sprintf("%.2f%% of %d order lines from a remote warehouse (spec 1%%), %.1f%% of %d payments to a remote customer (15%%), by last name: %.1f%% of payments, %.1f%% of order-status (60%%)",
			percentOf(c.remoteLines, c.orderLines), c.orderLines, percentOf(c.remotePayments, c.payments), c.payments,
			percentOf(c.paymentsByName, c.payments), percentOf(c.statusByName, c.orderStatus))},
		{Label: "deliveries", Value: fmt.Sprintf("%d, %d districts delivered, %d skipped (no new order left)", c.deliveries, c.districtsDelivered, c.districtsSkipped)},
	}
}

// serverLine says how a count the server keeps matches the transactions
// txload saw commit.
func serverLine(label, what string, r workload.Reconciliation) workload.Line {
	v := fmt.Sprintf("%s by %d = %d txload saw commit", what, r.Server, r.Committed)
	switch cu := r.CommittedUnknown(); {
	case cu < 0:
		v += fmt.Sprintf(": %d MISSING", -cu)
	case cu > r.Unknown:
		v += fmt.Sprintf(" + %d UNEXPLAINED (only %d ended with an unknown outcome)", cu, r.Unknown)
	case r.Unknown > 0:
		v += fmt.Sprintf(" + %d of %d with an unknown outcome", cu, r.Unknown)
	}
	return workload.Line{Label: label, Value: v}
}
