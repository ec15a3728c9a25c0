package cli

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// figures reads the counts of a tpcb-like run's text report: the window's
// ok, failed and skipped, the warm-up's line, the drain's line, the
// offered line, and the audit's count of history rows (-1 where a line is
// absent).
type figures struct {
	ok, failed, skipped                int64
	warmup, warmupOK                   int64
	inFlight, drainOK, drainSkipped    int64
	offered, unstarted, rows, commited int64
}

var figureLines = []struct {
	re *regexp.Regexp
	to func(f *figures) []*int64
}{
	{regexp.MustCompile(`(?m)^tpcb-like: ([0-9]+) ok, ([0-9]+) failed`), func(f *figures) []*int64 { return []*int64{&f.ok, &f.failed} }},
	{regexp.MustCompile(`(?m)^  latency limit: ([0-9]+) skipped`), func(f *figures) []*int64 { return []*int64{&f.skipped} }},
	{regexp.MustCompile(`(?m)^  warm-up: ([0-9]+) operations? begun in the [0-9.]+s before the window, not in the figures below: ([0-9]+) committed and [0-9]+ failed$`),
		func(f *figures) []*int64 { return []*int64{&f.warmup, &f.warmupOK} }},
	{regexp.MustCompile(`(?m)^  drain: ([0-9]+) operations? in flight when the window ended, not in the figures below: ([0-9]+) committed and [0-9]+ failed in the [^ ]+ after it, [0-9]+ abandoned \(outcome unknown\)(?:; ([0-9]+) operations? skipped after it, later than --latency-limit)?$`),
		func(f *figures) []*int64 { return []*int64{&f.inFlight, &f.drainOK, &f.drainSkipped} }},
	{regexp.MustCompile(`(?m)^  offered ([0-9]+) operations?, ([0-9]+) never started$`), func(f *figures) []*int64 { return []*int64{&f.offered, &f.unstarted} }},
	{regexp.MustCompile(`(?m)per the history: ([0-9]+) rows? = ([0-9]+) committed \+ 0\)$`), func(f *figures) []*int64 { return []*int64{&f.rows, &f.commited} }},
}

// behindLine says the offered line's figures when more than 1% never
// started (a loaded machine, the race detector), in its place.
var behindLine = regexp.MustCompile(`(?m)^  BEHIND: the target of [0-9.e+]+ ops/s was not sustained: ([0-9]+) of ([0-9]+) scheduled operations`)

func textFigures(stdout string) figures {
	var f figures
	for _, l := range figureLines {
		m := l.re.FindStringSubmatch(stdout)
		for i, to := range l.to(&f) {
			*to = -1
			if m != nil && m[i+1] != "" {
				*to, _ = strconv.ParseInt(m[i+1], 10, 64)
			}
		}
	}
	if m := behindLine.FindStringSubmatch(stdout); m != nil {
		f.unstarted, _ = strconv.ParseInt(m[1], 10, 64)
		f.offered, _ = strconv.ParseInt(m[2], 10, 64)
	}
	return f
}

// The figures of a run's text add up, as its --json's do: with
// --latency-limit, the window's ok, failed and skipped, the drain's and
// the operations never started are every operation offered; with
// --warmup, the warm-up's line, the window's and the drain's committed
// are every row the audit counts; an instance of several says its own
// share of the rate beside its own workers, and names itself; counts of
// one are singular. On the old code the text's drain line left out what
// it skipped (and the window went on after its end), the warm-up's
// operations were in no line, the instance's header put the whole rate
// beside its own workers, and one client was "1 clients".
func TestFiguresAddUp(t *testing.T) {
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "tpcb", "--url", url); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		check func(t *testing.T, f figures, js string)
		lines []string
	}{
		{name: "latency limit", args: []string{"--rate", "20000", "--concurrency", "2", "--duration", "2s", "--latency-limit", "5ms",
			"--max-lag", "1m", "--drain-timeout", "1s"},
			check: func(t *testing.T, f figures, js string) {
				if f.skipped <= 0 || f.offered != 40000 {
					t.Fatalf("skipped %d offered %d: want some skipped of 40000", f.skipped, f.offered)
				}
				if sum := f.ok + f.failed + f.skipped + f.inFlight + max(f.drainSkipped, 0) + f.unstarted; sum != f.offered {
					t.Errorf("ok %d + failed %d + skipped %d + drain %d + %d skipped + never started %d = %d, want the %d offered",
						f.ok, f.failed, f.skipped, f.inFlight, f.drainSkipped, f.unstarted, sum, f.offered)
				}
			}},
		{name: "warm-up", args: []string{"--concurrency", "2", "--warmup", "1s", "--duration", "2s"},
			check: func(t *testing.T, f figures, js string) {
				if f.warmup <= 0 || f.rows <= 0 || f.warmupOK+f.ok+f.drainOK != f.rows {
					t.Errorf("warm-up %d committed + window %d + drain %d, the audit %d rows: want them equal",
						f.warmupOK, f.ok, f.drainOK, f.rows)
				}
				// The document has the warm-up on a line of its own too.
				var doc struct {
					Runs []struct {
						Warmup *struct{ Operations, Committed, Failed int64 }
					}
				}
				if b, err := os.ReadFile(js); err != nil || json.Unmarshal(b, &doc) != nil || len(doc.Runs) != 1 {
					t.Fatalf("reading %s: %v", js, err)
				}
				if w := doc.Runs[0].Warmup; w == nil || w.Operations != f.warmup || w.Committed != f.warmupOK || w.Failed != f.warmup-f.warmupOK {
					t.Errorf("the document's warm-up %+v, the text's %d operations, %d committed", w, f.warmup, f.warmupOK)
				}
			}},
		{name: "instance", args: []string{"--instance", "0/2", "--rate", "400", "--concurrency", "4", "--duration", "1s"},
			lines: []string{": open loop at 200 ops/s (poisson), 2 workers (instance 0 of 2: its share of 400 ops/s and 4 workers), 1.00s measured"}},
		{name: "one client", args: []string{"--concurrency", "1", "--duration", "1s"},
			lines: []string{": closed loop, 1 worker, 1.00s measured", "  connected 1 client in ", "  drain: 1 operation in flight when the window ended"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := jsonPath(t)
			args := append([]string{"run", "tpcb-like", "--url", url, "--init", "skip", "--progress", "0", "--json", js}, tc.args...)
			r := txload(t.Context(), nil, args...)
			if !r.ran() {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			// The instance's BEHIND line, on a loaded machine, names its
			// share of the rate, as its header does.
			if tc.name == "instance" && strings.Contains(r.stdout, "BEHIND: ") && !strings.Contains(r.stdout, "BEHIND: the target of 200 ops/s") {
				t.Errorf("the BEHIND line does not name the instance's 200 ops/s:\n%s", r.stdout)
			}
			if tc.check != nil {
				readDoc(t, js)
				tc.check(t, textFigures(r.stdout), js)
			}
			mustContain(t, r.stdout, tc.lines...)
			if t.Failed() {
				t.Log(r.stdout)
			}
		})
	}
}
