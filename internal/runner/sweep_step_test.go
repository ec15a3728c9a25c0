package runner

import (
	"bytes"
	"strings"
	"testing"
)

// A step in which nothing completed measured no latency: the table shows
// "—" and the CSV leaves the cells empty, never 0µs.
func TestSweepStepWithoutCompletions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		step     sweepStep
		line     string
		csvCells string
	}{
		{"nothing completed", sweepStep{n: 7, target: 32000, why: "32000 of 32000 never started"},
			"—           —           —", "7,32000,0.00,,,,0,false,violation"},
		{"some completed", sweepStep{n: 1, target: 1000, achieved: 999.5, ok: 5000, p50: 300, p99: 1200, maxResp: 4000, pass: true},
			"300µs", "1,1000,999.50,300,1200,4000,0,true,violation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var line, csv bytes.Buffer
			printStep(&line, tc.step)
			if !strings.Contains(line.String(), tc.line) || (tc.step.ok == 0 && strings.Contains(line.String(), "0µs")) {
				t.Errorf("table line %q, want %q", line.String(), tc.line)
			}
			if err := writeSweepCSV(&csv, []sweepStep{tc.step}, "violation"); err != nil {
				t.Fatal(err)
			}
			if rows := strings.Split(strings.TrimSpace(csv.String()), "\n"); len(rows) != 2 || rows[1] != tc.csvCells {
				t.Errorf("CSV %q, want the row %q", csv.String(), tc.csvCells)
			}
		})
	}
}
