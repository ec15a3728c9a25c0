package report

import (
	"fmt"
	"math"
	"time"

	"github.com/txload/txload/metrics"
)

// Validate checks what a document says is possible: every count is zero
// or more, every duration finite and not negative, every histogram decodes
// and holds as many values as the operations it measures, every interval
// ends after it starts. Its error names the field ("runs[0].operations[1].ok:
// -5 is negative"), for one line that names the file before it.
func (d *Document) Validate() error {
	for i := range d.Runs {
		if err := d.Runs[i].validate(fmt.Sprintf("runs[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

func (r *RunDoc) validate(at string) error {
	for _, d := range []struct {
		name string
		v    float64
	}{{"elapsed_seconds", r.ElapsedSec}, {"connect_seconds", r.ConnectSec}} {
		if math.IsNaN(d.v) || math.IsInf(d.v, 0) || d.v < 0 {
			return fmt.Errorf("%s.%s: %g is not a length of time", at, d.name, d.v)
		}
	}
	for _, c := range []struct {
		name string
		n    int64
	}{{"offered", r.Offered}, {"unstarted", r.Unstarted}, {"reconnects", r.Reconnects}} {
		if c.n < 0 {
			return fmt.Errorf("%s.%s: %d is negative", at, c.name, c.n)
		}
	}
	if r.Unstarted > r.Offered {
		return fmt.Errorf("%s.unstarted: %d of %d offered", at, r.Unstarted, r.Offered)
	}
	if w := r.Warmup; w != nil && (w.Committed < 0 || w.Committed > w.Operations || w.Failed != w.Operations-w.Committed) {
		return fmt.Errorf("%s.warmup: %d committed and %d failed of %d operations", at, w.Committed, w.Failed, w.Operations)
	}
	for j, o := range r.Ops {
		if err := o.validate(fmt.Sprintf("%s.operations[%d]", at, j)); err != nil {
			return err
		}
	}
	if r.EmissionLag != nil {
		if err := r.EmissionLag.validate(at+".emission_lag", -1); err != nil {
			return err
		}
	}
	for k, iv := range r.Intervals {
		if err := r.validateInterval(fmt.Sprintf("%s.intervals[%d]", at, k), &iv); err != nil {
			return err
		}
		if k > 0 && iv.Start.Before(r.Intervals[k-1].Start) {
			return fmt.Errorf("%s.intervals[%d]: starts at %s, before the interval before it (%s): a run's intervals are in order of time",
				at, k, iv.Start.Format(time.RFC3339Nano), r.Intervals[k-1].Start.Format(time.RFC3339Nano))
		}
	}
	if r.Drain != nil {
		if err := r.validateInterval(at+".drain", r.Drain); err != nil {
			return err
		}
	}
	return nil
}

func (o *OpDoc) validate(at string) error {
	for _, c := range []struct {
		name string
		n    int64
	}{{"ok", o.OK}, {"retried", o.Retried}, {"retries", o.Retries}, {"warmup", o.Warmup}, {"warmup_ok", o.WarmupOK},
		{"skipped", o.Skipped}, {"late", o.Late}, {"abandoned", o.Abandoned}} {
		if c.n < 0 {
			return fmt.Errorf("%s.%s: %d is negative", at, c.name, c.n)
		}
	}
	if o.WarmupOK > o.Warmup {
		return fmt.Errorf("%s.warmup_ok: %d of %d begun in the warm-up", at, o.WarmupOK, o.Warmup)
	}
	if err := validClasses(at+".failed", o.Failed); err != nil {
		return err
	}
	if err := validClasses(at+".errors", o.Errors); err != nil {
		return err
	}
	for _, h := range []struct {
		name string
		doc  HistDoc
	}{{"response", o.Response}, {"service", o.Service}, {"lag", o.Lag}} {
		if err := h.doc.validate(at+"."+h.name, o.OK); err != nil {
			return err
		}
	}
	return nil
}

// validate checks an encoded histogram: it decodes, and holds count values
// (count < 0: any number).
func (h *HistDoc) validate(at string, count int64) error {
	if h.Encoded == "" {
		return nil // an older document, or a histogram left out
	}
	dec, err := metrics.Decode(h.Encoded)
	if err != nil {
		return fmt.Errorf("%s.hdr: %v", at, err)
	}
	if count >= 0 && dec.TotalCount() != count {
		return fmt.Errorf("%s.hdr: holds %d values for %d operations", at, dec.TotalCount(), count)
	}
	return nil
}

// validateInterval checks an interval in memory: its counts, and its
// histograms and operations against the run's.
func (r *RunDoc) validateInterval(at string, iv *IntervalDoc) error {
	if err := validateIntervalCounts(at, iv); err != nil {
		return err
	}
	s := metrics.NewSnapshot(r.Names())
	if err := r.addInterval(iv, s); err != nil {
		return fmt.Errorf("%s%v", at, err)
	}
	return nil
}

// validateIntervalCounts checks what an interval says but its histograms
// and operations' names: its times and counts.
func validateIntervalCounts(at string, iv *IntervalDoc) error {
	if iv.End.Before(iv.Start) {
		return fmt.Errorf("%s: ends (%s) before it starts (%s)", at, iv.End, iv.Start)
	}
	if iv.Reconnects < 0 {
		return fmt.Errorf("%s.reconnects: %d is negative", at, iv.Reconnects)
	}
	for j, o := range iv.Ops {
		op := fmt.Sprintf("%s.operations[%d]", at, j)
		for _, c := range []struct {
			name string
			n    int64
		}{{"ok", o.OK}, {"retried", o.Retried}, {"retries", o.Retries}, {"warmup", o.Warmup}, {"warmup_ok", o.WarmupOK},
			{"skipped", o.Skipped}, {"late", o.Late}, {"abandoned", o.Abandoned}} {
			if c.n < 0 {
				return fmt.Errorf("%s.%s: %d is negative", op, c.name, c.n)
			}
		}
		if err := validClasses(op+".failed", o.Failed); err != nil {
			return err
		}
		if err := validClasses(op+".errors", o.Errors); err != nil {
			return err
		}
	}
	return nil
}

func validClasses(at string, m map[string]int64) error {
	for name, n := range m {
		if _, ok := classByName(name); !ok {
			return fmt.Errorf("%s: unknown failure class %q", at, name)
		}
		if n < 0 {
			return fmt.Errorf("%s.%s: %d is negative", at, name, n)
		}
	}
	return nil
}
