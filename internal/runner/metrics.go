package runner

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/txload/txload/report/prom"
)

// checkMetricsAddr checks --metrics-addr's form; whether it can be listened
// on is found by StartMetrics, still before the database is touched.
func checkMetricsAddr(addr string) error { return checkAddr("--metrics-addr", addr) }

// checkAddr checks the form of flag's address (--metrics-addr, --live).
func checkAddr(flag, addr string) error {
	if addr == "" {
		return nil
	}
	if _, err := prom.ListenAddressOf(flag, addr); err != nil {
		return Usage(err)
	}
	return nil
}

// StartMetrics serves /metrics on opts.MetricsAddr and the live page on
// opts.LiveAddr, each if given (the metrics' server serves the live page
// at / too), and sets opts.Metrics to the exporter the run's intervals
// feed and opts.Live to the live page's feed. It prints the URLs on Stderr
// (the port chosen, with port 0). Call it after Validate and before the
// database is touched: an address that cannot be listened on is a usage
// error. The returned func stops serving, once the browsers watching the
// live page have the run's last state (at most 2 s).
func StartMetrics(opts *Options, workloadName string) (func(), error) {
	if opts.MetricsAddr == "" && opts.LiveAddr == "" {
		return func() {}, nil
	}
	l := newLive(*opts, workloadName)
	var servers []*prom.Server
	stop := func() {
		l.stop()
		for _, s := range servers {
			_ = s.Close()
		}
	}
	serve := func(flag, addr string, mux *http.ServeMux) (*prom.Server, error) {
		mux.Handle("/", l.page.Handler())
		srv, err := prom.Serve(flag, addr, mux)
		if err != nil {
			stop()
			var ae *prom.AddrError
			if errors.As(err, &ae) {
				return nil, Usage(err)
			}
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		servers = append(servers, srv)
		return srv, nil
	}
	if opts.MetricsAddr != "" {
		instance := ""
		if e := opts.Engine; e.Instances > 0 {
			instance = strconv.Itoa(e.Instance) + "/" + strconv.Itoa(e.Instances)
		}
		exp := prom.New(prom.Labels{Workload: workloadName, Instance: instance, RunID: prom.NewRunID(time.Now(), os.Getpid())})
		exp.SetTargetRate(opts.Engine.Rate)
		exp.SetWorkers(opts.Engine.Concurrency)
		exp.SetConnections(opts.Engine.Concurrency)
		mux := http.NewServeMux()
		mux.Handle("/metrics", exp.Handler())
		srv, err := serve("--metrics-addr", opts.MetricsAddr, mux)
		if err != nil {
			return nil, err
		}
		opts.Metrics = exp
		fmt.Fprintf(opts.Stderr, "metrics: %s\n", srv.URL())
		fmt.Fprintf(opts.Stderr, "live page: %s\n", srv.Root())
	}
	if opts.LiveAddr != "" {
		srv, err := serve("--live", opts.LiveAddr, http.NewServeMux())
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(opts.Stderr, "live page: %s\n", srv.Root())
	}
	opts.Live = l
	return stop, nil
}
