//go:build unix

package replica

import (
	"fmt"
	"os"
	"syscall"
)

func ownerOf(path string) (owner, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return owner{}, fmt.Errorf("reading the owner of %s: %w", path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return owner{uid: -1, gid: -1}, nil
	}
	return owner{uid: int(st.Uid), gid: int(st.Gid)}, nil
}
