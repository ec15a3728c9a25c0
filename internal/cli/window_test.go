package cli

import (
	"strconv"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/metrics"
)

// With hundreds of clients and a slow connection ramp (each login waits in
// a login event trigger), the measured window starts once every client is
// connected, the ramp has a line of its own, and the summary equals the
// sum of its progress intervals: every count, and the histograms' counts
// and maxima.
func TestSummaryIsTheSumOfItsIntervals(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "select-only", "--url", url); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	maxConns := count(t, url, "SELECT current_setting('max_connections')::int")
	clients := min(maxConns-40, 250)
	conn := pgtest.Conn(t, url)
	var version int
	if err := conn.QueryRow(t.Context(), "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version >= 170000 {
		// Every login to this database takes 4 ms more: a ramp of a
		// quarter of a second or more before the first transaction.
		for _, sql := range []string{
			`CREATE FUNCTION slow_login() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.004); END $$`,
			`CREATE EVENT TRIGGER slow_login ON login EXECUTE FUNCTION slow_login()`,
		} {
			if _, err := conn.Exec(t.Context(), sql); err != nil {
				t.Fatal(err)
			}
		}
	}
	js := jsonPath(t)
	r := txload(t.Context(), nil, "run", "select-only", "--url", url, "--concurrency", strconv.Itoa(int(clients)),
		"--duration", "2500ms", "--progress", "500ms", "--json", js)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "2.50s measured", "connected "+strconv.Itoa(int(clients))+" clients in ")
	run := readDoc(t, js).Runs[0]
	total, err := run.Total()
	if err != nil {
		t.Fatal(err)
	}
	sum := metrics.NewSnapshot(run.Names())
	var measured int
	add := run.Adder()
	for i := range run.Intervals {
		if err := add.Add(i, &run.Intervals[i], sum); err != nil {
			t.Fatal(err)
		}
		if !run.Intervals[i].Warmup {
			measured++
		}
	}
	if err := add.Flush(sum); err != nil {
		t.Fatal(err)
	}
	all, s := total.Total("all"), sum.Total("all")
	if all.OK == 0 || all.OK != s.OK || all.FailedTotal() != s.FailedTotal() || all.ErrorsTotal() != s.ErrorsTotal() || all.Retries != s.Retries {
		t.Fatalf("summary: %d ok, %d failed, %d errors; its intervals: %d, %d, %d", all.OK, all.FailedTotal(), all.ErrorsTotal(), s.OK, s.FailedTotal(), s.ErrorsTotal())
	}
	for _, p := range []struct {
		name string
		a, b *hdr.Histogram
	}{{"response", all.Response, s.Response}, {"service", all.Service, s.Service}} {
		if p.a.TotalCount() != p.b.TotalCount() || p.a.Max() != p.b.Max() || p.a.ValueAtQuantile(99) != p.b.ValueAtQuantile(99) {
			t.Errorf("%s: summary %d values, max %d, p99 %d; intervals %d, max %d, p99 %d", p.name,
				p.a.TotalCount(), p.a.Max(), p.a.ValueAtQuantile(99), p.b.TotalCount(), p.b.Max(), p.b.ValueAtQuantile(99))
		}
	}
	// The progress lines are those intervals: one each.
	if lines := strings.Count(r.stderr, " ops/s  errors "); lines != measured {
		t.Errorf("%d progress lines for %d intervals:\n%s", lines, measured, r.stderr)
	}
}
