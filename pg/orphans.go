package pg

import (
	"slices"
	"sync"
)

// orphans are the server backends of connections closed while an exchange
// was in flight (an interrupt, the drain deadline): their last statement,
// a COMMIT say, may still complete after the client has gone, so an audit
// of what committed waits for them to end.
type orphans struct {
	mu   sync.Mutex
	pids []uint32
}

// NoteOrphan records the backend pid of a connection closed with an
// exchange in flight.
func (t *Target) NoteOrphan(pid uint32) {
	t.orphans.mu.Lock()
	t.orphans.pids = append(t.orphans.pids, pid)
	t.orphans.mu.Unlock()
}

// Orphans returns the backends NoteOrphan recorded, and forgets them.
func (t *Target) Orphans() []uint32 {
	t.orphans.mu.Lock()
	defer t.orphans.mu.Unlock()
	out := slices.Clone(t.orphans.pids)
	t.orphans.pids = nil
	return out
}
