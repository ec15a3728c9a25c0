package failoverrun

import (
	"sort"
	"sync"
	"time"

	"github.com/txload/txload/lag"
	"github.com/txload/txload/workload"
)

// The fates of a marker, as txload saw them.
const (
	open       uint8 = iota // sent, no outcome (the run ended first)
	committed               // COMMIT acknowledged
	rolledBack              // rolled back: it must not be found
	ambiguous               // the connection was lost while COMMIT was in flight
)

// rec is one marker: its fate, when it was decided (Unix ns), and for the
// probe the node that took it (an index into probe.nodes).
type rec struct {
	at    int64
	state uint8
	node  uint8
}

// writer is one writer's markers: recs[i] is seq i+1. Only one goroutine
// writes it, and it is read once the run is over.
type writer struct {
	id   int // the marker table's writer number
	recs []rec
}

// ledger is every marker of a run: the probe's (writer first) and each
// client's (first+1+client).
type ledger struct {
	first int
	mu    sync.Mutex
	ws    map[int]*writer // by table writer number
}

func newLedger(first int) *ledger { return &ledger{first: first, ws: map[int]*writer{}} }

// writer returns (making it) the writer numbered id.
func (l *ledger) writer(id int) *writer {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.ws[id]
	if w == nil {
		w = &writer{id: id}
		l.ws[id] = w
	}
	return w
}

// probeWriter is the probe's writer number.
func (l *ledger) probeWriter() int { return l.first }

// marks gives client the markers it writes inside its transactions.
func (l *ledger) marks(client int) workload.TxMarker {
	return &txMark{w: l.writer(l.first + 1 + client)}
}

// txMark is one client's markers (workload.TxMarker).
type txMark struct{ w *writer }

func (m *txMark) Begin() (string, []any) {
	m.w.recs = append(m.w.recs, rec{})
	return lag.InsertSQL, lag.Marker{Writer: m.w.id, Seq: int64(len(m.w.recs))}.Args()
}

func (m *txMark) Committed(at time.Time) { m.w.decide(committed, at) }

func (m *txMark) RolledBack(amb bool, at time.Time) {
	st := rolledBack
	if amb {
		st = ambiguous
	}
	m.w.decide(st, at)
}

// decide settles the last marker sent, if still open.
func (w *writer) decide(st uint8, at time.Time) {
	if n := len(w.recs); n > 0 && w.recs[n-1].state == open {
		w.recs[n-1].state, w.recs[n-1].at = st, at.UnixNano()
	}
}

// Commit is one marker, by id: writer Writer's Seq-th, Client the
// workload's client (-1: the probe), At when it was acknowledged (or
// found ambiguous).
type Commit struct {
	Writer int       `json:"writer"`
	Seq    int64     `json:"seq"`
	Client int       `json:"client"`
	At     time.Time `json:"at"`
	// OnNew says an ambiguous commit is on the new primary.
	OnNew bool `json:"on_new_primary,omitempty"`
	// Rows are the rows its transaction wrote in the workload's tables,
	// as the embedded pair's old primary holds them ("table {json}").
	Rows []string `json:"rows,omitempty"`
}

// Tally is what comparing the markers with the new primary's found.
type Tally struct {
	// Acked counts acknowledged commits (Probe of them the probe's); Lost
	// those the new primary lacks, LostProbe the probe's of them.
	Acked, Probe, Lost, LostProbe int64
	// Ambiguous counts commits whose outcome the failover hid, Survived
	// those of them the new primary holds.
	Ambiguous, Survived int64
	// Phantom counts markers of rolled-back transactions the new primary
	// holds: none may be. Unresolved counts markers whose transaction was
	// still in flight when the run stopped waiting, Found those of them the
	// new primary holds.
	Phantom, Unresolved, Found int64
	// LostIDs lists the lost commits, AmbiguousIDs the ambiguous ones
	// (both by acknowledgement time), PhantomIDs the phantoms.
	LostIDs, AmbiguousIDs, PhantomIDs []Commit
}

// tally compares the markers with present, the (writer, seq) the new
// primary holds.
func (l *ledger) tally(present map[lag.Marker]bool) Tally {
	var t Tally
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, w := range l.ws {
		client := id - l.first - 1
		for i, r := range w.recs {
			m := lag.Marker{Writer: id, Seq: int64(i + 1)}
			c := Commit{Writer: id, Seq: m.Seq, Client: client, At: time.Unix(0, r.at)}
			here := present[m]
			switch r.state {
			case committed:
				t.Acked++
				if client < 0 {
					t.Probe++
				}
				if !here {
					t.Lost++
					if client < 0 {
						t.LostProbe++
					}
					t.LostIDs = append(t.LostIDs, c)
				}
			case ambiguous:
				t.Ambiguous++
				if here {
					t.Survived++
				}
				c.OnNew = here
				t.AmbiguousIDs = append(t.AmbiguousIDs, c)
			case rolledBack:
				if here {
					t.Phantom++
					t.PhantomIDs = append(t.PhantomIDs, c)
				}
			case open:
				t.Unresolved++
				if here {
					t.Found++
				}
			}
		}
	}
	for _, ids := range [][]Commit{t.LostIDs, t.AmbiguousIDs, t.PhantomIDs} {
		sort.Slice(ids, func(i, j int) bool {
			if !ids[i].At.Equal(ids[j].At) {
				return ids[i].At.Before(ids[j].At)
			}
			return ids[i].Writer < ids[j].Writer || ids[i].Writer == ids[j].Writer && ids[i].Seq < ids[j].Seq
		})
	}
	return t
}

// acks returns every acknowledgement time (Unix ns), sorted.
func (l *ledger) acks() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int64
	for _, w := range l.ws {
		for _, r := range w.recs {
			if r.state == committed {
				out = append(out, r.at)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
