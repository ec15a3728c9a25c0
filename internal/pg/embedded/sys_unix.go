//go:build linux || darwin

package embedded

import (
	"errors"
	"os"
	"syscall"
)

func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// procAttr puts the child in its own process group, so a terminal's Ctrl-C
// reaches txload only and txload decides when the server stops. A non-nil
// as runs the child as that user (PostgreSQL refuses to run as root).
func procAttr(as *account, server bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if as != nil {
		a.Credential = &syscall.Credential{Uid: as.uid, Gid: as.gid} // also drops root's groups
	}
	if server {
		setDeathSig(a)
	}
	return a
}

func killPIDs(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
