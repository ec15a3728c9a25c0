//go:build !linux && !darwin

package embedded

import (
	"errors"
	"os"
	"syscall"
)

// Start fails earlier, in platform(), on these systems; these stubs only
// keep the package compiling.

func tryLock(*os.File) (bool, error) { return false, errors.ErrUnsupported }

func procAttr(*account, syscall.Signal) *syscall.SysProcAttr { return nil }

func killPIDs([]int) {}

func childPIDs(int) []int { return nil }

func alive(int) bool { return false }

func quit(int) {}

const canSeeUsers = false

func dirUsers(string) map[string][]int { return nil }

func killGroup(int) {}

func serverProcess(int) bool { return false }

func ended(pid int) bool { return !alive(pid) }

func killTree(int) []int { return nil }
