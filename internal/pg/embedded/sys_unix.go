//go:build linux || darwin

package embedded

import (
	"errors"
	"os"
	"syscall"
	"time"
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
// as runs the child as that user (PostgreSQL refuses to run as root); the
// child gets deathSig when txload dies, where the system offers it.
func procAttr(as *account, deathSig syscall.Signal) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if as != nil {
		a.Credential = &syscall.Credential{Uid: as.uid, Gid: as.gid} // also drops root's groups
	}
	setDeathSig(a, deathSig)
	return a
}

func killPIDs(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// alive reports whether a process pid exists (perhaps another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// quit asks a postmaster for an immediate shutdown.
func quit(pid int) { _ = syscall.Kill(pid, syscall.SIGQUIT) }

// killGroup kills the process group led by pid (a child started with
// Setpgid) and waits, up to a few seconds, until it has no member left.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if groupGone(pid) {
			return
		}
	}
}

// killTree kills the postmaster pid and its children with SIGKILL, as a
// machine that loses power would: the postmaster is stopped first, so that
// it starts no child between the listing of its children and the kill.
// It returns the children killed.
func killTree(pid int) []int {
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	kids := childPIDs(pid)
	// The children first, while the stopped postmaster can fork no other:
	// a child that outlived the postmaster even briefly would notice and
	// log "terminating connection due to unexpected postmaster exit".
	killPIDs(kids)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return kids
}
