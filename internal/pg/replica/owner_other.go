//go:build !unix

package replica

// ownerOf: files keep their owner where there are no Unix owners.
func ownerOf(string) (owner, error) { return owner{uid: -1, gid: -1}, nil }
