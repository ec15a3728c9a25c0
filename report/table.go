package report

import (
	"io"
	"strconv"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Table writes rows in aligned columns as the summary does, the first
// left-aligned and the others right-aligned, each line indented by prefix:
// for blocks that other commands print beside it (lag's).
func Table(w io.Writer, prefix string, rows [][]string) {
	t := &table{rows: rows}
	_, _ = io.WriteString(w, indent(t.String(), prefix))
}

// HistHeader is the header of a table of HistRow rows.
func HistHeader() []string {
	head := []string{"", "mean"}
	for _, q := range summaryQuantiles {
		head = append(head, "p"+strconv.FormatFloat(q, 'f', -1, 64))
	}
	return append(head, "max")
}

// HistRow is a histogram (µs) as a row of the summary's table: its name,
// mean, percentiles and max.
func HistRow(name string, h *hdr.Histogram) []string { return histRow(name, h) }
