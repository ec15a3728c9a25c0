package htmlreport

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
)

// The summary says what the text report says, in its words and figures:
// for each run its header line, the notes under it (how it ended, what was
// in flight at its end), each operation's counts and latency table,
// failures and retries, the open loop's rates, and the audit's lines and
// verdict. A figure reads the same on the page as in the text: both are
// formatted by package report.

// ran says whether an operation did anything: one that did not (pgio's
// updates at --update-pct 0) has no figures to show and is not drawn.
func ran(o *metrics.OpStats) bool {
	return o.OK+o.FailedTotal()+o.ErrorsTotal() > 0
}

// failWords begin the notes that say a run went wrong, shown in red.
var failWords = []string{"INTERRUPTED", "SATURATED", "DRAIN TIMEOUT", "UNREACHABLE", "ABORTED", "VIOLATION"}

func failing(line string) bool {
	for _, w := range failWords {
		if strings.HasPrefix(line, w) {
			return true
		}
	}
	return false
}

// summarySection writes every run's block.
func summarySection(p *page, runs []*run) {
	p.printf(`<h2>Summary</h2><div class="runs">`)
	for _, r := range runs {
		runBlock(p, r, len(runs) > 1)
	}
	p.printf(`</div>`)
	var none []string
	for _, r := range runs {
		if len(r.windows) == 0 {
			none = append(none, r.name)
		}
	}
	if note := partialNote(runs); note != "" {
		p.printf(`<p class="note partial">%s</p>`, esc(note))
	}
	if len(none) > 0 {
		p.printf(`<p class="note">No intervals recorded for %s: the charts over time leave them out.</p>`, esc(strings.Join(none, ", ")))
	}
}

// runBlock writes one run's summary, as the text report prints it.
func runBlock(p *page, r *run, named bool) {
	p.printf(`<section class="run">`)
	defer p.printf(`</section>`)
	if named {
		p.printf(`<h3>%s%s</h3>`, swatch(r.color), esc(r.name))
	}
	d, rd, total := r.doc, r.rd, r.total
	p.printf(`<p class="head">%s</p>`, esc(fmt.Sprintf("%s on %s: %s, %s measured", d.Workload, d.ServerString(), modeOf(d, rd), report.Seconds(total.Elapsed))))
	// A merged run's notes are its parts' ABORTED lines only: the
	// summary's notes, as the text gives them, include them.
	notes := rd.Notes
	if notes == nil || len(d.MergedFrom) > 0 {
		var err error
		if notes, err = d.SummaryNotes(rd); err != nil {
			p.fail(fmt.Errorf("%s: %w", r.docName, err))
			return
		}
	}
	notes = append(rd.LabelLines(), notes...)
	if len(notes) > 0 {
		p.printf(`<ul class="notes">`)
		for _, n := range notes {
			n = strings.Replace(n, "not in the figures below", "not in the figures of this page", 1)
			if failing(n) {
				p.printf(`<li class="fail">%s</li>`, esc(n))
			} else {
				p.printf(`<li>%s</li>`, esc(n))
			}
		}
		p.printf(`</ul>`)
	}
	for _, o := range total.Ops {
		opBlock(p, o, total.Elapsed)
	}
	openLoopLines(p, r)
	checkBlock(p, r)
}

// modeOf is the loop of a run as its header says it: a sweep's step is an
// open loop at its own target.
func modeOf(d *report.Document, rd *report.RunDoc) string {
	if t := rd.Labels["target"]; t != "" && d.Command == "sweep" {
		return fmt.Sprintf("open loop at %s ops/s (%s), %s workers", t, orDefault(d.ConfigString(report.KeyArrival), "poisson"), d.ConfigString(report.KeyConcurrency))
	}
	return d.Mode()
}

// opBlock writes an operation's line, its latency table and its failures,
// as the text's summary does.
func opBlock(p *page, o *metrics.OpStats, elapsed time.Duration) {
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(o.OK) / s
	}
	line := fmt.Sprintf("%d ok, %d failed, %.1f ops/s", o.OK, o.FailedTotal(), rate)
	if !ran(o) {
		p.printf(`<p class="op"><b>%s</b>: %s: did not run (not drawn)</p>`, esc(o.Name), esc(line))
		return
	}
	p.printf(`<p class="op"><b>%s</b>: %s</p>`, esc(o.Name), esc(line))
	if o.OK > 0 {
		rows := [][]string{report.HistHeader(), report.HistRow("response", o.Response), report.HistRow("service", o.Service), report.HistRow("schedule lag", o.Lag)}
		table(p, "lat", rows)
	}
	var lines []string
	if o.FailedTotal() > 0 {
		lines = append(lines, "failed by class: "+report.ByClass(o.Failed))
	}
	if o.ErrorsTotal() > 0 {
		lines = append(lines, "errors by class: "+report.ByClass(o.Errors))
	}
	lines = append(lines, fmt.Sprintf("retried: %d transactions, %d retries", o.Retried, o.Retries))
	if o.Skipped > 0 || o.Late > 0 {
		lines = append(lines, fmt.Sprintf("latency limit: %d skipped, %d late", o.Skipped, o.Late))
	}
	p.printf(`<p class="opnote">%s</p>`, esc(strings.Join(lines, "; ")))
}

// table writes rows, the first its header, the first column a label.
func table(p *page, class string, rows [][]string) {
	p.printf(`<table class="%s">`, class)
	for i, row := range rows {
		cell := "td"
		if i == 0 {
			cell = "th"
		}
		p.printf("<tr>")
		for _, c := range row {
			p.printf("<%s>%s</%s>", cell, esc(c), cell)
		}
		p.printf("</tr>")
	}
	p.printf("</table>")
}

// openLoop are an open-loop run's rates: the target, what was generated
// and what completed, and the schedule lag.
type openLoopRates struct {
	target, generated, actual float64
	offered                   float64 // scheduled operations per second of the window
	lagP50, lagP99            int64   // µs
	// behind: fewer operations completed than were offered (or the
	// run saturated); late: half of them started lateLag or more after
	// their intended start.
	behind, late bool
}

// lateLag is the schedule lag whose median says an open loop did not keep
// up with its schedule, though it completed what was offered in the end.
const lateLag = 100 * time.Millisecond

// behindShare is the share of the offered rate below which an open loop
// fell behind: Poisson arrivals scatter the offered count, not the
// completed one against it.
const behindShare = 0.95

// openLoopOf is r's open-loop rates; ok is false for a closed loop. A run
// under way (the live page's) has its target and what it completed so
// far: what was offered is known at its end.
func openLoopOf(r *run) (openLoopRates, bool) {
	rd, total := r.rd, r.total
	secs := total.Elapsed.Seconds()
	if secs <= 0 {
		return openLoopRates{}, false
	}
	if rd.Offered == 0 {
		// Under way: judged against its target so far.
		all := total.Total("all")
		ol := openLoopRates{target: targetOf(r), actual: float64(all.OK+all.FailedTotal()) / secs,
			lagP50: all.Lag.ValueAtQuantile(50), lagP99: all.Lag.ValueAtQuantile(99)}
		ol.behind = ol.actual < behindShare*ol.target
		ol.late = time.Duration(ol.lagP50)*time.Microsecond >= lateLag
		return ol, ol.target > 0
	}
	window := configDuration(r.doc, report.KeyDuration)
	if window <= 0 {
		window = total.Elapsed
	}
	// As the text report: what was generated over the time the run ran,
	// and what the schedule offered over the window it was given (the
	// whole of it, though the run stopped early).
	gen := min(window, total.Elapsed)
	all := total.Total("all")
	ol := openLoopRates{
		target:    targetOf(r),
		generated: float64(rd.Offered-rd.Unstarted) / gen.Seconds(),
		actual:    float64(all.OK+all.FailedTotal()) / secs,
		offered:   float64(rd.Offered) / window.Seconds(),
		lagP50:    all.Lag.ValueAtQuantile(50), lagP99: all.Lag.ValueAtQuantile(99),
	}
	ol.behind = rd.Saturated || ol.actual < behindShare*ol.offered
	ol.late = time.Duration(ol.lagP50)*time.Microsecond >= lateLag
	return ol, true
}

// targetOf is the rate a run's open loop was asked for: the document's
// --rate, or a sweep step's target.
func targetOf(r *run) float64 {
	if t, err := strconv.ParseFloat(r.rd.Labels["target"], 64); err == nil && r.doc.Command == "sweep" {
		return t
	}
	t, _ := strconv.ParseFloat(r.doc.ConfigString(report.KeyRate), 64)
	return t
}

func configDuration(d *report.Document, key string) time.Duration {
	v, _ := time.ParseDuration(d.ConfigString(key))
	return v
}

// openLoopLines writes the open loop's rates (the text's "# generated
// ops/s" and "# actual ops/s"), and in red when it fell behind.
func openLoopLines(p *page, r *run) {
	ol, ok := openLoopOf(r)
	if !ok {
		return
	}
	lag := fmt.Sprintf("schedule lag (actual start − intended start) p50 %s, p99 %s", report.Micros(ol.lagP50), report.Micros(ol.lagP99))
	if r.rd.Offered == 0 {
		p.printf(`<p class="openloop">%s</p>`, esc(fmt.Sprintf("open loop at %s/s: actual ops/s %.2f so far", fmtRate(ol.target), ol.actual)))
		if ol.behind || ol.late {
			p.printf(`<p class="verdict fail behind">%s</p>`, esc(fmt.Sprintf("FALLING BEHIND so far: completed %.1f/s of the %s/s target; %s: the database is not keeping up with the schedule, and response times include the wait",
				ol.actual, fmtRate(ol.target), lag)))
		}
		return
	}
	line := fmt.Sprintf("open loop: generated ops/s %.2f, actual ops/s %.2f", ol.generated, ol.actual)
	if ol.target > 0 {
		line = fmt.Sprintf("open loop at %s/s: generated ops/s %.2f, actual ops/s %.2f", fmtRate(ol.target), ol.generated, ol.actual)
	}
	if e := r.rd.EmissionLag; e != nil && e.Count > 0 {
		line += fmt.Sprintf("; generator emission lag: p50 %d, p99 %d, max %d (µs)", e.P50, e.P99, e.Max)
	}
	p.printf(`<p class="openloop">%s</p>`, esc(line))
	switch {
	case ol.behind:
		p.printf(`<p class="verdict fail behind">%s</p>`, esc(fmt.Sprintf("FELL BEHIND: completed %.1f/s of the %.1f/s offered (%.0f%%); %s: the database did not keep up with the schedule, and response times include the wait",
			ol.actual, ol.offered, 100*ol.actual/ol.offered, lag)))
		return
	case ol.late:
		p.printf(`<p class="verdict fail behind">%s</p>`, esc(fmt.Sprintf("BEHIND SCHEDULE: half the operations started %s or more after their intended start (schedule lag p50; p99 %s); it completed %.1f/s of the %.1f/s offered: the database kept up only by catching up, and response times include the wait",
			report.Micros(ol.lagP50), report.Micros(ol.lagP99), ol.actual, ol.offered)))
		return
	}
	p.printf(`<p class="note">%s</p>`, esc(fmt.Sprintf("kept up: completed %.1f/s of the %.1f/s offered; %s", ol.actual, ol.offered, lag)))
}

func fmtRate(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// checkBlock writes the audit's lines and verdict as the run printed them.
func checkBlock(p *page, r *run) { auditBlock(p, r.rd.Check) }

// auditBlock writes an audit's lines and verdict (nothing for none): an
// audit that did not finish, or each violation, in red.
func auditBlock(p *page, c *report.CheckDoc) {
	if c == nil {
		return
	}
	lines := c.ReportLines()
	if len(lines) > 0 {
		p.printf(`<table class="check lines">`)
		for _, l := range lines {
			p.printf(`<tr><td>%s</td><td class="l">%s</td></tr>`, esc(l.Label), esc(l.Value))
		}
		p.printf(`</table>`)
	}
	if line := c.FailedLine(); line != "" {
		p.printf(`<p class="verdict"><span class="fail">%s</span></p>`, esc(line))
	} else if len(c.Violations) == 0 && !c.Figures {
		p.printf(`<p class="verdict"><span class="pass">check: ok</span></p>`)
	}
	for _, v := range c.Violations {
		p.printf(`<p class="verdict"><span class="fail">VIOLATION: %s</span></p>`, esc(v))
	}
}

// auditComparison sets the audited runs' values side by side, a row per
// figure (as --json's check.values names them, with spaces for
// underscores), a column per run, when two runs or more were audited.
func auditComparison(p *page, runs []*run) {
	keys := map[string]bool{}
	var audited []*run
	for _, r := range runs {
		if c := r.rd.Check; c != nil && len(c.Values) > 0 {
			audited = append(audited, r)
			for k := range c.Values {
				keys[k] = true
			}
		}
	}
	if len(audited) < 2 {
		return
	}
	p.printf(`<h3>Audits</h3><table class="check"><tr><th></th>`)
	for _, r := range audited {
		p.printf(`<th>%s%s</th>`, swatch(r.color), esc(r.name))
	}
	p.printf("</tr>")
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		p.printf(`<tr><td>%s</td>`, esc(strings.ReplaceAll(k, "_", " ")))
		for _, r := range audited {
			if v, ok := r.rd.Check.Values[k]; ok {
				p.printf(`<td>%d</td>`, v)
			} else {
				p.printf(`<td></td>`)
			}
		}
		p.printf("</tr>")
	}
	p.printf("</table>")
}
