package failoverrun

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/lag"
	"github.com/txload/txload/report"
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

// A run's markers are spooled as they are settled: each writer fills a
// chunk of up to chunkLen records in memory and appends it to the
// ledger's file when it is full, so a run of any length holds one chunk
// per writer. On disk a chunk is a header (the offset of the writer's
// chunk before it, -1 for none; the seq of its first record; the writer;
// its record count) and its records (at, state, node): 10 bytes a
// marker. A writer keeps the offset of its last chunk only, and its
// markers are read back from the last, chunk by chunk.
const (
	chunkLen = 512
	recSize  = 10
	headSize = 24
)

// writer is one writer's markers: seqs 1..n, all settled in its chunks
// but the last, while pending. Only one goroutine records in it; it is
// read once the run is over (finish).
type writer struct {
	id      int
	sp      *spool
	n       int64 // markers sent: the last one's seq
	cur     rec   // marker n, while pending
	pending bool  // marker n is open and not yet in buf
	buf     []byte
	count   int   // records in buf
	put1    int64 // the seq after the last record put in buf
	last    int64 // offset of the writer's last chunk in the file (-1: none)
}

// begin sends the next marker (its node for the probe) and returns its
// seq. The marker before it, if still open, stays so: decide settles the
// last marker sent only.
func (w *writer) begin(node uint8) int64 {
	if w.pending {
		w.put(w.cur)
	}
	w.n++
	w.cur, w.pending = rec{node: node}, true
	return w.n
}

// decide settles the last marker sent, if still open.
func (w *writer) decide(st uint8, at time.Time) {
	if w.pending {
		w.cur.state, w.cur.at = st, at.UnixNano()
		w.put(w.cur)
		w.pending = false
	}
}

// put adds the next marker's record to the chunk, and writes the chunk
// once full.
func (w *writer) put(r rec) {
	if w.buf == nil {
		w.buf = make([]byte, headSize, headSize+chunkLen*recSize)
	}
	w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(r.at))
	w.buf = append(w.buf, r.state, r.node)
	w.put1++
	if w.count++; w.count == chunkLen {
		w.flush()
	}
}

// flush writes the chunk, if it holds any record. The first seq of the
// chunk is the one after those written before it.
func (w *writer) flush() {
	if w.count == 0 {
		return
	}
	first := w.put1 - int64(w.count)
	binary.LittleEndian.PutUint64(w.buf[0:], uint64(w.last))
	binary.LittleEndian.PutUint64(w.buf[8:], uint64(first))
	binary.LittleEndian.PutUint32(w.buf[16:], uint32(w.id))
	binary.LittleEndian.PutUint32(w.buf[20:], uint32(w.count))
	if off, err := w.sp.write(w.buf); err == nil {
		w.last = off
	}
	w.buf, w.count = w.buf[:headSize], 0
}

// finish writes what the writer holds: its last marker (open if still
// pending) and its last chunk.
func (w *writer) finish() {
	if w.pending {
		w.put(w.cur)
		w.pending = false
	}
	w.flush()
}

// backward calls f with each of the writer's markers, from the last (seq
// n) to the first, until f's first error. The writer must be finished.
func (w *writer) backward(f func(seq int64, r rec) error) error {
	buf := make([]byte, headSize+chunkLen*recSize)
	next := w.n + 1
	for off := w.last; off >= 0; {
		head := buf[:headSize]
		if err := w.sp.read(head, off); err != nil {
			return err
		}
		prev := int64(binary.LittleEndian.Uint64(head[0:]))
		first := int64(binary.LittleEndian.Uint64(head[8:]))
		id := int(int32(binary.LittleEndian.Uint32(head[16:])))
		count := int(binary.LittleEndian.Uint32(head[20:]))
		if id != w.id || count <= 0 || count > chunkLen || first+int64(count)-1 != next-1 || prev >= off {
			return fmt.Errorf("reading the run's markers: the spool %s is damaged at offset %d (writer %d, seqs %d..)", w.sp.path, off, id, first)
		}
		recs := buf[headSize : headSize+count*recSize]
		if err := w.sp.read(recs, off+headSize); err != nil {
			return err
		}
		for i := count - 1; i >= 0; i-- {
			b := recs[i*recSize:]
			r := rec{at: int64(binary.LittleEndian.Uint64(b)), state: b[8], node: b[9]}
			if err := f(first+int64(i), r); err != nil {
				return err
			}
		}
		next, off = first, prev
	}
	if next != 1 {
		return fmt.Errorf("reading the run's markers: the spool %s lacks writer %d's seqs 1..%d", w.sp.path, w.id, next-1)
	}
	return nil
}

// spool is the file of a run's markers, in $TMPDIR, removed from the
// directory as soon as it is made (report.CreateSpoolFile). Writers
// append chunks to it; its first error sticks and is said once.
type spool struct {
	f    *os.File
	name string // to remove at close ("": removed at creation)
	path string // its path, for errors
	warn func(error)

	mu  sync.Mutex
	end int64
	err error
}

// write appends b and returns its offset.
func (s *spool) write(b []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	if _, err := s.f.WriteAt(b, s.end); err != nil {
		s.err = fmt.Errorf("spooling the run's markers in %s (set TMPDIR to a directory with room): %w", filepath.Dir(s.path), err)
		if s.warn != nil {
			s.warn(s.err)
		}
		return 0, s.err
	}
	off := s.end
	s.end += int64(len(b))
	return off, nil
}

func (s *spool) read(b []byte, off int64) error {
	if _, err := s.f.ReadAt(b, off); err != nil {
		return fmt.Errorf("reading the run's markers from %s: %w", s.path, err)
	}
	return nil
}

// failed is the first error writing, if any.
func (s *spool) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// ledger is every marker of a run: the probe's (writer first) and each
// client's (first+1+client).
type ledger struct {
	first int
	sp    *spool
	mu    sync.Mutex
	ws    map[int]*writer // by table writer number
}

// newLedger makes the ledger of a run whose writers are numbered from
// first, its markers spooled in dir ("": $TMPDIR); warn is told the first
// error writing there, when it happens. Close removes the spool.
func newLedger(first int, dir string, warn func(error)) (*ledger, error) {
	f, name, err := report.CreateSpoolFile(dir, "markers", "bin")
	if err != nil {
		return nil, err
	}
	return &ledger{first: first, sp: &spool{f: f, name: name, path: f.Name(), warn: warn}, ws: map[int]*writer{}}, nil
}

// close removes the spool. Closing it again does nothing.
func (l *ledger) close() error {
	s := l.sp
	if s.f == nil {
		return nil
	}
	err := report.CloseSpoolFile(s.f, s.name)
	s.f = nil
	return err
}

// writer returns (making it) the writer numbered id.
func (l *ledger) writer(id int) *writer {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.ws[id]
	if w == nil {
		w = &writer{id: id, sp: l.sp, last: -1, put1: 1}
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
	seq := m.w.begin(0)
	return lag.InsertSQL, lag.Marker{Writer: m.w.id, Seq: seq}.Args()
}

func (m *txMark) Committed(at time.Time) { m.w.decide(committed, at) }

func (m *txMark) RolledBack(amb bool, at time.Time) {
	st := rolledBack
	if amb {
		st = ambiguous
	}
	m.w.decide(st, at)
}

// finish writes what every writer holds, once the run is over, and
// returns the writers by number, or the spool's first error.
func (l *ledger) finish() ([]*writer, error) { return l.finishOf(func(int) bool { return true }) }

// finishClients is finish for the workload's clients' writers alone, once
// the load is over: the probe may still be writing.
func (l *ledger) finishClients() ([]*writer, error) {
	return l.finishOf(func(id int) bool { return id != l.probeWriter() })
}

func (l *ledger) finishOf(which func(id int) bool) ([]*writer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]int, 0, len(l.ws))
	for id := range l.ws {
		if which(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ws := make([]*writer, len(ids))
	for i, id := range ids {
		ws[i] = l.ws[id]
		ws[i].finish()
	}
	return ws, l.sp.failed()
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

// add counts one marker; here says the new primary holds it.
func (t *Tally) add(c Commit, st uint8, here bool) {
	switch st {
	case committed:
		t.Acked++
		if c.Client < 0 {
			t.Probe++
		}
		if !here {
			t.Lost++
			if c.Client < 0 {
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

// sortIDs orders the listed commits by time, then id.
func (t *Tally) sortIDs() {
	for _, ids := range [][]Commit{t.LostIDs, t.AmbiguousIDs, t.PhantomIDs} {
		sort.Slice(ids, func(i, j int) bool {
			if !ids[i].At.Equal(ids[j].At) {
				return ids[i].At.Before(ids[j].At)
			}
			return ids[i].Writer < ids[j].Writer || ids[i].Writer == ids[j].Writer && ids[i].Seq < ids[j].Seq
		})
	}
}

// seqPage is how many of a writer's seqs the tally reads from the server
// at a time.
const seqPage = 10000

// tally compares the markers with those the new primary holds, on conn:
// for each writer, its markers from the last, against the server's of
// that writer in descending seq, a page at a time (a merge join: nothing
// in memory grows with the run, but the lists of lost, ambiguous and
// phantom commits).
func (l *ledger) tally(ctx context.Context, conn *pgx.Conn) (Tally, error) {
	ws, err := l.finish()
	if err != nil {
		return Tally{}, err
	}
	return l.tallyOf(ctx, conn, ws)
}

// tallyClients is tally of the workload's clients' markers alone, once
// the load is over (the probe may still be writing).
func (l *ledger) tallyClients(ctx context.Context, conn *pgx.Conn) (Tally, error) {
	ws, err := l.finishClients()
	if err != nil {
		return Tally{}, err
	}
	return l.tallyOf(ctx, conn, ws)
}

func (l *ledger) tallyOf(ctx context.Context, conn *pgx.Conn, ws []*writer) (Tally, error) {
	var t Tally
	page := make([]int64, 0, seqPage)
	for _, w := range ws {
		client := w.id - l.first - 1
		srv := seqs{conn: conn, writer: w.id, below: w.n + 1, page: page[:0]}
		err := w.backward(func(seq int64, r rec) error {
			here, err := srv.holds(ctx, seq)
			if err != nil {
				return err
			}
			t.add(Commit{Writer: w.id, Seq: seq, Client: client, At: time.Unix(0, r.at)}, r.state, here)
			return nil
		})
		if err != nil {
			return t, err
		}
	}
	t.sortIDs()
	return t, nil
}

// seqs reads one writer's seqs on the server in descending order, a page
// at a time.
type seqs struct {
	conn   *pgx.Conn
	writer int
	below  int64 // the next page's seqs are below it
	page   []int64
	i      int
	done   bool
}

// holds says whether the server holds seq; seqs are asked in descending
// order.
func (s *seqs) holds(ctx context.Context, seq int64) (bool, error) {
	for {
		for ; s.i < len(s.page); s.i++ {
			if v := s.page[s.i]; v <= seq {
				return v == seq, nil
			}
		}
		if s.done {
			return false, nil
		}
		if err := s.next(ctx); err != nil {
			return false, err
		}
	}
}

func (s *seqs) next(ctx context.Context) error {
	rows, err := s.conn.Query(ctx, "SELECT seq FROM "+lag.Table+" WHERE writer = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3", s.writer, s.below, seqPage)
	if err != nil {
		return fmt.Errorf("reading the markers on the node taking writes: %w", err)
	}
	s.page, s.i = s.page[:0], 0
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return fmt.Errorf("reading the markers on the node taking writes: %w", err)
		}
		s.page = append(s.page, v)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the markers on the node taking writes: %w", err)
	}
	if len(s.page) < seqPage {
		s.done = true
	} else {
		s.below = s.page[len(s.page)-1]
	}
	return nil
}

// largestGap is the largest gap between two successive acknowledgements
// (of any writer) whose first is in [lo, hi): the acknowledgements in
// that window, the first after it, and the gap's ends (0, 0: none). Only
// the window's acknowledgements are held, not the run's.
func (l *ledger) largestGap(lo, hi int64) (from, to int64, err error) {
	ws, err := l.finish()
	if err != nil {
		return 0, 0, err
	}
	var in []int64
	after, seen := int64(0), false
	for _, w := range ws {
		err := w.backward(func(_ int64, r rec) error {
			switch {
			case r.state != committed:
			case r.at >= hi:
				if !seen || r.at < after {
					after, seen = r.at, true
				}
			case r.at >= lo:
				in = append(in, r.at)
			}
			return nil
		})
		if err != nil {
			return 0, 0, err
		}
	}
	slices.Sort(in)
	if seen {
		in = append(in, after)
	}
	best := int64(-1)
	for i := 0; i+1 < len(in); i++ {
		if g := in[i+1] - in[i]; g > best {
			best, from, to = g, in[i], in[i+1]
		}
	}
	return from, to, nil
}

// probeSpan is what the probe's commits say of the failover: the node of
// its first commit (old), its last commit there before its first on
// another node (newNode, firstNew; newNode -1: none), read from the last
// commit back.
func (l *ledger) probeSpan() (oldNode, newNode int, lastOld, firstNew int64, err error) {
	oldNode, newNode = -1, -1
	if _, err := l.finish(); err != nil {
		return oldNode, newNode, 0, 0, err
	}
	w := l.writer(l.probeWriter())
	err = w.backward(func(_ int64, r rec) error {
		if r.state == committed {
			oldNode = int(r.node) // the last seen is the first commit
		}
		return nil
	})
	if err != nil || oldNode < 0 {
		return oldNode, newNode, 0, 0, err
	}
	haveOld := false
	err = w.backward(func(_ int64, r rec) error {
		switch {
		case r.state != committed:
		case int(r.node) != oldNode:
			// The last seen is the first on another node; the old
			// node's commit seen next is the last before it.
			newNode, firstNew, haveOld = int(r.node), r.at, false
		case !haveOld:
			lastOld, haveOld = r.at, true
		}
		return nil
	})
	return oldNode, newNode, lastOld, firstNew, err
}
