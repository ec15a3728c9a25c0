package workload

import (
	"fmt"

	"github.com/txload/txload/metrics"
)

// Reconciliation accounts for the transactions whose outcome txload could
// not know (a connection lost while COMMIT was in flight, an operation
// abandoned at the drain timeout) against what the server counted: the rows
// a workload's table gained during the run.
type Reconciliation struct {
	// Committed is what txload saw commit, warm-up included.
	Committed int64
	// Unknown is what ended without a known outcome: ambiguous commits,
	// abandoned operations, and failures during the warm-up.
	Unknown int64
	// Server is what the server counted.
	Server int64
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
func (r Reconciliation) CommittedUnknown() int64 { return r.Server - r.Committed }

// Lines reports the reconciliation: where names the server's count ("ledger").
// When the count cannot be explained (Into's violations) the line says so
// rather than give a count of the unknown outcomes below 0 or above all
// of them.
func (r Reconciliation) Lines(where string) []Line {
	cu := r.CommittedUnknown()
	var v string
	switch {
	case cu < 0:
		v = fmt.Sprintf("%d (the %s holds %s, %d fewer than the %s txload saw commit: at least %s)",
			r.Unknown, where, metrics.Count(r.Server, "row"), -cu, metrics.Count(r.Committed, "transaction"), missing(-cu))
	case cu > r.Unknown:
		v = fmt.Sprintf("%d (the %s holds %d rows = %d committed + %d, more than the %d with an unknown outcome)",
			r.Unknown, where, r.Server, r.Committed, cu, r.Unknown)
	default:
		v = fmt.Sprintf("%d (%d of them committed, per the %s: %s = %d committed + %d)",
			r.Unknown, cu, where, metrics.Count(r.Server, "row"), r.Committed, cu)
	}
	return []Line{{Label: "ambiguous", Value: v}}
}

// Into adds the reconciliation's figures to res, and a violation when the
// server's count cannot be explained: fewer rows than txload saw commit (a
// commit lost), or more than could have come from unknown outcomes (a
// transaction applied twice).
func (r Reconciliation) Into(res *CheckResult) {
	if res.Values == nil {
		res.Values = map[string]int64{}
	}
	// ambiguous_committed stays within 0 and ambiguous: what the count
	// cannot explain is a figure of its own beside the violation.
	cu := r.CommittedUnknown()
	res.Values["ambiguous"] = r.Unknown
	res.Values["ambiguous_committed"] = min(max(cu, 0), r.Unknown)
	switch {
	case cu < 0:
		res.Values["committed_missing"] = -cu
		// At least: an unknown outcome that committed hides a lost one.
		v := fmt.Sprintf("the server holds %s but txload saw %s commit: at least %s", metrics.Count(r.Server, "row"), metrics.Count(r.Committed, "transaction"), missing(-cu))
		if r.Unknown > 0 {
			v += fmt.Sprintf(" (more if any of the %d with an unknown outcome committed)", r.Unknown)
		}
		res.Violations = append(res.Violations, v)
	case cu > r.Unknown:
		res.Values["rows_unexplained"] = cu - r.Unknown
		res.Violations = append(res.Violations, fmt.Sprintf("the server holds %s, %d more than txload saw commit, but only %s ended with an unknown outcome: %d applied twice or by someone else",
			metrics.Count(r.Server, "row"), cu, metrics.Count(r.Unknown, "transaction"), cu-r.Unknown))
	}
}

// missing says n committed transactions are missing.
func missing(n int64) string {
	if n == 1 {
		return "1 committed transaction is missing"
	}
	return metrics.Count(n, "committed transaction") + " are missing"
}
