package workload

import (
	"fmt"
	"maps"
	"slices"
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
		if m := tc.values["committed_missing"]; m > 0 && (len(res.Violations) != 1 || !strings.Contains(res.Violations[0], "at least "+missingCommits(m)) || (tc.r.Unknown > 0 && !strings.Contains(res.Violations[0], fmt.Sprintf("(more if any of the %d with an unknown outcome committed)", tc.r.Unknown)))) {
			t.Errorf("%+v: violations %q: want at least %d missing, a lost commit being hidden by each unknown outcome that committed", tc.r, res.Violations, m)
		}
		if ok := tc.values["committed_missing"] == 0 && tc.values["rows_unexplained"] == 0; ok != (len(res.Violations) == 0) {
			t.Errorf("%+v: violations %q", tc.r, res.Violations)
		}
	}
}

// By identity, a lost commit is not netted against unknown outcomes that
// did commit: a failover whose old primary kept one acknowledged transfer
// while two in flight committed on the new one (4196 seen committed, 4197
// rows) passed by count ("1 of them committed"); its markers say 1
// missing and 2 found, a violation. Markers and rows that disagree are one
// too.
func TestReconciliationIdentify(t *testing.T) {
	for _, tc := range []struct {
		name           string
		r              Reconciliation
		missing, found int64
		line           string
		values         map[string]int64
		violations     []string
	}{
		{"a lost commit netted by count", Reconciliation{Committed: 4196, Unknown: 12, Server: 4197}, 1, 2,
			"12 (2 of them committed, by their markers on the new primary: the ledger holds 4197 rows = 4196 committed − 1 missing + 2)",
			map[string]int64{"ambiguous": 12, "ambiguous_committed": 2, "committed_missing": 1},
			[]string{"1 transaction txload saw commit is missing: its marker is not on the new primary (the ledger holds 4197 rows = 4196 committed − 1 + 2 of the 12 with an unknown outcome, by their markers)"}},
		{"nothing lost", Reconciliation{Committed: 100, Unknown: 3, Server: 102}, 0, 2,
			"3 (2 of them committed, by their markers on the new primary: the ledger holds 102 rows = 100 committed + 2)",
			map[string]int64{"ambiguous": 3, "ambiguous_committed": 2}, nil},
		{"many lost, counted as such already", Reconciliation{Committed: 32174, Unknown: 1, Server: 24265}, 7909, 0,
			"1 (0 of them committed, by their markers on the new primary: the ledger holds 24265 rows = 32174 committed − 7909 missing + 0)",
			map[string]int64{"ambiguous": 1, "ambiguous_committed": 0, "committed_missing": 7909},
			[]string{"7909 transactions txload saw commit are missing: their markers are not on the new primary (the ledger holds 24265 rows = 32174 committed − 7909 + 0 of the 1 with an unknown outcome, by their markers)"}},
		{"rows no marker accounts for", Reconciliation{Committed: 100, Unknown: 3, Server: 104}, 0, 2,
			"3 (2 of them committed, by their markers on the new primary: the ledger holds 104 rows = 100 committed + 2 + 2 no marker accounts for)",
			map[string]int64{"ambiguous": 3, "ambiguous_committed": 2, "rows_unexplained": 2},
			[]string{"the ledger holds 104 rows, 2 more than the markers on the new primary account for: 2 were applied twice or by someone else"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := CheckResult{Lines: append([]Line{{"balance", "ok"}}, tc.r.Lines("ledger")...), Violations: []string{"another finding"}}
			tc.r.Into(&res)
			res.Identify(tc.missing, tc.found, "the new primary")
			if got := res.Lines[1].Value; got != tc.line || len(res.Lines) != 2 {
				t.Errorf("line %q, want %q (%d lines)", got, tc.line, len(res.Lines))
			}
			if !maps.Equal(res.Values, tc.values) {
				t.Errorf("values %v, want %v", res.Values, tc.values)
			}
			if want := append([]string{"another finding"}, tc.violations...); !slices.Equal(res.Violations, want) {
				t.Errorf("violations %q, want %q", res.Violations, want)
			}
		})
	}
	// No reconciliation: nothing to redo.
	var res CheckResult
	res.Identify(1, 0, "the new primary")
	if res.Values != nil || res.Violations != nil {
		t.Errorf("a result without reconciliation got %v %v", res.Values, res.Violations)
	}
}
