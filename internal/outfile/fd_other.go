//go:build !unix

package outfile

import "os"

// openFD: outside Unix no path names a file descriptor.
func openFD(string) (*os.File, bool, error) { return nil, false, nil }

// openFIFO: outside Unix, a plain open.
func openFIFO(path string) (*os.File, error) { return os.OpenFile(path, os.O_WRONLY, 0) }
