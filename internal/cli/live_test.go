package cli

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/txload/txload/internal/pgtest"
)

var liveLine = regexp.MustCompile(`live page: (http://\S+/)\n`)

// waitLive waits for the live page's URL on a run's stderr.
func waitLive(t *testing.T, stderr *syncBuffer, done <-chan int) string {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		if m := liveLine.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("exit %d before printing the live page's URL\n%s", code, stderr.String())
		case <-deadline:
			t.Fatalf("no live page's URL on stderr:\n%s", stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// pageState is what the live page shows at a moment: its version, its
// status line, and its text and charts without the status line.
type pageState struct {
	Version string `json:"version"`
	Status  string `json:"status"`
	Text    string `json:"text"`
	Points  []int  `json:"points"`
}

const readState = `(() => {
	const b = document.body.cloneNode(true), st = b.querySelector("#live-status");
	if (st) st.remove();
	return {version: document.body.dataset.liveVersion || "", status: st ? st.textContent : "",
		text: b.innerText, points: Array.from(b.querySelectorAll("svg.plot")).map(s => +s.dataset.points)};
})()`

// The live page of a 10 s run, watched in Chromium as a user would: it
// makes no request but to its own server, it is drawn again at least 5
// times while the run goes, and its last state is the page --html writes,
// text and charts, once the run ends (the run waits for the watching page
// to fetch it before it exits). It runs alone: it counts what a second
// of a busy machine holds.
func TestLivePageInChromium(t *testing.T) {
	pgtest.OutsideRace(t, "chromium's rendering")
	chromium(t)
	url := srv.NewDatabase(t)
	page := filepath.Join(t.TempDir(), "final.html")
	// The browser first, ready when the page is.
	var root string
	b := browseURL(t, "about:blank", 1000, func(u string) bool { return u == "about:blank" || root != "" && strings.HasPrefix(u, root) })
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- txloadTo(t.Context(), nil, &stdout, &stderr, "run", "bank", "--url", url, "--accounts", "1000", "--rate", "200",
			"--duration", "10s", "--live", "127.0.0.1:0", "--html", page)
	}()
	root = waitLive(t, &stderr, done)
	if err := chromedp.Do(b.ctx, chromedp.Navigate(root), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	var states []pageState
	code, ended := -1, time.Time{}
	for {
		st, err := chromedp.Run(b.ctx, chromedp.Evaluate[pageState](readState))
		if err != nil {
			t.Fatalf("chromium: %v", err)
		}
		if len(states) == 0 || st.Version != states[len(states)-1].Version {
			states = append(states, st)
			t.Logf("%s version %s: %s", time.Now().Format("15:04:05.000"), st.Version, st.Status)
		}
		if strings.Contains(st.Status, "final page") {
			break
		}
		select {
		case code = <-done:
			ended = time.Now()
		default:
		}
		if !ended.IsZero() && time.Since(ended) > 5*time.Second {
			t.Fatalf("the run ended (exit %d) 5 s ago and the page is not final: %q", code, st.Status)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if code < 0 {
		code = <-done
	}
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	b.check(t)
	var running []string
	for _, st := range states {
		if strings.Contains(st.Status, "under way") {
			running = append(running, st.Version)
		}
	}
	t.Logf("%d versions seen, %d while the run was under way", len(states), len(running))
	if len(running) < 5 {
		t.Errorf("the page was drawn again %d times while the run went (versions %v), want at least 5", len(running), running)
	}
	last := states[len(states)-1]

	// The --html page, in the same browser.
	if err := chromedp.Do(b.ctx, chromedp.Navigate("file://"+page), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	want, err := chromedp.Run(b.ctx, chromedp.Evaluate[pageState](readState))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if last.Text != want.Text {
		t.Errorf("the live page's last text differs from --html's:\n--- live\n%s\n--- html\n%s", last.Text, want.Text)
	}
	if !slices.Equal(last.Points, want.Points) || len(want.Points) == 0 {
		t.Errorf("the live page's last charts have %v points, --html's %v", last.Points, want.Points)
	}
	// The server stopped with the run.
	if _, err := http.Get(root); err == nil {
		t.Errorf("the live page is still served after the run")
	}
}

// The live page polled over HTTP as its script polls it, every 100 ms,
// while a sweep, a lag run and a failover run (under the race detector
// too: the page reads the spools the run appends to): each answer is the
// page or 204, the page is drawn again as the run goes, and the final page
// is --html's with its status line. The sweep's page is served by the
// --metrics-addr server, the others' by --live.
func TestLivePageWhileRunning(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		args     []string
		versions int   // drawings at least, while the run went
		codes    []int // exit codes it may end with
	}{
		{"sweep", []string{"sweep", "bank", "--url", "", "--isolation", "rc", "--accounts", "1000", "--slo", "p99<=10s", "--max-error-rate", "1",
			"--start", "50", "--factor", "2", "--step-duration", "2s", "--step-warmup", "0s", "--max-steps", "2", "--progress", "200ms",
			"--metrics-addr", "127.0.0.1:0"}, 3, []int{1}}, // a step that fell behind on a busy machine: no rate found
		// 30 ops/s: the page is the test, not the rate (100 fell behind
		// on a busy CI machine, 16 of 400 never started: exit 1).
		{"lag", []string{"lag", "--workload", "tpcb-like", "--rate", "30", "--duration", "4s", "--progress", "0", "--live", "127.0.0.1:0"}, 3, nil},
		// async loses the commits the primary had not shipped: exit 1.
		{"failover", []string{"failover", "tpcb-like", "--replication", "async", "--at", "2s", "--duration", "4s", "--progress", "500ms",
			"--live", "127.0.0.1:0"}, 3, []int{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			page := filepath.Join(t.TempDir(), c.name+".html")
			args := append(slices.Clone(c.args), "--html", page)
			if i := slices.Index(args, "--url"); i >= 0 {
				args[i+1] = srv.NewDatabase(t)
			}
			env := map[string]string{"TXLOAD_CACHE_DIR": os.Getenv("TXLOAD_CACHE_DIR")}
			var stdout, stderr syncBuffer
			done := make(chan int, 1)
			go func() { done <- txloadTo(t.Context(), env, &stdout, &stderr, args...) }()
			root := waitLive(t, &stderr, done)
			versions := map[string]bool{}
			var last string
			code := -1
			for code < 0 {
				select {
				case code = <-done:
					continue
				default:
				}
				resp, err := http.Get(root + "live?v=0&id=test")
				if err != nil {
					break // the run ended and its server with it
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || (resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent) {
					t.Fatalf("live: %s %v", resp.Status, err)
				}
				if resp.StatusCode == http.StatusOK {
					versions[resp.Header.Get("X-Live-Version")] = true
					last = string(b)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if code < 0 {
				code = <-done
			}
			if code != 0 && !slices.Contains(c.codes, code) {
				t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
			}
			t.Logf("%d versions of the page served while it ran, exit %d", len(versions), code)
			if len(versions) < c.versions {
				t.Errorf("%d versions of the page during the run, want at least %d: drawn again as it went", len(versions), c.versions)
			}
			html, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			status := regexp.MustCompile(`<p id="live-status" class="live">[^<]*</p>`)
			body := func(s string) string {
				s = status.ReplaceAllString(s, "")
				if i := strings.Index(s, "<h1>"); i >= 0 {
					return s[i:]
				}
				return s
			}
			if !strings.Contains(last, "this is its final page") || body(last) != body(string(html)) {
				t.Errorf("the last page served is not --html's:\n--- live\n%.2000s\n--- html\n%.2000s", body(last), body(string(html)))
			}
		})
	}
}
