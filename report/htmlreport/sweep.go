package htmlreport

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/txload/txload/report"
	"github.com/txload/txload/report/chart"
	"github.com/txload/txload/report/plot"
	"github.com/txload/txload/slo"
)

// sweep is one sweep document: its steps judged again as the sweep judged
// them (the same objective, error rate and slo.Judge), and the search's
// verdict.
type sweep struct {
	name  string
	color string
	slo   slo.SLO
	steps []step
	// verdict is the line sweep printed at its end; "" when the document
	// does not say enough to replay the search.
	verdict string
	// problem says why the steps could not be judged, if so.
	problem string
	// head is the line the sweep began with: its SLO and steps.
	head string
	// check is the audit after the last step, over what every step
	// committed (nil: none).
	check *report.CheckDoc
}

// step is one step of a sweep, with the figures of its table.
type step struct {
	chart.Point
	n                  int
	p50, p99, max      int64 // µs
	errors             int64
	unstarted, offered int64
	judged             bool
	// cut: an interrupt cut the step short, which is never judged.
	cut bool
}

// sweepOf reads a sweep document: one step per run, its target from the
// run's label, judged on the document's --slo and --max-error-rate.
func sweepOf(d *report.Document, name string, manyDocs bool) (*sweep, error) {
	sw := &sweep{name: d.Workload}
	if manyDocs {
		sw.name = name
	}
	objective, err := slo.Parse(d.ConfigString("slo"))
	if err != nil {
		sw.problem = fmt.Sprintf("the document's --slo %q does not parse (%v): steps are not judged", d.ConfigString("slo"), err)
	}
	sw.slo = objective
	if objective.String() != "" {
		sw.head = fmt.Sprintf("sweep %s: SLO %s on response time, steps of %s (+%s warm-up), %s workers, %s arrivals", d.Workload, objective,
			d.ConfigString("step-duration"), orDefault(d.ConfigString("step-warmup"), "0s"), d.ConfigString(report.KeyConcurrency), orDefault(d.ConfigString(report.KeyArrival), "poisson"))
	}
	maxErrorRate, errRate := strconv.ParseFloat(d.ConfigString("max-error-rate"), 64)
	if errRate != nil && sw.problem == "" {
		sw.problem = "the document has no --max-error-rate: steps are not judged"
	}
	judge := sw.problem == ""
	for i := range d.Runs {
		rd := &d.Runs[i]
		total, err := rd.Total()
		if err != nil {
			return nil, err
		}
		target, _ := strconv.ParseFloat(rd.Labels["target"], 64)
		all := total.Total("all")
		var drainOK int64
		if rd.Drain != nil {
			for _, op := range rd.Drain.Ops {
				drainOK += op.OK
			}
		}
		figures := slo.Step{
			Target: target, Elapsed: total.Elapsed,
			OK: all.OK, DrainOK: drainOK, Failed: all.FailedTotal(), FailedAttempts: all.ErrorsTotal(),
			Saturated: rd.Saturated, Unstarted: rd.Unstarted, Offered: rd.Offered,
			Response: all.Response,
		}
		st := step{n: i + 1, p50: all.Response.ValueAtQuantile(50), p99: all.Response.ValueAtQuantile(99), max: all.Response.Max(),
			errors: figures.Errors(), unstarted: rd.Unstarted, offered: rd.Offered, judged: judge && !rd.Interrupted, cut: rd.Interrupted}
		st.Point = chart.Point{Target: target, Throughput: figures.Achieved(), P50: ms(st.p50), P99: ms(st.p99)}
		if st.judged {
			why := slo.Judge(figures, objective, maxErrorRate)
			texts := make([]string, len(why))
			for k, r := range why {
				texts[k] = r.Text
			}
			st.Pass, st.Why = len(why) == 0, strings.Join(texts, "; ")
		}
		sw.steps = append(sw.steps, st)
		if rd.Check != nil {
			sw.check = rd.Check
		}
	}
	if judge {
		sw.verdict = replay(d, objective, sw.steps)
	}
	return sw, nil
}

// replay runs the document's search again over its steps' outcomes, for
// the verdict sweep printed; "" when the document lacks the search's
// settings or its steps are not the search's.
func replay(d *report.Document, objective slo.SLO, steps []step) string {
	start, err1 := strconv.ParseFloat(d.ConfigString("start"), 64)
	factor, err2 := strconv.ParseFloat(d.ConfigString("factor"), 64)
	precision, err3 := strconv.ParseFloat(d.ConfigString("precision"), 64)
	maxSteps, err4 := strconv.Atoi(d.ConfigString("max-steps"))
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return ""
	}
	search, err := slo.NewSearch(start, factor, precision, maxSteps)
	if err != nil {
		return ""
	}
	judged := 0
	for _, st := range steps {
		if st.cut {
			continue
		}
		judged++
		next, ok := search.Next()
		if !ok || next != st.Target {
			return ""
		}
		search.Observe(st.Target, st.Pass)
	}
	if _, more := search.Next(); more {
		return fmt.Sprintf("interrupted after %s: the search had not ended", report.Count(judged, "step"))
	}
	return search.Result().Verdict(objective, start, maxSteps, precision)
}

// The sweep chart's size: wider than the others, and as wide as a page
// 800 px wide shows at its own scale.
const sweepWidth, sweepHeight = 760, 440

func sweepSection(p *page, sweeps []*sweep) {
	p.printf("<h2>Sweep</h2>")
	var curves []chart.Curve
	for _, sw := range sweeps {
		p.printf("<h3>%s%s</h3>", swatch(sw.color), esc(sw.name))
		if s := sw.slo.String(); s != "" {
			p.printf(`<p>SLO on response time (from the intended start): <b>%s</b></p>`, esc(s))
		}
		if sw.head != "" {
			p.printf(`<p class="head">%s</p>`, esc(sw.head))
		}
		if sw.verdict != "" {
			p.printf(`<p class="verdict">%s</p>`, esc(sw.verdict))
		}
		if sw.problem != "" {
			p.printf(`<p class="note">%s</p>`, esc(sw.problem))
		}
		p.printf(`<table class="steps"><tr><th>step</th><th>target/s</th><th>achieved/s</th><th>p50</th><th>p99</th><th>max</th><th>errors</th><th class="l">result</th></tr>`)
		var points []chart.Point
		for _, st := range sw.steps {
			result := `<td class="l">not judged</td>`
			if st.cut {
				result = `<td class="l">interrupted: not judged</td>`
			} else if st.judged && st.Pass {
				result = `<td class="l"><span class="pass">PASS</span></td>`
			} else if st.judged {
				result = fmt.Sprintf(`<td class="l"><span class="fail">FAIL</span>: %s</td>`, esc(st.Why))
			}
			// In the verdict's format (slo.Micros: 95.039ms), so that a
			// figure reads the same in its cell and in the reason beside.
			lat := func(us int64) string {
				if st.Throughput == 0 {
					return "—"
				}
				return slo.Micros(float64(us))
			}
			p.printf("<tr><td>%d</td><td>%s</td><td>%.1f</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td>%s</tr>",
				st.n, slo.FormatRate(st.Target), st.Throughput, lat(st.p50), lat(st.p99), lat(st.max), st.errors, result)
			if st.cut { // partial figures: no point of the curve
				continue
			}
			pt := st.Point
			if !st.judged { // drawn as passing: filled
				pt.Pass = true
			}
			points = append(points, pt)
		}
		p.printf("</table>")
		if sw.check != nil {
			p.printf(`<p class="note">The audit after the last step, over what every step committed:</p>`)
			auditBlock(p, sw.check)
		}
		curves = append(curves, chart.Curve{Name: sw.name, Color: sw.color, SLO: sw.slo, Points: points})
	}
	c := chart.Sweep("sweep: latency against achieved throughput", curves...)
	c.Width, c.Height = sweepWidth, sweepHeight
	c.Legend = append([]plot.Key(nil), c.Legend...)
	p.chart(c)
}
