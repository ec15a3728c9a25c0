package cli

import (
	"bytes"
	"context"
	"flag"
	"image"
	"image/color"
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
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

var screenshotTo = flag.String("screenshot", "", "TestHTMLReportInChromium: save the page's screenshot to this file (docs/html-report.png)")

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
// sweep. The sweep's objective is loose: its first step must pass even on
// a machine busy with other tests under the race detector (p99 288 ms at
// 100 ops/s was seen there).
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
	r2 = txload(t.Context(), nil, "sweep", "bank", "--url", url2, "--isolation", "rc", "--slo", "p99<=2s", "--start", "100", "--factor", "3",
		"--step-duration", "1s", "--step-warmup", "0s", "--max-steps", "3", "--json", sweep)
	wg.Wait()
	if r1.code != 0 {
		t.Fatalf("bank: exit %d\n%s\n%s", r1.code, r1.stdout, r1.stderr)
	}
	if r2.code != 0 {
		t.Fatalf("sweep: exit %d\n%s\n%s", r2.code, r2.stdout, r2.stderr)
	}
	return runs, sweep
}

// The HTML report of real runs, opened in headless Chromium: no console
// error, no request but the page itself, every chart has data and draws
// it, and the screenshot is not blank.
func TestHTMLReportInChromium(t *testing.T) {
	pgtest.OutsideRace(t, "chromium's rendering")
	t.Parallel()
	browser := chromium(t)
	runs, sweep := reportDocs(t)
	page := filepath.Join(t.TempDir(), "report.html")
	if r := txload(t.Context(), nil, "report", runs, sweep, "-o", page, "--title", "bank: read committed against serializable"); r.code != 0 {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script", "http://", "https://", "<link", "@import", "<img"} {
		if i := strings.Index(string(html), bad); i >= 0 && !strings.HasPrefix(string(html[i:]), `http://www.w3.org/2000/svg"`) {
			t.Errorf("the page has %q: it must stand alone", bad)
		}
	}

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000),
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	var mu sync.Mutex
	var problems, requests []string
	pageURL := "file://" + page
	if err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				problems = append(problems, "console "+string(e.Type))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				problems = append(problems, "log: "+e.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			if e.Request.URL != pageURL {
				requests = append(requests, e.Request.URL)
			}
		}
	}); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	type chartInfo struct {
		Title  string  `json:"title"`
		Points int     `json:"points"`
		Drawn  int     `json:"drawn"`
		Width  float64 `json:"width"`
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(pageURL), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	charts, err := chromedp.Run(bctx, chromedp.Evaluate[[]chartInfo](`Array.from(document.querySelectorAll("svg.plot")).map(s => ({
			title: s.querySelector("title").textContent,
			points: +s.dataset.points,
			drawn: s.querySelectorAll("polyline, g.series circle").length,
			width: Math.max(0, ...Array.from(s.querySelectorAll("polyline")).map(p => p.getBBox().width)),
		}))`))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("console errors: %v", problems)
	}
	if len(requests) > 0 {
		t.Errorf("the page made requests: %v", requests)
	}
	want := []string{"transfer: throughput", "transfer: response time", "transfer: percentile spectrum", "transfer: sojourn against remote time",
		"transfer: schedule lag", "failed attempts by class, and retries", "sweep: latency against throughput"}
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
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 0}]++
		}
	}
	if len(colours) < 50 || b.Dy() < 800 {
		t.Errorf("the screenshot (%v) has %d colours: blank", b, len(colours))
	}
	if *screenshotTo != "" {
		if err := os.WriteFile(*screenshotTo, shot, 0o644); err != nil {
			t.Fatal(err)
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
		if r.code != 0 {
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
}
