package report

import (
	"encoding/json"
	"fmt"
	"io"

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
}

// RunDoc is one run (one variant of a multi-variant run).
type RunDoc struct {
	Labels      map[string]string `json:"labels,omitempty"`
	ElapsedSec  float64           `json:"elapsed_seconds"`
	Offered     int64             `json:"offered,omitempty"`
	Unstarted   int64             `json:"unstarted,omitempty"`
	Saturated   bool              `json:"saturated,omitempty"`
	Interrupted bool              `json:"interrupted,omitempty"`
	Ops         []OpDoc           `json:"operations"`
	// EmissionLag is the open-loop generator's own lateness.
	EmissionLag *HistDoc          `json:"emission_lag,omitempty"`
	Check       *CheckDoc         `json:"check,omitempty"`
	Notes       map[string]string `json:"notes,omitempty"`
}

// CheckDoc is what the workload's audit found.
type CheckDoc struct {
	Values     map[string]int64 `json:"values"`
	Violations []string         `json:"violations"`
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
	Skipped   int64            `json:"skipped"`
	Late      int64            `json:"late"`
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

// HistogramDoc summarises and encodes one histogram.
func HistogramDoc(h *hdr.Histogram) (HistDoc, error) { return histDoc(h) }

// NewRunDoc fills a RunDoc from a snapshot.
func NewRunDoc(s *metrics.Snapshot) (RunDoc, error) {
	d := RunDoc{ElapsedSec: s.Elapsed.Seconds()}
	for _, o := range s.Ops {
		od := OpDoc{
			Name: o.Name, OK: o.OK, OpsPerSec: rate(o.OK, s.Elapsed),
			Failed: classMap(o.Failed), Errors: classMap(o.Errors),
			Retried: o.Retried, Retries: o.Retries, Warmup: o.Warmup, Skipped: o.Skipped, Late: o.Late,
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

// WriteJSON writes doc, indented.
func WriteJSON(w io.Writer, doc *Document) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}
