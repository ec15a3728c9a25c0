package prom

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/txload/txload/metrics"
)

// feed records intervals as a run's workers would and gives each tick's
// snapshot to the exporter, as the run path does; it returns the sum of
// the intervals.
func feed(t *testing.T, e *Exporter) *metrics.Snapshot {
	t.Helper()
	start := time.Now()
	g := metrics.NewRegistry([]string{"read", "write"}, start)
	r := g.NewRecorder()
	sum := metrics.NewSnapshot([]string{"read", "write"})
	for tick := range 5 {
		for i := 1; i <= 2000; i++ {
			// Values under 2048 µs are exact in the HDR histogram.
			us := time.Duration((i*7+tick*131)%2000+1) * time.Microsecond
			r.Success(0, true, us, us/2, us-us/2, 1+i%5/4)
			if i%10 == 0 {
				// Large values too: 10 ms to about 2 s.
				r.Success(1, true, time.Duration(i)*time.Millisecond, time.Duration(i)*time.Millisecond/3, 0, 1)
			}
			if i%100 == 0 {
				r.Error(1, true, metrics.Serialization)
				r.Failure(1, true, metrics.Deadlock, 3)
			}
		}
		r.Success(0, false, time.Millisecond, time.Millisecond, 0, 1) // warm-up: not counted
		iv, err := g.Tick(start.Add(time.Duration(tick+1) * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := sum.Merge(iv); err != nil {
			t.Fatal(err)
		}
		if err := e.Observe(iv); err != nil {
			t.Fatal(err)
		}
	}
	return sum
}

func scrape(t *testing.T, url, accept string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return resp, b
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// find returns the metric of family name whose labels include want.
func find(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
outer:
	for _, m := range f.GetMetric() {
		l := labelsOf(m)
		for k, v := range want {
			if l[k] != v {
				continue outer
			}
		}
		return m
	}
	t.Fatalf("no %s%v", name, want)
	return nil
}

// Scraped over HTTP and parsed with Prometheus' own text parser, the
// counters equal the snapshots' sums, each histogram counts every
// operation measured, the classic buckets count exactly the values at or
// under their bound, and the native buckets (protobuf) hold every count.
func TestScrape(t *testing.T) {
	e := New(Labels{Workload: "bank", Instance: "1/3", RunID: "r1"})
	e.SetTargetRate(500)
	e.SetWorkers(8)
	e.SetConnections(8)
	e.SetFigure("replication_lag_seconds", "Replication lag.", 0.25)
	srv, err := Listen("127.0.0.1:0", e.Handler())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	sum := feed(t, e)

	// OpenMetrics: the same counts, in its own text.
	resp, body := scrape(t, srv.URL(), "application/openmetrics-text; version=1.0.0")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("asked for OpenMetrics, got %s", ct)
	}
	for _, want := range []string{
		"# TYPE txload_operations counter",
		fmt.Sprintf(`txload_operations_total{instance="1/3",op="read",result="ok",run_id="r1",workload="bank"} %d`, sum.Ops[0].OK),
		fmt.Sprintf(`txload_response_seconds_count{instance="1/3",op="write",run_id="r1",workload="bank"} %d`, sum.Ops[1].OK),
		"# EOF",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("OpenMetrics lacks %q:\n%s", want, body)
		}
	}

	{
		resp, body := scrape(t, srv.URL(), "")
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Fatalf("content type %s, want text", ct)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("parsing: %v\n%s", err, body)
		}
		for _, o := range sum.Ops {
			c := find(t, fams, "txload_operations_total", map[string]string{"op": o.Name, "result": "ok", "workload": "bank", "instance": "1/3", "run_id": "r1"})
			if got := c.GetCounter().GetValue(); got != float64(o.OK) {
				t.Errorf("%s ok = %g, want %d", o.Name, got, o.OK)
			}
			for _, cl := range metrics.Classes() {
				if got := find(t, fams, "txload_operations_total", map[string]string{"op": o.Name, "result": "failed_" + cl.String()}).GetCounter().GetValue(); got != float64(o.Failed[cl]) {
					t.Errorf("%s failed %s = %g, want %d", o.Name, cl, got, o.Failed[cl])
				}
				if got := find(t, fams, "txload_errors_total", map[string]string{"op": o.Name, "class": cl.String()}).GetCounter().GetValue(); got != float64(o.Errors[cl]) {
					t.Errorf("%s errors %s = %g, want %d", o.Name, cl, got, o.Errors[cl])
				}
			}
			if got := find(t, fams, "txload_retries_total", map[string]string{"op": o.Name}).GetCounter().GetValue(); got != float64(o.Retries) {
				t.Errorf("%s retries = %g, want %d", o.Name, got, o.Retries)
			}
			for name, h := range map[string]*metrics.OpStats{"txload_response_seconds": o, "txload_service_seconds": o, "txload_schedule_lag_seconds": o} {
				ph := find(t, fams, name, map[string]string{"op": o.Name}).GetHistogram()
				if ph.GetSampleCount() != uint64(h.OK) {
					t.Errorf("%s{op=%s} count = %d, want the %d operations", name, o.Name, ph.GetSampleCount(), h.OK)
				}
			}
			ph := find(t, fams, "txload_response_seconds", map[string]string{"op": o.Name}).GetHistogram()
			if want := o.Response.Mean() * float64(o.OK) / 1e6; math.Abs(ph.GetSampleSum()-want) > 1e-6*want {
				t.Errorf("%s response sum = %g s, want %g (mean × count)", o.Name, ph.GetSampleSum(), want)
			}
		}
		// Classic buckets of "read": its values are exact, so each bucket
		// counts exactly the values at or under its bound.
		ph := find(t, fams, "txload_response_seconds", map[string]string{"op": "read"}).GetHistogram()
		for _, b := range ph.GetBucket() {
			var want int64
			for _, bar := range sum.Ops[0].Response.Distribution() {
				if float64(bar.From)/1e6 <= b.GetUpperBound() {
					want += bar.Count
				}
			}
			if b.GetCumulativeCount() != uint64(want) {
				t.Errorf("read le=%g: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
			}
		}
		for name, want := range map[string]float64{"txload_target_rate": 500, "txload_workers": 8, "txload_connections": 8, "txload_saturated": 0, "txload_replication_lag_seconds": 0.25} {
			if got := find(t, fams, name, map[string]string{"run_id": "r1"}).GetGauge().GetValue(); got != want {
				t.Errorf("%s = %g, want %g", name, got, want)
			}
		}
	}

	// Protobuf carries the native histograms: their buckets hold every count.
	resp, body = scrape(t, srv.URL(), `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited`)
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.ResponseFormat(resp.Header))
	natives := 0
	for {
		var f dto.MetricFamily
		if err := dec.Decode(&f); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if f.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			if h.GetSchema() != nativeSchema || len(h.GetPositiveSpan()) == 0 || len(h.GetBucket()) != len(classicBounds) {
				t.Fatalf("%s: schema %d, %d spans, %d classic buckets: not both native and classic", f.GetName(), h.GetSchema(), len(h.GetPositiveSpan()), len(h.GetBucket()))
			}
			var n, cur int64
			for _, d := range h.GetPositiveDelta() {
				cur += d
				n += cur
			}
			if uint64(n)+h.GetZeroCount() != h.GetSampleCount() {
				t.Errorf("%s%v: native buckets hold %d + zero %d, count %d", f.GetName(), labelsOf(m), n, h.GetZeroCount(), h.GetSampleCount())
			}
			natives++
		}
	}
	if natives != 6 {
		t.Errorf("%d native histograms, want 6", natives)
	}
}

func TestNativeKey(t *testing.T) {
	for _, v := range []float64{1e-6, 0.001, 0.5, 1, 2, 3, 1000, 0.0123456} {
		k := nativeKey(v)
		lo, hi := math.Exp2(float64(k-1)/8), math.Exp2(float64(k)/8)
		if !(v > lo && v <= hi) {
			t.Errorf("nativeKey(%g) = %d: bucket (%g, %g]", v, k, lo, hi)
		}
	}
	if nativeKey(1) != 0 || nativeKey(2) != 8 || nativeKey(0.5) != -8 {
		t.Errorf("powers of two: %d %d %d", nativeKey(1), nativeKey(2), nativeKey(0.5))
	}
}

func TestAddresses(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"9090", "127.0.0.1:9090"}, {":9090", "127.0.0.1:9090"}, {"0.0.0.0:9090", "0.0.0.0:9090"}, {"[::1]:80", "[::1]:80"},
	} {
		if got, err := ListenAddress(tt.in); err != nil || got != tt.want {
			t.Errorf("ListenAddress(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "localhost", "host:port", ":70000", "1.2.3.4"} {
		_, err := ListenAddress(bad)
		var ae *AddrError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "--metrics-addr") {
			t.Errorf("ListenAddress(%q): %v, want an AddrError naming the flag", bad, err)
		}
	}
	// A port already taken cannot be listened on: one line naming the flag.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Listen(ln.Addr().String(), http.NotFoundHandler())
	var ae *AddrError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "--metrics-addr "+ln.Addr().String()+": cannot listen: bind: address already in use") {
		t.Errorf("Listen on a taken port: %v", err)
	}
	if _, err := Listen("192.0.2.1:9090", http.NotFoundHandler()); !errors.As(err, &ae) {
		t.Errorf("Listen on an address of another machine: %v", err)
	}
}

// Close lets the answers under way finish: the live page's final page,
// fetched as the run ends, arrived cut short ("unexpected EOF") when the
// server closed its connections under it.
func TestCloseFinishesAnswers(t *testing.T) {
	started := make(chan struct{})
	body := strings.Repeat("page ", 20000)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		_, _ = io.WriteString(w, body[:len(body)/2])
		w.(http.Flusher).Flush()
		close(started)
		time.Sleep(300 * time.Millisecond)
		_, _ = io.WriteString(w, body[len(body)/2:])
	})
	s, err := Serve("--live", "127.0.0.1:0", mux)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		resp, err := http.Get(s.Root())
		if err != nil {
			got <- err
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && string(b) != body {
			err = fmt.Errorf("%d bytes of %d", len(b), len(body))
		}
		got <- err
	}()
	select {
	case <-started:
	case err := <-got:
		t.Fatalf("no answer under way: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := <-got; err != nil {
		t.Errorf("the answer under way when the server closed: %v", err)
	}
	if _, err := http.Get(s.Root()); err == nil {
		t.Errorf("still serving after Close")
	}
}
