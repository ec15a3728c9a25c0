//go:build !linux

package executor

import (
	"errors"

	"github.com/txload/txload/pg"
)

func rawLoops() bool { return false }

func newEpollLoop(*pg.Target, []*client) (runner, error) {
	return nil, errors.New("I/O loops need Linux")
}
