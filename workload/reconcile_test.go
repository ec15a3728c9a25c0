package workload

import (
	"strings"
	"testing"
)

// The ambiguous line never gives a count of unknown outcomes that
// committed below 0 or above all of them (a failover's lost commits made
// it say "-57 of them committed").
func TestReconciliationLines(t *testing.T) {
	for _, tc := range []struct {
		r    Reconciliation
		want string
	}{
		{Reconciliation{Committed: 100, Unknown: 3, Server: 102}, "3 (2 of them committed, per the ledger: 102 rows = 100 committed + 2)"},
		{Reconciliation{Committed: 38508, Unknown: 2, Server: 38451}, "2 (the ledger holds 38451 rows, 57 fewer than the 38508 transactions txload saw commit: those are missing)"},
		{Reconciliation{Committed: 100, Unknown: 1, Server: 105}, "1 (the ledger holds 105 rows = 100 committed + 5, more than the 1 with an unknown outcome)"},
	} {
		got := tc.r.Lines("ledger")[0].Value
		if got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
		if strings.Contains(got, "(-") {
			t.Errorf("%+v: a negative count: %q", tc.r, got)
		}
	}
}
