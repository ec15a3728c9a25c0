//go:build !unix

package pgtest

import (
	"context"
	"errors"
	"testing"
)

// AutoFailover is a pg_auto_failover formation: Unix only.
type AutoFailover struct {
	URL, Monitor string
	Nodes        []string
}

// StartAutoFailover skips: pg_auto_failover runs on Unix only.
func StartAutoFailover(t testing.TB) *AutoFailover {
	t.Skip("pg_auto_failover runs on Unix only")
	return nil
}

func (f *AutoFailover) Primary(context.Context) (string, error) { return "", errors.ErrUnsupported }

func (f *AutoFailover) FailoverCommand() []string { return nil }

func (f *AutoFailover) Failover(context.Context) (string, error) { return "", errors.ErrUnsupported }
