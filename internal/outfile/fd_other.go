//go:build !unix

package outfile

import "os"

// openFD: outside Unix no path names a file descriptor.
func openFD(string) (*os.File, bool, error) { return nil, false, nil }
