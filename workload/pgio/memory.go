package pgio

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Memory is what decides where a run's blocks come from: the server's
// shared_buffers, and, when the server runs on this machine, the machine's
// memory (its OS page cache holds what shared_buffers does not).
type Memory struct {
	// SharedBuffers in bytes; -1 unknown.
	SharedBuffers int64
	// Local: the server runs on this machine (it answered on a loopback or
	// local address, or a Unix socket).
	Local bool
	// ServerAddr is the address the server answered on ("" for a Unix
	// socket).
	ServerAddr string
	// MachineTotal and MachineAvailable are this machine's memory
	// (/proc/meminfo MemTotal, MemAvailable); 0 when unknown.
	MachineTotal, MachineAvailable int64
}

// ReadMemory asks the server for shared_buffers and where it listens, and
// reads this machine's memory.
func ReadMemory(ctx context.Context, conn *pgx.Conn) (Memory, error) {
	m := Memory{SharedBuffers: -1}
	var addr *netip.Addr
	err := conn.QueryRow(ctx, `SELECT pg_size_bytes(current_setting('shared_buffers'))::BIGINT, inet_server_addr()`).Scan(&m.SharedBuffers, &addr)
	if err != nil {
		return m, fmt.Errorf("reading shared_buffers: %w", err)
	}
	if addr == nil {
		m.Local = true // a Unix socket
	} else {
		m.ServerAddr = addr.String()
		m.Local = isLocal(*addr)
	}
	m.MachineTotal, m.MachineAvailable = machineMemory("/proc/meminfo")
	return m, nil
}

// isLocal says whether addr is one of this machine's addresses.
func isLocal(addr netip.Addr) bool {
	addr = addr.Unmap()
	if addr.IsLoopback() {
		return true
	}
	ifaces, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range ifaces {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == addr {
			return true
		}
	}
	return false
}

// machineMemory reads MemTotal and MemAvailable from a meminfo file; zeros
// when it cannot.
func machineMemory(path string) (total, available int64) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "MemTotal:":
			total = kb << 10
		case "MemAvailable:":
			available = kb << 10
		}
	}
	return total, available
}

// Regime says where a run over size bytes (tables and indexes) reads its
// blocks from: shared_buffers (a measure of logical I/O), the OS page cache
// (reads that miss shared_buffers cost a system call, not a disk), or the
// disk (physical I/O). The OS cache is judged only for a server on this
// machine, against its memory less shared_buffers.
func (m Memory) Regime(size int64) string {
	if m.SharedBuffers < 0 {
		return "unknown: shared_buffers could not be read"
	}
	if size <= m.SharedBuffers {
		return fmt.Sprintf("fits in shared_buffers (%s of %s): runs measure logical I/O (LIOPS); after a warm-up every block is a buffer hit",
			Bytes(size), Bytes(m.SharedBuffers))
	}
	if !m.Local {
		return fmt.Sprintf("exceeds shared_buffers (%s of %s); whether the server's OS page cache holds the rest cannot be told from here: the server (%s) is not on this machine",
			Bytes(size), Bytes(m.SharedBuffers), m.ServerAddr)
	}
	if m.MachineTotal == 0 {
		return fmt.Sprintf("exceeds shared_buffers (%s of %s); this machine's memory is unknown (no /proc/meminfo), so the OS page cache cannot be judged",
			Bytes(size), Bytes(m.SharedBuffers))
	}
	cache := m.MachineTotal - m.SharedBuffers
	if size <= cache {
		return fmt.Sprintf("exceeds shared_buffers (%s of %s) but fits in the OS page cache (this machine: %s of memory, %s available now): blocks that miss shared_buffers are read from memory through the OS (PIOPS without a disk)",
			Bytes(size), Bytes(m.SharedBuffers), Bytes(m.MachineTotal), Bytes(m.MachineAvailable))
	}
	return fmt.Sprintf("exceeds shared_buffers (%s of %s) and this machine's memory (%s): runs measure physical reads from the disk (PIOPS)",
		Bytes(size), Bytes(m.SharedBuffers), Bytes(m.MachineTotal))
}
