//go:build !unix

package failoverrun

import "os/exec"

// inGroup: without process groups, the context's end kills the shell
// (exec.CommandContext's default).
func inGroup(*exec.Cmd) {}

func endGroup(*exec.Cmd) {}
