package workload

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

// The ambiguous line never gives a count of unknown outcomes that
// committed below 0 or above all of them (a failover's lost commits made
// it say "-57 of them committed").
func TestReconciliationLines(t *testing.T) {
	for _, tc := range []struct {
		r      Reconciliation
		want   string
		values map[string]int64 // the check's figures (--json, the HTML page)
	}{
		{Reconciliation{Committed: 100, Unknown: 3, Server: 102}, "3 (2 of them committed, per the ledger: 102 rows = 100 committed + 2)",
			map[string]int64{"ambiguous": 3, "ambiguous_committed": 2}},
		{Reconciliation{Committed: 38508, Unknown: 2, Server: 38451}, "2 (the ledger holds 38451 rows, 57 fewer than the 38508 transactions txload saw commit: at least 57 committed transactions are missing)",
			map[string]int64{"ambiguous": 2, "ambiguous_committed": 0, "committed_missing": 57}},
		{Reconciliation{Committed: 100, Unknown: 1, Server: 105}, "1 (the ledger holds 105 rows = 100 committed + 5, more than the 1 with an unknown outcome)",
			map[string]int64{"ambiguous": 1, "ambiguous_committed": 1, "rows_unexplained": 4}},
		// Counts of one are singular.
		{Reconciliation{Committed: 1, Unknown: 1, Server: 1}, "1 (0 of them committed, per the ledger: 1 row = 1 committed + 0)",
			map[string]int64{"ambiguous": 1, "ambiguous_committed": 0}},
		{Reconciliation{Committed: 2, Server: 1}, "0 (the ledger holds 1 row, 1 fewer than the 2 transactions txload saw commit: at least 1 committed transaction is missing)",
			map[string]int64{"ambiguous": 0, "ambiguous_committed": 0, "committed_missing": 1}},
	} {
		got := tc.r.Lines("ledger")[0].Value
		if got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
		if strings.Contains(got, "(-") {
			t.Errorf("%+v: a negative count: %q", tc.r, got)
		}
		var res CheckResult
		tc.r.Into(&res)
		if !maps.Equal(res.Values, tc.values) {
			t.Errorf("%+v: the check's figures %v, want %v (the failover's page showed ambiguous_committed -13633)", tc.r, res.Values, tc.values)
		}
		if m := tc.values["committed_missing"]; m > 0 && (len(res.Violations) != 1 || !strings.Contains(res.Violations[0], "at least "+missing(m)) || (tc.r.Unknown > 0 && !strings.Contains(res.Violations[0], fmt.Sprintf("(more if any of the %d with an unknown outcome committed)", tc.r.Unknown)))) {
			t.Errorf("%+v: violations %q: want at least %d missing, a lost commit being hidden by each unknown outcome that committed", tc.r, res.Violations, m)
		}
		if ok := tc.values["committed_missing"] == 0 && tc.values["rows_unexplained"] == 0; ok != (len(res.Violations) == 0) {
			t.Errorf("%+v: violations %q", tc.r, res.Violations)
		}
	}
}
