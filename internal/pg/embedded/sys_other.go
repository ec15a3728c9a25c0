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

func procAttr(*account, bool) *syscall.SysProcAttr { return nil }

func killPIDs([]int) {}

func childPIDs(int) []int { return nil }
