package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/txload/txload/metrics"
)

// MergeError says why documents cannot be merged: they are not results of
// one run (different workloads, commands, variants or operations) or their
// histograms differ in geometry. It is the user's input that is wrong.
type MergeError struct{ Msg string }

func (e *MergeError) Error() string { return e.Msg }

func mergeErrf(format string, args ...any) error {
	return &MergeError{Msg: fmt.Sprintf(format, args...)}
}

// Merge adds up the documents of several load generators that ran one
// workload at the same time (`--instance i/N`), as if one process had run it
// all: counts are summed and histograms added, so percentiles and maxima are
// exact; the measured period is the longest of theirs; intervals are
// aligned on the wall clock. names are the documents' names, for errors and
// for MergedFrom.
//
// Intervals are put in buckets as long as the typical (median) interval:
// a document's first interval goes to the bucket its start falls in
// (floor(start / length)), each next one to the bucket as many lengths
// after it, so that one load generator's intervals never share a bucket
// whatever the phase of its ticks. A merged interval spans its
// contributors (earliest start to latest end). A run gets merged intervals
// only when every document has them.
//
// The audit (check) of a run is not a sum: the first document that has one
// gives its figures, with every violation any document's audit found
// (instances leave the audit to `txload check`, run once after all of
// them). A command's own figures (failover's section and tables, with
// their verdict) are each document's, kept.
func Merge(docs []*Document, names []string) (*Document, error) {
	if len(docs) == 0 {
		return nil, mergeErrf("merge needs at least one document")
	}
	if len(names) != len(docs) {
		names = make([]string, len(docs))
		for i := range docs {
			names[i] = "document " + strconv.Itoa(i+1)
		}
	}
	seen := map[string]string{}
	var ids []string
	for i, d := range docs {
		for _, id := range d.RunIDs() {
			if prev, ok := seen[id]; ok {
				return nil, mergeErrf("merge: %s and %s hold the same run (run id %s): each run must be merged once", prev, names[i], id)
			}
			seen[id] = names[i]
			ids = append(ids, id)
		}
	}
	first := docs[0]
	for i, d := range docs[1:] {
		n := names[i+1]
		switch {
		case d.Workload != first.Workload:
			return nil, mergeErrf("merge: %s is a run of %s, %s of %s: only documents of one workload merge", names[0], first.Workload, n, d.Workload)
		case d.Command != first.Command:
			return nil, mergeErrf("merge: %s comes from txload %s, %s from txload %s: only documents of one command merge", names[0], first.Command, n, d.Command)
		case len(d.Runs) != len(first.Runs):
			return nil, mergeErrf("merge: %s has %d runs, %s %d: only documents of the same variants merge", names[0], len(first.Runs), n, len(d.Runs))
		}
		for r := range d.Runs {
			a, b := first.Runs[r], d.Runs[r]
			if !maps.Equal(a.Labels, b.Labels) {
				return nil, mergeErrf("merge: run %d is %s in %s but %s in %s: only documents of the same variants merge", r+1, labelText(a.Labels), names[0], labelText(b.Labels), n)
			}
			if !slices.Equal(a.Names(), b.Names()) {
				return nil, mergeErrf("merge: %s has operations %v, %s %v: only documents of the same operations merge", names[0], a.Names(), n, b.Names())
			}
		}
	}
	out := &Document{Version: first.Version, Command: first.Command, Workload: first.Workload,
		Config: mergedConfig(docs), Server: first.Server, MergedFrom: append([]string(nil), names...), MergedRunIDs: ids}
	var geometry *HistSettings
	var geometryOf string
	for r := range first.Runs {
		rd, err := mergeRun(docs, names, r, &geometry, &geometryOf)
		if err != nil {
			return nil, err
		}
		out.Runs = append(out.Runs, rd)
	}
	// A command's own figures are not sums: each document's stand, its
	// verdict (a failover's lost commits) with them.
	var sections []json.RawMessage
	for i, d := range docs {
		out.Tables = append(out.Tables, d.Tables...)
		if d.Interrupted && !out.Interrupted {
			out.Interrupted, out.InterruptedBy = true, d.InterruptedBy
		}
		if len(d.Failover) == 0 {
			continue
		}
		var each []json.RawMessage
		if err := json.Unmarshal(d.Failover, &each); err != nil {
			return nil, fmt.Errorf("merge: %s: its failover section: %w", names[i], err)
		}
		sections = append(sections, each...)
	}
	if len(sections) > 0 {
		b, err := json.Marshal(sections)
		if err != nil {
			return nil, err
		}
		out.Failover = b
	}
	return out, nil
}

func labelText(l map[string]string) string {
	if len(l) == 0 {
		return "unlabelled"
	}
	keys := slices.Sorted(maps.Keys(l))
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += " "
		}
		s += k + "=" + l[k]
	}
	return s
}

// mergedConfig is the first document's configuration, without what only
// held for one load generator; a merge of independent runs (not
// --instance shares of one) adds up their clients.
func mergedConfig(docs []*Document) map[string]any {
	cfg := maps.Clone(docs[0].Config)
	if cfg == nil {
		cfg = map[string]any{}
	}
	// Every flag is in a run's configuration, given or not: a share of one
	// run has --instance or --instances set.
	shared := false
	if v, ok := cfg[KeyInstance]; ok && v != nil && fmt.Sprint(v) != "" {
		shared = true
	}
	if v, ok := cfg[KeyInstances]; ok && v != nil && fmt.Sprint(v) != "0" && fmt.Sprint(v) != "" {
		shared = true
	}
	// Each process has threads of its own; the clients of independent
	// runs add up, those of shares were recorded as the whole run's.
	sum(cfg, docs, KeyThreads)
	if !shared {
		sum(cfg, docs, KeyConcurrency)
	}
	for _, k := range []string{KeyInstance, KeyInstances, "json", "histogram", "cpuprofile", "metrics-addr", "live", "html"} {
		delete(cfg, k)
	}
	return cfg
}

// sum sets key in cfg to the sum of the documents' values, if every one
// has a number there.
func sum(cfg map[string]any, docs []*Document, key string) {
	total := 0
	for _, d := range docs {
		n, err := strconv.Atoi(d.ConfigString(key))
		if err != nil {
			return
		}
		total += n
	}
	if old, ok := olderKeys[key]; ok { // the sum stands under today's key
		delete(cfg, old.key)
	}
	cfg[key] = strconv.Itoa(total)
}

// checkGeometry makes sure every histogram of s has the geometry of the
// first one seen.
func checkGeometry(s *metrics.Snapshot, name string, geometry **HistSettings, geometryOf *string) error {
	for _, o := range s.Ops {
		for _, h := range []*HistSettings{ptr(settingsOf(o.Response)), ptr(settingsOf(o.Service)), ptr(settingsOf(o.Lag))} {
			if *geometry == nil {
				*geometry, *geometryOf = h, name
				continue
			}
			if *h != **geometry {
				return mergeErrf("merge: the histograms of %s are %s, those of %s %s: histograms of different settings do not merge exactly", *geometryOf, *geometry, name, h)
			}
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func mergeRun(docs []*Document, names []string, r int, geometry **HistSettings, geometryOf *string) (RunDoc, error) {
	base := docs[0].Runs[r]
	var total, drain *metrics.Snapshot
	var emitSum *metrics.Snapshot // emission lag, carried as a one-op snapshot's response histogram
	out := RunDoc{Labels: maps.Clone(base.Labels)}
	haveIntervals := true
	// longest is the longest run, its drain included: the merged run's
	// length (under pgbench's clock windows and drains differ from run to
	// run, and the longest window need not end the longest run).
	var longest time.Duration
	for i, d := range docs {
		run := d.Runs[r]
		if run.Histograms != nil && *geometry != nil && *run.Histograms != **geometry {
			return out, mergeErrf("merge: the histograms of %s are %s, those of %s %s: histograms of different settings do not merge exactly", *geometryOf, *geometry, names[i], run.Histograms)
		}
		s, err := run.Total()
		if err != nil {
			return out, fmt.Errorf("merge: %s: %w", names[i], err)
		}
		if err := checkGeometry(s, names[i], geometry, geometryOf); err != nil {
			return out, err
		}
		if total == nil {
			total = s
		} else {
			if err := total.Merge(s); err != nil {
				return out, fmt.Errorf("merge: %s: %w", names[i], err)
			}
			total.Elapsed = max(total.Elapsed, s.Elapsed)
		}
		runLength := s.Elapsed
		if d, err := run.DrainSnapshot(); err != nil {
			return out, fmt.Errorf("merge: %s: %w", names[i], err)
		} else if d != nil {
			runLength += d.Elapsed
			if err := checkGeometry(d, names[i], geometry, geometryOf); err != nil {
				return out, err
			}
			if drain == nil {
				drain = d
			} else {
				if err := drain.Merge(d); err != nil {
					return out, fmt.Errorf("merge: %s: %w", names[i], err)
				}
				drain.Elapsed = max(drain.Elapsed, d.Elapsed)
			}
			if out.Drain == nil || run.Drain.End.After(out.Drain.End) {
				out.Drain = run.Drain
			}
		}
		longest = max(longest, runLength)
		out.ConnectSec = max(out.ConnectSec, run.ConnectSec)
		out.Connections += run.Connections
		out.ConnectionSec += run.ConnectionSec
		out.Offered += run.Offered
		out.Unstarted += run.Unstarted
		out.Saturated = out.Saturated || run.Saturated
		if out.RunFailed == "" {
			out.RunFailed = run.RunFailed
		}
		out.Interrupted = out.Interrupted || run.Interrupted
		if out.InterruptedBy == "" {
			out.InterruptedBy = run.InterruptedBy
		}
		out.Check = mergeCheck(out.Check, run.Check)
		for _, n := range run.AbortedNotes() {
			if !slices.Contains(out.Notes, n) {
				out.Notes = append(out.Notes, n)
			}
		}
		if run.EmissionLag != nil && run.EmissionLag.Encoded != "" {
			h, err := metrics.Decode(run.EmissionLag.Encoded)
			if err != nil {
				return out, fmt.Errorf("merge: %s emission lag: %w", names[i], err)
			}
			if emitSum == nil {
				emitSum = metrics.NewSnapshot([]string{"emit"})
			}
			one := metrics.NewSnapshot([]string{"emit"})
			one.Ops[0].Response = h
			if err := checkGeometry(one, names[i], geometry, geometryOf); err != nil {
				return out, err
			}
			if err := emitSum.Merge(one); err != nil {
				return out, fmt.Errorf("merge: %s emission lag: %w", names[i], err)
			}
		}
		if run.IntervalCount() == 0 {
			haveIntervals = false
		}
	}
	rd, err := NewRunDoc(total)
	if err != nil {
		return out, err
	}
	rd.Labels, rd.Offered, rd.Unstarted, rd.Saturated, rd.Interrupted, rd.InterruptedBy, rd.Check, rd.ConnectSec =
		out.Labels, out.Offered, out.Unstarted, out.Saturated, out.Interrupted, out.InterruptedBy, out.Check, out.ConnectSec
	rd.Connections, rd.ConnectionSec, rd.Notes, rd.RunFailed = out.Connections, out.ConnectionSec, out.Notes, out.RunFailed
	if drain != nil {
		// The latest drain's end; its length what the longest run had
		// beyond the longest window.
		drain.Elapsed = max(longest-total.Elapsed, 0)
		end := out.Drain.End
		d, err := NewIntervalDoc(drain, end, false)
		if err != nil {
			return rd, err
		}
		rd.Drain = &d
	}
	if emitSum != nil {
		hd, err := histDoc(emitSum.Ops[0].Response)
		if err != nil {
			return rd, err
		}
		rd.EmissionLag = &hd
	}
	if haveIntervals {
		rd.Spooled = &mergedIntervals{docs: docs, names: names, run: r, ops: base.Names()}
	}
	return rd, nil
}

// mergedIntervals are the intervals of a merged run, added up the first
// time they are asked for (a merge printed as text needs none), into a
// spool: a day's intervals of several load generators are merged in the
// memory of one interval.
type mergedIntervals struct {
	docs  []*Document
	names []string
	run   int
	ops   []string
	spool *Spool[IntervalDoc]
	err   error
}

// merge adds the intervals up, once.
func (m *mergedIntervals) merge() error {
	if m.spool != nil || m.err != nil {
		return m.err
	}
	sp, err := NewIntervalSpool("")
	if err == nil {
		if err = mergeIntervals(m.docs, m.names, m.run, m.ops, sp.Append); err != nil {
			sp.Close()
		}
	}
	if err != nil {
		m.err = err
		return err
	}
	m.spool = sp
	return nil
}

// Len merges the intervals if they were not yet: 0 if that failed, and
// Open says why.
func (m *mergedIntervals) Len() int {
	if m.merge() != nil {
		return 0
	}
	return m.spool.Len()
}

func (m *mergedIntervals) Open() (Cursor[IntervalDoc], error) {
	if err := m.merge(); err != nil {
		return nil, err
	}
	return m.spool.Open()
}

// Close removes the spool.
func (m *mergedIntervals) Close() error {
	if m.spool == nil {
		return nil
	}
	return m.spool.Close()
}

func (m *mergedIntervals) eachRaw(f func([]byte) error) error {
	if err := m.merge(); err != nil {
		return err
	}
	return m.spool.eachRaw(f)
}

// mergeIntervals adds up the documents' intervals of run r that cover the
// same period, and hands each sum to emit, in order. A first pass reads
// the intervals' times (their typical length, each document's first
// start); a second reads every document's at once, in step, and adds up
// each merged interval's members as they come: one merged interval is in
// memory at a time, its histograms as counts (metrics.Sum), never as
// histograms. ops are the run's operations.
func mergeIntervals(docs []*Document, names []string, r int, ops []string, emit func(*IntervalDoc) error) error {
	var lengths LengthCounts
	t0 := make([]time.Time, len(docs))
	for i, d := range docs {
		err := d.Runs[r].EachInterval(func(n int, iv *IntervalDoc) error {
			if n == 0 {
				t0[i] = iv.Start
			}
			lengths.Add(iv.End.Sub(iv.Start))
			return nil
		})
		if err != nil {
			return fmt.Errorf("merge: %s: %w", names[i], err)
		}
	}
	length := lengths.Typical()
	type member struct {
		c   Cursor[IntervalDoc]
		iv  *IntervalDoc
		n   int
		b0  int64
		key int64
	}
	ms := make([]*member, len(docs))
	defer func() {
		for _, m := range ms {
			if m != nil {
				m.c.Close()
			}
		}
	}()
	// next reads member i's next interval and its bucket; iv is nil at
	// the end.
	next := func(i int) error {
		m := ms[i]
		iv, err := m.c.Next()
		if err == io.EOF {
			m.iv = nil
			return nil
		}
		if err != nil {
			return fmt.Errorf("merge: %s: %w", names[i], err)
		}
		prev := m.key
		m.iv, m.n = iv, m.n+1
		m.key = m.b0 + roundDiv(iv.Start.Sub(t0[i]), length)
		if m.n > 1 && m.key < prev {
			return inputErrorf("merge: %s: runs[%d].intervals[%d] starts before the interval before it", names[i], r, m.n-1)
		}
		return nil
	}
	for i, d := range docs {
		c, err := d.Runs[r].IntervalSource().Open()
		if err != nil {
			return fmt.Errorf("merge: %s: %w", names[i], err)
		}
		ms[i] = &member{c: c, b0: floorDiv(t0[i].UnixNano(), int64(length))}
		if err := next(i); err != nil {
			return err
		}
	}
	sum := newIntervalSum(ops)
	for {
		var k int64
		found := false
		for _, m := range ms {
			if m.iv != nil && (!found || m.key < k) {
				k, found = m.key, true
			}
		}
		if !found {
			return nil
		}
		sum.reset()
		for i, m := range ms {
			for m.iv != nil && m.key == k {
				if err := sum.add(m.iv); err != nil {
					return &InputError{Err: fmt.Errorf("merge: %s: runs[%d].intervals[%d]%w", names[i], r, m.n-1, err)}
				}
				if err := next(i); err != nil {
					return err
				}
			}
		}
		d, err := sum.doc()
		if err != nil {
			return err
		}
		if err := emit(&d); err != nil {
			return err
		}
	}
}

// intervalSum adds up intervals of one run: a merged interval spans its
// members (earliest start to latest end), is the warm-up's if all of them
// are, and holds what they hold.
type intervalSum struct {
	ops        []opSum
	start, end time.Time
	warmup     bool
	reconnects int64
	members    int
}

type opSum struct {
	name                                            string
	ok, retried, retries, warmup, warmupOK, skipped int64
	late, abandoned                                 int64
	failed, errors                                  [metrics.NumClasses]int64
	response, service, lag                          *metrics.Sum
}

func newIntervalSum(ops []string) *intervalSum {
	s := &intervalSum{ops: make([]opSum, len(ops))}
	for i, name := range ops {
		s.ops[i] = opSum{name: name, response: metrics.NewSum(), service: metrics.NewSum(), lag: metrics.NewSum()}
	}
	return s
}

func (s *intervalSum) reset() {
	for i := range s.ops {
		o := &s.ops[i]
		*o = opSum{name: o.name, response: o.response, service: o.service, lag: o.lag}
		o.response.Reset()
		o.service.Reset()
		o.lag.Reset()
	}
	s.start, s.end, s.warmup, s.reconnects, s.members = time.Time{}, time.Time{}, true, 0, 0
}

// add adds iv; its errors begin with a space or a colon, to follow what
// names the interval.
func (s *intervalSum) add(iv *IntervalDoc) error {
	if len(iv.Ops) != len(s.ops) {
		return fmt.Errorf(" has %d operations, the run %d", len(iv.Ops), len(s.ops))
	}
	for i := range iv.Ops {
		od, o := &iv.Ops[i], &s.ops[i]
		if od.Name != o.name {
			return fmt.Errorf(": operation %q where the run has %q", od.Name, o.name)
		}
		o.ok += od.OK
		o.retried += od.Retried
		o.retries += od.Retries
		o.warmup += od.Warmup
		o.warmupOK += od.WarmupOK
		o.skipped += od.Skipped
		o.late += od.Late
		o.abandoned += od.Abandoned
		for _, c := range []struct {
			m    map[string]int64
			into *[metrics.NumClasses]int64
			kind string
		}{{od.Failed, &o.failed, "failed"}, {od.Errors, &o.errors, "errors"}} {
			for name, n := range c.m {
				class, ok := classByName(name)
				if !ok {
					return fmt.Errorf(" %s %s: unknown failure class %q", od.Name, c.kind, name)
				}
				c.into[class] += n
			}
		}
		for _, h := range []struct {
			kind, enc string
			into      *metrics.Sum
		}{{"response", od.Response, o.response}, {"service", od.Service, o.service}, {"lag", od.Lag, o.lag}} {
			if h.enc == "" {
				continue
			}
			if err := h.into.Add(h.enc); err != nil {
				return fmt.Errorf(" %s %s: %w", od.Name, h.kind, err)
			}
		}
	}
	if s.members == 0 || iv.Start.Before(s.start) {
		s.start = iv.Start
	}
	if iv.End.After(s.end) {
		s.end = iv.End
	}
	s.warmup = s.warmup && iv.Warmup
	s.reconnects += iv.Reconnects
	s.members++
	return nil
}

// doc is the sum as an interval of the document.
func (s *intervalSum) doc() (IntervalDoc, error) {
	d := IntervalDoc{Start: s.start, End: s.end, Warmup: s.warmup, Reconnects: s.reconnects, Ops: make([]IntervalOpDoc, len(s.ops))}
	for i := range s.ops {
		o := &s.ops[i]
		od := IntervalOpDoc{Name: o.name, OK: o.ok, Failed: nonZero(o.failed), Errors: nonZero(o.errors),
			Retried: o.retried, Retries: o.retries, Warmup: o.warmup, WarmupOK: o.warmupOK,
			Skipped: o.skipped, Late: o.late, Abandoned: o.abandoned}
		var err error
		for _, h := range []struct {
			to  *string
			sum *metrics.Sum
		}{{&od.Response, o.response}, {&od.Service, o.service}, {&od.Lag, o.lag}} {
			if *h.to, err = h.sum.Encode(); err != nil {
				return d, fmt.Errorf("encoding %s's merged interval: %w", o.name, err)
			}
		}
		d.Ops[i] = od
	}
	return d, nil
}

// LengthCounts counts intervals by length, to the microsecond: a day of
// intervals of a few lengths in a few entries. The zero value is empty.
type LengthCounts struct {
	n      int
	counts map[time.Duration]int
}

// Add counts an interval of length d.
func (l *LengthCounts) Add(d time.Duration) {
	if l.counts == nil {
		l.counts = map[time.Duration]int{}
	}
	l.counts[d.Round(time.Microsecond)]++
	l.n++
}

// Remove takes back an interval of length d that Add counted.
func (l *LengthCounts) Remove(d time.Duration) {
	k := d.Round(time.Microsecond)
	if l.counts[k] == 0 {
		return
	}
	if l.counts[k]--; l.counts[k] == 0 {
		delete(l.counts, k)
	}
	l.n--
}

// Median is the length at the middle of the intervals in order of length
// (of an even number, the longer of the two in the middle); 0 with none.
func (l *LengthCounts) Median() time.Duration {
	if l.n == 0 {
		return 0
	}
	keys := slices.Sorted(maps.Keys(l.counts))
	seen := 0
	for _, k := range keys {
		seen += l.counts[k]
		if seen > l.n/2 {
			return k
		}
	}
	return keys[len(keys)-1]
}

// Typical is the typical length of intervals, the length of merge's
// buckets: their median, to the millisecond (at least one), so that a late
// tick or the final sliver of a run does not change it; a second with
// none.
func (l *LengthCounts) Typical() time.Duration {
	if l.n == 0 {
		return time.Second
	}
	return max(l.Median().Round(time.Millisecond), time.Millisecond)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func roundDiv(d, unit time.Duration) int64 {
	return int64((d + unit/2) / unit)
}

// Unrelated says why documents given to Merge do not look like load
// generators that ran together against one database, one line each: two
// that each started an embedded server of their own, or one whose
// intervals end before another's begin. Merge adds them up all the same
// (they are of one workload and configuration); the caller warns.
func Unrelated(docs []*Document, names []string) ([]string, error) {
	var out []string
	var embedded []string
	type span struct{ from, to time.Time }
	spans := make([]span, len(docs))
	for i, d := range docs {
		if m, ok := d.Server.(map[string]any); ok && m["embedded"] == true {
			embedded = append(embedded, names[i])
		}
		for r := range d.Runs {
			err := d.Runs[r].EachInterval(func(_ int, iv *IntervalDoc) error {
				if spans[i].from.IsZero() || iv.Start.Before(spans[i].from) {
					spans[i].from = iv.Start
				}
				if iv.End.After(spans[i].to) {
					spans[i].to = iv.End
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", names[i], err)
			}
		}
	}
	if len(embedded) > 1 {
		out = append(out, fmt.Sprintf("%s each ran on an embedded server of its own: they did not load one database", strings.Join(embedded, ", ")))
	}
	const at = "15:04:05"
	for i := 1; i < len(docs); i++ {
		a, b := spans[0], spans[i]
		if a.from.IsZero() || b.from.IsZero() || (b.from.Before(a.to) && a.from.Before(b.to)) {
			continue
		}
		out = append(out, fmt.Sprintf("%s ran %s–%s UTC and %s %s–%s UTC: they did not run at the same time", names[0],
			a.from.UTC().Format(at), a.to.UTC().Format(at), names[i], b.from.UTC().Format(at), b.to.UTC().Format(at)))
	}
	return out, nil
}

// mergeCheck is the merged run's audit: the figures of the first document
// that has an audit that finished (each load generator audited the one
// database, at its own end), the violations any of them found, each once,
// and the error of any audit that did not finish: a later document's
// failed audit is not dropped.
func mergeCheck(into, c *CheckDoc) *CheckDoc {
	switch {
	case c == nil:
		return into
	case into == nil:
		return &CheckDoc{Values: c.Values, Violations: slices.Clone(c.Violations), Figures: c.Figures, Error: c.Error}
	}
	if len(into.Values) == 0 && c.Error == "" {
		into.Values, into.Figures = c.Values, c.Figures
	}
	for _, v := range c.Violations {
		if !slices.Contains(into.Violations, v) {
			into.Violations = append(into.Violations, v)
		}
	}
	switch {
	case c.Error == "" || strings.Contains(into.Error, c.Error):
	case into.Error == "":
		into.Error = c.Error
	default:
		into.Error += "; " + c.Error
	}
	return into
}

// VersionsDiffer says which documents were written by another version
// of txload than the first, one line ("" when all were written by one):
// merge adds them up all the same (they passed its checks); the caller
// warns, as a version's figures may not be measured as another's.
func VersionsDiffer(docs []*Document, names []string) string {
	var other []string
	for i, d := range docs[1:] {
		if d.Version != docs[0].Version {
			other = append(other, fmt.Sprintf("%s by txload %s", names[i+1], cmp.Or(d.Version, "(none)")))
		}
	}
	if len(other) == 0 {
		return ""
	}
	return fmt.Sprintf("%s was written by txload %s, %s", names[0], cmp.Or(docs[0].Version, "(none)"), strings.Join(other, ", "))
}
