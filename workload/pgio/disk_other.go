//go:build !linux

package pgio

import "errors"

// deviceOf is Linux's: /proc/diskstats is.
func deviceOf(string) (major, minor uint32, err error) {
	return 0, 0, errors.New("disk counters are read from /proc/diskstats, on Linux only")
}
