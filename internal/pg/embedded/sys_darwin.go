package embedded

import "syscall"

// setDeathSig is a no-op: darwin has no parent-death signal.
func setDeathSig(*syscall.SysProcAttr) {}

// childPIDs is not implemented on darwin; backends exit on their own once
// they notice the postmaster is gone.
func childPIDs(int) []int { return nil }
