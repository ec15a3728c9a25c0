package workload

import (
	"fmt"
	"sync"

	"github.com/txload/txload/pg"
)

// Isolations collects the isolation levels a run's clients read back from
// the server (each connection once), for the report's line on what the
// server really ran. Its zero value is ready; it is safe for concurrent use.
type Isolations struct {
	mu     sync.Mutex
	levels map[pg.Isolation]int
}

// Add counts a connection that runs at level i.
func (o *Isolations) Add(i pg.Isolation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.levels == nil {
		o.levels = map[pg.Isolation]int{}
	}
	o.levels[i]++
}

// Notes report the levels the server ran, with a warning on each that is
// not the one requested.
func (o *Isolations) Notes(requested pg.Isolation) []Line {
	o.mu.Lock()
	defer o.mu.Unlock()
	var lines []Line
	for _, iso := range []pg.Isolation{pg.ReadCommitted, pg.RepeatableRead, pg.Serializable} {
		if o.levels[iso] == 0 {
			continue
		}
		v := iso.String()
		if iso != requested {
			v += fmt.Sprintf(" (WARNING: requested %s; the server ran %s)", requested, iso)
		}
		lines = append(lines, Line{Label: "isolation (server)", Value: v})
	}
	return lines
}

// Weakest is the weakest level a connection ran at, and whether any
// connection read one back.
func (o *Isolations) Weakest() (pg.Isolation, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, iso := range []pg.Isolation{pg.ReadCommitted, pg.RepeatableRead, pg.Serializable} {
		if o.levels[iso] > 0 {
			return iso, true
		}
	}
	return 0, false
}
