package embedded

import "syscall"

// setDeathSig is a no-op: darwin has no parent-death signal.
func setDeathSig(*syscall.SysProcAttr, syscall.Signal) {}

// childPIDs is not implemented on darwin; backends exit on their own once
// they notice the postmaster is gone.
func childPIDs(int) []int { return nil }

// canSeeUsers: darwin has no /proc to tell which processes use a dir.
const canSeeUsers = false

func dirUsers(string) map[string][]int { return nil }

// groupGone reports whether process group pgid has no member left.
func groupGone(pgid int) bool { return syscall.Kill(-pgid, 0) != nil }

func serverProcess(int) bool { return false }

func ended(pid int) bool { return !alive(pid) }
