// Package prom exports a run's figures to Prometheus: an Exporter fed with
// the run's interval snapshots (the ones the progress lines print: no
// second recording path, nothing on the workers' hot path), and an HTTP
// server for /metrics in the Prometheus text, OpenMetrics and protobuf
// formats.
//
// Metrics, each with the constant labels workload, instance and run_id:
//
//	txload_operations_total{op,result}  result "ok", or "failed_<class>" (serialization, deadlock, connection, ambiguous, constraint, other)
//	txload_retries_total{op}            retries (attempts after the first)
//	txload_errors_total{op,class}       failed attempts, retried or not
//	txload_response_seconds{op}         histogram: end − intended start
//	txload_service_seconds{op}          histogram: end − actual start
//	txload_schedule_lag_seconds{op}     histogram: actual − intended start
//	txload_target_rate                  open-loop target, ops/s (0: closed loop)
//	txload_workers, txload_connections  the run's clients and connections
//	txload_saturated                    1 once the open loop fell behind and stopped
//	txload_<figure>                     a workload's own figures (SetFigure)
//
// The histograms are native histograms (schema 3: buckets 9% wide) with
// classic buckets as well, for scrapers without native support (the text
// formats carry the classic buckets only). They are converted at scrape
// time from the HDR histograms txload records (µs, 3 significant digits):
// every recorded value lands in a bucket by its HDR bucket's midpoint
// (HdrHistogram's "median equivalent value", the one its mean uses), so no
// count is lost and _count equals the operations measured.
package prom

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/txload/txload/metrics"
)

// Labels are the constant labels of every metric.
type Labels struct {
	Workload string
	// Instance is the load generator, "0/3" with --instance 0/3; "" = "0/1".
	Instance string
	// RunID tells apart runs of one load generator: see NewRunID.
	RunID string
}

// NewRunID returns an id for a run started at t: its UTC time to the
// second, then the process id, e.g. 20261123T063000Z-4242.
func NewRunID(t time.Time, pid int) string {
	return t.UTC().Format("20060102T150405Z") + "-" + strconv.Itoa(pid)
}

// Classic bucket bounds, in seconds.
var classicBounds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// nativeSchema is the native histograms' resolution: bucket bounds are
// powers of 2^(2^-3), about 9% apart.
const nativeSchema = 3

// Exporter holds the cumulative figures of a run and gives them to
// Prometheus on each scrape.
type Exporter struct {
	mu      sync.Mutex
	total   *metrics.Snapshot // cumulative; nil until the first Observe
	created time.Time
	rate    float64
	workers int
	conns   int
	sat     bool
	figures map[string]figure

	reg                      *prometheus.Registry
	constLabels              prometheus.Labels
	opsDesc, retries, errs   *prometheus.Desc
	response, service, lag   *prometheus.Desc
	rateDesc, workersDesc    *prometheus.Desc
	connsDesc, saturatedDesc *prometheus.Desc
}

type figure struct {
	desc  *prometheus.Desc
	value float64
}

// New returns an exporter with its own registry (no global state).
func New(l Labels) *Exporter {
	if l.Instance == "" {
		l.Instance = "0/1"
	}
	cl := prometheus.Labels{"workload": l.Workload, "instance": l.Instance, "run_id": l.RunID}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, cl)
	}
	e := &Exporter{
		created:       time.Now(),
		figures:       map[string]figure{},
		reg:           prometheus.NewRegistry(),
		constLabels:   cl,
		opsDesc:       d("txload_operations_total", "Operations ended in the measured period: result ok, or failed_<class> of their last error.", "op", "result"),
		retries:       d("txload_retries_total", "Retries: attempts after an operation's first.", "op"),
		errs:          d("txload_errors_total", "Failed attempts, retried or not, by class.", "op", "class"),
		response:      d("txload_response_seconds", "Response time of successful operations: end minus intended start (open loop) or start.", "op"),
		service:       d("txload_service_seconds", "Service time of successful operations: end minus actual start.", "op"),
		lag:           d("txload_schedule_lag_seconds", "Schedule lag of successful operations: actual minus intended start.", "op"),
		rateDesc:      d("txload_target_rate", "Open-loop target rate in operations per second (0: closed loop)."),
		workersDesc:   d("txload_workers", "Clients of the run."),
		connsDesc:     d("txload_connections", "Connections of the run."),
		saturatedDesc: d("txload_saturated", "1 once the open loop fell too far behind schedule and stopped."),
	}
	e.reg.MustRegister(e)
	return e
}

// Gatherer is the exporter's registry, for promhttp or tests.
func (e *Exporter) Gatherer() prometheus.Gatherer { return e.reg }

// Handler serves the exporter's metrics in the format the scraper asks
// for: Prometheus text, OpenMetrics or protobuf.
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Observe adds one interval snapshot (an engine tick's) to the totals. It
// copies what it needs: the snapshot may be reused after it returns.
func (e *Exporter) Observe(iv *metrics.Snapshot) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.total == nil {
		names := make([]string, len(iv.Ops))
		for i, o := range iv.Ops {
			names[i] = o.Name
		}
		e.total = metrics.NewSnapshot(names)
	}
	if err := e.total.Merge(iv); err != nil {
		return fmt.Errorf("metrics exporter: %w", err)
	}
	return nil
}

// SetTargetRate sets the open-loop target (0 for a closed loop).
func (e *Exporter) SetTargetRate(r float64) { e.mu.Lock(); e.rate = r; e.mu.Unlock() }

// SetWorkers sets the number of clients.
func (e *Exporter) SetWorkers(n int) { e.mu.Lock(); e.workers = n; e.mu.Unlock() }

// SetConnections sets the number of connections.
func (e *Exporter) SetConnections(n int) { e.mu.Lock(); e.conns = n; e.mu.Unlock() }

// SetSaturated records that the open loop saturated.
func (e *Exporter) SetSaturated(s bool) { e.mu.Lock(); e.sat = s; e.mu.Unlock() }

// SetFigure sets a workload's own gauge, exported as txload_<name> (name in
// snake_case: replication lag, pgio's logical reads per second).
func (e *Exporter) SetFigure(name, help string, v float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f, ok := e.figures[name]
	if !ok {
		f.desc = prometheus.NewDesc("txload_"+name, help, nil, e.constLabels)
	}
	f.value = v
	e.figures[name] = f
}

// Describe sends the fixed metrics' descriptions; the workload's figures
// come and go, so the collector is not checked against them.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{e.opsDesc, e.retries, e.errs, e.response, e.service, e.lag, e.rateDesc, e.workersDesc, e.connsDesc, e.saturatedDesc} {
		ch <- d
	}
}

// Collect converts the totals into metrics, at scrape time.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	defer e.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	gauge(e.rateDesc, e.rate)
	gauge(e.workersDesc, float64(e.workers))
	gauge(e.connsDesc, float64(e.conns))
	sat := 0.0
	if e.sat {
		sat = 1
	}
	gauge(e.saturatedDesc, sat)
	names := make([]string, 0, len(e.figures))
	for n := range e.figures {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		gauge(e.figures[n].desc, e.figures[n].value)
	}
	if e.total == nil {
		return
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, o := range e.total.Ops {
		counter(e.opsDesc, o.OK, o.Name, "ok")
		for _, c := range metrics.Classes() {
			counter(e.opsDesc, o.Failed[c], o.Name, "failed_"+c.String())
			counter(e.errs, o.Errors[c], o.Name, c.String())
		}
		counter(e.retries, o.Retries, o.Name)
		for _, k := range []struct {
			d *prometheus.Desc
			h *hdr.Histogram
		}{{e.response, o.Response}, {e.service, o.Service}, {e.lag, o.Lag}} {
			ch <- &histogram{desc: k.d, h: Convert(k.h, e.created), labels: prometheus.MakeLabelPairs(k.d, []string{o.Name})}
		}
	}
}

// histogram is a histogram metric with both classic and native buckets
// (client_golang's const histograms have one or the other).
type histogram struct {
	desc   *prometheus.Desc
	h      *dto.Histogram
	labels []*dto.LabelPair
}

func (m *histogram) Desc() *prometheus.Desc { return m.desc }

func (m *histogram) Write(out *dto.Metric) error {
	out.Histogram = m.h
	out.Label = m.labels
	return nil
}

// Convert turns an HDR histogram of µs into a Prometheus histogram of
// seconds, classic and native buckets: each HDR bucket's count goes, whole,
// to the buckets its midpoint falls in.
func Convert(h *hdr.Histogram, created time.Time) *dto.Histogram {
	classic := make([]uint64, len(classicBounds))
	native := map[int]int64{}
	var zero, count uint64
	var sum float64
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		mid := b.From + (b.To-b.From+1)/2 // HdrHistogram's medianEquivalentValue
		v := float64(mid) / 1e6
		n := uint64(b.Count)
		count += n
		sum += v * float64(n)
		if i := sort.SearchFloat64s(classicBounds, v); i < len(classic) {
			classic[i] += n // le = classicBounds[i] is the first bound >= v
		}
		if v <= prometheus.DefNativeHistogramZeroThreshold {
			zero += n
		} else {
			native[nativeKey(v)] += int64(n)
		}
	}
	out := &dto.Histogram{
		SampleCount:      &count,
		SampleSum:        &sum,
		Schema:           new(int32(nativeSchema)),
		ZeroThreshold:    new(prometheus.DefNativeHistogramZeroThreshold),
		ZeroCount:        &zero,
		CreatedTimestamp: timestamppb.New(created),
	}
	var cum uint64
	for i, le := range classicBounds {
		cum += classic[i]
		out.Bucket = append(out.Bucket, &dto.Bucket{CumulativeCount: new(cum), UpperBound: new(le)})
	}
	out.PositiveSpan, out.PositiveDelta = spans(native)
	if len(out.PositiveSpan) == 0 {
		// An empty native histogram still says it is one.
		out.PositiveSpan = []*dto.BucketSpan{{Offset: new(int32(0)), Length: new(uint32(0))}}
	}
	return out
}

// nativeKey is the index of the native bucket holding v > 0: the bucket
// (2^((k−1)/8), 2^(k/8)] at schema 3. Frexp keeps powers of two exact.
func nativeKey(v float64) int {
	frac, exp := math.Frexp(v) // v = frac · 2^exp, frac in [0.5, 1)
	const per = 1 << nativeSchema
	k := int(math.Ceil(math.Log2(frac)*per)) + exp*per
	// Guard against rounding at a bound: v must be <= 2^(k/8) and > 2^((k−1)/8).
	for v > math.Exp2(float64(k)/per) {
		k++
	}
	for k > math.MinInt32 && v <= math.Exp2(float64(k-1)/per) {
		k--
	}
	return k
}

// spans encodes native bucket counts as Prometheus spans and deltas.
func spans(buckets map[int]int64) ([]*dto.BucketSpan, []int64) {
	keys := make([]int, 0, len(buckets))
	for k := range buckets {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var sp []*dto.BucketSpan
	var deltas []int64
	var prev int64
	next := 0
	for i, k := range keys {
		gap := k - next
		if i == 0 || gap > 2 {
			sp = append(sp, &dto.BucketSpan{Offset: new(int32(gap)), Length: new(uint32(0))})
		} else {
			// Small gaps are cheaper as empty buckets.
			for range gap {
				*sp[len(sp)-1].Length++
				deltas = append(deltas, -prev)
				prev = 0
			}
		}
		*sp[len(sp)-1].Length++
		deltas = append(deltas, buckets[k]-prev)
		prev = buckets[k]
		next = k + 1
	}
	return sp, deltas
}

// AddrError is a --metrics-addr (or --live) that is malformed or cannot be
// listened on: bad input, found before the run starts.
type AddrError struct{ Msg string }

func (e *AddrError) Error() string { return e.Msg }

// ListenAddress completes a --metrics-addr: a port alone ("9090" or
// ":9090") listens on the loopback interface only.
func ListenAddress(addr string) (string, error) { return ListenAddressOf("--metrics-addr", addr) }

// ListenAddressOf completes the address of flag (--metrics-addr, --live)
// as ListenAddress does, its errors naming the flag.
func ListenAddressOf(flag, addr string) (string, error) {
	bad := &AddrError{Msg: fmt.Sprintf("%s %q: want [HOST:]PORT, e.g. 9090 (loopback only) or 0.0.0.0:9090", flag, addr)}
	a := strings.TrimSpace(addr)
	if a == "" {
		return "", bad
	}
	if _, err := strconv.Atoi(a); err == nil {
		a = ":" + a
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return "", bad
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return "", bad
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Server serves /metrics, or what Serve was given.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan error
}

// Listen starts serving h at /metrics on addr (see ListenAddress). An
// address that cannot be listened on is an *AddrError.
func Listen(addr string, h http.Handler) (*Server, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	return Serve("--metrics-addr", addr, mux)
}

// Serve starts serving mux on addr, the address of flag (see
// ListenAddressOf). An address that cannot be listened on is an
// *AddrError.
func Serve(flag, addr string, mux *http.ServeMux) (*Server, error) {
	a, err := ListenAddressOf(flag, addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", a)
	if err != nil {
		var op *net.OpError
		msg := err.Error()
		if errors.As(err, &op) && op.Err != nil {
			msg = op.Err.Error()
		}
		return nil, &AddrError{Msg: fmt.Sprintf("%s %s: cannot listen: %s", flag, addr, msg)}
	}
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, done: make(chan error, 1)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address served, with the port chosen when it was 0.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the metrics' URL.
func (s *Server) URL() string { return s.Root() + "metrics" }

// Root is the server's URL: http://HOST:PORT/.
func (s *Server) Root() string { return "http://" + s.Addr() + "/" }

// closeWait is how long Close waits for the answers under way.
const closeWait = 2 * time.Second

// Close stops serving, once the answers under way are sent.
func (s *Server) Close() error {
	// The answers under way are finished (the live page's final page, a
	// scrape), closeWait at most: Close alone cut them short.
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
