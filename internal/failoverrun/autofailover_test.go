package failoverrun

import (
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// shellQuote quotes args for sh.
func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// A real HA manager: a pg_auto_failover formation (monitor and two
// nodes), bank through its multi-host URL, `pg_autoctl perform failover`
// as --failover-command during the run. The report has every figure: the
// fault (the command's start), the new primary on a new timeline, the last
// and first commits and the unavailability between, the replication
// before, the clients' errors and reconnections, the operations that
// straddled it; no acknowledged commit is lost (the formation replicates
// synchronously), and bank's check is clean on the new primary.
func TestAutoFailover(t *testing.T) {
	f := pgtest.StartAutoFailover(t)
	o, out := clusterOptions(t, f.URL)
	o.FailoverCommand = shellQuote(f.FailoverCommand())
	o.At, o.Run.Engine.Duration = 3*time.Second, 20*time.Second
	o.Run.Engine.Concurrency = 4
	r, err := runFailover(t, o)
	t.Logf("\n%s", section(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case r.FaultSent.IsZero() || r.CommandDone.IsZero() || r.NewPrimary.IsZero() || r.Timeline < 2:
		t.Fatalf("command %s..%s, new primary %s on timeline %d", clock(r.FaultSent), clock(r.CommandDone), clock(r.NewPrimary), r.Timeline)
	case r.OldNode == "" || r.NewNode == "" || r.OldNode == r.NewNode || r.FirstNew.IsZero() || r.Unavailable <= 0:
		t.Fatalf("old node %q, new %q, unavailable %s", r.OldNode, r.NewNode, r.Unavailable)
	case r.Lag == nil || len(r.Lag.Standbys) == 0:
		t.Fatalf("no replication sampled before the failover: %+v", r.Lag)
	case r.Tally.Acked < 100 || r.Tally.Lost != 0 || r.Tally.Phantom != 0:
		t.Fatalf("acknowledged %d, lost %d, phantoms %d", r.Tally.Acked, r.Tally.Lost, r.Tally.Phantom)
	case r.Outcome == nil || r.Outcome.Check == nil || len(r.Outcome.Check.Violations) > 0:
		t.Fatalf("bank's check after the failover: %+v", r.Outcome)
	}
	if r.Straddled == 0 {
		t.Errorf("no operation straddled a %s unavailability", r.Unavailable)
	}
	_, reconnects, outages, _ := errorCounts(r)
	t.Logf("unavailable %s, %d failed reconnections, %d outages", r.Unavailable, reconnects, outages)
}
