package workload

import (
	"fmt"
	"slices"

	"github.com/txload/txload/metrics"
)

// Reconciliation accounts for the transactions whose outcome txload could
// not know (a connection lost while COMMIT was in flight, an operation
// abandoned at the drain timeout) against what the server counted: the rows
// a workload's table gained during the run.
//
// By count, a lost commit and an unknown outcome that did commit cancel
// out. Where every transaction also wrote a marker of its own (a failover
// run's), Identify redoes it by identity: the transactions txload saw
// commit whose marker the server lacks are missing, whatever the unknown
// outcomes did.
type Reconciliation struct {
	// Committed is what txload saw commit, warm-up included.
	Committed int64
	// Unknown is what ended without a known outcome: ambiguous commits,
	// abandoned operations, and failures during the warm-up.
	Unknown int64
	// Server is what the server counted.
	Server int64
	// ByID says Missing and Found come from markers, by identity:
	// Missing the transactions txload saw commit whose marker the server
	// lacks, Found those with an unknown outcome whose marker it holds;
	// On names where the markers were read ("the new primary").
	ByID           bool
	Missing, Found int64
	On             string
	// where names the server's count, as Lines was told ("ledger").
	where string
}

// Reconcile compares op's counts with server, the rows the server gained.
func Reconcile(op *metrics.OpStats, server int64) Reconciliation {
	return Reconciliation{
		Committed: op.OK + op.WarmupOK,
		Unknown:   op.Failed[metrics.AmbiguousCommit] + op.Abandoned + (op.Warmup - op.WarmupOK),
		Server:    server,
	}
}

// CommittedUnknown is how many of the unknown outcomes did commit.
func (r Reconciliation) CommittedUnknown() int64 {
	if r.ByID {
		return r.Found
	}
	return r.Server - r.Committed
}

// unexplained is, by identity, the rows the server holds beyond those the
// markers account for (below 0: fewer).
func (r Reconciliation) unexplained() int64 { return r.Server - (r.Committed - r.Missing + r.Found) }

// Lines reports the reconciliation: where names the server's count ("ledger").
// When the count cannot be explained (Into's violations) the line says so
// rather than give a count of the unknown outcomes below 0 or above all
// of them.
func (r *Reconciliation) Lines(where string) []Line {
	r.where = where
	return []Line{{Label: "ambiguous", Value: r.line()}}
}

func (r Reconciliation) line() string {
	where := r.where
	if r.ByID {
		v := fmt.Sprintf("%d (%d of them committed, by their markers on %s: the %s holds %s = %d committed", r.Unknown, r.Found, r.On, where, metrics.Count(r.Server, "row"), r.Committed)
		if r.Missing > 0 {
			v += fmt.Sprintf(" − %d missing", r.Missing)
		}
		v += fmt.Sprintf(" + %d", r.Found)
		switch u := r.unexplained(); {
		case u > 0:
			v += fmt.Sprintf(" + %d no marker accounts for", u)
		case u < 0:
			v += fmt.Sprintf(" − %d whose markers are there", -u)
		}
		return v + ")"
	}
	cu := r.CommittedUnknown()
	switch {
	case cu < 0:
		return fmt.Sprintf("%d (the %s holds %s, %d fewer than the %s txload saw commit: at least %s)",
			r.Unknown, where, metrics.Count(r.Server, "row"), -cu, metrics.Count(r.Committed, "transaction"), missingCommits(-cu))
	case cu > r.Unknown:
		return fmt.Sprintf("%d (the %s holds %s = %d committed + %d, more than the %d with an unknown outcome)",
			r.Unknown, where, metrics.Count(r.Server, "row"), r.Committed, cu, r.Unknown)
	}
	return fmt.Sprintf("%d (%d of them committed, per the %s: %s = %d committed + %d)",
		r.Unknown, cu, where, metrics.Count(r.Server, "row"), r.Committed, cu)
}

// Into adds the reconciliation's figures to res, and a violation when the
// server's count cannot be explained: fewer rows than txload saw commit (a
// commit lost), or more than could have come from unknown outcomes (a
// transaction applied twice); by identity, a transaction txload saw commit
// whose marker is missing, or rows the markers do not account for.
func (r Reconciliation) Into(res *CheckResult) {
	if res.Values == nil {
		res.Values = map[string]int64{}
	}
	for k, v := range r.values() {
		res.Values[k] = v
	}
	res.Violations = append(res.Violations, r.violations()...)
	res.Reconciled = &r
}

// values are the reconciliation's figures. ambiguous_committed stays
// within 0 and ambiguous: what the count cannot explain is a figure of its
// own beside the violation.
func (r Reconciliation) values() map[string]int64 {
	cu := r.CommittedUnknown()
	v := map[string]int64{"ambiguous": r.Unknown, "ambiguous_committed": min(max(cu, 0), r.Unknown)}
	switch {
	case r.ByID:
		if r.Missing > 0 {
			v["committed_missing"] = r.Missing
		}
		if u := r.unexplained(); u > 0 {
			v["rows_unexplained"] = u
		} else if u < 0 {
			v["rows_missing_with_marker"] = -u
		}
	case cu < 0:
		v["committed_missing"] = -cu
	case cu > r.Unknown:
		v["rows_unexplained"] = cu - r.Unknown
	}
	return v
}

func (r Reconciliation) violations() []string {
	var out []string
	if r.ByID {
		if r.Missing > 0 {
			what := fmt.Sprintf("%d transactions txload saw commit are missing: their markers are", r.Missing)
			if r.Missing == 1 {
				what = "1 transaction txload saw commit is missing: its marker is"
			}
			out = append(out, fmt.Sprintf("%s not on %s (the %s holds %s = %d committed − %d + %d of the %d with an unknown outcome, by their markers)",
				what, r.On, r.where, metrics.Count(r.Server, "row"), r.Committed, r.Missing, r.Found, r.Unknown))
		}
		switch u := r.unexplained(); {
		case u > 0:
			out = append(out, fmt.Sprintf("the %s holds %s, %d more than the markers on %s account for: %d %s applied twice or by someone else", r.where, metrics.Count(r.Server, "row"), u, r.On, u, metrics.Were(u)))
		case u < 0:
			out = append(out, fmt.Sprintf("the %s holds %s, %d fewer than the markers on %s account for: %s left their marker and lost their rows", r.where, metrics.Count(r.Server, "row"), -u, r.On, metrics.Count(-u, "transaction")))
		}
		return out
	}
	cu := r.CommittedUnknown()
	switch {
	case cu < 0:
		// At least: an unknown outcome that committed hides a lost one.
		v := fmt.Sprintf("the server holds %s but txload saw %s commit: at least %s", metrics.Count(r.Server, "row"), metrics.Count(r.Committed, "transaction"), missingCommits(-cu))
		if r.Unknown > 0 {
			v += fmt.Sprintf(" (more if any of the %d with an unknown outcome committed)", r.Unknown)
		}
		out = append(out, v)
	case cu > r.Unknown:
		out = append(out, fmt.Sprintf("the server holds %s, %d more than txload saw commit, but only %s ended with an unknown outcome: %d %s applied twice or by someone else "+
			"(another run on these tables at the same time: a run's audit holds the tables to that run alone)",
			metrics.Count(r.Server, "row"), cu, metrics.Count(r.Unknown, "transaction"), cu-r.Unknown, metrics.Were(cu-r.Unknown)))
	}
	return out
}

// Identify redoes the reconciliation Into added to res by identity, from
// markers each transaction wrote: missing is how many transactions txload
// saw commit have no marker on the server (on names it: "the new
// primary"), found how many with an unknown outcome have theirs there. A
// lost commit is then a violation of its own, never netted against an
// unknown outcome that did commit; the line, the figures and the
// violations of the count are replaced. Nothing when res has no
// reconciliation.
func (res *CheckResult) Identify(missing, found int64, on string) {
	old := res.Reconciled
	if old == nil {
		return
	}
	r := *old
	r.ByID, r.Missing, r.Found, r.On = true, missing, found, on
	was := old.line()
	for i, l := range res.Lines {
		if l.Label == "ambiguous" && l.Value == was {
			res.Lines[i].Value = r.line()
		}
	}
	for k := range old.values() {
		delete(res.Values, k)
	}
	for _, v := range old.violations() {
		if i := slices.Index(res.Violations, v); i >= 0 {
			res.Violations = slices.Delete(res.Violations, i, i+1)
		}
	}
	r.Into(res)
}

// missingCommits says n committed transactions are missing.
func missingCommits(n int64) string {
	if n == 1 {
		return "1 committed transaction is missing"
	}
	return metrics.Count(n, "committed transaction") + " are missing"
}
