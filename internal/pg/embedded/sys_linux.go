package embedded

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// setDeathSig makes the kernel send the postmaster SIGQUIT (immediate
// shutdown) if txload dies. The signal fires when the forking OS thread
// exits, so the server is started from a goroutine locked to its thread.
func setDeathSig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGQUIT }

// childPIDs lists the live children of pid, found via /proc.
func childPIDs(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// Fields after the parenthesised command: state ppid ...
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 2 || string(f[1]) != strconv.Itoa(pid) {
			continue
		}
		if kid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			kids = append(kids, kid)
		}
	}
	return kids
}
