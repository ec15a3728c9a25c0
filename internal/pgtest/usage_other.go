//go:build !unix

package pgtest

import "testing"

// Usage is what the process has spent (not measured on this system).
type Usage struct{}

// ReadUsage is what the test process has spent so far.
func ReadUsage(testing.TB) Usage { return Usage{} }

// ReportUsage reports nothing on this system.
func ReportUsage(*testing.B, Usage, int) {}
