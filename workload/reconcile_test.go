package workload_test

import (
	"strings"
	"testing"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/workload"
)

func TestReconcile(t *testing.T) {
	op := &metrics.OpStats{OK: 100, WarmupOK: 10, Warmup: 12, Abandoned: 1}
	op.Failed[metrics.AmbiguousCommit] = 3
	for _, tc := range []struct {
		server    int64
		violation string
	}{
		{110, ""}, // none of the 6 unknown committed
		{116, ""}, // all of them did
		{109, "1 committed transactions are missing"},
		{117, "1 were applied twice or by someone else"},
	} {
		rec := workload.Reconcile(op, tc.server)
		if rec.Unknown != 6 || rec.Committed != 110 {
			t.Fatalf("unknown %d committed %d", rec.Unknown, rec.Committed)
		}
		res := &workload.CheckResult{}
		rec.Into(res)
		got := strings.Join(res.Violations, "; ")
		if (tc.violation == "") != (got == "") || !strings.Contains(got, tc.violation) {
			t.Errorf("server %d: violations %q, want %q", tc.server, got, tc.violation)
		}
		if res.Values["ambiguous_committed"] != tc.server-110 {
			t.Errorf("server %d: ambiguous_committed %d", tc.server, res.Values["ambiguous_committed"])
		}
	}
}
