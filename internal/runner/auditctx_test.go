package runner

import (
	"context"
	"testing"
	"time"
)

// The audit after a run that ended as asked has no deadline (ycsb's of
// 200,000 records took more than the minute it once had, at load 24) and
// ends with a stop signal; after an interrupted run it outlives the
// interrupt, within auditTimeout.
func TestAuditContext(t *testing.T) {
	run, stop := context.WithCancel(t.Context())
	actx, cancel := auditContext(run)
	if _, ok := actx.Deadline(); ok {
		t.Errorf("the audit after a run that ended as asked has a deadline")
	}
	stop()
	if actx.Err() == nil {
		t.Errorf("a stop signal during the audit did not end it")
	}
	cancel()

	actx, cancel = auditContext(run)
	defer cancel()
	if actx.Err() != nil {
		t.Fatalf("the audit after an interrupted run is ended by the interrupt: %v", actx.Err())
	}
	if d, ok := actx.Deadline(); !ok || time.Until(d) > auditTimeout {
		t.Errorf("the audit after an interrupted run: deadline %v (set %v), want within %v", d, ok, auditTimeout)
	}
}
