package tpcc

// Tamperings are statements that each break one consistency condition of
// clause 3.3.2, the N-th the N+1-th, and no other, on the database init
// loads (after a run too, but the 11th: condition 11 holds only until the
// first Delivery). The conditions are linked: those that one table's
// change cannot break alone carry the others along in CTEs. They are what
// the check is attacked with (this package's tests and the tamper
// catalogue of internal/cli).
func Tamperings() [12]string {
	return [12]string{
		// A history row moved to a district that does not exist, its
		// district's YTD lowered to match: the districts no longer add up
		// to their warehouse.
		`WITH h AS (UPDATE history SET h_d_id = 99 WHERE ctid = (SELECT ctid FROM history WHERE h_w_id = 1 AND h_d_id = 3 LIMIT 1) RETURNING h_amount)
			UPDATE district SET d_ytd = d_ytd - (SELECT h_amount FROM h) WHERE d_w_id = 1 AND d_id = 3`, // 1
		`UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 4`, // 2
		// Order 2500 delivered out of turn, as Delivery would have: a gap
		// in the district's new orders.
		`WITH n AS (DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 5 AND no_o_id = 2500 RETURNING no_o_id),
			o AS (UPDATE orders SET o_carrier_id = 1 WHERE o_w_id = 1 AND o_d_id = 5 AND o_id = (SELECT no_o_id FROM n) RETURNING o_c_id),
			l AS (UPDATE order_line SET ol_delivery_d = now() WHERE ol_w_id = 1 AND ol_d_id = 5 AND ol_o_id = 2500 RETURNING ol_amount)
			UPDATE customer SET c_balance = c_balance + (SELECT sum(ol_amount) FROM l), c_delivery_cnt = c_delivery_cnt + 1
			WHERE c_w_id = 1 AND c_d_id = 5 AND c_id = (SELECT o_c_id FROM o)`, // 3
		// An order line of no order.
		`INSERT INTO order_line VALUES (5000, 6, 1, 1, 1, 1, NULL, 5, 10.00, 'x')`, // 4
		// A delivered order undelivered, its lines too (their amounts are 0).
		`WITH l AS (UPDATE order_line SET ol_delivery_d = NULL WHERE ol_w_id = 1 AND ol_d_id = 7 AND ol_o_id = 10)
			UPDATE orders SET o_carrier_id = NULL WHERE o_w_id = 1 AND o_d_id = 7 AND o_id = 10`, // 5
		// A line moved to another order of its district.
		`UPDATE order_line SET ol_o_id = 12, ol_number = 99 WHERE ol_w_id = 1 AND ol_d_id = 8 AND ol_o_id = 11 AND ol_number = 1`, // 6
		`UPDATE order_line SET ol_delivery_d = NULL WHERE ol_w_id = 1 AND ol_d_id = 9 AND ol_o_id = 20 AND ol_number = 2`,         // 7
		// A payment to a district that does not exist.
		`INSERT INTO history VALUES (9999, 1, 1, 99, 1, now(), 5.00, 'x')`, // 8
		// A payment booked in another district of its warehouse.
		`UPDATE history SET h_d_id = 2 WHERE ctid = (SELECT ctid FROM history WHERE h_w_id = 1 AND h_d_id = 1 LIMIT 1)`, // 9
		// A payment's amount moved from the YTD to the balance.
		`UPDATE customer SET c_balance = c_balance + 1, c_ytd_payment = c_ytd_payment - 1 WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 7`, // 10
		// The oldest new order delivered without counting the delivery.
		`WITH n AS (DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 3
				AND no_o_id = (SELECT min(no_o_id) FROM new_order WHERE no_w_id = 1 AND no_d_id = 3) RETURNING no_o_id),
			o AS (UPDATE orders SET o_carrier_id = 1 WHERE o_w_id = 1 AND o_d_id = 3 AND o_id = (SELECT no_o_id FROM n) RETURNING o_c_id),
			l AS (UPDATE order_line SET ol_delivery_d = now() WHERE ol_w_id = 1 AND ol_d_id = 3 AND ol_o_id = (SELECT no_o_id FROM n) RETURNING ol_amount)
			UPDATE customer SET c_balance = c_balance + (SELECT sum(ol_amount) FROM l)
			WHERE c_w_id = 1 AND c_d_id = 3 AND c_id = (SELECT o_c_id FROM o)`, // 11
		`UPDATE customer SET c_ytd_payment = c_ytd_payment + 1 WHERE c_w_id = 1 AND c_d_id = 10 AND c_id = 3000`, // 12
	}
}
