//go:build !unix

package cli

// outputClosed: no SIGPIPE outside Unix.
func outputClosed() bool { return false }
