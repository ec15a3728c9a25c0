package append

import (
	"fmt"
	"strings"
	"time"

	"github.com/txload/txload/history"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/workload"
)

// report is the run's block: the history, the checker's cost, the final
// read, each class found, the verdict; each class the level forbids is a
// violation, with its example explained.
func (r *runState) report(res *history.Result, final *finalResult, elapsed time.Duration) *workload.CheckResult {
	where := "not written (--history FILE writes it)"
	name := func(i int) string { return fmt.Sprintf("attempt %d", i) }
	if r.cfg.history != "" {
		format := "JSON lines"
		if r.cfg.edn {
			format = "EDN"
		} else {
			name = func(i int) string { return fmt.Sprintf("line %d", i+1) }
		}
		where = fmt.Sprintf("written to %s (%s)", r.cfg.history, format)
	}
	busy := ""
	if elapsed > 0 {
		busy = fmt.Sprintf("; busy %.1f%% of the run (%s), at most %d events waiting", 100*r.busy.Seconds()/elapsed.Seconds(), r.busy.Round(time.Millisecond), r.backlog)
	}
	out := historyBlock(res, where)
	out.Values["checker_peak_attempts"] = int64(res.Stats.PeakTxns)
	out.Values["checker_backlog"] = int64(r.backlog)
	out.Lines = append(out.Lines, workload.Line{Label: "checker",
		Value: fmt.Sprintf("online, held at most %d attempts and %d keys%s", res.Stats.PeakTxns, res.Stats.PeakKeys, busy)})
	judge(out, res, final, r.cfg.level(), name)
	return out
}

// historyBlock starts the block of a history: its line, and its figures.
func historyBlock(res *history.Result, where string) *workload.CheckResult {
	return &workload.CheckResult{
		Values: map[string]int64{
			"attempts": int64(res.Attempts), "committed": int64(res.Committed),
			"failed": int64(res.Failed), "unknown": int64(res.Unknown),
		},
		Lines: []workload.Line{{Label: "history",
			Value: fmt.Sprintf("%s: %d committed, %d failed, %d unknown; %s", metrics.Count(res.Attempts, "attempt"), res.Committed, res.Failed, res.Unknown, where)}},
	}
}

// judge adds the final read's line (if there was one), a line per class
// found and the verdict at level to out; the classes level forbids, the
// rows no transaction wrote and the classes not ruled out are its
// violations. name names an attempt in the examples.
func judge(out *workload.CheckResult, res *history.Result, final *finalResult, level history.Level, name func(int) string) {
	if final != nil {
		out.Lines = append(out.Lines, final.line(out.Values))
	}
	for _, f := range res.Findings {
		verb := "allowed"
		if level.Forbids(f.Class) {
			verb = "forbidden"
			out.Violations = append(out.Violations, strings.TrimRight(f.Text(level, name), "\n"))
		}
		out.Lines = append(out.Lines, workload.Line{Label: f.Class.String(),
			Value: fmt.Sprintf("%d (%s; %s at %s)", f.Count, f.Class.Meaning(), verb, level)})
		out.Values[valueKey(f.Class)] = int64(f.Count)
	}
	var strays []string
	if final != nil {
		strays = final.allStrays()
	}
	if len(strays) > 0 {
		out.Violations = append(out.Violations, final.strayViolation())
	}
	v := res.Verdict(level)
	for _, c := range v.Undecided {
		out.Violations = append(out.Violations, fmt.Sprintf("%s: not ruled out: its search stopped at its budget", c))
	}
	verdict := strings.TrimPrefix(res.VerdictLine(level), "verdict ")
	if len(strays) > 0 {
		strays := metrics.Count(len(strays), "row") + " no transaction wrote"
		switch {
		case v.Violation:
			verdict += "; " + strays
		case len(v.Allowed) > 0:
			verdict = fmt.Sprintf("at %s: VIOLATION: %s (%s allowed)", level, strays, classList(v.Allowed))
		default:
			verdict = fmt.Sprintf("at %s: VIOLATION: %s", level, strays)
		}
	}
	out.Lines = append(out.Lines, workload.Line{Label: "verdict", Value: verdict})
}

func classList(cs []history.Class) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return strings.Join(s, ", ")
}

// valueKey is a class's key in the JSON document: "g2_item".
func valueKey(c history.Class) string {
	return strings.NewReplacer("-", "_").Replace(strings.ToLower(c.String()))
}
