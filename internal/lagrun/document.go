package lagrun

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/lag"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/htmlreport"
)

// Document is lag's --json: the run's document (its load, and its lag over
// time as a series), and the lag beside it.
type Document struct {
	report.Document
	Lag LagDoc `json:"lag"`
}

// LagDoc is the document's lag section.
type LagDoc struct {
	Replication  string         `json:"replication"` // logical, physical, external
	SameDatabase bool           `json:"same_database,omitempty"`
	MarkInterval string         `json:"mark_interval"`
	PollInterval string         `json:"poll_interval"`
	Markers      MarkersDoc     `json:"markers"`
	Lag          report.HistDoc `json:"lag"`
	// TxMarkers and TxLag are the markers inside the workload's
	// transactions (--mark-transactions): then Markers are the stream's and
	// Lag is every marker's.
	TxMarkers      *MarkersDoc       `json:"transaction_markers,omitempty"`
	TxLag          *report.HistDoc   `json:"transaction_lag,omitempty"`
	PollPeriod     report.HistDoc    `json:"poll_period"`
	PollRoundTrip  report.HistDoc    `json:"poll_round_trip"`
	CaughtUp       bool              `json:"caught_up"`
	CatchUpSeconds float64           `json:"catch_up_seconds"`
	Senders        []SenderDoc       `json:"pg_stat_replication,omitempty"`
	Subscriptions  []SubscriptionDoc `json:"pg_stat_subscription,omitempty"`
	SLO            []VerdictDoc      `json:"slo,omitempty"`
	Convergence    *ConvergenceDoc   `json:"convergence,omitempty"`
}

// MarkersDoc is lag.Counts.
type MarkersDoc struct {
	Sent          int64 `json:"sent"`
	Acked         int64 `json:"acknowledged"`
	Failed        int64 `json:"failed"`
	Ambiguous     int64 `json:"ambiguous"`
	AmbiguousSeen int64 `json:"ambiguous_seen"`
	Measured      int64 `json:"measured"`
	Early         int64 `json:"seen_before_acknowledged"`
	Late          int64 `json:"found_late"`
	Expired       int64 `json:"never_seen"`
	Unknown       int64 `json:"unknown"`
}

func markersDoc(n lag.Counts) MarkersDoc {
	return MarkersDoc{Sent: n.Sent, Acked: n.Acked, Failed: n.Failed, Ambiguous: n.Ambiguous, AmbiguousSeen: n.AmbiguousSeen,
		Measured: n.Measured, Early: n.Early, Late: n.Late, Expired: n.Expired, Unknown: n.Unknown}
}

// SenderDoc is one pg_stat_replication row's samples (µs).
type SenderDoc struct {
	Name    string         `json:"application_name"`
	Samples int64          `json:"samples"`
	Idle    int64          `json:"idle_samples"`
	Write   report.HistDoc `json:"write_lag"`
	Flush   report.HistDoc `json:"flush_lag"`
	Replay  report.HistDoc `json:"replay_lag"`
	// Behind is in bytes, not µs.
	Behind report.HistDoc `json:"replay_behind_bytes"`
}

// SubscriptionDoc is one pg_stat_subscription row's samples (µs).
type SubscriptionDoc struct {
	Name    string         `json:"subname"`
	Samples int64          `json:"samples"`
	Delay   report.HistDoc `json:"message_delay"`
}

// VerdictDoc is one condition of --slo, judged.
type VerdictDoc struct {
	Condition string  `json:"condition"`
	ValueUS   float64 `json:"value_us"`
	Pass      bool    `json:"pass"`
}

// ConvergenceDoc is what comparing the two sides found.
type ConvergenceDoc struct {
	OK      bool            `json:"ok"`
	Tables  []*lag.Diff     `json:"tables"`
	Markers *lag.MarkerDiff `json:"markers"`
}

// writeDocument writes lag's document as --json and draws it as --html,
// whichever were asked for.
func (p *plan) writeDocument(ctx context.Context, r *Result) error {
	if p.json == "" && p.html == "" && p.load.Live == nil {
		return nil
	}
	doc, err := newDocument(r, p.load.Version, p.o.Config)
	if err != nil {
		return err
	}
	p.load.Live.Finish(&doc.Document)
	stderr := p.load.Stderr
	if p.json != "" {
		if err := runner.WriteFile(ctx, stderr, p.json, func(w io.Writer) error { return encode(w, doc) }); err != nil {
			return fmt.Errorf("writing --json: %w", err)
		}
	}
	if p.html != "" {
		if err := runner.WriteFile(ctx, stderr, p.html, func(w io.Writer) error {
			return htmlreport.Write(w, []*report.Document{&doc.Document}, htmlreport.Options{Names: []string{r.Workload}, Version: p.load.Version})
		}); err != nil {
			return fmt.Errorf("writing --html: %w", err)
		}
	}
	return nil
}

// encode writes doc as indented JSON, its run's intervals and its points
// from their spools.
func encode(w io.Writer, doc *Document) error {
	return report.WriteJSONOf(w, doc, &doc.Document)
}

// newDocument is lag's --json of r: the run's document with the flags as
// given (config) and the databases' URLs, its lag over time as a series,
// and the lag section.
func newDocument(r *Result, version string, config map[string]any) (*Document, error) {
	cfg := maps.Clone(config)
	if cfg == nil {
		cfg = map[string]any{}
	}
	cfg["source"], cfg["dest"] = r.Source, r.Dest
	doc := &Document{Document: report.Document{Version: version, Command: "lag", Workload: r.Workload, Config: cfg, Server: r.Server, RunID: report.NewRunID()}}
	if o := r.Outcome; o != nil && o.Result != nil {
		rd, err := runner.RunDocOf(*o)
		if err != nil {
			return nil, err
		}
		doc.Runs = append(doc.Runs, rd)
	}
	if r.Points != nil && r.Points.Len() > 0 {
		doc.Series = append(doc.Series, report.SeriesDoc{Title: lagTitle, Unit: "us", Lines: lagLines(), Spooled: r.Points})
	}
	if err := lagSection(&doc.Lag, r); err != nil {
		return nil, err
	}
	doc.Tables = lagTables(r)
	return doc, nil
}

// lagTables are the lag's figures as the report prints them, for the HTML
// report: the markers, the notes on the measurement, the servers' views and
// the SLO's verdicts over the lag's percentiles; then the comparison of the
// two sides. What failed heads its table.
func lagTables(r *Result) []report.TableDoc {
	var b bytes.Buffer
	writeCounts(&b, r)
	writeNotes(&b, r)
	writeViews(&b, r)
	t := report.TableDoc{Title: "Replication lag", Rows: histRows(r)}
	for _, l := range append(strings.Split(strings.TrimSpace(b.String()), "\n"), sloLines(r)...) {
		l = strings.TrimSpace(l)
		t.Lines = append(t.Lines, l)
		if t.Failed == "" && (strings.HasPrefix(l, "DRAIN TIMEOUT") || strings.Contains(l, ": FAIL (")) {
			t.Failed = "FAILED: " + l
		}
	}
	out := []report.TableDoc{t}
	if c := r.Convergence; c != nil {
		ct := report.TableDoc{Title: "Convergence", Rows: convergenceRows(c), Lines: convergenceLines(c)}
		if f := c.Failures(); len(f) > 0 {
			ct.Failed = ct.Lines[len(ct.Lines)-1]
		}
		out = append(out, ct)
	}
	return out
}

// lagTitle and lagLines are the title and lines of the lag's series.
const lagTitle = "replication lag"

func lagLines() []string { return []string{"p50", "p99", "max", "oldest pending"} }

// liveLag adds, to the live page's document, what lag measured so far:
// the lag over time and the two databases.
func liveLag(t *ticker, source, dest string) func(*report.Document) {
	return func(d *report.Document) {
		d.Config = maps.Clone(d.Config)
		if d.Config == nil {
			d.Config = map[string]any{}
		}
		d.Config["source"], d.Config["dest"] = source, dest
		delete(d.Config, report.KeyURLs)
		if pts := t.pointsSoFar(); len(pts) > 0 {
			d.Series = append(d.Series, report.SeriesDoc{Title: lagTitle, Unit: "us", Lines: lagLines(), Points: pts})
		}
	}
}

// lagSection fills in the document's lag section.
func lagSection(l *LagDoc, r *Result) error {
	l.Replication, l.SameDatabase = r.Mode, r.Same
	l.MarkInterval, l.PollInterval = r.MarkInterval.String(), r.PollInterval.String()
	l.Markers = markersDoc(r.Stream)
	l.CaughtUp, l.CatchUpSeconds = r.CaughtUp, r.CatchUp.Seconds()
	type histOut struct {
		to *report.HistDoc
		h  *hdr.Histogram
	}
	hists := []histOut{{&l.Lag, r.Lag}, {&l.PollPeriod, r.Reader.Period}, {&l.PollRoundTrip, r.Reader.RoundTrip}}
	if r.Marked {
		tm := markersDoc(r.Tx)
		l.TxMarkers, l.TxLag = &tm, &report.HistDoc{}
		hists = append(hists, histOut{l.TxLag, r.TxLag})
	}
	l.Senders = make([]SenderDoc, len(r.Senders))
	for i, s := range r.Senders {
		j := &l.Senders[i]
		*j = SenderDoc{Name: s.Name, Samples: s.Samples, Idle: s.Idle}
		hists = append(hists, histOut{&j.Write, s.Write}, histOut{&j.Flush, s.Flush}, histOut{&j.Replay, s.Replay}, histOut{&j.Behind, s.Behind})
	}
	l.Subscriptions = make([]SubscriptionDoc, len(r.Subscriptions))
	for i, s := range r.Subscriptions {
		l.Subscriptions[i] = SubscriptionDoc{Name: s.Name, Samples: s.Samples}
		hists = append(hists, histOut{&l.Subscriptions[i].Delay, s.Delay})
	}
	for _, p := range hists {
		if p.h == nil {
			continue
		}
		d, err := report.HistogramDoc(p.h)
		if err != nil {
			return err
		}
		*p.to = d
	}
	for _, v := range r.SLO {
		l.SLO = append(l.SLO, VerdictDoc{Condition: v.Cond.String(), ValueUS: v.Value, Pass: v.Pass})
	}
	if c := r.Convergence; c != nil {
		l.Convergence = &ConvergenceDoc{OK: len(c.Failures()) == 0, Tables: c.Tables, Markers: c.Markers}
	}
	return nil
}
