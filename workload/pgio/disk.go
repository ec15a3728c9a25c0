package pgio

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Disk is the block device a pgio table's file is on, as /proc/diskstats
// counts it: the physical side of a run, which pgio's runit.sh records
// around a run (/proc/diskstats, iostat).
type Disk struct {
	// Name is the device's ("vda", "nvme0n1p2", "dm-0"); Major and Minor
	// its numbers.
	Name         string
	Major, Minor uint32
	// File is the table file it was found from; Stats the diskstats file.
	File, Stats string
}

// DiskCounters are a device's cumulative counters: I/Os completed, 512-byte
// sectors moved, and the milliseconds it was busy.
type DiskCounters struct {
	Reads, ReadSectors, Writes, WriteSectors, BusyMs int64
}

func (d DiskCounters) sub(o DiskCounters) DiskCounters {
	return DiskCounters{d.Reads - o.Reads, d.ReadSectors - o.ReadSectors, d.Writes - o.Writes, d.WriteSectors - o.WriteSectors, d.BusyMs - o.BusyMs}
}

// parseDiskstats finds the device major:minor in a /proc/diskstats text.
func parseDiskstats(b []byte, major, minor uint32) (string, DiskCounters, bool) {
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		f := strings.Fields(s.Text())
		// major minor name, then at least 11 counters (kernel 2.6.25 on).
		if len(f) < 14 || f[0] != strconv.FormatUint(uint64(major), 10) || f[1] != strconv.FormatUint(uint64(minor), 10) {
			continue
		}
		var v [11]int64
		for i := range v {
			n, err := strconv.ParseInt(f[3+i], 10, 64)
			if err != nil {
				return "", DiskCounters{}, false
			}
			v[i] = n
		}
		// reads, reads merged, sectors read, ms reading, writes, writes
		// merged, sectors written, ms writing, in flight, ms busy, ...
		return f[2], DiskCounters{Reads: v[0], ReadSectors: v[2], Writes: v[4], WriteSectors: v[6], BusyMs: v[9]}, true
	}
	return "", DiskCounters{}, false
}

// Read reads the device's counters now.
func (d *Disk) Read() (DiskCounters, error) {
	b, err := os.ReadFile(d.Stats)
	if err != nil {
		return DiskCounters{}, fmt.Errorf("reading %s: %w", d.Stats, err)
	}
	_, c, ok := parseDiskstats(b, d.Major, d.Minor)
	if !ok {
		return DiskCounters{}, fmt.Errorf("device %s (%d:%d) is no longer in %s", d.Name, d.Major, d.Minor, d.Stats)
	}
	return c, nil
}

// LocateDisk finds the block device file is on, in the diskstats file
// stats; else it says why not.
func LocateDisk(file, stats string) (*Disk, string) {
	major, minor, err := deviceOf(file)
	if err != nil {
		return nil, err.Error()
	}
	if major == 0 {
		return nil, fmt.Sprintf("the table's file %s is not on a block device (device %d:%d: tmpfs, overlay or another virtual file system)", file, major, minor)
	}
	b, err := os.ReadFile(stats)
	if err != nil {
		return nil, fmt.Sprintf("this machine has no %s: %s", stats, oneLine(err.Error()))
	}
	name, _, ok := parseDiskstats(b, major, minor)
	if !ok {
		return nil, fmt.Sprintf("the device of %s (%d:%d) is not in %s", file, major, minor, stats)
	}
	return &Disk{Name: name, Major: major, Minor: minor, File: file, Stats: stats}, ""
}

// findDisk finds the device of pgio1's file, when the server runs on this
// machine and the role may read where its data directory is.
func findDisk(ctx context.Context, conn *pgx.Conn) (*Disk, string) {
	var addr *netip.Addr
	var dir, file string
	if err := conn.QueryRow(ctx, "SELECT inet_server_addr()").Scan(&addr); err != nil {
		return nil, "reading the server's address: " + oneLine(err.Error())
	}
	if addr != nil && !isLocal(*addr) {
		return nil, fmt.Sprintf("the server (%s) is not on this machine: its disks cannot be read from here", addr)
	}
	if err := conn.QueryRow(ctx, "SELECT current_setting('data_directory'), pg_relation_filepath($1)", Table(1)).Scan(&dir, &file); err != nil {
		return nil, "this role cannot read where the data directory is (it needs pg_read_all_settings): " + oneLine(err.Error())
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	if _, err := os.Stat(file); err != nil {
		return nil, fmt.Sprintf("the server's data directory %s is not on this machine's file system (a container?): %s", dir, oneLine(err.Error()))
	}
	return LocateDisk(file, "/proc/diskstats")
}

// DiskRates are a device's counters over a period, as iostat prints them.
type DiskRates struct {
	ReadsPerSec, ReadMiBPerSec, WritesPerSec, WriteMiBPerSec, Util float64
}

// Rates are d's counters per second of el; Util is the share of el the
// device was busy, in percent.
func (d DiskCounters) Rates(el time.Duration) DiskRates {
	if el <= 0 {
		return DiskRates{}
	}
	s := el.Seconds()
	return DiskRates{float64(d.Reads) / s, float64(d.ReadSectors) * 512 / (1 << 20) / s, float64(d.Writes) / s,
		float64(d.WriteSectors) * 512 / (1 << 20) / s, 100 * float64(d.BusyMs) / 1000 / s}
}
