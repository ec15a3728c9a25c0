package pgio

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseDiskstats(t *testing.T) {
	b, err := os.ReadFile("testdata/diskstats")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		major, minor uint32
		name         string
		want         DiskCounters
	}{
		// reads, sectors read, writes, sectors written, ms busy: fields
		// 4, 6, 8, 10 and 13 of a line.
		{254, 0, "vda", DiskCounters{Reads: 155814, ReadSectors: 5510530, Writes: 35604, WriteSectors: 7386400, BusyMs: 13060}},
		{259, 2, "nvme0n1p2", DiskCounters{Reads: 1990, ReadSectors: 196380, Writes: 1168, WriteSectors: 52270, BusyMs: 1100}},
		{8, 16, "sdb", DiskCounters{Reads: 90, ReadSectors: 4200, Writes: 12, WriteSectors: 96, BusyMs: 40}}, // before kernel 4.18: no discard fields
		{7, 3, "loop3", DiskCounters{}},
	} {
		name, c, ok := parseDiskstats(b, tc.major, tc.minor)
		if !ok || name != tc.name || c != tc.want {
			t.Errorf("%d:%d = %q %+v %v; want %q %+v", tc.major, tc.minor, name, c, ok, tc.name, tc.want)
		}
	}
	if _, _, ok := parseDiskstats(b, 259, 9); ok {
		t.Error("found a device that is not there")
	}
	r := DiskCounters{Reads: 100, ReadSectors: 2048, Writes: 50, WriteSectors: 4096, BusyMs: 500}.Rates(2 * time.Second)
	if r != (DiskRates{ReadsPerSec: 50, ReadMiBPerSec: 0.5, WritesPerSec: 25, WriteMiBPerSec: 1, Util: 25}) {
		t.Errorf("rates %+v", r)
	}
}

// blockDevDir returns a directory of this machine on a block device that
// /proc/diskstats counts, or "" with why there is none.
func blockDevDir() (string, string) {
	var why []string
	for _, d := range []string{os.TempDir(), "/var/tmp", "/tmp"} {
		disk, w := LocateDisk(d, "/proc/diskstats")
		if disk != nil {
			return d, ""
		}
		why = append(why, w)
	}
	return "", strings.Join(why, "; ")
}

// The device LocateDisk finds for a file is the one the kernel names for
// it in /sys/dev/block; a file on tmpfs has none.
func TestLocateDisk(t *testing.T) {
	if _, err := os.Stat("/proc/diskstats"); err != nil {
		t.Skip("no /proc/diskstats here")
	}
	if _, why := LocateDisk("/dev/shm", "/proc/diskstats"); !strings.Contains(why, "not on a block device") {
		t.Errorf("/dev/shm: %q", why)
	}
	dir, why := blockDevDir()
	if dir == "" {
		t.Skipf("no directory on a block device: %s", why)
	}
	disk, _ := LocateDisk(dir, "/proc/diskstats")
	uevent, err := os.ReadFile("/sys/dev/block/" + strconv.Itoa(int(disk.Major)) + ":" + strconv.Itoa(int(disk.Minor)) + "/uevent")
	if err != nil {
		t.Skipf("no /sys/dev/block to check against: %v", err)
	}
	if !strings.Contains(string(uevent), "DEVNAME="+disk.Name+"\n") {
		t.Errorf("%s is on %s (%d:%d), the kernel says:\n%s", dir, disk.Name, disk.Major, disk.Minor, uevent)
	}
	if _, err := disk.Read(); err != nil {
		t.Error(err)
	}
}
