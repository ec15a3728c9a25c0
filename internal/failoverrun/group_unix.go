//go:build unix

package failoverrun

import (
	"os/exec"
	"syscall"
)

// inGroup makes cmd (the --failover-command's shell) run in a process
// group of its own, which its context's end (the --failover-timeout, an
// interrupt) stops as a whole: SIGTERM to the group, not to the shell
// alone, whose children (pg_autoctl, a sleep) would run on after txload.
func inGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
}

// endGroup kills what is left of cmd's group, once cmd has ended: a
// member that outlived the SIGTERM.
func endGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
