package cli

import (
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// heldWriter is a run's stderr that the test can watch as it is written,
// and that holds the run on the first line containing hold until release
// is called: the run stands still there, its /metrics still served.
type heldWriter struct {
	buf     syncBuffer
	hold    string
	reached chan struct{}
	release chan struct{}
	once    sync.Once
	letGo   sync.Once
}

// let releases the run.
func (h *heldWriter) let() { h.letGo.Do(func() { close(h.release) }) }

func newHeldWriter(hold string) *heldWriter {
	return &heldWriter{hold: hold, reached: make(chan struct{}), release: make(chan struct{})}
}

func (h *heldWriter) Write(p []byte) (int, error) {
	n, err := h.buf.Write(p)
	if strings.Contains(string(p), h.hold) {
		h.once.Do(func() {
			close(h.reached)
			<-h.release
		})
	}
	return n, err
}

var metricsLine = regexp.MustCompile(`(?m)^metrics: (http://127\.0\.0\.1:[0-9]+/metrics)$`)

// heldRun is a txload run in the background, its stderr held.
type heldRun struct {
	*heldWriter
	url    string // of its metrics
	stdout syncBuffer
	done   chan struct{}
	code   int // once done is closed
}

// startHeld runs txload in the background with its stderr held at hold,
// and waits for the URL it prints for its metrics. The run is let go and
// waited for when the test ends.
func startHeld(t *testing.T, hold string, args ...string) *heldRun {
	t.Helper()
	r := &heldRun{heldWriter: newHeldWriter(hold), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.code = txloadTo(t.Context(), nil, &r.stdout, r.heldWriter, args...)
	}()
	t.Cleanup(func() {
		r.let()
		select {
		case <-r.done:
		case <-time.After(time.Minute):
			t.Error("the run did not end")
		}
	})
	deadline := time.After(2 * time.Minute)
	for {
		if m := metricsLine.FindStringSubmatch(r.buf.String()); m != nil {
			r.url = m[1]
			return r
		}
		select {
		case <-r.done:
			t.Fatalf("exit %d before printing the metrics URL\n%s", r.code, r)
		case <-deadline:
			t.Fatalf("no metrics URL on stderr:\n%s", r.buf.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// wait lets the run go and returns its exit code.
func (r *heldRun) wait() int {
	r.let()
	<-r.done
	return r.code
}

func (r *heldRun) String() string {
	return "stdout: " + r.stdout.String() + "\nstderr: " + r.buf.String()
}

// scrape reads url's metrics in the Prometheus text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scraping: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the scrape: %v", err)
	}
	return fams
}

// sample finds the metric of family name whose labels include want; nil if
// there is none.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

func counterValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	if m := sample(fams, name, want); m != nil {
		return m.GetCounter().GetValue()
	}
	return 0
}

func gaugeValue(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	m := sample(fams, name, nil)
	if m == nil {
		t.Fatalf("no %s in the scrape", name)
	}
	return m.GetGauge().GetValue()
}

// While a run runs, its /metrics parse with Prometheus's own parser, the
// counters only grow, each histogram counts the successful operations, and
// at the end (held on the last line the run writes before it stops
// serving) the counters equal the report's counts.
func TestMetricsAddrRun(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	js := filepath.Join(t.TempDir(), "run.json")
	r := startHeld(t, "wrote "+js, "run", "select-only", "--url", url, "--init", "fresh",
		"--metrics-addr", "127.0.0.1:0", "--duration", "3s", "--concurrency", "2", "--json", js)

	op := map[string]string{"op": "select-only", "result": "ok"}
	var last float64
	scrapes, positive := 0, 0
	check := func(fams map[string]*dto.MetricFamily) float64 {
		ok := counterValue(fams, "txload_operations_total", op)
		if ok < last {
			t.Errorf("txload_operations_total went down: %g after %g", ok, last)
		}
		last = ok
		if ok == 0 {
			return ok
		}
		for _, name := range []string{"txload_response_seconds", "txload_service_seconds", "txload_schedule_lag_seconds"} {
			m := sample(fams, name, map[string]string{"op": "select-only"})
			if m == nil || m.GetHistogram() == nil {
				t.Fatalf("no histogram %s", name)
			}
			hist := m.GetHistogram()
			if len(hist.GetBucket()) == 0 {
				t.Errorf("%s has no buckets", name)
			}
			if got := float64(hist.GetSampleCount()); got != ok {
				t.Errorf("%s_count = %g, want the %g ok operations of the same scrape", name, got, ok)
			}
			if b := hist.GetBucket(); len(b) > 0 && float64(b[len(b)-1].GetCumulativeCount()) > ok {
				t.Errorf("%s: the last bucket holds %d, more than %g operations", name, b[len(b)-1].GetCumulativeCount(), ok)
			}
		}
		return ok
	}
watch:
	for {
		select {
		case <-r.reached:
			break watch
		case <-r.done:
			t.Fatalf("exit %d before the end was held\n%s", r.code, r)
		case <-time.After(200 * time.Millisecond):
			scrapes++
			if check(scrape(t, r.url)) > 0 {
				positive++
			}
		}
	}
	t.Logf("%d scrapes during the run, %d with operations", scrapes, positive)
	if positive == 0 {
		t.Errorf("no scrape of %d during the run counted an operation", scrapes)
	}

	// The end: the report and --json are written, /metrics still served.
	fams := scrape(t, r.url)
	final := check(fams)
	if code := r.wait(); code != 0 {
		t.Fatalf("exit %d\n%s", code, r)
	}
	m := regexp.MustCompile(`select-only: ([0-9]+) ok, ([0-9]+) failed`).FindStringSubmatch(r.stdout.String())
	if m == nil {
		t.Fatalf("no summary line:\n%s", r)
	}
	// The counters count every operation: the summary's window, and
	// those that ended in the drain after it.
	drainOK, drainFailed := drained(t, r.stdout.String())
	reportOK, _ := strconv.ParseFloat(m[1], 64)
	reportFailed, _ := strconv.ParseFloat(m[2], 64)
	reportOK, reportFailed = reportOK+float64(drainOK), reportFailed+float64(drainFailed)
	if final != reportOK || final == 0 {
		t.Errorf("txload_operations_total{result=\"ok\"} = %g at the end, the report says %g ok", final, reportOK)
	}
	var failed float64
	for _, s := range fams["txload_operations_total"].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "result" && strings.HasPrefix(l.GetValue(), "failed_") {
				failed += s.GetCounter().GetValue()
			}
		}
	}
	if failed != reportFailed {
		t.Errorf("failed operations: %g in the metrics, %g in the report", failed, reportFailed)
	}
	doc := readDoc(t, js)
	if len(doc.Runs) != 1 {
		t.Fatalf("%d runs in the JSON", len(doc.Runs))
	}
	for name, want := range map[string]float64{"txload_workers": 2, "txload_connections": 2, "txload_target_rate": 0, "txload_saturated": 0} {
		if got := gaugeValue(t, fams, name); got != want {
			t.Errorf("%s = %g, want %g", name, got, want)
		}
	}
	labels := map[string]string{}
	for _, l := range sample(fams, "txload_workers", nil).GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["workload"] != "select-only" || labels["instance"] != "0/1" || !regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[0-9]+$`).MatchString(labels["run_id"]) {
		t.Errorf("constant labels = %v", labels)
	}
	if resp, err := http.Get(r.url); err == nil {
		resp.Body.Close()
		t.Errorf("/metrics still served after the run ended")
	}
}

// sweep serves its steps' figures: the target rate is the step's.
func TestMetricsAddrSweep(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	csv := filepath.Join(t.TempDir(), "sweep.csv")
	r := startHeld(t, "wrote "+csv, "sweep", "select-only", "--url", url, "--init", "fresh",
		"--metrics-addr", "127.0.0.1:0", "--slo", "p99<=10s", "--start", "50", "--factor", "2", "--step-duration", "1s",
		"--step-warmup", "0s", "--max-steps", "2", "--concurrency", "2", "--csv", csv)
	select {
	case <-r.reached:
	case <-r.done:
		t.Fatalf("exit %d\n%s", r.code, r)
	}
	fams := scrape(t, r.url)
	if code := r.wait(); code != 0 {
		t.Fatalf("exit %d\n%s", code, r)
	}
	if got := gaugeValue(t, fams, "txload_target_rate"); got != 100 {
		t.Errorf("txload_target_rate = %g after the second step, want 100\n%s", got, r)
	}
	// Two steps of one second at 50 and 100 ops/s.
	if ok := counterValue(fams, "txload_operations_total", map[string]string{"result": "ok"}); ok < 100 {
		t.Errorf("txload_operations_total{result=\"ok\"} = %g after two steps, want about 150", ok)
	}
}

// A --metrics-addr that is malformed or cannot be listened on: one line
// naming the flag, exit 2, before the database is touched.
func TestMetricsAddrBadInput(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	inUse := busy.Addr().String()
	const want = "want [HOST:]PORT, e.g. 9090 (loopback only) or 0.0.0.0:9090"
	for _, tc := range []struct {
		name, cmd, addr, want string
	}{
		{"no port", "run", "localhost", `--metrics-addr "localhost": ` + want},
		{"port out of range", "run", "127.0.0.1:70000", `--metrics-addr "127.0.0.1:70000": ` + want},
		{"negative port", "run", ":-1", `--metrics-addr ":-1": ` + want},
		{"NaN", "run", "NaN", `--metrics-addr "NaN": ` + want},
		{"port not a number", "run", "127.0.0.1:http-alt", `--metrics-addr "127.0.0.1:http-alt": ` + want},
		{"empty", "run", "", `--metrics-addr "": ` + want},
		{"port in use", "run", inUse, "--metrics-addr " + inUse + ": cannot listen: bind: address already in use"},
		{"sweep malformed", "sweep", "9090:", `--metrics-addr "9090:": ` + want},
		{"sweep port in use", "sweep", inUse, "--metrics-addr " + inUse + ": cannot listen: bind: address already in use"},
		{"lag malformed", "lag", "1.2.3.4", `--metrics-addr "1.2.3.4": ` + want},
		{"lag port in use", "lag", inUse, "--metrics-addr " + inUse + ": cannot listen: bind: address already in use"},
		// --live, the live page's address, the same way.
		{"live no port", "run", "localhost", `--live "localhost": ` + want},
		{"live port out of range", "run", "127.0.0.1:70000", `--live "127.0.0.1:70000": ` + want},
		{"live NaN", "run", "NaN", `--live "NaN": ` + want},
		{"live empty", "run", "", `--live "": ` + want},
		{"live port in use", "run", inUse, "--live " + inUse + ": cannot listen: bind: address already in use"},
		{"live sweep malformed", "sweep", "9090:", `--live "9090:": ` + want},
		{"live lag port in use", "lag", inUse, "--live " + inUse + ": cannot listen: bind: address already in use"},
		{"live failover malformed", "failover", "+inf", `--live "+inf": ` + want},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flag := "--metrics-addr"
			if strings.HasPrefix(tc.name, "live ") {
				flag = "--live"
			}
			var args []string
			switch tc.cmd {
			case "run":
				args = []string{"run", "bank", "--url", url}
			case "sweep":
				args = []string{"sweep", "bank", "--slo", "p99<=1s", "--url", url}
			case "lag":
				args = []string{"lag", "--workload", "bank", "--source", url, "--dest", url, "--init", "keep"}
			case "failover":
				args = []string{"failover", "bank"} // the embedded pair: refused before it starts
			}
			r := txload(t.Context(), nil, append(args, flag, tc.addr)...)
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			if r.stderr != "txload: "+tc.want+"\n" {
				t.Errorf("stderr = %q, want the one line %q", r.stderr, "txload: "+tc.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
	if n := tables(t, url); n != 0 {
		t.Fatalf("bad input created %d bank tables", n)
	}
}

// pgio's own figures come as gauges beside the engine's counters, which
// equal those of its --json at the end.
func TestMetricsAddrPgio(t *testing.T) {
	t.Parallel()
	url := pgioInit(t, "--scale", "2000")
	js := jsonPath(t)
	r := startHeld(t, "wrote "+js, "run", "pgio", "--url", url, "--mode", "client", "--duration", "2s", "--progress", "500ms",
		"--json", js, "--metrics-addr", "127.0.0.1:0")
	select {
	case <-r.reached:
	case <-r.done:
		t.Fatalf("exit %d\n%s", r.code, r)
	}
	fams := scrape(t, r.url)
	if code := r.wait(); code != 0 {
		t.Fatalf("exit %d\n%s", code, r)
	}
	for _, name := range []string{"txload_pgio_selects_per_second", "txload_pgio_rows_per_second"} {
		if v := gaugeValue(t, fams, name); !(v > 0) {
			t.Errorf("%s = %g, want > 0", name, v)
		}
	}
	run := readDoc(t, js).Runs[0]
	for _, op := range allOf(t, run).Ops {
		if got := counterValue(fams, "txload_operations_total", map[string]string{"op": op.Name, "result": "ok"}); got != float64(op.OK) {
			t.Errorf("%s: %g ok in the metrics, %d in the JSON", op.Name, got, op.OK)
		}
	}
	if got, want := gaugeValue(t, fams, "txload_workers"), float64(run.Check.Values["sessions"]); got != want {
		t.Errorf("txload_workers = %g, want pgio's %g sessions", got, want)
	}
}

// lag serves its own figures beside the workload's counters.
func TestMetricsAddrLag(t *testing.T) {
	t.Parallel()
	db := tpcbDatabase(t)
	js := filepath.Join(t.TempDir(), "lag.json")
	r := startHeld(t, "wrote "+js, "lag", "--source", db, "--dest", db, "--workload", "tpcb-like", "--rate", "50", "--duration", "2s",
		"--json", js, "--metrics-addr", "127.0.0.1:0")
	select {
	case <-r.reached:
	case <-r.done:
		t.Fatalf("exit %d\n%s", r.code, r)
	}
	fams := scrape(t, r.url)
	if code := r.wait(); code != 0 {
		t.Fatalf("exit %d\n%s", code, r)
	}
	// The destination is the source: a marker can be seen as soon as its
	// commit is acknowledged, a lag of 0 (the tracker's floor), as CI saw
	// on a loaded machine.
	if v := gaugeValue(t, fams, "txload_replication_lag_max_seconds"); !(v >= 0 && v < 10) {
		t.Errorf("txload_replication_lag_max_seconds = %g, want a lag of 0 or more, below 10s", v)
	}
	if v := gaugeValue(t, fams, "txload_replication_markers_pending"); v != 0 {
		t.Errorf("txload_replication_markers_pending = %g once the destination caught up", v)
	}
	if v := gaugeValue(t, fams, "txload_target_rate"); v != 50 {
		t.Errorf("txload_target_rate = %g, want 50", v)
	}
	if ok := counterValue(fams, "txload_operations_total", map[string]string{"result": "ok", "workload": "tpcb-like"}); ok < 50 {
		t.Errorf("txload_operations_total{result=\"ok\"} = %g after 2s at 50/s", ok)
	}
}

// txload pgbench serves /metrics too: held on its last line (the run's
// --json written), the ok counter equals the transactions pgbench's report
// says were processed, and the workload label is the builtin's.
func TestMetricsAddrPgbenchCommand(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "pgbench", "-i", "-s", "1", "--url", url); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	js := filepath.Join(t.TempDir(), "run.json")
	r := startHeld(t, "wrote "+js, "pgbench", "-t", "50", "-c", "2", "-S", "--url", url, "--metrics-addr", "127.0.0.1:0", "--json", js)
	select {
	case <-r.reached:
	case <-r.done:
		t.Fatalf("exit %d before writing --json\n%s", r.code, r)
	}
	fams := scrape(t, r.url)
	if ok := counterValue(fams, "txload_operations_total", map[string]string{"result": "ok"}); ok != 100 {
		t.Errorf("txload_operations_total{result=ok} = %g, want 2 clients × 50", ok)
	}
	if code := r.wait(); code != 0 {
		t.Fatalf("exit %d\n%s", code, r)
	}
	if !strings.Contains(r.stdout.String(), "number of transactions actually processed: 100/100") {
		t.Errorf("report:\n%s", r.stdout.String())
	}
}
