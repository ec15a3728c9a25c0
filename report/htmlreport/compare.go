package htmlreport

import (
	"fmt"
	"math"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
)

// comparison writes, when there are two runs or more, a table per
// operation: each run's throughput, percentiles, failures and retries, and
// beside each figure its ratio to the first run's.
func comparison(p *page, runs []*run) {
	if len(runs) < 2 {
		return
	}
	base := runs[0]
	p.printf(`<h2>Comparison</h2><p class="note">Each run against the first, %s: the ratio is the run's figure over the first's (bold when they differ by 10%% or more).</p>`, esc(base.name))
	for _, op := range opNames(runs) {
		var in []*run
		for _, r := range runs {
			if opIndex(r.total, op) >= 0 {
				in = append(in, r)
			}
		}
		if len(in) < 2 {
			continue
		}
		p.printf(`<h3>%s</h3><table class="compare"><tr><th></th>`, esc(op))
		for k, r := range in {
			p.printf(`<th>%s%s</th>`, swatch(r.color), esc(r.name))
			if k > 0 {
				p.printf(`<th>÷ first</th>`)
			}
		}
		p.printf("</tr>")
		for _, f := range compared {
			p.printf(`<tr><td>%s</td>`, f.name)
			first := f.get(in[0], in[0].total.Ops[opIndex(in[0].total, op)])
			for k, r := range in {
				v := f.get(r, r.total.Ops[opIndex(r.total, op)])
				p.printf("<td>%s</td>", f.format(v))
				if k > 0 {
					cls, text := ratio(v, first)
					p.printf(`<td class="%s">%s</td>`, cls, text)
				}
			}
			p.printf("</tr>")
		}
		p.printf("</table>")
	}
	auditComparison(p, runs)
}

// figure is a row of the comparison.
type figure struct {
	name   string
	get    func(*run, *metrics.OpStats) float64
	format func(float64) string
}

func latency(q float64) func(*run, *metrics.OpStats) float64 {
	return func(_ *run, o *metrics.OpStats) float64 {
		if o.Response.TotalCount() == 0 {
			return math.NaN()
		}
		return float64(o.Response.ValueAtQuantile(q))
	}
}

func count(v float64) string { return fmt.Sprintf("%.0f", v) }

func micros(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return report.Micros(int64(v))
}

var compared = [...]figure{
	{"ok operations/s", func(r *run, o *metrics.OpStats) float64 {
		if secs := r.total.Elapsed.Seconds(); secs > 0 {
			return float64(o.OK) / secs
		}
		return math.NaN()
	}, func(v float64) string { return fmt.Sprintf("%.1f", v) }},
	{"p50", latency(50), micros},
	{"p99", latency(99), micros},
	{"p99.9", latency(99.9), micros},
	{"failed operations", func(_ *run, o *metrics.OpStats) float64 { return float64(o.FailedTotal()) }, count},
	{"failed attempts", func(_ *run, o *metrics.OpStats) float64 { return float64(o.ErrorsTotal()) }, count},
	{"retries", func(_ *run, o *metrics.OpStats) float64 { return float64(o.Retries) }, count},
}

// ratio is v over base for the table: "1.23×"; "=" when both are 0; "—"
// when there is no ratio (base 0 or unknown).
func ratio(v, base float64) (class, text string) {
	switch {
	case math.IsNaN(v) || math.IsNaN(base):
		return "ratio", "—"
	case v == 0 && base == 0:
		return "ratio", "="
	case base == 0:
		return "ratio far", "—"
	}
	r := v / base
	cls := "ratio"
	if r >= 1.1 || r <= 1/1.1 {
		cls = "ratio far"
	}
	return cls, fmt.Sprintf("%.2f×", r)
}
