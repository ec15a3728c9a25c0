package tpcc

import (
	"io"
	"strconv"
	"sync/atomic"
)

// rowReader is a COPY's data, made as it is read: row appends row i of n
// in COPY's text format. Rows it made are counted in done.
type rowReader struct {
	n, next int
	row     func(dst []byte, i int) []byte
	buf     []byte
	pos     int
	done    *atomic.Int64
}

func newRowReader(n int, done *atomic.Int64, row func(dst []byte, i int) []byte) *rowReader {
	return &rowReader{n: n, row: row, buf: make([]byte, 0, 128<<10), done: done}
}

func (r *rowReader) Read(p []byte) (int, error) {
	for r.pos >= len(r.buf) {
		if r.next >= r.n {
			return 0, io.EOF
		}
		r.buf, r.pos = r.buf[:0], 0
		start := r.next
		for r.next < r.n && len(r.buf) < 64<<10 {
			r.buf = r.row(r.buf, r.next)
			r.next++
		}
		r.done.Add(int64(r.next - start))
	}
	n := copy(p, r.buf[r.pos:])
	r.pos += n
	return n, nil
}

// The fixed values of the load (clause 4.3.3.1), as COPY text.
const (
	nullField = `\N`
)

func appendInt(dst []byte, v int) []byte { return strconv.AppendInt(dst, int64(v), 10) }

// ints appends each of vs followed by a tab: a row's keys.
func ints(dst []byte, vs ...int) []byte {
	for _, v := range vs {
		dst = append(appendInt(dst, v), '\t')
	}
	return dst
}

// itemRow is item i+1.
func (g *gen) itemRow(dst []byte, i int) []byte {
	dst = appendInt(dst, i+1)
	dst = append(dst, '\t')
	dst = appendInt(dst, randInt(g.r, 1, 10000))
	dst = append(dst, '\t')
	dst = g.alnum(dst, 14, 24)
	dst = append(dst, '\t')
	dst = fixed(dst, int64(randInt(g.r, 100, 10000)), 2)
	dst = append(dst, '\t')
	dst = g.data(dst)
	return append(dst, '\n')
}

// warehouseRow is warehouse w.
func (g *gen) warehouseRow(dst []byte, w int) []byte {
	dst = appendInt(dst, w)
	dst = append(dst, '\t')
	dst = g.alnum(dst, 6, 10)
	dst = append(dst, '\t')
	dst = g.address(dst)
	dst = append(dst, '\t')
	dst = fixed(dst, int64(randInt(g.r, 0, 2000)), 4)
	return append(dst, "\t300000.00\n"...)
}

// districtRow is district d of warehouse w.
func (g *gen) districtRow(dst []byte, w, d int) []byte {
	dst = ints(dst, d, w)
	dst = g.alnum(dst, 6, 10)
	dst = append(dst, '\t')
	dst = g.address(dst)
	dst = append(dst, '\t')
	dst = fixed(dst, int64(randInt(g.r, 0, 2000)), 4)
	dst = append(dst, "\t30000.00\t"...)
	dst = appendInt(dst, ordersPerDistrict+1)
	return append(dst, '\n')
}

// customerRow is customer c of district d of warehouse w; cLast is the
// load's C for NURand of the last names; now the load's timestamp.
func (g *gen) customerRow(dst []byte, w, d, c, cLast int, now string) []byte {
	dst = ints(dst, c, d, w)
	dst = g.alnum(dst, 8, 16)
	dst = append(dst, "\tOE\t"...)
	n := c - 1
	if c > 1000 {
		n = nuRand(g.r, aLast, cLast, 0, 999)
	}
	dst = appendLastName(dst, n)
	dst = append(dst, '\t')
	dst = g.address(dst)
	dst = append(dst, '\t')
	dst = g.digits(dst, 16)
	dst = append(dst, '\t')
	dst = append(dst, now...)
	if g.r.IntN(10) == 0 {
		dst = append(dst, "\tBC"...)
	} else {
		dst = append(dst, "\tGC"...)
	}
	dst = append(dst, "\t50000.00\t"...)
	dst = fixed(dst, int64(randInt(g.r, 0, 5000)), 4)
	dst = append(dst, "\t-10.00\t10.00\t1\t0\t"...)
	dst = g.alnum(dst, 300, 500)
	return append(dst, '\n')
}

// historyRow is the history row of customer c of district d of warehouse w.
func (g *gen) historyRow(dst []byte, w, d, c int, now string) []byte {
	dst = ints(dst, c, d, w, d, w)
	dst = append(dst, now...)
	dst = append(dst, "\t10.00\t"...)
	dst = g.alnum(dst, 12, 24)
	return append(dst, '\n')
}

// stockRow is the stock of item i+1 in warehouse w.
func (g *gen) stockRow(dst []byte, w, i int) []byte {
	dst = ints(dst, i+1, w)
	dst = appendInt(dst, randInt(g.r, 10, 100))
	for range districtsPerWH {
		dst = append(dst, '\t')
		dst = g.alnum(dst, 24, 24)
	}
	dst = append(dst, "\t0\t0\t0\t"...)
	dst = g.data(dst)
	return append(dst, '\n')
}

// orderRow is order o of district d of warehouse w, for customer cid with
// olCnt lines.
func (g *gen) orderRow(dst []byte, w, d, o, cid, olCnt int, now string) []byte {
	dst = ints(dst, o, d, w, cid)
	dst = append(dst, now...)
	dst = append(dst, '\t')
	if o < firstNewOrder {
		dst = appendInt(dst, randInt(g.r, 1, 10))
	} else {
		dst = append(dst, nullField...)
	}
	dst = append(dst, '\t')
	dst = appendInt(dst, olCnt)
	return append(dst, "\t1\n"...)
}

// orderLineRow is line n of order o of district d of warehouse w.
func (g *gen) orderLineRow(dst []byte, w, d, o, n int, now string) []byte {
	dst = ints(dst, o, d, w, n)
	dst = appendInt(dst, randInt(g.r, 1, items))
	dst = append(dst, '\t')
	dst = appendInt(dst, w)
	dst = append(dst, '\t')
	if o < firstNewOrder {
		dst = append(dst, now...)
		dst = append(dst, "\t5\t0.00\t"...)
	} else {
		dst = append(dst, nullField...)
		dst = append(dst, "\t5\t"...)
		dst = fixed(dst, int64(randInt(g.r, 1, 999999)), 2)
		dst = append(dst, '\t')
	}
	dst = g.alnum(dst, 24, 24)
	return append(dst, '\n')
}

// newOrderRow is the new_order row of order o of district d of warehouse w.
func newOrderRow(dst []byte, w, d, o int) []byte {
	dst = ints(dst, o, d)
	dst = appendInt(dst, w)
	return append(dst, '\n')
}
