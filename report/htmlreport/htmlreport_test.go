package htmlreport

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
)

// hourDoc is a document of a run of n one-second intervals, two operations.
func hourDoc(t testing.TB, n int) *report.Document {
	t.Helper()
	start := time.Unix(1_800_000_000, 0)
	g := metrics.NewRegistry([]string{"read", "write"}, start)
	r := g.NewRecorder()
	var ivs report.Intervals
	for i := range n {
		for j := range 50 {
			us := time.Duration(200+(i*31+j*17)%5000) * time.Microsecond
			r.Success(0, true, us, us, 0, 1)
			if j%5 == 0 {
				r.Success(1, true, 3*us, 2*us, us, 1+j%2)
			}
		}
		if i%60 == 0 {
			r.Error(1, true, metrics.Serialization)
		}
		end := start.Add(time.Duration(i+1) * time.Second)
		iv, err := g.Tick(end)
		if err != nil {
			t.Fatal(err)
		}
		ivs.Add(iv, end, false)
	}
	total := g.Total()
	total.Elapsed = time.Duration(n) * time.Second
	rd, err := report.NewRunDoc(total)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Intervals, err = ivs.Docs(); err != nil {
		t.Fatal(err)
	}
	return &report.Document{Version: "test", Command: "run", Workload: "w",
		Config: map[string]any{"concurrency": "8", "urls": []any{"postgres://u:secret@h/db"}}, Runs: []report.RunDoc{rd}}
}

// 25 minutes of one-second intervals are drawn with at most MaxPoints points
// a line, each the exact merge of its intervals: no operation is lost.
func TestLongRunIsMergedIntoWindows(t *testing.T) {
	doc := hourDoc(t, 1500)
	var b bytes.Buffer
	if err := Write(&b, []*report.Document{doc}, Options{Names: []string{"hour.json"}}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, m := range regexp.MustCompile(`data-name="[^"]*" data-points="(\d+)"`).FindAllStringSubmatch(page, -1) {
		if n, _ := strconv.Atoi(m[1]); n > MaxPoints {
			t.Fatalf("a line has %d points, more than %d", n, MaxPoints)
		}
	}
	ws, err := windows(&doc.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	var ok int64
	for _, w := range ws {
		ok += w.snap.Ops[0].OK
	}
	if len(ws) != 500 || ok != doc.Runs[0].Ops[0].OK || ws[len(ws)-1].at != 1500 {
		t.Fatalf("%d windows holding %d ok (the run has %d), the last at %gs", len(ws), ok, doc.Runs[0].Ops[0].OK, ws[len(ws)-1].at)
	}
	if strings.Contains(page, "secret") {
		t.Fatal("the page shows a password")
	}
}

func TestRedact(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"postgres://u:secret@h:5432/db?sslmode=disable", "postgres://u:xxxxx@h:5432/db?sslmode=disable"},
		{"postgres://h/db?password=secret&sslmode=disable", "postgres://h/db?password=xxxxx&sslmode=disable"},
		{"host=h user=u password=secret dbname=d", "host=h user=u password=xxxxx dbname=d"},
		{"host=h password='se cret' dbname=d", "host=h password=xxxxx dbname=d"},
		{"10s", "10s"},
	} {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// BenchmarkHour is the time to write the report of a one-hour run (3600
// one-second intervals, two operations).
func BenchmarkHour(b *testing.B) {
	doc := hourDoc(b, 3600)
	var size int
	for b.Loop() {
		var buf bytes.Buffer
		if err := Write(&buf, []*report.Document{doc}, Options{}); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size)/1024, "KB")
}
