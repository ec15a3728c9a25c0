// Command longdoc writes the --json documents of a long run for
// bench/long-document: a run of one operation at a steady rate over many
// progress intervals, as a soak of tpcb-like at 1,500 ops/s writes it (its
// intervals' histograms about the size of that run's), with totals that
// are the exact sum of its intervals. With -instances N it writes the N
// documents of one run shared by N load generators (--instance i/N), their
// ticks at different phases of the interval, for txload merge.
//
//	go run ./bench/longdoc -intervals 86400 -instances 2 -out /tmp/soak
//
// writes /tmp/soak-0.json and /tmp/soak-1.json.
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
)

func main() {
	intervals := flag.Int("intervals", 86400, "progress intervals in each document")
	every := flag.Duration("every", time.Second, "the intervals' length")
	rate := flag.Int("rate", 1500, "operations per second of each document")
	distinct := flag.Int("distinct", 60, "distinct intervals recorded, repeated to make the run (encoding each of 86,400 would take minutes)")
	instances := flag.Int("instances", 1, "documents of one run shared by this many load generators")
	out := flag.String("out", "long", "file name prefix: PREFIX-I.json")
	flag.Parse()
	if *intervals <= 0 || *distinct <= 0 || *instances <= 0 || *every <= 0 || *rate <= 0 {
		fmt.Fprintln(os.Stderr, "longdoc: every number must be positive")
		os.Exit(2)
	}
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range *instances {
		// Each load generator ticks at its own phase of the interval.
		phase := time.Duration(i) * *every / time.Duration(*instances) / 3
		doc, err := document(start.Add(phase), *intervals, *every, *rate, *distinct, uint64(i+1), i, *instances)
		if err == nil {
			err = write(fmt.Sprintf("%s-%d.json", *out, i), doc)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "longdoc:", err)
			os.Exit(1)
		}
	}
}

func write(path string, doc *report.Document) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteJSON(f, doc); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// document is one load generator's document: n intervals of length every
// from start, distinct of them recorded and repeated in turn.
func document(start time.Time, n int, every time.Duration, rate, distinct int, seed uint64, instance, instances int) (*report.Document, error) {
	rnd := rand.New(rand.NewPCG(seed, 31))
	op := []string{"tpcb-like"}
	g := metrics.NewRegistry(op, start)
	r := g.NewRecorder()
	perInterval := int(math.Round(float64(rate) * every.Seconds()))
	var recorded []report.IntervalDoc
	for k := range min(distinct, n) {
		for range perInterval {
			// Service time log-normal about 3.5 ms, schedule lag mostly
			// small with a tail: a database that keeps up, with hiccups.
			service := time.Duration(3500*math.Exp(0.45*rnd.NormFloat64())) * time.Microsecond
			lag := time.Duration(rnd.ExpFloat64()*300) * time.Microsecond
			if rnd.IntN(500) == 0 {
				lag += time.Duration(rnd.IntN(200_000)) * time.Microsecond
			}
			r.Success(0, true, service+lag, service, lag, 1)
		}
		if rnd.IntN(10) == 0 {
			r.Error(0, true, metrics.Serialization)
		}
		end := start.Add(time.Duration(k+1) * every)
		iv, err := g.Tick(end)
		if err != nil {
			return nil, err
		}
		d, err := report.NewIntervalDoc(iv, end, false)
		if err != nil {
			return nil, err
		}
		recorded = append(recorded, d)
	}
	// The total: each recorded interval as many times as it repeats.
	total := metrics.NewSnapshot(op)
	for k, d := range recorded {
		times := int64(n / len(recorded))
		if k < n%len(recorded) {
			times++
		}
		if err := addTimes(total, d, times); err != nil {
			return nil, err
		}
	}
	total.Elapsed = time.Duration(n) * every
	rd, err := report.NewRunDoc(total)
	if err != nil {
		return nil, err
	}
	rd.Intervals = make([]report.IntervalDoc, n)
	for k := range n {
		d := recorded[k%len(recorded)]
		d.Start, d.End = start.Add(time.Duration(k)*every), start.Add(time.Duration(k+1)*every)
		rd.Intervals[k] = d
	}
	config := map[string]any{"concurrency": "16", "threads": "16", "rate": fmt.Sprint(rate * instances), "arrival": "poisson",
		"duration": (time.Duration(n) * every).String(), "progress": every.String(), "max-tries": "10", "seed": "0"}
	if instances > 1 {
		config["instance"] = fmt.Sprintf("%d/%d", instance, instances)
	}
	return &report.Document{Version: "longdoc", Command: "run", Workload: "tpcb-like", Config: config,
		Server: map[string]any{"dialect": "PostgreSQL", "version": "18.3"}, Runs: []report.RunDoc{rd}, RunID: report.NewRunID()}, nil
}

// addTimes adds interval d to s, times times over.
func addTimes(s *metrics.Snapshot, d report.IntervalDoc, times int64) error {
	for i, od := range d.Ops {
		o := s.Ops[i]
		o.OK += od.OK * times
		o.Errors[metrics.Serialization] += od.Errors[metrics.Serialization.String()] * times
		for _, p := range [...]struct {
			enc string
			to  *hdr.Histogram
		}{{od.Response, o.Response}, {od.Service, o.Service}, {od.Lag, o.Lag}} {
			if p.enc == "" {
				continue
			}
			h, err := metrics.Decode(p.enc)
			if err != nil {
				return err
			}
			for _, b := range h.Distribution() {
				if b.Count > 0 {
					if err := p.to.RecordValues(b.From, b.Count*times); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}
