// Package report formats what a run measured: progress lines, the summary,
// the comparison table of a multi-variant run, and JSON. It only reads
// metrics.
package report
