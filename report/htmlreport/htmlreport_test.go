package htmlreport

import (
	"bytes"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
)

// hourDoc is a document of a run of n one-second intervals, two operations.
// Five distinct intervals recorded for real repeat (n must be a multiple of
// five): ticking and encoding thousands of histograms would cost the test
// more than what it tests.
func hourDoc(t testing.TB, n int) *report.Document {
	t.Helper()
	const distinct = 5
	if n%distinct != 0 {
		t.Fatalf("hourDoc(%d): not a multiple of %d", n, distinct)
	}
	start := time.Unix(1_800_000_000, 0)
	g := metrics.NewRegistry([]string{"read", "write"}, start)
	r := g.NewRecorder()
	ivs := newIntervals(t)
	for i := range distinct {
		for j := range 50 {
			us := time.Duration(200+(i*31+j*17)%5000) * time.Microsecond
			r.Success(0, true, us, us, 0, 1)
			if j%5 == 0 {
				r.Success(1, true, 3*us, 2*us, us, 1+j%2)
			}
		}
		if i == 0 {
			r.Error(1, true, metrics.Serialization)
		}
		end := start.Add(time.Duration(i+1) * time.Second)
		iv, err := g.Tick(end)
		if err != nil {
			t.Fatal(err)
		}
		ivs.Add(iv, end, false)
	}
	five := collected(t, ivs)
	// The total: the five intervals' n/5 times over.
	total := metrics.NewSnapshot([]string{"read", "write"})
	for i, o := range g.Total().Ops {
		to := total.Ops[i]
		m := int64(n / distinct)
		to.OK, to.Retried, to.Retries = o.OK*m, o.Retried*m, o.Retries*m
		for c := range o.Errors {
			to.Errors[c], to.Failed[c] = o.Errors[c]*m, o.Failed[c]*m
		}
		for _, h := range [][2]*hdr.Histogram{{to.Response, o.Response}, {to.Service, o.Service}, {to.Lag, o.Lag}} {
			for _, b := range h[1].Distribution() {
				if b.Count > 0 {
					if err := h[0].RecordValues(b.From, b.Count*m); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	total.Elapsed = time.Duration(n) * time.Second
	rd, err := report.NewRunDoc(total)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		iv := five[i%distinct]
		iv.Start, iv.End = start.Add(time.Duration(i)*time.Second), start.Add(time.Duration(i+1)*time.Second)
		rd.Intervals = append(rd.Intervals, iv)
	}
	return &report.Document{Version: "test", Command: "run", Workload: "w",
		Config: map[string]any{"concurrency": "8", "urls": []any{"postgres://u:secret@h/db"}}, Runs: []report.RunDoc{rd}}
}

// newIntervals is a collector of intervals whose spool goes when t ends.
func newIntervals(t testing.TB) *report.Intervals {
	t.Helper()
	ivs, err := report.NewIntervals(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ivs.Close() })
	return ivs
}

// collected reads back the intervals ivs collected.
func collected(t testing.TB, ivs *report.Intervals) []report.IntervalDoc {
	t.Helper()
	var out []report.IntervalDoc
	err := (&report.RunDoc{Spooled: ivs}).EachInterval(func(_ int, iv *report.IntervalDoc) error {
		out = append(out, *iv)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hdrDecoded is an interval decoded by HdrHistogram's own decoder, apart
// from the report's.
func hdrDecoded(t *testing.T, iv report.IntervalDoc) *metrics.Snapshot {
	t.Helper()
	s := &metrics.Snapshot{}
	for _, od := range iv.Ops {
		o := &metrics.OpStats{Name: od.Name, OK: od.OK, Retries: od.Retries, Retried: od.Retried}
		for _, c := range metrics.Classes() {
			o.Errors[c], o.Failed[c] = od.Errors[c.String()], od.Failed[c.String()]
		}
		for _, p := range []struct {
			enc string
			to  **hdr.Histogram
		}{{od.Response, &o.Response}, {od.Service, &o.Service}, {od.Lag, &o.Lag}} {
			h, err := hdr.Decode([]byte(p.enc))
			if err != nil {
				t.Fatal(err)
			}
			*p.to = h
		}
		s.Ops = append(s.Ops, o)
	}
	return s
}

// 25 minutes of one-second intervals are drawn with at most MaxPoints points
// a line, each the exact merge of its intervals: no operation is lost. Each
// window's band is the range of its own intervals' ok/s and p99.
func TestLongRunIsMergedIntoWindows(t *testing.T) {
	const n = 1500
	doc := hourDoc(t, n)
	var b bytes.Buffer
	if err := Write(&b, []*report.Document{doc}, Options{Names: []string{"hour.json"}}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	lines := regexp.MustCompile(`class="series"[^>]*data-points="(\d+)"`).FindAllStringSubmatch(page, -1)
	if len(lines) == 0 {
		t.Fatal("no line over time")
	}
	for _, m := range lines {
		if n, _ := strconv.Atoi(m[1]); n > MaxPoints {
			t.Fatalf("a line has %d points, more than %d", n, MaxPoints)
		}
	}
	if !strings.Contains(page, `<polygon class="band"`) {
		t.Error("no band of the intervals a window holds")
	}
	rd := &doc.Runs[0]
	ws, _, err := windows(rd, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	group := (n + MaxPoints - 1) / MaxPoints
	if len(ws) != (n+group-1)/group || ws[len(ws)-1].at != n {
		t.Fatalf("%d windows, the last at %gs: want %d of %d intervals", len(ws), ws[len(ws)-1].at, (n+group-1)/group, group)
	}
	// Each window is its intervals merged: counts and percentiles as of
	// the merged histograms (checked on some windows: decoding is slow).
	var ok int64
	for k, w := range ws {
		ok += w.ops[0].ok
		if k%50 != 0 && k != len(ws)-1 {
			continue
		}
		want := metrics.NewSnapshot(rd.Names())
		okLo, okHi, p99Lo, p99Hi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
		for i := group * k; i < min(group*k+group, n); i++ {
			iv := hdrDecoded(t, rd.Intervals[i])
			if err := want.Merge(iv); err != nil {
				t.Fatal(err)
			}
			r := float64(iv.Ops[0].OK)
			okLo, okHi = math.Min(okLo, r), math.Max(okHi, r)
			q := ms(iv.Ops[0].Response.ValueAtQuantile(99))
			p99Lo, p99Hi = math.Min(p99Lo, q), math.Max(p99Hi, q)
		}
		all := want.Total("all")
		got := windowOf(want, w.at, w.secs)
		got.intervals = min(group*k+group, n) - group*k
		bd := w.ops[0].band
		w.ops[0].band, w.ops[1].band = nil, nil
		if w.secs != float64(group) || !reflect.DeepEqual(w, got) || w.errors != all.Errors || w.retries != all.Retries {
			t.Fatalf("window %d: %+v, its intervals merged: %+v", k, w, got)
		}
		if w.ops[1].response.at(100) != ms(want.Ops[1].Response.Max()) || w.ops[0].ok != want.Ops[0].OK {
			t.Fatalf("window %d: %+v", k, w)
		}
		if bd == nil || bd.okLo != okLo || bd.okHi != okHi || bd.p99Lo != p99Lo || bd.p99Hi != p99Hi {
			t.Fatalf("window %d: band %+v, want ok/s %g..%g, p99 %g..%g", k, bd, okLo, okHi, p99Lo, p99Hi)
		}
	}
	if ok != rd.Ops[0].OK {
		t.Fatalf("the windows hold %d ok, the run %d", ok, rd.Ops[0].OK)
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

// BenchmarkLivePage is the time to draw the page of a run of 1, 10 and 60
// minutes of 1-second intervals (two operations): what the live page costs
// the run at each interval a browser watches (bench/live-page measures it
// on a run).
func BenchmarkLivePage(b *testing.B) {
	for _, n := range []int{60, 600, 3600} {
		doc := hourDoc(b, n)
		b.Run(strconv.Itoa(n/60)+"min", func(b *testing.B) {
			for b.Loop() {
				if err := Write(io.Discard, []*report.Document{doc}, Options{Live: &Live{Version: 1, Status: "live"}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// growing is a run's intervals as a live run's spool is: a pointer, whose
// intervals grow between drawings.
type growing struct{ ivs []report.IntervalDoc }

func (g *growing) Len() int { return len(g.ivs) }

func (g *growing) Open() (report.Cursor[report.IntervalDoc], error) {
	return report.Slice[report.IntervalDoc](g.ivs).Open()
}

// A live page drawn again as its run grows, with a Cache, is the page
// drawn from scratch: at each size, across the sizes where a point starts
// to hold more intervals (159, 318), and over a warm-up.
func TestCacheDrawsTheSamePage(t *testing.T) {
	doc := hourDoc(t, 400)
	all := doc.Runs[0].Intervals
	all[0].Warmup = true
	src := &growing{}
	doc.Runs[0].Intervals, doc.Runs[0].Spooled = nil, src
	cache := &Cache{}
	for _, n := range []int{1, 2, 60, 158, 159, 160, 161, 300, 318, 319, 320, 400} {
		src.ivs = all[:n]
		var cached, fresh bytes.Buffer
		if err := Write(&cached, []*report.Document{doc}, Options{Cache: cache}); err != nil {
			t.Fatal(err)
		}
		if err := Write(&fresh, []*report.Document{doc}, Options{}); err != nil {
			t.Fatal(err)
		}
		if cached.String() != fresh.String() {
			t.Fatalf("%d intervals: the page drawn with the cache differs from the page drawn afresh", n)
		}
	}
}

// BenchmarkLivePageCached is BenchmarkLivePage's page drawn again, as the
// live page draws it at each interval, its windows kept from the drawing
// before.
func BenchmarkLivePageCached(b *testing.B) {
	for _, n := range []int{60, 600, 3600} {
		doc := hourDoc(b, n)
		src := &growing{ivs: doc.Runs[0].Intervals}
		doc.Runs[0].Intervals, doc.Runs[0].Spooled = nil, src
		cache := &Cache{}
		opts := Options{Live: &Live{Version: 1, Status: "live"}, Cache: cache}
		if err := Write(io.Discard, []*report.Document{doc}, opts); err != nil {
			b.Fatal(err)
		}
		b.Run(strconv.Itoa(n/60)+"min", func(b *testing.B) {
			for b.Loop() {
				if err := Write(io.Discard, []*report.Document{doc}, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
