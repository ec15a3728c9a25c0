package embedded

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// setDeathSig makes the kernel send the child sig if txload dies: SIGQUIT
// (immediate shutdown) to the postmaster, SIGKILL to initdb. The signal
// fires when the forking OS thread exits, so children are started from a
// goroutine locked to its thread.
func setDeathSig(a *syscall.SysProcAttr, sig syscall.Signal) { a.Pdeathsig = sig }

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

// canSeeUsers: /proc tells which processes use a dir.
const canSeeUsers = true

// dirUsers maps each server dir in tmp (tmp/txload-pg-*) to the processes
// whose working directory is in it or whose command line names it: a
// postmaster and its backends work in the data dir, initdb in the dir.
func dirUsers(tmp string) map[string][]int {
	prefix := filepath.Join(tmp, tempPrefix)
	users := map[string][]int{}
	add := func(pid int, s string) {
		for {
			i := strings.Index(s, prefix)
			if i < 0 {
				return
			}
			rest := s[i+len(prefix):]
			end := strings.IndexAny(rest, "/\x00 ")
			if end < 0 {
				end = len(rest)
			}
			dir := prefix + rest[:end]
			if !slices.Contains(users[dir], pid) {
				users[dir] = append(users[dir], pid)
			}
			s = rest[end:]
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil {
			add(pid, cwd+"/")
		}
		if cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil {
			add(pid, string(cmdline))
		}
	}
	return users
}

// groupGone reports whether process group pgid has no live member (zombies
// waiting to be reaped do not count).
func groupGone(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		// Fields after the parenthesised command: state ppid pgrp ...
		f := bytes.Fields(b[i+1:])
		if len(f) >= 3 && string(f[2]) == strconv.Itoa(pgid) && string(f[0]) != "Z" {
			return false
		}
	}
	return true
}

// serverProcess reports whether pid runs PostgreSQL's postgres or initdb.
func serverProcess(pid int) bool {
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
	if err != nil {
		return false
	}
	switch filepath.Base(strings.TrimSuffix(exe, " (deleted)")) {
	case "postgres", "initdb":
		return true
	}
	return false
}

// ended reports whether pid has exited, reaped or not (a zombie keeps its
// pid until its parent waits for it).
func ended(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}
