package tpcc

import (
	"io"
	"sync/atomic"
	"testing"
)

// BenchmarkGenerate makes one warehouse's rows as COPY text, without a
// server: the load's client side.
func BenchmarkGenerate(b *testing.B) {
	var rows atomic.Int64
	var bytes int64
	for b.Loop() {
		g := newGen(1, 2)
		for _, tc := range []struct {
			n   int
			row func([]byte, int) []byte
		}{
			{items, func(d []byte, i int) []byte { return g.stockRow(d, 1, i) }},
			{30000, func(d []byte, i int) []byte { return g.customerRow(d, 1, i/3000+1, i%3000+1, 7, "2024-01-01 00:00:00") }},
			{30000, func(d []byte, i int) []byte { return g.historyRow(d, 1, i/3000+1, i%3000+1, "2024-01-01 00:00:00") }},
			{300000, func(d []byte, i int) []byte {
				return g.orderLineRow(d, 1, i/30000+1, i%3000+1, 1, "2024-01-01 00:00:00")
			}},
		} {
			n, _ := io.Copy(io.Discard, newRowReader(tc.n, &rows, tc.row))
			bytes += n
		}
	}
	b.ReportMetric(float64(bytes)/float64(b.N)/1e6, "MB/warehouse")
}
