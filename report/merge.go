package report

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
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
// gives it (instances leave the audit to `txload check`, run once after all
// of them).
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
	for _, k := range []string{KeyInstance, KeyInstances, "json", "histogram", "cpuprofile", "metrics-addr", "html"} {
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
		out.Interrupted = out.Interrupted || run.Interrupted
		if out.InterruptedBy == "" {
			out.InterruptedBy = run.InterruptedBy
		}
		if out.Check == nil && run.Check != nil {
			out.Check = run.Check
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
		if len(run.Intervals) == 0 {
			haveIntervals = false
		}
	}
	rd, err := NewRunDoc(total)
	if err != nil {
		return out, err
	}
	rd.Labels, rd.Offered, rd.Unstarted, rd.Saturated, rd.Interrupted, rd.InterruptedBy, rd.Check, rd.ConnectSec =
		out.Labels, out.Offered, out.Unstarted, out.Saturated, out.Interrupted, out.InterruptedBy, out.Check, out.ConnectSec
	rd.Connections, rd.ConnectionSec = out.Connections, out.ConnectionSec
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
		if rd.Intervals, err = mergeIntervals(docs, names, r); err != nil {
			return rd, err
		}
	}
	return rd, nil
}

// member is one document's interval (by index) in a merged interval.
type member struct{ doc, n int }

// mergeIntervals adds up the documents' intervals that cover the same
// period. The periods are found from the documents' times alone; each
// merged interval is then added up and encoded in turn, so that one merged
// interval's histograms are in memory at a time. The histograms' geometry
// is the one mergeRun checked on the runs' totals.
func mergeIntervals(docs []*Document, names []string, r int) ([]IntervalDoc, error) {
	var lengths []time.Duration
	for _, d := range docs {
		for _, iv := range d.Runs[r].Intervals {
			lengths = append(lengths, iv.End.Sub(iv.Start))
		}
	}
	length := IntervalLength(lengths)
	buckets := map[int64][]member{}
	for i, d := range docs {
		ivs := d.Runs[r].Intervals
		if len(ivs) == 0 {
			continue
		}
		t0 := ivs[0].Start
		b0 := floorDiv(t0.UnixNano(), int64(length))
		for n, iv := range ivs {
			k := b0 + int64(roundDiv(iv.Start.Sub(t0), length))
			buckets[k] = append(buckets[k], member{i, n})
		}
	}
	keys := slices.Sorted(maps.Keys(buckets))
	out := make([]IntervalDoc, 0, len(keys))
	snap := metrics.NewSnapshot(docs[0].Runs[r].Names())
	for _, k := range keys {
		var start, end time.Time
		warmup := true
		snap.Reset()
		for _, m := range buckets[k] {
			rd := &docs[m.doc].Runs[r]
			if err := rd.AddInterval(m.n, snap); err != nil {
				return nil, fmt.Errorf("merge: %s: %w", names[m.doc], err)
			}
			iv := rd.Intervals[m.n]
			if start.IsZero() || iv.Start.Before(start) {
				start = iv.Start
			}
			if iv.End.After(end) {
				end = iv.End
			}
			warmup = warmup && iv.Warmup
		}
		snap.Elapsed = end.Sub(start)
		d, err := NewIntervalDoc(snap, end, warmup)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// IntervalLength is the typical length of intervals: their median, to the
// millisecond (at least one), so that a late tick or the final sliver of a
// run does not change it.
func IntervalLength(lengths []time.Duration) time.Duration {
	if len(lengths) == 0 {
		return time.Second
	}
	s := slices.Clone(lengths)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return max(s[len(s)/2].Round(time.Millisecond), time.Millisecond)
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
