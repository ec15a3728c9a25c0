package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"image"
	"image/color"
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/txload/txload/internal/pgtest"
)

var screenshotTo = flag.String("screenshot", "", "TestHTMLReportInChromium: save the page's screenshot to this file")

// chromium finds Debian's Chromium, installing it as root when apt-get can.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := exec.LookPath("apt-get"); err == nil && os.Geteuid() == 0 {
		cmd := exec.Command("apt-get", "install", "-y", "--no-install-recommends", "chromium")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err == nil {
			if p, err := exec.LookPath("chromium"); err == nil {
				return p
			}
		} else {
			t.Logf("apt-get install chromium: %v\n%s", err, out)
		}
	}
	t.Skip("no chromium: install Debian's chromium package (apt-get install chromium) to test the HTML report in a browser")
	return ""
}

// reportDocs makes the documents of real runs: bank at two isolation levels
// in open loop (failures, retries, lag, sojourn against remote), and a
// sweep. The sweep's objective is loose and its first rate low: its first
// step must pass even on a machine busy with other tests (p99 288 ms at
// 100 ops/s was seen under the race detector, and in CI a first step of
// 100 ops/s completed only 94 of its 100 with 8 workers at 118 ms each).
func reportDocs(t *testing.T) (runs, sweep string) {
	t.Helper()
	url := srv.NewDatabase(t)
	dir := t.TempDir()
	runs, sweep = filepath.Join(dir, "bank.json"), filepath.Join(dir, "sweep.json")
	var wg sync.WaitGroup
	var r1, r2 result
	wg.Add(1)
	go func() {
		defer wg.Done()
		r1 = txload(t.Context(), nil, "run", "bank", "--url", url, "--isolation", "rc,serializable", "--accounts", "1000", "--selection", "10", "--rate", "400",
			"--concurrency", "8", "--duration", "4s", "--progress", "0", "--json", runs)
	}()
	url2 := srv.NewDatabase(t)
	r2 = txload(t.Context(), nil, "sweep", "bank", "--url", url2, "--isolation", "rc", "--slo", "p99<=2s", "--start", "20", "--factor", "3",
		"--step-duration", "2s", "--step-warmup", "0s", "--max-steps", "3", "--json", sweep)
	wg.Wait()
	if !r1.ran() {
		t.Fatalf("bank: exit %d\n%s\n%s", r1.code, r1.stdout, r1.stderr)
	}
	if r2.code != 0 {
		t.Fatalf("sweep: exit %d\n%s\n%s", r2.code, r2.stdout, r2.stderr)
	}
	return runs, sweep
}

// browser is a page opened in headless Chromium, and what it did.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string // console errors and warnings, exceptions
	requests []string // every request but the page's own
}

// browse opens page (a file) in Debian's headless Chromium, watching the
// console and the network.
func browse(t *testing.T, page string) *browser {
	t.Helper()
	pageURL := "file://" + page
	return browseURL(t, pageURL, 1280, func(u string) bool { return u == pageURL })
}

// browseURL opens pageURL in Debian's headless Chromium, a window width
// px wide, watching the console and the network: a request for which own
// is false is one the page must not make.
func browseURL(t *testing.T, pageURL string, width int, own func(string) bool) *browser {
	t.Helper()
	exe := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(width, 1000),
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	b := &browser{ctx: bctx}
	if err := chromedp.Listen(bctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				b.problems = append(b.problems, "console "+string(e.Type))
			}
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, "exception: "+e.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				b.problems = append(b.problems, "log: "+e.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			if !own(e.Request.URL) {
				b.requests = append(b.requests, e.Request.URL)
			}
		}
	}); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(pageURL), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return b
}

// check fails t on console errors and requests made.
func (b *browser) check(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) > 0 {
		t.Errorf("console errors: %v", b.problems)
	}
	if len(b.requests) > 0 {
		t.Errorf("the page made requests: %v", b.requests)
	}
}

// standsAlone fails t when the page would fetch or run anything.
func standsAlone(t *testing.T, page string) string {
	t.Helper()
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script", "http://", "https://", "<link", "@import", "<img"} {
		if i := strings.Index(string(html), bad); i >= 0 && !strings.HasPrefix(string(html[i:]), `http://www.w3.org/2000/svg"`) {
			t.Errorf("the page has %q: it must stand alone", bad)
		}
	}
	return string(html)
}

// clippedTexts lists the texts of the page's charts that are not wholly
// inside their chart, as Chromium lays them out.
const clippedTexts = `Array.from(document.querySelectorAll("svg.plot")).flatMap(s => {
	const vb = s.viewBox.baseVal;
	return Array.from(s.querySelectorAll("text")).filter(t => {
		const b = t.getBBox(), m = t.getCTM(), sm = s.getCTM().inverse();
		const p = new DOMPoint(b.x, b.y).matrixTransform(m).matrixTransform(sm), q = new DOMPoint(b.x + b.width, b.y + b.height).matrixTransform(m).matrixTransform(sm);
		const x0 = Math.min(p.x, q.x), x1 = Math.max(p.x, q.x), y0 = Math.min(p.y, q.y), y1 = Math.max(p.y, q.y);
		return x0 < -0.5 || y0 < -0.5 || x1 > vb.width + 0.5 || y1 > vb.height + 0.5;
	}).map(t => s.querySelector("title").textContent + ": " + t.textContent);
})`

// The HTML report of real runs, opened in headless Chromium: no console
// error, no request but the page itself, every chart has data and draws
// it, no text falls outside its chart, the sweep's verdict is there, and
// the screenshot is not blank.
func TestHTMLReportInChromium(t *testing.T) {
	pgtest.OutsideRace(t, "chromium's rendering")
	t.Parallel()
	chromium(t)
	runs, sweep := reportDocs(t)
	page := filepath.Join(t.TempDir(), "report.html")
	if r := txload(t.Context(), nil, "report", runs, sweep, "-o", page, "--title", "bank: read committed against serializable"); r.code != 0 {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	html := standsAlone(t, page)
	for _, want := range []string{"maximum sustainable rate: ", "SLO on response time (from the intended start): <b>p99&lt;=2s</b>", `<span class="pass">PASS</span>`} {
		if !strings.Contains(html, want) {
			t.Errorf("the sweep's section lacks %q", want)
		}
	}

	b := browse(t, page)
	type chartInfo struct {
		Title  string  `json:"title"`
		Points int     `json:"points"`
		Drawn  int     `json:"drawn"`
		Width  float64 `json:"width"`
	}
	charts, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]chartInfo](`Array.from(document.querySelectorAll("svg.plot")).map(s => ({
			title: s.querySelector("title").textContent,
			points: +s.dataset.points,
			drawn: s.querySelectorAll("polyline, g.series circle").length,
			width: Math.max(0, ...Array.from(s.querySelectorAll("polyline")).map(p => p.getBBox().width)),
		}))`))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	clipped, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](clippedTexts))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	shot, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	b.check(t)
	if len(clipped) > 0 {
		t.Errorf("texts outside their chart: %q", clipped)
	}
	want := []string{"transfer: throughput", "transfer: response time", "transfer: percentile spectrum", "transfer: response against service time",
		"transfer: schedule lag", "failed attempts by class, and retries", "sweep: latency against achieved throughput"}
	for _, w := range want {
		found := false
		for _, c := range charts {
			found = found || strings.HasPrefix(c.Title, w)
		}
		if !found {
			t.Errorf("no chart %q among %d", w, len(charts))
		}
	}
	for _, c := range charts {
		if c.Points == 0 || c.Drawn == 0 || (c.Drawn > 0 && c.Width == 0 && !strings.Contains(c.Title, "throughput")) {
			t.Errorf("chart %q has no data drawn: %d points, %d shapes, lines %.0f px wide", c.Title, c.Points, c.Drawn, c.Width)
		}
	}
	img, _, err := image.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("decoding the screenshot: %v", err)
	}
	colours := map[color.RGBA]int{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 0}]++
		}
	}
	if len(colours) < 50 || bounds.Dy() < 800 {
		t.Errorf("the screenshot (%v) has %d colours: blank", bounds, len(colours))
	}
	if *screenshotTo != "" {
		if err := os.WriteFile(*screenshotTo, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Two runs in one report (txload report a.json b.json), as Chromium draws
// them: each run one colour (computed style) in every chart, the two
// distinct; each statistic one line style in every chart and run, and no
// two statistics of a run alike in a chart; each chart's legend names the
// runs drawn in it; the comparison table holds both.
func TestTwoRunReportInChromium(t *testing.T) {
	pgtest.OutsideRace(t, "chromium's rendering")
	t.Parallel()
	chromium(t)
	dir := t.TempDir()
	docs := []string{filepath.Join(dir, "rc.json"), filepath.Join(dir, "serializable.json")}
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i, iso := range []string{"rc", "serializable"} {
		url := srv.NewDatabase(t)
		wg.Go(func() {
			results[i] = txload(t.Context(), nil, "run", "bank", "--url", url, "--isolation", iso, "--accounts", "1000", "--selection", "10",
				"--rate", "300", "--concurrency", "8", "--duration", "3s", "--progress", "0", "--json", docs[i])
		})
	}
	wg.Wait()
	for _, r := range results {
		if !r.ran() {
			t.Fatalf("bank: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	}
	page := filepath.Join(dir, "two.html")
	if r := txload(t.Context(), nil, "report", docs[0], docs[1], "-o", page); r.code != 0 {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	html := standsAlone(t, page)
	if !strings.Contains(html, "<h2>Comparison</h2>") || !strings.Contains(html, "rc.json</th>") || !strings.Contains(html, "serializable.json</th>") {
		t.Errorf("no comparison of the two runs")
	}

	b := browse(t, page)
	type line struct {
		Chart  string `json:"chart"`
		Run    string `json:"run"`
		Stat   string `json:"stat"`
		Stroke string `json:"stroke"`
		Dash   string `json:"dash"`
		Width  string `json:"width"`
	}
	lines, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]line](`Array.from(document.querySelectorAll("svg.plot")).flatMap(s =>
		Array.from(s.querySelectorAll("g.series")).filter(g => g.querySelector("polyline")).map(g => {
			const cs = getComputedStyle(g.querySelector("polyline"));
			return {chart: s.querySelector("title").textContent, run: g.dataset.run, stat: g.dataset.stat, stroke: cs.stroke, dash: cs.strokeDasharray, width: cs.strokeWidth};
		}))`))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	keys, err := chromedp.Run(b.ctx, chromedp.Evaluate[map[string][]string](`Object.fromEntries(Array.from(document.querySelectorAll("svg.plot")).map(s =>
		[s.querySelector("title").textContent, Array.from(s.querySelectorAll("text.key")).map(t => t.textContent)]))`))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	clipped, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](clippedTexts))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	b.check(t)
	if len(clipped) > 0 {
		t.Errorf("texts outside their chart: %q", clipped)
	}
	runColor, statStyle := map[string]string{}, map[string]string{}
	type chartRun struct{ chart, run string }
	styles := map[chartRun]map[string]string{}
	for _, l := range lines {
		if prev, ok := runColor[l.Run]; ok && prev != l.Stroke {
			t.Errorf("%s: %s drawn in %s, elsewhere in %s", l.Chart, l.Run, l.Stroke, prev)
		}
		runColor[l.Run] = l.Stroke
		style := l.Dash + " " + l.Width
		if prev, ok := statStyle[l.Stat]; ok && prev != style {
			t.Errorf("%s: %s of %s drawn %q, elsewhere %q", l.Chart, l.Stat, l.Run, style, prev)
		}
		statStyle[l.Stat] = style
		cr := chartRun{l.Chart, l.Run}
		if styles[cr] == nil {
			styles[cr] = map[string]string{}
		}
		if other, ok := styles[cr][l.Dash]; ok && other != l.Stat {
			t.Errorf("%s: %s and %s of %s look alike (dashes %q)", l.Chart, other, l.Stat, l.Run, l.Dash)
		}
		styles[cr][l.Dash] = l.Stat
	}
	if len(runColor) != 2 || runColor["rc.json"] == "" || runColor["rc.json"] == runColor["serializable.json"] {
		t.Fatalf("run colours %v: want rc.json and serializable.json, each its own", runColor)
	}
	for _, want := range []string{"response p50", "response p99", "service p50", "service p99", "p50", "p95", "p99", "max", "ok/s"} {
		if _, ok := statStyle[want]; !ok {
			t.Errorf("no line of %s drawn: %v", want, statStyle)
		}
	}
	for cr := range styles {
		if !slices.Contains(keys[cr.chart], cr.run) {
			t.Errorf("%s: the legend %q does not name %s, drawn there", cr.chart, keys[cr.chart], cr.run)
		}
	}
}

// --html on run writes the page `txload report` draws from the run's
// --json: the same charts, with no second step.
func TestHTMLOnRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	page, doc := filepath.Join(dir, "run.html"), filepath.Join(dir, "run.json")
	// Two like runs: one with --html alone (its charts over time need the
	// intervals, kept without --json too), one with --json for `report`.
	url := srv.NewDatabase(t)
	for _, out := range [][]string{{"--html", page}, {"--json", doc}} {
		r := txload(t.Context(), nil, append([]string{"run", "bank", "--url", url, "--init", "keep", "--accounts", "1000",
			"--rate", "200", "--duration", "2s", "--progress", "1s"}, out...)...)
		if !r.ran() {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, "wrote "+out[1]) {
			t.Errorf("stderr does not say %s was written:\n%s", out[1], r.stderr)
		}
	}
	ours, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(dir, "report.html")
	if r := txload(t.Context(), nil, "report", doc, "-o", theirs); r.code != 0 {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	want, err := os.ReadFile(theirs)
	if err != nil {
		t.Fatal(err)
	}
	// Both pages draw the same charts of the same run.
	if c, w := strings.Count(string(ours), "<svg"), strings.Count(string(want), "<svg"); c == 0 || c != w {
		t.Errorf("--html has %d charts, txload report %d", c, w)
	}
	if !strings.HasPrefix(string(ours), "<!DOCTYPE html>") {
		t.Errorf("not an HTML page: %.60q", ours)
	}
	// The document records the server's settings as the server shows
	// them, and both pages show them.
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Server struct {
			Settings map[string]string `json:"settings"`
		} `json:"server"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	conn := pgtest.Conn(t, url)
	for _, name := range []string{"default_transaction_isolation", "synchronous_commit", "fsync", "full_page_writes", "max_connections", "shared_buffers"} {
		var shown string
		if err := conn.QueryRow(t.Context(), "SHOW "+name).Scan(&shown); err != nil {
			t.Fatal(err)
		}
		if got := d.Server.Settings[name]; got != shown {
			t.Errorf("the document records %s = %q; SHOW says %q", name, got, shown)
		}
		label := name
		if name == "default_transaction_isolation" {
			label = "default isolation"
		}
		row := "<td>" + label + `</td><td class="l">` + shown + "</td>"
		if !strings.Contains(string(ours), row) || !strings.Contains(string(want), row) {
			t.Errorf("a page lacks the row %q", row)
		}
	}
}
