package htmlreport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/txload/txload/report"
)

// A document's own tables are drawn after the summary, escaped, the first
// row as the header; a series' events are drawn as labelled vertical rules
// on its chart.
func TestTablesAndEvents(t *testing.T) {
	doc := hourDoc(t, 5)
	doc.Tables = []report.TableDoc{{Title: "Failover (async): <kill>", Rows: [][]string{{"", ""}, {"write unavailability", "396 ms & more"}}}}
	doc.Series = []report.SeriesDoc{{Title: "failover timeline", Lines: []string{"commits", "failures"},
		Points: []report.SeriesPoint{{At: 1, Values: []float64{10, 0}}, {At: 2, Values: []float64{0, 3}}, {At: 3, Values: []float64{12, 0}}},
		Events: []report.SeriesEvent{{At: 1.5, Label: "fault"}, {At: 2.5, Label: "new primary"}}}}
	var b bytes.Buffer
	if err := Write(&b, []*report.Document{doc}, Options{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<h2>Failover (async): &lt;kill&gt;</h2>", `<td>write unavailability</td><td class="l">396 ms &amp; more</td>`, ">fault<", ">new primary<"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if i, j := strings.Index(page, "<h2>Summary"), strings.Index(page, "<h2>Failover"); i < 0 || j < i {
		t.Errorf("the table is not after the summary (%d, %d)", i, j)
	}
}
