//go:build !unix

package pg

import (
	"context"
	"net"
)

// BlockingDial is a plain dial where sockets cannot be put in blocking mode.
func BlockingDial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}
