package lagrun

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/lag"
	"github.com/txload/txload/report"
)

// keys lists an object's keys.
func keys(t *testing.T, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is no object", v)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// lag's --json: the run's document with the lag section beside it, under
// the names scripts read; histograms decode to what was recorded.
func TestDocument(t *testing.T) {
	r := result(t)
	r.Marked = true
	r.Tx = lag.Counts{Sent: 3, Acked: 2, Failed: 1, Measured: 2}
	r.TxLag = hist(t, 700, 900)
	r.SLO = verdicts(conditions(t, "p99<=1s"), r.Lag)
	r.Senders = []*lag.SenderStats{{Name: "txload_standby", Samples: 4, Idle: 1, Write: hist(t, 10), Flush: hist(t, 20), Replay: hist(t, 30), Behind: hist(t, 1024)}}
	r.Convergence = &Convergence{Tables: []*lag.Diff{{Pair: lag.Pair{Source: "a", Dest: "a"}, SourceRows: 2, DestRows: 2}}, Markers: &lag.MarkerDiff{Source: 6, Dest: 6}, Compared: []int{1}}
	r.Points = report.Slice[report.SeriesPoint]{{At: 1, Values: []float64{1000, 2000, 3000, 0}}}
	doc, err := newDocument(r, "v1.2.3", map[string]any{"rate": "50", "mark-interval": "10ms"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := encode(&b, doc); err != nil {
		t.Fatal(err)
	}

	var raw map[string]any
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	l := raw["lag"].(map[string]any)
	want := []string{"caught_up", "catch_up_seconds", "convergence", "lag", "mark_interval", "markers", "pg_stat_replication", "poll_period", "poll_round_trip",
		"poll_interval", "replication", "slo", "transaction_lag", "transaction_markers"}
	slices.Sort(want)
	if got := keys(t, l); !slices.Equal(got, want) {
		t.Errorf("lag section's keys %v, want %v", got, want)
	}
	if got := keys(t, l["markers"]); !slices.Equal(got, []string{"acknowledged", "ambiguous", "ambiguous_seen", "failed", "found_late", "measured", "never_seen", "seen_before_acknowledged", "sent", "unknown"}) {
		t.Errorf("markers' keys %v", got)
	}
	if cfg := raw["config"].(map[string]any); cfg["source"] != "postgres://src" || cfg["dest"] != "postgres://dst" || cfg["rate"] != "50" {
		t.Errorf("config %v", cfg)
	}
	if raw["command"] != "lag" || raw["workload"] != "tpcb-like" || raw["txload_version"] != "v1.2.3" {
		t.Errorf("command %v, workload %v, version %v", raw["command"], raw["workload"], raw["txload_version"])
	}

	var got Document
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	g := got.Lag
	if g.Replication != "logical" || g.SameDatabase || g.MarkInterval != "10ms" || g.PollInterval != "1ms" || !g.CaughtUp || g.CatchUpSeconds != 0.0025 {
		t.Errorf("lag section %+v", g)
	}
	if g.Markers != (MarkersDoc{Sent: 4, Acked: 4, Measured: 4}) || g.TxMarkers == nil || *g.TxMarkers != (MarkersDoc{Sent: 3, Acked: 2, Failed: 1, Measured: 2}) {
		t.Errorf("markers %+v, transaction markers %+v", g.Markers, g.TxMarkers)
	}
	if g.Lag.Count != 4 || g.Lag.P50 != 2000 || g.TxLag.Count != 2 || g.TxLag.Max != 900 || g.PollPeriod.Count != 3 || g.PollRoundTrip.Max != 500 {
		t.Errorf("histograms: lag %+v, transactions' %+v", g.Lag, g.TxLag)
	}
	if len(g.Senders) != 1 || g.Senders[0].Name != "txload_standby" || g.Senders[0].Idle != 1 || g.Senders[0].Behind.Max != 1024 || g.Senders[0].Replay.Max != 30 {
		t.Errorf("senders %+v", g.Senders)
	}
	if len(g.SLO) != 1 || g.SLO[0] != (VerdictDoc{Condition: "p99<=1s", ValueUS: 40031, Pass: true}) {
		t.Errorf("slo %+v", g.SLO)
	}
	if c := g.Convergence; c == nil || !c.OK || len(c.Tables) != 1 || c.Markers.Source != 6 {
		t.Errorf("convergence %+v", c)
	}
	if len(got.Series) != 1 || got.Series[0].Title != "replication lag" || len(got.Series[0].Points) != 1 {
		t.Errorf("series %+v", got.Series)
	}

	// Without markers in the transactions, views or convergence, their
	// keys are left out; a destination that differs is not ok.
	r = result(t)
	r.Same, r.Mode, r.CaughtUp, r.CatchUp = true, "external", false, 30*time.Second
	r.Convergence = &Convergence{Markers: &lag.MarkerDiff{Source: 6, Dest: 5, Gaps: 1}}
	doc, err = newDocument(r, "v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := encode(&b, doc); err != nil {
		t.Fatal(err)
	}
	raw = nil
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	l = raw["lag"].(map[string]any)
	for _, k := range []string{"transaction_markers", "transaction_lag", "pg_stat_replication", "pg_stat_subscription", "slo"} {
		if _, ok := l[k]; ok {
			t.Errorf("%s present: %v", k, l[k])
		}
	}
	if l["same_database"] != true || l["replication"] != "external" || l["caught_up"] != false || l["convergence"].(map[string]any)["ok"] != false {
		t.Errorf("lag section %v", l)
	}
	if raw["runs"] != nil {
		t.Errorf("runs %v without an outcome", raw["runs"])
	}
}

// The document carries the lag's report as tables for the HTML page: every
// figure the text prints (the markers, the lag's percentiles, the notes,
// the servers' views, the SLO, the convergence table and its verdict),
// and what failed heads its table. The page used to show none of them.
func TestDocumentTables(t *testing.T) {
	r := result(t)
	r.SLO = verdicts(conditions(t, "p99<=1ms"), r.Lag)
	r.Senders = []*lag.SenderStats{{Name: "txload_standby", Samples: 4, Idle: 1, Write: hist(t, 10), Flush: hist(t, 20), Replay: hist(t, 30), Behind: hist(t, 1024)}}
	r.Convergence = &Convergence{Tables: []*lag.Diff{{Pair: lag.Pair{Source: "a", Dest: "a"}, SourceRows: 7, DestRows: 6, Missing: 1, MissingKeys: []string{"(42)"}}},
		Markers: &lag.MarkerDiff{Source: 6, Dest: 6}, Compared: []int{2}}
	var text bytes.Buffer
	writeLag(&text, r)
	writeConvergence(&text, r.Convergence)
	doc, err := newDocument(r, "v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	failed := map[string]string{}
	for _, tb := range doc.Tables {
		shown = append(shown, tb.Lines...)
		for _, row := range tb.Rows {
			shown = append(shown, row...)
		}
		failed[tb.Title] = tb.Failed
	}
	all := strings.Join(shown, " | ")
	for _, line := range strings.Split(text.String(), "\n") {
		for _, f := range regexp.MustCompile(`\d+(?:\.\d+)?(?:µs|ms|s|kB|B)?`).FindAllString(line, -1) {
			if !strings.Contains(all, f) {
				t.Errorf("%s of %q is not in the document's tables", f, strings.TrimSpace(line))
			}
		}
	}
	if !strings.HasPrefix(failed["Replication lag"], "FAILED: slo p99<=1ms on lag: FAIL") {
		t.Errorf("the lag table's failure: %q", failed["Replication lag"])
	}
	if !strings.HasPrefix(failed["Convergence"], "convergence: FAILED: ") {
		t.Errorf("the convergence table's failure: %q", failed["Convergence"])
	}
}
