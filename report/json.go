package report

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
)

// Document is the --json output: what was run, where, and what it measured,
// with every histogram encoded so results can be merged exactly later.
type Document struct {
	Version  string         `json:"txload_version"`
	Command  string         `json:"command"`
	Workload string         `json:"workload"`
	Config   map[string]any `json:"config"`
	Server   any            `json:"server"`
	Runs     []RunDoc       `json:"runs"`
	// RunID identifies the invocation that wrote the document (random,
	// one per process): the same run given twice to merge is refused.
	RunID string `json:"run_id,omitempty"`
	// Interrupted says a command of several runs (sweep) was interrupted
	// before it ended, and InterruptedBy by what ("SIGTERM"): the run it
	// cut, if one had started, says so too.
	Interrupted   bool   `json:"interrupted,omitempty"`
	InterruptedBy string `json:"interrupted_by,omitempty"`
	// MergedFrom names the documents a merged document was made of (by
	// `txload merge`), in the order given; MergedRunIDs are their run ids.
	MergedFrom   []string `json:"merged_from,omitempty"`
	MergedRunIDs []string `json:"merged_run_ids,omitempty"`
	// Series are figures over time that a command measures beside the
	// runs' own (lag's replication lag): one chart each in the HTML report.
	Series []SeriesDoc `json:"series,omitempty"`
	// Tables are a command's own figures as rows of text (failover's):
	// one table each in the HTML report, after the summary. Readers of
	// the figures take them from the command's own section of the JSON.
	Tables []TableDoc `json:"tables,omitempty"`
	// Failover is failover's own section (an array, one element per
	// replication mode), kept as it was written: merge keeps it.
	Failover json.RawMessage `json:"failover,omitempty"`
}

// Failures are what the command's own figures found wrong (the tables'
// Failed lines: failover's lost commits, a split brain), in order.
func (d *Document) Failures() []string {
	var out []string
	for _, t := range d.Tables {
		if t.Failed != "" {
			out = append(out, t.Failed)
		}
	}
	return out
}

// TableDoc is a titled table of text: its first row is the header.
// Failed, when set, is what the table's figures found wrong (failover's
// lost commits), one line: the HTML report shows it in red at its top.
type TableDoc struct {
	Title string `json:"title"`
	// Lines are lines of text under the title, before the rows (lag's
	// notes on its markers and its measurement).
	Lines  []string   `json:"lines,omitempty"`
	Rows   [][]string `json:"rows"`
	Failed string     `json:"failed,omitempty"`
}

// SeriesDoc is one figure over time: at each point, one value per line.
type SeriesDoc struct {
	Title string `json:"title"`
	// Unit of the values: "us" (microseconds, drawn as durations), "/s"
	// (rates), "ratio" (shares, drawn in per cent) or "".
	Unit string `json:"unit,omitempty"`
	// Log draws the values on a log scale (rates far apart: pgio's LIOPS
	// and PIOPS).
	Log bool `json:"log,omitempty"`
	// Labels, when set, are those of the run the figure is of (a
	// failover's timeline per replication mode): it is drawn in that
	// run's colour and named by it.
	Labels map[string]string `json:"labels,omitempty"`
	// Axis says what the values count and per what ("transactions per
	// second"), for the chart's y axis; "" = the title.
	Axis   string        `json:"axis,omitempty"`
	Lines  []string      `json:"lines"`
	Points []SeriesPoint `json:"points"`
	// Spooled, when set, holds the points in place of Points, out of
	// memory (lag's spool of its points).
	Spooled Source[SeriesPoint] `json:"-"`
	// Events are moments to mark on the chart (failover's fault and
	// promotion).
	Events []SeriesEvent `json:"events,omitempty"`
}

// SeriesEvent is a moment of a SeriesDoc: seconds from the start of the
// measured period, and what happened then.
type SeriesEvent struct {
	At    float64 `json:"at_seconds"`
	Label string  `json:"label"`
}

// SeriesPoint is the values of a SeriesDoc's lines at one time.
type SeriesPoint struct {
	// At is seconds from the start of the measured period.
	At     float64   `json:"at_seconds"`
	Values []float64 `json:"values"`
}

// RunDoc is one run (one variant of a multi-variant run, one step of a
// sweep).
type RunDoc struct {
	Labels     map[string]string `json:"labels,omitempty"`
	ElapsedSec float64           `json:"elapsed_seconds"`
	Offered    int64             `json:"offered,omitempty"`
	Unstarted  int64             `json:"unstarted,omitempty"`
	Saturated  bool              `json:"saturated,omitempty"`
	// RunFailed is why the run failed for what it measured: its --rate
	// not kept (SATURATED, BEHIND), nothing committed. A sweep's steps
	// and pgbench's runs never carry it. merge and report fail with it,
	// as the run did.
	RunFailed   string `json:"run_failed,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
	// InterruptedBy names what interrupted the run ("SIGTERM").
	InterruptedBy string `json:"interrupted_by,omitempty"`
	// ConnectSec is how long the clients took to connect, before the
	// measured window (of several load generators merged, the longest).
	ConnectSec float64 `json:"connect_seconds,omitempty"`
	// Connections and ConnectionSec are, with a connection per
	// transaction, the connections made for them and their time in all
	// (of several load generators merged, the sums).
	Connections   int64   `json:"connections,omitempty"`
	ConnectionSec float64 `json:"connection_seconds,omitempty"`
	// Drain is what ended after the measured window: the operations in
	// flight at its end, completed, failed or abandoned (outcome
	// unknown), from the window's end to the drain's. They are in neither
	// Ops nor Intervals; a workload's audit counts them.
	Drain *IntervalDoc `json:"drain,omitempty"`
	// Warmup is what the warm-up ran: the operations begun in it, in
	// neither Ops' other counts nor Intervals' (Drain counts those still
	// in flight when the window ended). A workload's audit counts them.
	Warmup *WarmupDoc `json:"warmup,omitempty"`
	// Reconnects counts failed attempts to replace lost connections.
	Reconnects int64 `json:"reconnects,omitempty"`
	// Notes are the lines the run printed under its summary's header (its
	// clients' connection, how it ended, what was in flight at its end,
	// the first error of each class), as printed: the HTML report shows
	// them. A merged document has only the ABORTED lines of the documents
	// merged (each load generator's other notes were its own): a run whose
	// clients aborted failed, and so does a merge of it.
	Notes []string `json:"notes,omitempty"`
	Ops   []OpDoc  `json:"operations"`
	// EmissionLag is the open-loop generator's own lateness.
	EmissionLag *HistDoc  `json:"emission_lag,omitempty"`
	Check       *CheckDoc `json:"check,omitempty"`
	// Histograms is the geometry of every histogram of the run.
	Histograms *HistSettings `json:"histograms,omitempty"`
	// Intervals are the run's progress intervals in order, warm-up
	// included, with their own counts and histograms: added up they give
	// the operations' totals, and documents of several load generators
	// merge on them interval by interval.
	Intervals []IntervalDoc `json:"intervals,omitempty"`
	// Spooled, when set, holds the run's intervals in place of Intervals,
	// out of memory: the spool a run writes as it goes, a document's file.
	// WriteJSON writes them where Intervals would be; IntervalSource and
	// EachInterval read either.
	Spooled Source[IntervalDoc] `json:"-"`
}

// WarmupDoc is the operations begun in the warm-up that ended by the
// window's end (OpDoc's Warmup and WarmupOK, of every operation), and
// how many of them committed.
type WarmupDoc struct {
	Operations int64 `json:"operations"`
	Committed  int64 `json:"committed"`
	Failed     int64 `json:"failed"`
}

// HistSettings is the geometry of txload's histograms: values in µs from
// Lowest to Highest with SignificantDigits digits. Histograms merge exactly
// only with the same geometry.
type HistSettings struct {
	Unit              string `json:"unit"`
	Lowest            int64  `json:"lowest"`
	Highest           int64  `json:"highest"`
	SignificantDigits int64  `json:"significant_digits"`
}

func settingsOf(h *hdr.Histogram) HistSettings {
	return HistSettings{Unit: "us", Lowest: h.LowestTrackableValue(), Highest: h.HighestTrackableValue(), SignificantDigits: h.SignificantFigures()}
}

func (s HistSettings) String() string {
	return fmt.Sprintf("%d..%d %s, %d significant digits", s.Lowest, s.Highest, s.Unit, s.SignificantDigits)
}

// CheckDoc is what the workload's audit found.
type CheckDoc struct {
	Values     map[string]int64 `json:"values"`
	Violations []string         `json:"violations"`
	// Lines are the audit's report as the run printed it, a labelled
	// figure each ("money drift", "+0"), which the HTML report shows;
	// Figures says the block reports figures and audits nothing (pgio's):
	// no "check: ok" under it.
	Lines   []CheckLine `json:"lines,omitempty"`
	Figures bool        `json:"figures,omitempty"`
	// Error is why the audit did not finish (its session was ended, a
	// statement failed), as the run printed it: no figures then, and no
	// verdict. The run failed, and so does a merge or report of it.
	Error string `json:"error,omitempty"`
}

// CheckLine is a line of an audit's report.
type CheckLine struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// OpDoc is one operation's results.
type OpDoc struct {
	Name      string           `json:"name"`
	OK        int64            `json:"ok"`
	OpsPerSec float64          `json:"ops_per_second"`
	Failed    map[string]int64 `json:"failed"`
	Errors    map[string]int64 `json:"errors"`
	Retried   int64            `json:"retried"`
	Retries   int64            `json:"retries"`
	Warmup    int64            `json:"warmup"`
	WarmupOK  int64            `json:"warmup_ok,omitempty"`
	Skipped   int64            `json:"skipped"`
	Late      int64            `json:"late"`
	Abandoned int64            `json:"abandoned,omitempty"`
	Response  HistDoc          `json:"response"`
	Service   HistDoc          `json:"service"`
	Lag       HistDoc          `json:"lag"`
}

// HistDoc summarises a histogram (µs) and carries it encoded.
type HistDoc struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_us"`
	P50   int64   `json:"p50_us"`
	P90   int64   `json:"p90_us"`
	P95   int64   `json:"p95_us"`
	P99   int64   `json:"p99_us"`
	P999  int64   `json:"p99_9_us"`
	Max   int64   `json:"max_us"`
	// HdrHistogram V2 compressed, base64.
	Encoded string `json:"hdr"`
}

// IntervalDoc is one progress interval: wall-clock start and end, and what
// ended in it. Counts of zero and empty histograms are left out.
type IntervalDoc struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Warmup: the interval ended during the warm-up; its operations are
	// counted as warm-up only, except those that ended after the warm-up
	// did.
	Warmup     bool            `json:"warmup,omitempty"`
	Reconnects int64           `json:"reconnects,omitempty"`
	Ops        []IntervalOpDoc `json:"operations"`
}

// IntervalOpDoc is one operation in one interval. The histograms are
// HdrHistogram V2 compressed, base64, µs ("" when empty).
type IntervalOpDoc struct {
	Name      string           `json:"name"`
	OK        int64            `json:"ok,omitempty"`
	Failed    map[string]int64 `json:"failed,omitempty"`
	Errors    map[string]int64 `json:"errors,omitempty"`
	Retried   int64            `json:"retried,omitempty"`
	Retries   int64            `json:"retries,omitempty"`
	Warmup    int64            `json:"warmup,omitempty"`
	WarmupOK  int64            `json:"warmup_ok,omitempty"`
	Skipped   int64            `json:"skipped,omitempty"`
	Late      int64            `json:"late,omitempty"`
	Abandoned int64            `json:"abandoned,omitempty"`
	Response  string           `json:"response,omitempty"`
	Service   string           `json:"service,omitempty"`
	Lag       string           `json:"lag,omitempty"`
}

// HistogramDoc summarises and encodes one histogram.
func HistogramDoc(h *hdr.Histogram) (HistDoc, error) { return histDoc(h) }

// NewRunDoc fills a RunDoc from a snapshot.
func NewRunDoc(s *metrics.Snapshot) (RunDoc, error) {
	d := RunDoc{ElapsedSec: s.Elapsed.Seconds(), Reconnects: s.Reconnects}
	for _, o := range s.Ops {
		od := OpDoc{
			Name: o.Name, OK: o.OK, OpsPerSec: rate(o.OK, s.Elapsed),
			Failed: classMap(o.Failed), Errors: classMap(o.Errors),
			Retried: o.Retried, Retries: o.Retries, Warmup: o.Warmup, WarmupOK: o.WarmupOK, Skipped: o.Skipped, Late: o.Late,
			Abandoned: o.Abandoned,
		}
		if d.Histograms == nil {
			hs := settingsOf(o.Response)
			d.Histograms = &hs
		}
		var err error
		for _, p := range []struct {
			to *HistDoc
			h  *hdr.Histogram
		}{{&od.Response, o.Response}, {&od.Service, o.Service}, {&od.Lag, o.Lag}} {
			if *p.to, err = histDoc(p.h); err != nil {
				return d, fmt.Errorf("encoding %s: %w", o.Name, err)
			}
		}
		d.Ops = append(d.Ops, od)
	}
	if w := s.Total("all"); w.Warmup > 0 {
		d.Warmup = &WarmupDoc{Operations: w.Warmup, Committed: w.WarmupOK, Failed: w.Warmup - w.WarmupOK}
	}
	return d, nil
}

func histDoc(h *hdr.Histogram) (HistDoc, error) {
	enc, err := metrics.Encode(h)
	if err != nil {
		return HistDoc{}, err
	}
	return HistDoc{
		Count: h.TotalCount(), Mean: h.Mean(),
		P50: h.ValueAtQuantile(50), P90: h.ValueAtQuantile(90), P95: h.ValueAtQuantile(95),
		P99: h.ValueAtQuantile(99), P999: h.ValueAtQuantile(99.9), Max: h.Max(),
		Encoded: enc,
	}, nil
}

func classMap(counts [metrics.NumClasses]int64) map[string]int64 {
	m := make(map[string]int64, metrics.NumClasses)
	for _, c := range metrics.Classes() {
		m[c.String()] = counts[c]
	}
	return m
}

// nonZero is classMap without the zero counts (nil if all are zero).
func nonZero(counts [metrics.NumClasses]int64) map[string]int64 {
	var m map[string]int64
	for _, c := range metrics.Classes() {
		if counts[c] != 0 {
			if m == nil {
				m = map[string]int64{}
			}
			m[c.String()] = counts[c]
		}
	}
	return m
}

// NewIntervalDoc encodes one interval snapshot that ended at end. The
// snapshot is not kept: the engine reuses it for the next interval.
func NewIntervalDoc(iv *metrics.Snapshot, end time.Time, warmup bool) (IntervalDoc, error) {
	return newIntervalDoc(iv, end, warmup, metrics.Encode)
}

// newIntervalDoc is NewIntervalDoc with the histograms encoded by encode.
func newIntervalDoc(iv *metrics.Snapshot, end time.Time, warmup bool, encode func(*hdr.Histogram) (string, error)) (IntervalDoc, error) {
	d := IntervalDoc{Start: end.Add(-iv.Elapsed), End: end, Warmup: warmup, Reconnects: iv.Reconnects,
		Ops: make([]IntervalOpDoc, len(iv.Ops))}
	for i, o := range iv.Ops {
		od := IntervalOpDoc{
			Name: o.Name, OK: o.OK, Failed: nonZero(o.Failed), Errors: nonZero(o.Errors),
			Retried: o.Retried, Retries: o.Retries, Warmup: o.Warmup, WarmupOK: o.WarmupOK,
			Skipped: o.Skipped, Late: o.Late, Abandoned: o.Abandoned,
		}
		for _, p := range []struct {
			to *string
			h  *hdr.Histogram
		}{{&od.Response, o.Response}, {&od.Service, o.Service}, {&od.Lag, o.Lag}} {
			if p.h.TotalCount() == 0 {
				continue
			}
			enc, err := encode(p.h)
			if err != nil {
				return d, fmt.Errorf("encoding %s's interval: %w", o.Name, err)
			}
			*p.to = enc
		}
		d.Ops[i] = od
	}
	return d, nil
}

// RunIDs are the runs a document holds: its own, or those it was merged
// from.
func (d *Document) RunIDs() []string {
	if len(d.MergedRunIDs) > 0 {
		return d.MergedRunIDs
	}
	if d.RunID != "" {
		return []string{d.RunID}
	}
	return nil
}

// NewRunID returns a new run id.
func NewRunID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Interval is one decoded progress interval.
type Interval struct {
	Start, End time.Time
	Warmup     bool
	// Snapshot holds what ended in the interval; Elapsed is End − Start.
	Snapshot *metrics.Snapshot
}

// Names lists the run's operations, in order.
func (r *RunDoc) Names() []string {
	names := make([]string, len(r.Ops))
	for i, o := range r.Ops {
		names[i] = o.Name
	}
	return names
}

// Total decodes the run's totals: a snapshot of the measured period with
// its histograms, as the run ended with it (their geometry as written).
func (r *RunDoc) Total() (*metrics.Snapshot, error) {
	s := &metrics.Snapshot{Ops: make([]*metrics.OpStats, len(r.Ops)), Reconnects: r.Reconnects,
		Elapsed: time.Duration(r.ElapsedSec * float64(time.Second))}
	for i, od := range r.Ops {
		o, err := opCounts(metrics.OpStats{Name: od.Name, OK: od.OK, Retried: od.Retried, Retries: od.Retries, Warmup: od.Warmup,
			WarmupOK: od.WarmupOK, Skipped: od.Skipped, Late: od.Late, Abandoned: od.Abandoned}, od.Failed, od.Errors)
		if err != nil {
			return nil, fmt.Errorf("%s %w", od.Name, err)
		}
		for _, p := range [...]struct {
			kind, enc string
			to        **hdr.Histogram
		}{{"response", od.Response.Encoded, &o.Response}, {"service", od.Service.Encoded, &o.Service}, {"lag", od.Lag.Encoded, &o.Lag}} {
			if p.enc == "" {
				*p.to = metrics.NewHistogram() // an older document, or a histogram left out: empty
				continue
			}
			if *p.to, err = metrics.Decode(p.enc); err != nil {
				return nil, fmt.Errorf("%s %s: %w", od.Name, p.kind, err)
			}
		}
		s.Ops[i] = o
	}
	return s, nil
}

// PointSource is the figure's points: Spooled, or Points.
func (s *SeriesDoc) PointSource() Source[SeriesPoint] {
	if s.Spooled != nil {
		return s.Spooled
	}
	return Slice[SeriesPoint](s.Points)
}

// EachPoint calls f with each point and its index, in order, one at a
// time: p is f's until it returns. It stops at f's first error.
func (s *SeriesDoc) EachPoint(f func(n int, p *SeriesPoint) error) error {
	return each(s.PointSource(), f)
}

// IntervalCount is the number of the run's intervals.
func (r *RunDoc) IntervalCount() int { return r.IntervalSource().Len() }

// IntervalSource is the run's intervals: Spooled, or Intervals.
func (r *RunDoc) IntervalSource() Source[IntervalDoc] {
	if r.Spooled != nil {
		return r.Spooled
	}
	return Slice[IntervalDoc](r.Intervals)
}

// EachInterval calls f with each of the run's intervals and its index, in
// order, one at a time: iv is f's until it returns. It stops at f's first
// error.
func (r *RunDoc) EachInterval(f func(n int, iv *IntervalDoc) error) error {
	return each(r.IntervalSource(), f)
}

// DecodeInterval decodes one of the run's intervals.
func (r *RunDoc) DecodeInterval(iv *IntervalDoc) (Interval, error) {
	s := metrics.NewSnapshot(r.Names())
	s.Elapsed = iv.End.Sub(iv.Start)
	if err := r.addInterval(iv, s); err != nil {
		return Interval{}, fmt.Errorf("interval%w", err)
	}
	return Interval{Start: iv.Start, End: iv.End, Warmup: iv.Warmup, Snapshot: s}, nil
}

// IntervalAdder adds up a run's intervals: their counts into a snapshot at
// once, their histograms bucket by bucket into sums of its own
// (metrics.Sum) that Flush adds to the snapshot's, a window at a time. A
// day of intervals is added up without a histogram built, or reset, per
// interval, and with next to no allocation.
type IntervalAdder struct {
	run  *RunDoc
	sums [][3]*metrics.Sum // by operation: response, service, lag
}

// Adder returns an adder of the run's intervals.
func (r *RunDoc) Adder() *IntervalAdder {
	a := &IntervalAdder{run: r, sums: make([][3]*metrics.Sum, len(r.Ops))}
	for i := range a.sums {
		a.sums[i] = [3]*metrics.Sum{metrics.NewSum(), metrics.NewSum(), metrics.NewSum()}
	}
	return a
}

// Add adds the run's interval n, iv: its counts to s, a snapshot of the
// run's operations, and its histograms to the adder's, until Flush.
func (a *IntervalAdder) Add(n int, iv *IntervalDoc, s *metrics.Snapshot) error {
	if err := a.add(iv, s); err != nil {
		return &InputError{Err: fmt.Errorf("intervals[%d]%w", n, err)}
	}
	return nil
}

// add's errors begin with a space or a colon, to follow what names the
// interval.
func (a *IntervalAdder) add(iv *IntervalDoc, s *metrics.Snapshot) error {
	r := a.run
	if len(iv.Ops) != len(r.Ops) || len(s.Ops) != len(r.Ops) {
		return fmt.Errorf(" has %d operations, the run %d", len(iv.Ops), len(r.Ops))
	}
	for i := range iv.Ops {
		od := &iv.Ops[i]
		if err := addCounts(od, r.Ops[i].Name, s.Ops[i]); err != nil {
			return err
		}
		for k, enc := range [3]string{od.Response, od.Service, od.Lag} {
			if enc == "" {
				continue
			}
			if err := a.sums[i][k].Add(enc); err != nil {
				return fmt.Errorf(" %s %s: %w", od.Name, histKinds[k], err)
			}
		}
	}
	s.Reconnects += iv.Reconnects
	return nil
}

// histKinds name an operation's histograms, in the order of IntervalAdder's
// sums.
var histKinds = [3]string{"response", "service", "lag"}

// Flush adds the histograms of the intervals added since the last Flush
// to s's.
func (a *IntervalAdder) Flush(s *metrics.Snapshot) error {
	for i, sums := range a.sums {
		o := s.Ops[i]
		for k, h := range [3]*hdr.Histogram{o.Response, o.Service, o.Lag} {
			if err := sums[k].AddTo(h); err != nil {
				return &InputError{Err: fmt.Errorf("%s %s: %w", o.Name, histKinds[k], err)}
			}
			sums[k].Reset()
		}
	}
	return nil
}

// All decodes everything the run counted: its window's figures and its
// drain's (what a server's own count is compared with).
func (r *RunDoc) All() (*metrics.Snapshot, error) {
	total, err := r.Total()
	if err != nil {
		return nil, err
	}
	drain, err := r.DrainSnapshot()
	if err != nil || drain == nil {
		return total, err
	}
	all, err := total.Plus(drain)
	if err != nil {
		return nil, err
	}
	all.Elapsed += drain.Elapsed
	return all, nil
}

// DrainSnapshot decodes the run's drain (nil if it has none).
func (r *RunDoc) DrainSnapshot() (*metrics.Snapshot, error) {
	if r.Drain == nil {
		return nil, nil
	}
	s := metrics.NewSnapshot(r.Names())
	s.Elapsed = r.Drain.End.Sub(r.Drain.Start)
	if err := r.addInterval(r.Drain, s); err != nil {
		return nil, fmt.Errorf("drain%w", err)
	}
	return s, nil
}

// addCounts adds the counts of od, an interval's operation name of the
// run, to o; its errors begin with a space or a colon, to follow what names
// the interval.
func addCounts(od *IntervalOpDoc, name string, o *metrics.OpStats) error {
	if od.Name != name || o.Name != od.Name {
		return fmt.Errorf(": operation %q where the run has %q", od.Name, name)
	}
	c, err := opCounts(metrics.OpStats{Name: od.Name, OK: od.OK, Retried: od.Retried, Retries: od.Retries, Warmup: od.Warmup,
		WarmupOK: od.WarmupOK, Skipped: od.Skipped, Late: od.Late, Abandoned: od.Abandoned}, od.Failed, od.Errors)
	if err != nil {
		return fmt.Errorf(" %s %w", od.Name, err)
	}
	return o.Merge(c) // its counts: c has no histograms
}

// addInterval adds iv to s; its errors begin with a space or a colon, to
// follow what names the interval.
func (r *RunDoc) addInterval(iv *IntervalDoc, s *metrics.Snapshot) error {
	if len(iv.Ops) != len(r.Ops) || len(s.Ops) != len(r.Ops) {
		return fmt.Errorf(" has %d operations, the run %d", len(iv.Ops), len(r.Ops))
	}
	for i := range iv.Ops {
		od := &iv.Ops[i]
		o := s.Ops[i]
		if err := addCounts(od, r.Ops[i].Name, o); err != nil {
			return err
		}
		for _, p := range [...]struct {
			kind, enc string
			to        *hdr.Histogram
		}{{"response", od.Response, o.Response}, {"service", od.Service, o.Service}, {"lag", od.Lag, o.Lag}} {
			if p.enc == "" {
				continue
			}
			if err := metrics.MergeEncoded(p.to, p.enc); err != nil {
				return fmt.Errorf(" %s %s: %w", od.Name, p.kind, err)
			}
		}
	}
	s.Reconnects += iv.Reconnects
	return nil
}

// opCounts completes o's counts with the failures by class a document
// holds by name.
func opCounts(o metrics.OpStats, failed, errors map[string]int64) (*metrics.OpStats, error) {
	var err error
	if o.Failed, err = classCounts(failed); err != nil {
		return nil, fmt.Errorf("failed: %w", err)
	}
	if o.Errors, err = classCounts(errors); err != nil {
		return nil, fmt.Errorf("errors: %w", err)
	}
	return &o, nil
}

// classCounts reverses classMap.
func classCounts(m map[string]int64) ([metrics.NumClasses]int64, error) {
	var out [metrics.NumClasses]int64
	for name, n := range m {
		c, ok := classByName(name)
		if !ok {
			return out, fmt.Errorf("unknown failure class %q", name)
		}
		out[c] = n
	}
	return out, nil
}

func classByName(name string) (metrics.Class, bool) {
	for _, c := range metrics.Classes() {
		if c.String() == name {
			return c, true
		}
	}
	return 0, false
}
