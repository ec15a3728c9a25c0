package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/txload/txload/internal/pgtest"
)

// pageKind is one kind of page: the runs that make its documents, and
// what they printed.
type pageKind struct {
	name string
	page string // the HTML file
	text string // the text reports of its runs (stdout)
	runs int    // the runs it overlays
}

// pageRun is a command whose document a page draws: exit codes other than
// 0 it may end with (a sweep finding no rate, a failover losing commits,
// a saturated run), and how long it may run before it is interrupted. An
// open loop that fell behind its rate on a busy machine (result.ran)
// still makes its page: what the page shows is what the test is about,
// not the rate.
type pageRun struct {
	args      []string
	codes     []int
	interrupt time.Duration
}

// makePages runs the commands of every kind of page, several at a time,
// each on its own database (lag and failover on embedded servers of their
// own), and draws each page with txload report.
func makePages(t *testing.T) []*pageKind {
	t.Helper()
	dir := t.TempDir()
	doc := func(name string) string { return filepath.Join(dir, name+".json") }
	bank := func(extra ...string) []string {
		return append([]string{"run", "bank", "--accounts", "1000", "--selection", "10", "--progress", "0"}, extra...)
	}
	runs := map[string]pageRun{
		"serializable": {args: bank("--isolation", "serializable", "--rate", "400", "--duration", "4s")},
		"rc":           {args: bank("--isolation", "rc", "--rate", "400", "--duration", "4s")},
		"sweep": {args: []string{"sweep", "select-only", "--init", "fresh", "--slo", "p99<=200ms", "--start", "300", "--factor", "2", "--step-duration", "1s",
			"--step-warmup", "0s", "--max-steps", "3"}, codes: []int{1}},
		"vote":        {args: []string{"run", "vote", "--duration", "3s", "--progress", "0"}},
		"pgio":        {args: []string{"run", "pgio", "--init", "fresh", "--scale", "2000", "--update-pct", "0", "--duration", "3s"}},
		"append":      {args: []string{"run", "append", "--duration", "3s", "--progress", "0"}},
		"interrupted": {args: bank("--duration", "1m"), interrupt: 3 * time.Second, codes: []int{ExitInterrupted}},
		"saturated":   {args: bank("--isolation", "serializable", "--rate", "100000", "--duration", "3s"), codes: []int{1}},
		"900":         {args: bank("--rate", "300", "--duration", "9s", "--progress", "10ms")},
		"lag":         {args: []string{"lag", "--workload", "tpcb-like", "--rate", "200", "--duration", "4s", "--progress", "0"}},
		"failover": {args: []string{"failover", "tpcb-like", "--replication", "async,sync", "--hold-standby", "1s", "--at", "2s",
			"--duration", "4s", "--progress", "0"}, codes: []int{1}},
	}
	texts, codes := map[string]string{}, map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 3) // three runs at once on two cores
	for name, pr := range runs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			args := append(slices.Clone(pr.args), "--json", doc(name))
			if args[0] == "run" || args[0] == "sweep" {
				args = append(args, "--url", srv.NewDatabase(t))
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if pr.interrupt > 0 {
				time.AfterFunc(pr.interrupt, cancel)
			}
			env := map[string]string{"TXLOAD_CACHE_DIR": os.Getenv("TXLOAD_CACHE_DIR")}
			r := txload(ctx, env, args...)
			if _, err := os.Stat(doc(name)); err != nil || r.code != 0 && !slices.Contains(pr.codes, r.code) && !r.ran() {
				t.Errorf("%s: exit %d, %v\n%s\n%s", strings.Join(args, " "), r.code, err, r.stdout, r.stderr)
			}
			mu.Lock()
			texts[name], codes[name] = r.stdout, r.code
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var kinds []*pageKind
	for _, k := range []struct {
		name string
		docs []string
	}{
		{"run", []string{"serializable"}}, {"compare", []string{"rc", "serializable"}}, {"sweep", []string{"sweep"}}, {"lag", []string{"lag"}},
		{"failover", []string{"failover"}}, {"vote", []string{"vote"}}, {"pgio", []string{"pgio"}}, {"append", []string{"append"}},
		{"interrupted", []string{"interrupted"}}, {"saturated", []string{"saturated"}}, {"900 intervals", []string{"900"}},
	} {
		pk := &pageKind{name: k.name, page: filepath.Join(dir, strings.ReplaceAll(k.name, " ", "-")+".html")}
		args := []string{"report"}
		failed := false
		for _, d := range k.docs {
			args = append(args, doc(d))
			pk.text += texts[d]
			failed = failed || codes[d] == ExitFailed
		}
		// A document whose run failed (a failover that lost commits, a
		// rate not kept) fails its report after the page is written.
		if r := txload(t.Context(), nil, append(args, "-o", pk.page)...); r.code != 0 && !(r.code == ExitFailed && failed) {
			t.Fatalf("%s: report: exit %d\n%s", k.name, r.code, r.stderr)
		}
		pk.runs = len(k.docs)
		if k.name == "failover" {
			pk.runs = 2 // async and sync
		}
		kinds = append(kinds, pk)
	}
	return kinds
}

// headlineFigures are the figures of a text report that its page must
// show: every number of it (with its unit), but those of the open loop's
// table in µs (the same percentiles the page gives in its unit), of the
// failover's lines of single commits and the rows they wrote (the page
// lists the commits by writer and sequence, --json has their rows), and
// the times of day the failover's steps happened at (the page gives the
// steps' durations and draws them on its timeline).
func headlineFigures(text string) map[string]string {
	out := map[string]string{}
	clock := regexp.MustCompile(`\d\d:\d\d:\d\d\.\d+`)
	commit, row := regexp.MustCompile(`^\d+/\d+\s+(probe|client)`), regexp.MustCompile(`^\w+ \{.*\}$`)
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "# op "), strings.HasSuffix(trimmed, "(all µs)"), commit.MatchString(trimmed), row.MatchString(trimmed):
			continue
		}
		for _, f := range figureToken.FindAllString(clock.ReplaceAllString(line, ""), -1) {
			if _, ok := out[f]; !ok {
				out[f] = trimmed
			}
		}
	}
	return out
}

var figureToken = regexp.MustCompile(`[+-]?\d+(?:\.\d+)?(?:µs|ms|s|%|/s|kB|B)?`)

// The page of every kind of run, in Chromium at 800 and 1400 px: every
// headline figure of the text report is on it, no element runs past the
// window's width (tables wrap, charts scale), the runs overlaid have each
// its own colour, and no two texts of a chart overlap. One browser, the
// pages one after the other.
func TestPagesInChromium(t *testing.T) {
	pgtest.OutsideRace(t, "chromium's rendering")
	if testing.Short() {
		t.Skip("runs every kind of page, lag's and failover's embedded servers among them")
	}
	t.Parallel()
	chromium(t)
	kinds := makePages(t)
	b := browseURL(t, "about:blank", 1400, func(u string) bool { return u == "about:blank" || strings.HasPrefix(u, "file://") })
	type state struct {
		Text     string     `json:"text"`
		Width    float64    `json:"width"`
		Scroll   float64    `json:"scroll"`
		Outside  []string   `json:"outside"`
		Overlaps []string   `json:"overlaps"`
		Colours  [][]string `json:"colours"` // chart, run, stroke
	}
	const inspect = `(() => {
		const W = document.documentElement.clientWidth, out = [], over = [], colours = [];
		for (const e of document.body.querySelectorAll("*")) {
			const r = e.getBoundingClientRect();
			if (r.width === 0 && r.height === 0) continue;
			if (r.left < -0.5 || r.right > W + 0.5) out.push(e.tagName + (e.className && e.className.baseVal === undefined ? "." + e.className : "") + " " + (e.textContent || "").slice(0, 60) + " [" + r.left.toFixed(1) + ", " + r.right.toFixed(1) + "]");
		}
		for (const s of document.querySelectorAll("svg.plot")) {
			const title = s.querySelector("title").textContent;
			const boxes = Array.from(s.querySelectorAll("text")).filter(t => t.textContent.trim() !== "").map(t => [t.textContent, t.getBoundingClientRect()]);
			for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
				const [a, p] = boxes[i], [c, q] = boxes[j];
				if (p.left < q.right - 0.5 && q.left < p.right - 0.5 && p.top < q.bottom - 0.5 && q.top < p.bottom - 0.5)
					over.push(title + ": " + JSON.stringify(a) + " and " + JSON.stringify(c));
			}
			for (const g of s.querySelectorAll("g.series")) {
				const shape = g.querySelector("polyline, circle, rect");
				if (shape && g.dataset.run) colours.push([title, g.dataset.run, getComputedStyle(shape).stroke]);
			}
		}
		return {text: document.body.innerText, width: W, scroll: document.documentElement.scrollWidth, outside: out, overlaps: over, colours: colours};
	})()`
	for _, width := range []int{800, 1400} {
		for _, k := range kinds {
			t.Run(fmt.Sprintf("%s/%d", k.name, width), func(t *testing.T) {
				if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(int64(width), 1000), chromedp.Navigate("file://"+k.page), chromedp.WaitReady("body")); err != nil {
					t.Fatalf("chromium: %v", err)
				}
				st, err := chromedp.Run(b.ctx, chromedp.Evaluate[state](inspect))
				if err != nil {
					t.Fatalf("chromium: %v", err)
				}
				shown := map[string]bool{}
				for _, f := range figureToken.FindAllString(st.Text, -1) {
					shown[f] = true
				}
				var missing []string
				for f, line := range headlineFigures(k.text) {
					if !shown[f] {
						missing = append(missing, fmt.Sprintf("%s (%s)", f, line))
					}
				}
				slices.Sort(missing)
				if len(missing) > 0 {
					t.Errorf("figures of the text not on the page:\n  %s", strings.Join(missing, "\n  "))
				}
				if st.Scroll > st.Width+0.5 || len(st.Outside) > 0 {
					t.Errorf("the page is %g px wide in a window of %g: past its width:\n  %s", st.Scroll, st.Width, strings.Join(st.Outside, "\n  "))
				}
				if len(st.Overlaps) > 0 {
					t.Errorf("texts overlap:\n  %s", strings.Join(st.Overlaps, "\n  "))
				}
				runColour, colourRun := map[string]string{}, map[string]string{}
				for _, c := range st.Colours {
					run, stroke := c[1], c[2]
					if prev, ok := runColour[run]; ok && prev != stroke && !strings.Contains(c[0], "sweep") {
						t.Errorf("%s: %s drawn in %s, elsewhere in %s", c[0], run, stroke, prev)
					}
					runColour[run] = stroke
					if other, ok := colourRun[stroke]; ok && other != run && !strings.Contains(c[0], "sweep") {
						t.Errorf("%s: %s and %s drawn in one colour, %s", c[0], run, other, stroke)
					}
					colourRun[stroke] = run
				}
				if len(runColour) < k.runs {
					t.Errorf("%d runs drawn (%v), want %d", len(runColour), runColour, k.runs)
				}
			})
		}
	}
	b.check(t)
}
