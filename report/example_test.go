package report_test

import (
	"os"
	"time"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
)

func ExampleLines() {
	report.Lines(os.Stdout, []report.Line{
		{Label: "avg latency", Value: "8ms"},
		{Label: "total requests", Value: "9860"},
		{Label: "exp total balance", Value: "100000"},
		{Label: "act total balance", Value: "100180"},
	})
	// Output:
	// avg latency:       8ms
	// total requests:    9860
	// exp total balance: 100000
	// act total balance: 100180
}

func ExampleMicros() {
	for _, us := range []int64{0, 850, 3240, 1200000} {
		os.Stdout.WriteString(report.Micros(us) + "\n")
	}
	// Output:
	// 0µs
	// 850µs
	// 3.24ms
	// 1.20s
}

func ExampleComparison() {
	row := func(ms ...int) *metrics.Snapshot {
		g := metrics.NewRegistry([]string{"transfer"}, time.Time{})
		r := g.NewRecorder()
		for _, m := range ms {
			r.Success(0, true, time.Duration(m)*time.Millisecond, time.Duration(m)*time.Millisecond, 0, 1)
		}
		r.Failure(0, true, metrics.Serialization, 3)
		_, _ = g.Tick(time.Time{})
		total := g.Total()
		total.Elapsed = time.Second
		return total
	}
	report.Comparison(os.Stdout, []string{"isolation", "selection"}, [][2]string{{"lost_updates", "lost updates"}}, []report.Row{
		{Labels: []string{"read committed", "10"}, Total: row(1, 2, 3), Values: map[string]int64{"lost_updates": 12}},
		{Labels: []string{"serializable", "10"}, Total: row(4, 5), Values: map[string]int64{"lost_updates": 0}},
	})
	// Output:
	// isolation       selection  ops/s     p50     p99  retries  failed  lost updates
	// read committed         10    3.0  2.00ms  3.00ms        2       1            12
	// serializable           10    2.0  4.00ms  5.00ms        2       1             0
}
