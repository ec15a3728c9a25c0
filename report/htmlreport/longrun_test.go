package htmlreport

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/txload/txload/report"
)

// The report of a long run read from its file (its intervals left there,
// read one at a time, as txload report reads them): every line over time
// has at most MaxPoints points, each window the exact sum of its
// intervals' counts (the windows add up to the run's operations, one by
// one), and the summary shows the run's exact totals, not a sum of
// what was drawn.
func TestLongRunFromFile(t *testing.T) {
	const n = 24000
	group := (n + MaxPoints - 1) / MaxPoints // intervals a point
	windowsOf := (n + group - 1) / group
	mem := hourDoc(t, n)
	path := filepath.Join(t.TempDir(), "long.json")
	var b bytes.Buffer
	if err := report.WriteJSON(&b, mem); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := report.ReadJSONAt(f, int64(b.Len()), nil)
	if err != nil {
		t.Fatal(err)
	}
	rd := &doc.Runs[0]
	if rd.Intervals != nil || rd.IntervalCount() != n {
		t.Fatalf("%d intervals in memory, %d in the file", len(rd.Intervals), rd.IntervalCount())
	}
	var page bytes.Buffer
	if err := Write(&page, []*report.Document{doc}, Options{Names: []string{"long.json"}}); err != nil {
		t.Fatal(err)
	}
	lines := regexp.MustCompile(`class="series"[^>]*data-points="(\d+)"`).FindAllStringSubmatch(page.String(), -1)
	if len(lines) == 0 {
		t.Fatal("no line over time")
	}
	most := 0
	for _, m := range lines {
		k, _ := strconv.Atoi(m[1])
		if k > MaxPoints {
			t.Fatalf("a line has %d points, more than %d", k, MaxPoints)
		}
		most = max(most, k)
	}
	if most != windowsOf {
		t.Errorf("the longest line has %d points, want one a window (%d)", most, windowsOf)
	}
	ws, _, err := windows(rd, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != windowsOf {
		t.Fatalf("%d windows", len(ws))
	}
	for i, o := range rd.Ops {
		var ok int64
		for _, w := range ws {
			ok += w.ops[i].ok
		}
		if ok != o.OK {
			t.Errorf("%s: the windows hold %d ok, the run %d", o.Name, ok, o.OK)
		}
		var failed int64
		for _, k := range o.Failed {
			failed += k
		}
		row := fmt.Sprintf(`<p class="op"><b>%s</b>: %d ok, %d failed, %.1f ops/s</p>`, o.Name, o.OK, failed, float64(o.OK)/n)
		if !strings.Contains(page.String(), row) {
			t.Errorf("the summary has no line %s", row)
		}
	}
}
