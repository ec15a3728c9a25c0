package pgio

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// deviceOf is the numbers of the device file is on.
func deviceOf(file string) (major, minor uint32, err error) {
	var st unix.Stat_t
	if err := unix.Stat(file, &st); err != nil {
		return 0, 0, fmt.Errorf("reading the device of %s: %w", file, err)
	}
	return unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), nil //nolint:unconvert // Dev is not 64 bits everywhere
}
