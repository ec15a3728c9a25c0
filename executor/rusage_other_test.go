//go:build !unix

package executor

import "testing"

type usage struct{}

func readUsage(testing.TB) usage         { return usage{} }
func reportUsage(*testing.B, usage, int) {}
