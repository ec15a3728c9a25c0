package runner

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/txload/txload/report/prom"
)

// checkMetricsAddr checks --metrics-addr's form; whether it can be listened
// on is found by StartMetrics, still before the database is touched.
func checkMetricsAddr(addr string) error {
	if addr == "" {
		return nil
	}
	if _, err := prom.ListenAddress(addr); err != nil {
		return Usage(err)
	}
	return nil
}

// StartMetrics serves /metrics on opts.MetricsAddr, if given, and sets
// opts.Metrics to the exporter the run's intervals feed. It prints the URL
// on Stderr (the port chosen, with port 0). Call it after Validate and
// before the database is touched: an address that cannot be listened on
// is a usage error. The returned func stops serving.
func StartMetrics(opts *Options, workloadName string) (func(), error) {
	if opts.MetricsAddr == "" {
		return func() {}, nil
	}
	instance := ""
	if e := opts.Engine; e.Instances > 0 {
		instance = strconv.Itoa(e.Instance) + "/" + strconv.Itoa(e.Instances)
	}
	exp := prom.New(prom.Labels{Workload: workloadName, Instance: instance, RunID: prom.NewRunID(time.Now(), os.Getpid())})
	exp.SetTargetRate(opts.Engine.Rate)
	exp.SetWorkers(opts.Engine.Concurrency)
	exp.SetConnections(opts.Engine.Concurrency)
	srv, err := prom.Listen(opts.MetricsAddr, exp.Handler())
	if err != nil {
		var ae *prom.AddrError
		if errors.As(err, &ae) {
			return nil, Usage(err)
		}
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	opts.Metrics = exp
	fmt.Fprintf(opts.Stderr, "metrics: %s\n", srv.URL())
	return func() { _ = srv.Close() }, nil
}
