package runner

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
	"github.com/txload/txload/report/htmlreport"
	"github.com/txload/txload/report/live"
	"github.com/txload/txload/workload"
)

// Live feeds the live page (--live, and the --metrics-addr server's /):
// the document of the command's runs so far, which the page draws when a
// browser asks, with the code that draws --html. The runs add to it as
// they go: each progress interval (its spool is the one --json reads,
// under Live's lock while the run appends to it), each run as it ends; a
// command adds its own figures so far (Extend) and publishes its final
// document (Finish). Every method may be called on a nil *Live: no page.
type Live struct {
	page *live.Page

	mu     sync.Mutex
	base   report.Document // the command's, without runs
	names  []string        // the document's name on the page, as --html's
	done   []report.RunDoc // the runs that ended
	cur    *liveRun        // the run under way
	extend func(*report.Document)
	runs   int // runs begun
}

// liveRun is the run under way.
type liveRun struct {
	labels    map[string]string
	name      string // its labels, for the status line
	intervals *liveSpool
	total     *metrics.Snapshot // its measured intervals added up
	window    time.Duration
	figures   *figureLog
}

// newLive makes the live feed of a command's runs of workloadName.
func newLive(opts Options, workloadName string) *Live {
	l := &Live{base: report.Document{Version: opts.Version, Command: opts.Command, Workload: workloadName}, names: []string{workloadName}}
	l.page = live.New(htmlreport.Options{Version: opts.Version}, l.source)
	return l
}

// Extend has f add the command's own figures so far to the live
// document (lag's replication lag, failover's timeline): f is called from
// the page's server while the run goes, and must be safe for that.
func (l *Live) Extend(f func(*report.Document)) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.extend = f
	l.mu.Unlock()
}

// Finish publishes the command's final document, the one --html draws:
// the page every browser gets from now on.
func (l *Live) Finish(doc *report.Document) {
	if l == nil {
		return
	}
	l.mu.Lock()
	names := l.names
	l.mu.Unlock()
	_ = l.page.Finish([]*report.Document{doc}, names) // the page says why it could not
}

// stop ends the page (marked final as it is, if the command published
// nothing) and gives the browsers watching it time to fetch its last
// state.
func (l *Live) stop() {
	if l == nil {
		return
	}
	l.page.End("The run has ended without a final document (see its output): this is its last state.")
	l.page.Wait(2 * time.Second)
}

// locked runs f under the feed's lock: appending to a spool the page
// reads.
func (l *Live) locked(f func()) {
	if l == nil {
		f()
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

// begin starts a run: what the document knows of the command, and the
// run's labels and spool of intervals.
func (l *Live) begin(conn *Conn, load *workload.QueryLoad, opts Options, labels []workload.Line, intervals *report.Intervals) *liveSpool {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.base.Config = documentConfig(conn, Outcome{Load: load, Engine: opts.Engine}, opts, opts.Command != "sweep")
	l.base.Server = conn.Server
	l.runs++
	r := &liveRun{name: LabelString(labels), window: opts.Engine.Window(), figures: opts.figures}
	if len(labels) > 0 {
		r.labels = map[string]string{}
		for _, lb := range labels {
			r.labels[lb.Label] = lb.Value
		}
	}
	if intervals != nil {
		r.intervals = &liveSpool{l: l, s: intervals}
	}
	l.cur = r
	return r.intervals
}

// tick adds an interval of the run under way, and says the page has
// news.
func (l *Live) tick(t engine.Tick) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if r := l.cur; r != nil && !t.Warmup && !t.Drain {
		if r.total == nil {
			names := make([]string, len(t.Interval.Ops))
			for i, o := range t.Interval.Ops {
				names[i] = o.Name
			}
			r.total = metrics.NewSnapshot(names)
		}
		if r.total.Merge(t.Interval) == nil {
			r.total.Elapsed += t.Interval.Elapsed
		}
	}
	l.mu.Unlock()
	l.page.Changed()
}

// end ends the run under way with its outcome, its part of the
// document from now on; nil: the run left nothing (an error, an
// interrupted sweep step).
func (l *Live) end(o *Outcome) {
	if l == nil {
		return
	}
	var rd report.RunDoc
	var err error
	if o != nil && o.Result != nil {
		rd, err = RunDocOf(*o)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if o != nil && o.Result != nil && err == nil {
		if o.live != nil {
			o.live.flush()
			rd.Spooled = o.live
		}
		l.done = append(l.done, rd)
	}
	l.cur = nil
	l.page.Changed()
}

// source is the document of the runs so far, for the page.
func (l *Live) source() ([]*report.Document, []string, string, error) {
	l.mu.Lock()
	d := l.base
	d.Runs = append([]report.RunDoc(nil), l.done...)
	status := "Live: the run is starting; this page follows it."
	r := l.cur
	// A sweep's step under way is not judged before its end: it is told
	// in the status line alone.
	if r != nil && r.total != nil && d.Command != "sweep" {
		rd, err := report.NewRunDoc(r.total)
		if err != nil {
			l.mu.Unlock()
			return nil, nil, "", err
		}
		rd.Labels = maps.Clone(r.labels)
		if r.intervals != nil {
			rd.Spooled = r.intervals
		}
		d.Runs = append(d.Runs, rd)
	}
	if r != nil {
		of := ""
		if r.window > 0 {
			of = " of " + r.window.String()
		}
		what := "the run"
		if l.runs > 1 || r.name != "" {
			what = fmt.Sprintf("run %d", l.runs)
			if r.name != "" {
				what += " (" + r.name + ")"
			}
		}
		elapsed, so := time.Duration(0), ""
		if t := r.total; t != nil && t.Elapsed > 0 {
			elapsed = t.Elapsed
			all := t.Total("all")
			so = fmt.Sprintf(" (%.1f ok operations/s so far", float64(all.OK)/t.Elapsed.Seconds())
			if all.OK > 0 {
				so += ", p99 " + report.Micros(all.Response.ValueAtQuantile(99))
			}
			so += ")"
		}
		status = fmt.Sprintf("Live: %s is under way, %s%s measured%s; this page follows it.", what, elapsed.Round(100*time.Millisecond), of, so)
		if r.figures != nil {
			var labels []workload.Line
			for k, v := range r.labels {
				labels = append(labels, workload.Line{Label: k, Value: v})
			}
			if len(l.done) == 0 {
				labels = nil
			}
			d.Series = append(d.Series, r.figures.series(d.Workload, labels)...)
		}
	} else if len(l.done) > 0 {
		status = "Live: between runs; this page follows them."
	}
	extend, names := l.extend, l.names
	l.mu.Unlock()
	if extend != nil {
		extend(&d)
	}
	return []*report.Document{&d}, names, status, nil
}

// liveSpool is a run's spool of intervals as the page reads it: opened
// under the feed's lock, which the run holds while it appends; closed
// with the outcome, after which the page cannot read it.
type liveSpool struct {
	l      *Live
	s      *report.Intervals
	closed bool
}

var errSpoolClosed = errors.New("the run's intervals are gone")

// Len is the number of intervals.
func (s *liveSpool) Len() int {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	if s.closed {
		return 0
	}
	return s.s.Len()
}

// Open reads the intervals appended so far.
func (s *liveSpool) Open() (report.Cursor[report.IntervalDoc], error) {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	if s.closed {
		return nil, errSpoolClosed
	}
	return s.s.Open()
}

// flush writes out what the spool buffers, under the feed's lock: the
// readers that open it later only read. The caller holds the lock.
func (s *liveSpool) flush() {
	if s.closed {
		return
	}
	if c, err := s.s.Open(); err == nil {
		_ = c.Close()
	}
}

// close closes the spool, once.
func (s *liveSpool) close() {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.s.Close()
	}
}
