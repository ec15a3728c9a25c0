package tpcc

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// maxCData is the length Payment keeps of a BC customer's C_DATA
// (clause 2.5.2.2).
const maxCData = 500

// payLine is what a line Payment puts in front of a BC customer's C_DATA
// says of its payment beyond the customer: the district and warehouse
// paid to, and the amount in cents (its history row's H_D_ID, H_W_ID
// and H_AMOUNT).
type payLine struct {
	d, w, cents int64
}

// customerDataSQL is each BC customer's C_DATA with its payments (the
// history rows whose H_DATA is Payment's names, four spaces apart: the
// load's has no space), their dates in microseconds (a NULL one,
// which the nulls line counts, as math.MinInt64).
const customerDataSQL = `SELECT c.c_w_id::BIGINT, c.c_d_id::BIGINT, c.c_id::BIGINT, c.c_data,
	COALESCE(p.d, '{}'), COALESCE(p.w, '{}'), COALESCE(p.cents, '{}'), COALESCE(p.at, '{}')
FROM customer c LEFT JOIN (SELECT h_c_w_id, h_c_d_id, h_c_id, array_agg(h_d_id::BIGINT) AS d, array_agg(h_w_id::BIGINT) AS w,
		array_agg((h_amount * 100)::BIGINT) AS cents,
		array_agg(COALESCE((extract(epoch FROM h_date) * 1000000)::BIGINT, -9223372036854775808)) AS at
	FROM history WHERE strpos(h_data, '    ') > 0 GROUP BY 1, 2, 3) p ON (p.h_c_w_id, p.h_c_d_id, p.h_c_id) = (c.c_w_id, c.c_d_id, c.c_id)
WHERE c.c_credit = 'BC'`

// orderMargin is how much later than a line's payment the payment of a
// line behind it may be dated (in microseconds): Payment dates its
// history row when its transaction began (now()) and prepends its line
// when it updates the customer, so one that began first may update it
// second; and a TIMESTAMP holds the writing session's local time, whose
// zones differ by up to 26 hours. Two days, as every date's margin.
const orderMargin = 2 * 24 * 3600 * 1000000

// dateSpan is the earliest and the latest date of a customer's payments
// of one line (payments of the same district, warehouse and amount are
// one line's alike).
type dateSpan struct{ lo, hi int64 }

// checkCustomerData holds each BC customer's C_DATA to its payments
// (cdataHeld), in tx's snapshot.
func checkCustomerData(ctx context.Context, tx pgx.Tx, f *finding) error {
	rows, err := tx.Query(ctx, customerDataSQL)
	if err != nil {
		return fmt.Errorf("checking the BC customers' data: %w", err)
	}
	var (
		key             [3]int64
		data            string
		d, w, cents, at []int64
		pays            []payLine
	)
	_, err = pgx.ForEachRow(rows, []any{&key[0], &key[1], &key[2], &data, &d, &w, &cents, &at}, func() error {
		f.over++
		if len(d) != len(w) || len(d) != len(cents) || len(d) != len(at) {
			return fmt.Errorf("payments of customer %v: %d districts, %d warehouses, %d amounts, %d dates", key, len(d), len(w), len(cents), len(at))
		}
		pays = pays[:0]
		dates := make(map[payLine]dateSpan, len(d))
		for i := range d {
			p := payLine{d[i], w[i], cents[i]}
			pays = append(pays, p)
			dates[p] = spanWith(dates, p, at[i])
		}
		if !cdataHeld(key[0], key[1], key[2], data, pays, dates) {
			f.violations++
			if f.example == nil || slices.Compare(key[:], f.example) < 0 {
				f.example = slices.Clone(key[:])
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("checking the BC customers' data: %w", err)
	}
	return nil
}

// spanWith is p's date span in spans, widened to at (math.MinInt64, a
// NULL date: any).
func spanWith(spans map[payLine]dateSpan, p payLine, at int64) dateSpan {
	if at == math.MinInt64 {
		return dateSpan{math.MinInt64, math.MaxInt64}
	}
	s, ok := spans[p]
	if !ok {
		return dateSpan{at, at}
	}
	return dateSpan{min(s.lo, at), max(s.hi, at)}
}

// cdataHeld says whether data, the C_DATA of BC customer c of district d
// of warehouse w, is what Payment makes of the load's (clause 2.5.2.2):
// left(L_k || … || L_1 || A, 500), each line L "C_ID C_D_ID C_W_ID D_ID
// W_ID H_AMOUNT | " of the customer and one of pays (its payments, each
// line of its own), A the load's a-string of 300..500 characters. While
// something of A is left, every payment's line is in front of it; once
// the lines fill the 500 characters, the oldest are cut (the last one
// perhaps in its middle), and only those left are held to payments.
// Newest first: no line is behind one whose payment is dated more than
// orderMargin before its own (dates, by line; nil: not held to them).
func cdataHeld(w, d, c int64, data string, pays []payLine, dates map[payLine]dateSpan) bool {
	if len(data) > maxCData {
		return false
	}
	prefix := strconv.FormatInt(c, 10) + " " + strconv.FormatInt(d, 10) + " " + strconv.FormatInt(w, 10) + " "
	left := make(map[payLine]int, len(pays))
	for _, p := range pays {
		left[p]++
	}
	lines, s := 0, data
	// newest is the least latest date of the lines in front: a line
	// behind them dated after it by more than orderMargin is out of order.
	newest := int64(math.MaxInt64)
	for strings.HasPrefix(s, prefix) {
		end := strings.Index(s, " | ")
		if end < 0 {
			// A line cut at 500 characters: a payment older than the
			// lines whole.
			return len(data) == maxCData && strings.Trim(s[len(prefix):], "0123456789 .|") == "" && lines < len(pays)
		}
		p, ok := parsePayLine(s[len(prefix):end])
		if !ok || left[p] == 0 {
			return false
		}
		if span, ok := dates[p]; ok {
			if newest < math.MaxInt64-orderMargin && span.lo > newest+orderMargin {
				return false
			}
			newest = min(newest, span.hi)
		}
		left[p]--
		lines++
		s = s[end+len(" | "):]
	}
	if len(data) == maxCData && strings.HasPrefix(prefix, s) {
		// Cut at a line's end, or in its ids (which may also be the
		// first characters of A): older lines may be gone.
		return true
	}
	// What is left of A, or A whole: every payment's line is in front.
	return lines == len(pays) && (len(data) == maxCData || len(s) >= 300) && strings.Trim(s, alnumChars) == ""
}

// alnumChars are the characters of the load's a-strings.
const alnumChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// parsePayLine reads "D_ID W_ID H_AMOUNT" of a line as Payment writes
// it: numbers in their shortest form, the amount of two decimals.
func parsePayLine(s string) (payLine, bool) {
	f := strings.Split(s, " ")
	if len(f) != 3 {
		return payLine{}, false
	}
	units, frac, _ := strings.Cut(f[2], ".")
	d, ok1 := number(f[0])
	w, ok2 := number(f[1])
	u, ok3 := number(units)
	if !ok1 || !ok2 || !ok3 || len(frac) != 2 || strings.Trim(frac, "0123456789") != "" || u > 1<<40 {
		return payLine{}, false
	}
	return payLine{d, w, u*100 + int64(frac[0]-'0')*10 + int64(frac[1]-'0')}, true
}

// number reads a number of 0 or more written as strconv writes it.
func number(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0 && strconv.FormatInt(n, 10) == s
}
