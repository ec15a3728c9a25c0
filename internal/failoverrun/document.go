package failoverrun

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/txload/txload/internal/pg/replica"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/htmlreport"
)

// Document is failover's --json: the runs' document (one run per mode,
// labelled by its replication; a timeline per mode as a series) and the
// failover section beside it.
type Document struct {
	report.Document
	Failover []FailoverDoc `json:"failover"`
}

// FailoverDoc is one mode's failover figures. Times are RFC 3339 with
// nanoseconds, durations in seconds. NoFault says why there was no fault
// (an interrupt before --at); CountedOn is the node the markers were
// compared with: "new primary", or "primary" when no failover happened.
type FailoverDoc struct {
	Replication      string           `json:"replication"`
	Plan             string           `json:"plan"`
	HeldAt           *time.Time       `json:"standby_held_at,omitempty"`
	FaultAt          *time.Time       `json:"fault_at,omitempty"`
	NoFault          string           `json:"no_fault,omitempty"`
	FaultLogged      *time.Time       `json:"fault_logged_at,omitempty"`
	FaultDown        *time.Time       `json:"old_primary_down_at,omitempty"`
	PromoteRequested *time.Time       `json:"promotion_requested_at,omitempty"`
	NewPrimary       *time.Time       `json:"new_primary_at,omitempty"`
	Timeline         uint32           `json:"new_timeline,omitempty"`
	NewAddr          string           `json:"new_primary_node,omitempty"`
	SplitBrain       string           `json:"split_brain,omitempty"`
	CommandDone      *time.Time       `json:"command_done_at,omitempty"`
	OldNode          string           `json:"old_node,omitempty"`
	NewNode          string           `json:"new_node,omitempty"`
	LastOld          *time.Time       `json:"last_commit_old_primary,omitempty"`
	FirstNew         *time.Time       `json:"first_commit_new_primary,omitempty"`
	UnavailableSec   *float64         `json:"write_unavailable_seconds,omitempty"`
	PrecisionSec     float64          `json:"precision_seconds,omitempty"`
	ProbeInterval    float64          `json:"probe_interval_seconds"`
	Lag              *LagSample       `json:"replication_before_fault,omitempty"`
	Errors           map[string]int64 `json:"errors"`
	Reconnects       int64            `json:"failed_reconnects"`
	Outages          int              `json:"outages"`
	UnreachableSec   float64          `json:"unreachable_seconds"`
	Straddled        int64            `json:"straddling_operations"`
	StraddledOK      int64            `json:"straddling_committed"`
	StraddledP50     float64          `json:"straddling_p50_seconds"`
	StraddledP99     float64          `json:"straddling_p99_seconds"`
	StraddledMax     float64          `json:"straddling_max_seconds"`
	CountedOn        string           `json:"counted_on,omitempty"`
	Acked            int64            `json:"acknowledged"`
	Probe            int64            `json:"acknowledged_probe"`
	Lost             int64            `json:"lost"`
	LostProbe        int64            `json:"lost_probe"`
	Ambiguous        int64            `json:"ambiguous"`
	Survived         int64            `json:"ambiguous_on_new_primary"`
	Phantom          int64            `json:"phantom"`
	Unresolved       int64            `json:"unresolved"`
	LostIDs          []Commit         `json:"lost_commits"`
	AmbiguousIDs     []Commit         `json:"ambiguous_commits"`
	PhantomIDs       []Commit         `json:"phantom_commits,omitempty"`
	Error            string           `json:"error,omitempty"`
	OldPrimary       *OldPrimary      `json:"old_primary,omitempty"`
	Interrupted      bool             `json:"interrupted,omitempty"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// docOf is r's failover section.
func docOf(r *Result) FailoverDoc {
	t := r.Tally
	d := FailoverDoc{Replication: r.Mode, Plan: r.Plan, HeldAt: timePtr(r.HeldAt), FaultAt: timePtr(r.FaultSent), FaultLogged: timePtr(r.FaultLogged),
		FaultDown: timePtr(r.FaultDown), PromoteRequested: timePtr(r.PromoteRequested), NewPrimary: timePtr(r.NewPrimary), Timeline: r.Timeline,
		CommandDone: timePtr(r.CommandDone), OldNode: r.OldNode, NewNode: r.NewNode, LastOld: timePtr(r.LastOld), FirstNew: timePtr(r.FirstNew),
		ProbeInterval: r.ProbeInterval.Seconds(), Lag: r.Lag, Errors: map[string]int64{},
		Straddled: r.Straddled, StraddledOK: r.StraddledOK, Acked: t.Acked, Probe: t.Probe, Lost: t.Lost, LostProbe: t.LostProbe,
		Ambiguous: t.Ambiguous, Survived: t.Survived, Phantom: t.Phantom, Unresolved: t.Unresolved,
		LostIDs: nonNil(t.LostIDs), AmbiguousIDs: nonNil(t.AmbiguousIDs), PhantomIDs: t.PhantomIDs, Error: r.Err, Interrupted: r.Interrupted, OldPrimary: r.Old,
		NoFault: r.noFault(), NewAddr: r.NewAddr, SplitBrain: r.SplitBrain}
	if r.uncounted == "" {
		switch {
		case r.failedOver():
			d.CountedOn = "new primary"
		case r.FaultSent.IsZero():
			d.CountedOn = "primary"
		default:
			d.CountedOn = "writable node"
		}
	}
	if !r.FirstNew.IsZero() {
		u := r.Unavailable.Seconds()
		d.UnavailableSec, d.PrecisionSec = &u, r.Precision.Seconds()
	}
	errs, reconnects, outages, down := errorCounts(r)
	for c, n := range errs {
		if n > 0 {
			d.Errors[metrics.Class(c).String()] = n
		}
	}
	d.Reconnects, d.Outages, d.UnreachableSec = reconnects, outages, down.Seconds()
	if len(r.Latency) > 0 {
		d.StraddledP50, d.StraddledP99, d.StraddledMax = quantile(r.Latency, .5).Seconds(), quantile(r.Latency, .99).Seconds(), r.Latency[len(r.Latency)-1].Seconds()
	}
	return d
}

func nonNil(c []Commit) []Commit {
	if c == nil {
		return []Commit{}
	}
	return c
}

// events are the moments marked on r's timeline, those that happened:
// the standby held back, the fault, txload's request to promote the
// standby (the embedded pair's), the new primary taking writes, the first
// commit on it.
func events(r *Result) []report.SeriesEvent {
	var out []report.SeriesEvent
	for _, e := range []struct {
		at    time.Time
		label string
	}{{r.HeldAt, "standby held"}, {r.FaultSent, "fault"}, {r.PromoteRequested, "promotion requested"}, {r.NewPrimary, "new primary"}, {r.FirstNew, "first commit"}} {
		if !e.at.IsZero() && !r.startAt.IsZero() {
			out = append(out, report.SeriesEvent{At: e.at.Sub(r.startAt).Seconds(), Label: e.label})
		}
	}
	return out
}

// newDocument is failover's --json of results.
func (p *plan) newDocument(results []*Result) (*Document, error) {
	cfg := maps.Clone(p.o.Config)
	if cfg == nil {
		cfg = map[string]any{}
	}
	first := results[0]
	cfg[report.KeyURLs] = []string{first.URL}
	doc := &Document{Document: report.Document{Version: p.load.Version, Command: "failover", Workload: p.o.Workload.Name, Config: cfg,
		Server: first.Server, RunID: report.NewRunID()}}
	for _, r := range results {
		if o := r.Outcome; o != nil && o.Result != nil {
			rd, err := runner.RunDocOf(*o)
			if err != nil {
				return nil, err
			}
			rd.Labels = map[string]string{"replication": r.Mode}
			doc.Runs = append(doc.Runs, rd)
		}
		if len(r.Points) > 0 {
			doc.Series = append(doc.Series, report.SeriesDoc{Title: "failover timeline (" + r.Mode + "), per second every 100 ms",
				Axis: "transactions and attempts per second", Unit: "/s", Labels: map[string]string{"replication": r.Mode},
				Lines: timelineLines(), Points: r.Points, Events: events(r)})
		}
		doc.Failover = append(doc.Failover, docOf(r))
		rows := append([][]string{{"", ""}}, resultRows(r)...)
		for _, ids := range []struct {
			what string
			cs   []Commit
		}{{"lost", r.Tally.LostIDs}, {"ambiguous", r.Tally.AmbiguousIDs}} {
			if len(ids.cs) > 0 {
				rows = append(rows, []string{ids.what + " (writer/seq)", commitList(ids.cs)})
			}
		}
		doc.Tables = append(doc.Tables, report.TableDoc{Title: "Failover (" + r.Mode + "): " + r.heading(), Rows: rows, Failed: r.failed()})
	}
	if len(results) > 1 {
		doc.Tables = append(doc.Tables, report.TableDoc{Title: "Failover: comparison", Rows: comparisonRows(results)})
	}
	return doc, nil
}

// writeDocument writes --json and --html, whichever were asked for.
func (p *plan) writeDocument(ctx context.Context, results []*Result) error {
	if p.json == "" && p.html == "" && p.load.Live == nil {
		return nil
	}
	doc, err := p.newDocument(results)
	if err != nil {
		return err
	}
	p.load.Live.Finish(&doc.Document)
	stderr := p.load.Stderr
	if p.json != "" {
		// The runs' intervals from their spools, where encoding/json would
		// leave them out.
		if err := runner.WriteFile(ctx, stderr, p.json, func(w io.Writer) error { return report.WriteJSONOf(w, doc, &doc.Document) }); err != nil {
			return fmt.Errorf("writing --json: %w", err)
		}
	}
	if p.html != "" {
		if err := runner.WriteFile(ctx, stderr, p.html, func(w io.Writer) error {
			return htmlreport.Write(w, []*report.Document{&doc.Document}, htmlreport.Options{Names: []string{p.o.Workload.Name}, Version: p.load.Version})
		}); err != nil {
			return fmt.Errorf("writing --html: %w", err)
		}
	}
	return nil
}

// liveModes labels the live page's runs by their replication, as the
// document does, when there are several (the per-100 ms timeline and the
// failover's figures come with the final page).
func liveModes(modes []replica.Replication) func(*report.Document) {
	return func(d *report.Document) {
		if len(modes) < 2 {
			return
		}
		for i := range d.Runs {
			if i < len(modes) {
				d.Runs[i].Labels = map[string]string{"replication": modes[i].String()}
			}
		}
	}
}

// export sets the failover's figures on /metrics (--metrics-addr), as
// gauges: with several modes, the last one's.
func (p *plan) export(r *Result) {
	exp := p.load.Metrics
	if exp == nil {
		return
	}
	d := docOf(r)
	if d.UnavailableSec != nil {
		exp.SetFigure("failover_write_unavailable_seconds", "time from the last commit on the old primary to the first on the new one", *d.UnavailableSec)
	}
	for _, f := range []struct {
		name, help string
		v          float64
	}{
		{"failover_acknowledged_commits", "commits acknowledged during the failover run (workload and probe)", float64(d.Acked)},
		{"failover_lost_commits", "acknowledged commits the new primary lacks", float64(d.Lost)},
		{"failover_ambiguous_commits", "commits whose outcome the failover hid", float64(d.Ambiguous)},
		{"failover_ambiguous_survived", "ambiguous commits found on the new primary", float64(d.Survived)},
		{"failover_straddling_operations", "operations under way or due while writes were unavailable", float64(d.Straddled)},
		{"failover_straddling_max_seconds", "the longest latency of an operation that straddled the failover", d.StraddledMax},
		{"failover_failed_reconnects", "failed reconnection attempts of the clients", float64(d.Reconnects)},
	} {
		exp.SetFigure(f.name, f.help, f.v)
	}
	if r.Lag != nil {
		var worst int64
		for _, s := range r.Lag.Standbys {
			worst = max(worst, s.NotFlushed)
		}
		exp.SetFigure("failover_not_flushed_bytes_before_fault", "WAL the standby had not flushed just before the fault", float64(worst))
	}
}

// commitList is commits by id, the first maxListed of them, said as the
// report says it.
func commitList(cs []Commit) string {
	var parts []string
	for i, c := range cs {
		if i == maxListed {
			break
		}
		parts = append(parts, fmt.Sprintf("%d/%d", c.Writer, c.Seq))
	}
	if m := strings.TrimPrefix(more(len(cs)), ", "); m != "" {
		return m + ": " + strings.Join(parts, " ")
	}
	return strings.Join(parts, " ")
}
