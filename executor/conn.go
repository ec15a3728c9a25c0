package executor

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/internal/pgwire"
	"github.com/txload/txload/pg"
)

// Stmt is a statement a program runs, made once per program and reused:
// its text, how it is prepared, and what losing the connection while it
// runs means.
type Stmt struct {
	// SQL is the text, with $n parameters for Bind.
	SQL string
	// Name, for Bind, is the statement's name on the connection: it is
	// prepared once per connection. "" runs it as the unnamed statement,
	// parsed anew each time (pgbench's extended protocol).
	Name string
	// Commits marks a statement that ends a transaction (COMMIT, END):
	// a connection lost while it runs leaves its outcome unknown.
	Commits bool
	// Begins marks a statement that opens a transaction block (BEGIN,
	// START TRANSACTION): losing it before any other loses nothing.
	Begins bool
	// Writes marks a statement that may write though its command tag says
	// SELECT: a data-modifying WITH, SELECT INTO (follow).
	Writes bool
	// RollbackTo marks a ROLLBACK TO SAVEPOINT, whose tag is ROLLBACK's.
	RollbackTo bool
	// Savepoint is the savepoint a SAVEPOINT, ROLLBACK TO or RELEASE
	// names, as the server folds it ("": not known).
	Savepoint string
}

// Capture says which rows of a result a program keeps.
type Capture uint8

// The captures.
const (
	CaptureNone  Capture = iota
	CaptureFirst         // the first row (\gset)
	CaptureLast          // the last row (\aset)
	CaptureAll           // every row (small results only)
)

type span struct{ off, n int32 } // n < 0: NULL

// Result is what one queued statement returned.
type Result struct {
	// Err is the server's error (*pgconn.PgError), or the one that ended an
	// earlier statement of the same pipeline segment.
	Err error
	// Rows is the number of rows it returned.
	Rows int
	// Columns is the number of columns of the rows kept.
	Columns int

	// Parts is the number of result sets of a simple Query's \; compound
	// that completed before the one Rows and Err are about: pgbench's
	// "query N".
	Parts int
	// ParseFailed says the statement's Parse, sent with it because the
	// named statement was not prepared on the connection yet, failed:
	// Err is the Parse's error.
	ParseFailed bool

	tag     span
	ended   bool // a simple Query's result set ended: another may follow
	names   []span
	vals    []span
	capture Capture
	stmt    *Stmt
	arena   *[]byte
	kept    int // rows kept in vals
	// base: under CaptureLast, the columns of a compound's earlier result
	// sets kept (each set's last row, as pgbench's \aset stores every
	// set's); the set under way adds its own after them.
	base int
}

// Tag is the command tag: "UPDATE 1".
func (r *Result) Tag() []byte { return r.bytes(r.tag) }

// Name is the name of column i.
func (r *Result) Name(i int) []byte { return r.bytes(r.names[i]) }

// Stmt is the statement the result is of.
func (r *Result) Stmt() *Stmt { return r.stmt }

// Kept is the number of rows kept, as the capture asked.
func (r *Result) Kept() int { return r.kept }

// Value is column col of kept row row, and false for NULL. It is valid until
// the program's Start or Resume returns.
func (r *Result) Value(row, col int) ([]byte, bool) {
	s := r.vals[row*r.Columns+col]
	if s.n < 0 {
		return nil, false
	}
	return r.bytes(s), true
}

func (r *Result) bytes(s span) []byte {
	if s.n <= 0 {
		return nil
	}
	return (*r.arena)[s.off : s.off+s.n : s.off+s.n]
}

// request is a queued statement: its result, the Sync segment it ends in,
// and whether it is a simple Query (one result set per compound part).
type request struct {
	simple  bool
	seg     int
	parsed  bool // a Parse of a named statement went with it
	parseOK bool // ... and the server took it
	text    span // a simple Query's text, in the arena (n 0: none)
}

// Conn is one connection a loop drives: its socket, its read and write
// buffers, and the statements in flight with their results.
type Conn struct {
	// Now is when the loop last resumed the program: the end of the
	// exchange it awaited.
	Now time.Time
	// Intended is when the operation the program is asked to Start should
	// have started (the session's Step.Intended): an open-loop arrival, or
	// now in a closed loop. A history records it beside the invoke time.
	Intended time.Time
	// Notice, when set, is called with each notice or warning the server
	// sends (NoticeResponse), from the client's loop.
	Notice func(*pgconn.PgError)
	// PID and key identify the backend, for cancel requests.
	pid  uint32
	key  []byte
	addr net.Addr

	fd int      // raw non-blocking socket; -1 with nc
	nc net.Conn // a connection driven with blocking reads (TLS)

	rbuf       []byte
	rpos, rend int
	wbuf       []byte
	wpos       int

	tx       byte   // status of the last ReadyForQuery: 'I', 'T' or 'E'
	encoding string // the session's client_encoding when it connected
	pipeline bool
	seg      int // segments started (Syncs queued)
	reqs     []request
	results  []Result
	cur      int // the request whose responses arrive
	syncs    int // Syncs in flight: ReadyForQuery messages still due
	synced   int // ReadyForQuery messages received: the segments ended
	arena    []byte
	fields   [][]byte // a row's values or a description's names, as decoded
	prepared stmtSet
	broken   error // the connection failed
	sent     bool  // something of the exchange in flight was written
	internal bool  // the exchange in flight is the executor's own (ROLLBACK)
	fate     fate  // what the server said of the exchange cut at the run's end (reap)
	params   Params
	complete bool // the last exchange is over: the next request starts another
	// dirty: the transaction open on the connection wrote, or may have
	// (follow); wrote: the attempt under way committed a write, or may
	// have, so that a failure of it must not be retried (client.partly).
	dirty, wrote bool
	// saves is the open block's savepoints, each with dirty as it was
	// when it was set.
	saves []savepoint
	rec   interface {
		StatementAt(op, stmt int, d time.Duration, now time.Time)
	}
}

// Statement records the latency of statement stmt of operation op, for
// per-statement reports; it ended at Now, the time of the reply.
func (c *Conn) Statement(op, stmt int, d time.Duration) {
	if c.rec != nil {
		c.rec.StatementAt(op, stmt, d, c.Now)
	}
}

// A connection's read buffer starts at readBuf, enough for the replies of
// most transactions, and doubles up to maxReadBuf when a read fills it
// (larger replies): with thousands of clients, what each holds is most of
// txload's memory (16 KB at first cost 6 KB more a client at 1,000).
const (
	readBuf    = 4 << 10
	maxReadBuf = 64 << 10
)

func newConn() *Conn {
	return &Conn{fd: -1, rbuf: make([]byte, readBuf), wbuf: make([]byte, 0, 1<<10),
		tx: 'I', arena: make([]byte, 0, 1<<10)}
}

// stmtSet is the named statements prepared on a connection. Every Bind
// looks its statement up: a script has a handful, which a slice searched
// in order finds faster than a map's hashing does.
type stmtSet []*Stmt

func (s stmtSet) has(st *Stmt) bool {
	for _, x := range s {
		if x == st {
			return true
		}
	}
	return false
}

func (s *stmtSet) add(st *Stmt) {
	if !s.has(st) {
		*s = append(*s, st)
	}
}

func (s *stmtSet) remove(st *Stmt) {
	for i, x := range *s {
		if x == st {
			*s = append((*s)[:i], (*s)[i+1:]...)
			return
		}
	}
}

// Idle says the connection is outside a transaction block.
func (c *Conn) Idle() bool { return c.tx == 'I' }

// ClientEncoding is the session's client_encoding when it connected (the
// encoding in which the server counts an error's position).
func (c *Conn) ClientEncoding() string { return c.encoding }

// Pipeline starts (true) or ends (false) pipeline mode: statements queued
// in it share a Sync, and an error skips the rest of their segment, as the
// server does. Ending it queues the segment's Sync.
func (c *Conn) Pipeline(on bool) {
	c.fresh()
	if !on && c.pipeline {
		c.Sync()
	}
	c.pipeline = on
}

// Sync ends a pipeline segment (pgbench's \syncpipeline).
func (c *Conn) Sync() {
	c.fresh()
	c.wbuf = pgwire.Sync{}.Encode(c.wbuf)
	c.seg++
	c.syncs++
}

// fresh starts a new exchange when the last one is over: its results are
// dropped.
func (c *Conn) fresh() {
	if c.complete {
		c.begin()
	}
}

func (c *Conn) queue(s *Stmt, capture Capture, simple bool) {
	c.fresh()
	c.reqs = append(c.reqs, request{simple: simple, seg: c.seg})
	if cap(c.results) > len(c.results) {
		c.results = c.results[:len(c.results)+1]
	} else {
		c.results = append(c.results, Result{})
	}
	r := &c.results[len(c.results)-1]
	names, vals := r.names[:0], r.vals[:0]
	*r = Result{capture: capture, stmt: s, arena: &c.arena, names: names, vals: vals, tag: span{n: -1}}
}

// Simple queues text, the statement with its values substituted, as a
// simple Query (pgbench's simple protocol). It has a Sync of its own.
func (c *Conn) Simple(text []byte, s *Stmt, capture Capture) {
	c.queue(s, capture, true)
	c.reqs[len(c.reqs)-1].text = c.keep(text)
	c.wbuf = pgwire.Query{Text: text}.Encode(c.wbuf)
	c.seg++
	c.syncs++
}

// Prepare queues the Parse of s, a named statement not prepared on the
// connection yet (Setuper): its result has only Err. It has a Sync of its
// own outside a pipeline.
func (c *Conn) Prepare(s *Stmt) {
	c.fresh()
	c.wbuf = pgwire.Parse{Name: s.Name, Query: s.SQL}.Encode(c.wbuf)
	c.prepared.add(s)
	c.queue(s, CaptureNone, false)
	c.reqs[len(c.reqs)-1].parsed = true
	if !c.pipeline {
		c.Sync()
	}
}

// Params appends a statement's text parameters; Send queues it.
type Params struct {
	c       *Conn
	bind    pgwire.Bind
	capture Capture
	stmt    *Stmt
	parsed  bool
}

// Bind queues s with parameters to come: Parse first if s is unnamed or not
// yet prepared on this connection, then Bind. Add the parameters in order,
// then Send.
func (c *Conn) Bind(s *Stmt, capture Capture) *Params {
	c.fresh()
	parsed := false
	if s.Name == "" || !c.prepared.has(s) {
		c.wbuf = pgwire.Parse{Name: s.Name, Query: s.SQL}.Encode(c.wbuf)
		if s.Name != "" {
			c.prepared.add(s)
			parsed = true
		}
	}
	p := &c.params
	*p = Params{c: c, capture: capture, stmt: s, parsed: parsed}
	c.wbuf = p.bind.Start(c.wbuf, s.Name)
	return p
}

// Text adds a parameter's text.
func (p *Params) Text(v []byte) *Params {
	p.c.wbuf = p.bind.Text(p.c.wbuf, v)
	return p
}

// String adds a parameter's text.
func (p *Params) String(v string) *Params {
	p.c.wbuf = p.bind.String(p.c.wbuf, v)
	return p
}

// Int adds an integer parameter.
func (p *Params) Int(v int64) *Params {
	p.c.wbuf = p.bind.Int(p.c.wbuf, v)
	return p
}

// Null adds a NULL parameter.
func (p *Params) Null() *Params {
	p.c.wbuf = p.bind.Null(p.c.wbuf)
	return p
}

// Send queues the statement: Describe, Execute, and its Sync outside a
// pipeline.
func (p *Params) Send() {
	c := p.c
	c.wbuf = p.bind.Finish(c.wbuf)
	c.wbuf = pgwire.Describe{Kind: 'P'}.Encode(c.wbuf)
	c.wbuf = pgwire.Execute{}.Encode(c.wbuf)
	c.queue(p.stmt, p.capture, false)
	c.reqs[len(c.reqs)-1].parsed = p.parsed
	if !c.pipeline {
		c.Sync()
	}
}

// Results is the number of statements queued in the last exchange.
func (c *Conn) Results() int { return len(c.results) }

// Result is the result of statement i of the last exchange, in queue order.
func (c *Conn) Result(i int) *Result { return &c.results[i] }

// begin starts an exchange: the results of the previous one are dropped.
func (c *Conn) begin() {
	c.reqs, c.results, c.cur, c.seg, c.syncs, c.synced = c.reqs[:0], c.results[:0], 0, 0, 0, 0
	c.arena = c.arena[:0]
	c.pipeline = false
	c.complete = false
	c.sent = false
}

// pending says whether the exchange awaits responses.
func (c *Conn) pending() bool { return c.syncs > 0 }

// compound says whether the statement of q may hold several: a simple
// Query of a \; compound (several statements, which may begin and end
// transactions of their own).
func compound(q request, s *Stmt) bool {
	return s != nil && q.simple && strings.Contains(strings.TrimRight(s.SQL, "; \t\r\n"), ";")
}

// syncError gives pe, an ERROR the server sent when every statement of
// segment seg had completed (before its ReadyForQuery), to the segment:
// it is its Sync's, the commit of the implicit transaction that ends the
// segment failing (a deferred trigger or constraint, a serialization
// failure found at commit, a cancel that landed there), which rolls back
// the statements after the segment's last COMMIT, ROLLBACK or CALL (whose
// procedure may commit): they fail with it. What the segment committed before stays committed, and follow
// counts it (wrote). False when the segment queued nothing.
func (c *Conn) syncError(seg int, pe *pgconn.PgError) bool {
	first, last := -1, -1
	for i := range c.reqs {
		if c.reqs[i].seg != seg {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		if k := kindOf(c.results[i].Tag()); k == tagCommit || k == tagRollback || k == tagProcedure || compound(c.reqs[i], c.results[i].stmt) {
			first = i + 1
		}
	}
	if last < 0 {
		return false
	}
	for i := min(first, last); i <= last; i++ {
		c.results[i].Err = pe
	}
	return true
}

// follow follows what segment seg did to the data, at its ReadyForQuery
// (c.tx the status it left, prev the one it began in): a statement that
// wrote (its command tag not one of a statement that changes no data, or
// Stmt.Writes) makes the transaction open dirty; a COMMIT of a dirty one,
// or the segment ending outside a block with a dirty one (its Sync's
// implicit commit, or autocommit), committed a write: the attempt wrote.
// A CALL or DO outside a block may commit inside (a procedure's COMMIT):
// it wrote, whatever follows. A ROLLBACK, and an error, undo the open
// transaction's writes; a ROLLBACK TO SAVEPOINT those since its savepoint
// (by name: rollbackTo). A \; compound reports its last part's tag only: it counts as
// a write, and one holding a COMMIT as having committed one. What a tag
// cannot show is taken for a read: a SELECT that writes through a
// function.
func (c *Conn) follow(seg int, prev byte) {
	inBlock, failed := prev != 'I', false
	for i := range c.reqs {
		q := c.reqs[i]
		if q.seg != seg {
			continue
		}
		r := &c.results[i]
		multi := compound(q, r.stmt)
		if r.tag.n < 0 {
			if r.Err == nil {
				continue // a Parse alone, an empty query
			}
			// The statement failed: the rest of the segment was skipped.
			if multi && r.Parts > 0 && r.stmt.Commits {
				c.wrote = true
			}
			failed = true
			break
		}
		failed = failed || r.Err != nil // the Sync's error (syncError)
		switch k := kindOf(r.Tag()); {
		case multi:
			// Its savepoints are not known: a ROLLBACK TO any of them, or
			// of one before it, undoes nothing (retest 14).
			c.dirty = true
			c.wrote = c.wrote || r.stmt.Commits
			c.saves = append(c.saves, savepoint{name: anySavepoint, dirty: true})
		case k == tagBegin:
			inBlock = true
		case k == tagCommit:
			c.wrote = c.wrote || c.dirty
			c.dirty, inBlock, c.saves = false, false, c.saves[:0]
		case k == tagCommitPrepared:
			c.wrote = true
		case k == tagPrepared:
			// PREPARE TRANSACTION: the block ends, not committed.
			c.dirty, inBlock, c.saves = false, false, c.saves[:0]
		case k == tagRollback && r.stmt != nil && r.stmt.RollbackTo:
			c.rollbackTo(r.stmt.Savepoint)
		case k == tagRollback:
			c.dirty, inBlock, c.saves = false, false, c.saves[:0]
		case k == tagSavepoint && r.stmt != nil && r.stmt.Savepoint != "":
			c.saves = append(c.saves, savepoint{r.stmt.Savepoint, c.dirty})
		case k == tagSavepoint:
			// A savepoint whose name is not known: a ROLLBACK TO it, or
			// to one before it, undoes nothing (retest 15: SAVEPOINT "a"
			// after SAVEPOINT a).
			c.saves = append(c.saves, savepoint{anySavepoint, true})
		case k == tagRead && r.stmt != nil && r.stmt.Savepoint != "":
			c.release(r.stmt.Savepoint) // RELEASE
		case k == tagProcedure:
			c.dirty = true
			c.wrote = c.wrote || !inBlock
		case k == tagWrite, r.stmt != nil && r.stmt.Writes:
			c.dirty = true
		}
	}
	switch {
	case failed:
		c.dirty, c.saves = false, c.saves[:0]
	case c.tx == 'I':
		c.wrote = c.wrote || c.dirty
		c.dirty, c.saves = false, c.saves[:0]
	}
}

// savepoint is a savepoint of the open block (follow).
type savepoint struct {
	name  string
	dirty bool
}

// anySavepoint stands for the savepoints a \; compound may have set, or
// one whose name is not known.
const anySavepoint = "\\;"

// rollbackTo undoes the writes since savepoint name: dirty is again what
// it was when it was set. A savepoint not known (named in quotes), or one
// a \; compound after it may have set again, leaves dirty as it is.
func (c *Conn) rollbackTo(name string) {
	for i := len(c.saves) - 1; i >= 0 && name != ""; i-- {
		if c.saves[i].name == anySavepoint {
			return
		}
		if c.saves[i].name == name {
			c.dirty = c.saves[i].dirty
			c.saves = c.saves[:i+1] // it stays; those after it go
			return
		}
	}
}

// release forgets savepoint name and those set after it.
func (c *Conn) release(name string) {
	for i := len(c.saves) - 1; i >= 0 && name != ""; i-- {
		if c.saves[i].name == name {
			c.saves = c.saves[:i]
			return
		}
	}
}

// What a statement's command tag says it did (follow).
type tagKind uint8

const (
	tagRead           tagKind = iota // changed no data: a read, session control
	tagWrite                         // may have changed data
	tagBegin                         // BEGIN, START TRANSACTION
	tagCommit                        // COMMIT, END
	tagCommitPrepared                // COMMIT PREPARED
	tagPrepared                      // PREPARE TRANSACTION
	tagRollback                      // ROLLBACK (also a COMMIT of a failed block, a ROLLBACK TO)
	tagSavepoint                     // SAVEPOINT
	tagProcedure                     // CALL, DO: may commit inside
)

// kindOf reads a command tag ("INSERT 0 1") by its first word: every tag
// but those of reads, transaction control and session settings may have
// written.
func kindOf(tag []byte) tagKind {
	word := tag
	for i, b := range tag {
		if b == ' ' {
			word = tag[:i]
			break
		}
	}
	more := len(word) < len(tag)
	switch string(word) {
	case "COMMIT":
		if more {
			return tagCommitPrepared
		}
		return tagCommit
	case "ROLLBACK":
		if more {
			return tagRead // ROLLBACK PREPARED
		}
		return tagRollback
	case "PREPARE":
		if more {
			return tagPrepared // PREPARE TRANSACTION
		}
		return tagRead
	case "BEGIN", "START":
		return tagBegin
	case "SAVEPOINT":
		return tagSavepoint
	case "CALL", "DO":
		return tagProcedure
	case "SELECT", "SHOW", "SET", "RESET", "RELEASE", "FETCH", "MOVE",
		"DECLARE", "CLOSE", "DEALLOCATE", "DISCARD", "LISTEN", "UNLISTEN", "LOCK", "":
		return tagRead
	}
	return tagWrite
}

// process handles the complete messages read; done when the exchange's last
// ReadyForQuery arrived.
func (c *Conn) process() (bool, error) {
	for {
		typ, body, n, err := pgwire.Next(c.rbuf[c.rpos:c.rend])
		if err != nil {
			return false, err
		}
		if n == 0 {
			return false, nil
		}
		c.rpos += n
		done, err := c.handle(typ, body)
		if err != nil || done {
			return done, err
		}
	}
}

// idle handles what the server sent while no exchange awaited it: a
// notice goes to Notice; an error (a FATAL: the server ends the session,
// "terminating connection due to administrator command") breaks the
// connection with the server's message. A message cut short waits for the
// rest of it.
func (c *Conn) idle() {
	for c.broken == nil {
		typ, body, n, err := pgwire.Next(c.rbuf[c.rpos:c.rend])
		if err != nil {
			c.broken = err
			return
		}
		if n == 0 {
			return
		}
		c.rpos += n
		switch typ {
		case pgwire.NoticeResponse:
			if c.Notice != nil {
				c.Notice(pgwire.DecodeError(body))
			}
		case pgwire.ErrorResponse:
			c.broken = pgwire.DecodeError(body)
		case pgwire.ParameterStatus, pgwire.NotificationResponse:
		default:
			c.broken = fmt.Errorf("protocol: unexpected message %q while idle", typ)
		}
	}
}

// readIdle reads what the socket has while no exchange awaits it, and
// handles it; a read that fails breaks the connection, if what it read
// did not already.
func (c *Conn) readIdle() {
	_, err := c.fill()
	c.idle()
	if err != nil && c.broken == nil {
		c.broken = err
	}
}

// handle processes one backend message of the exchange in flight; done
// when its last ReadyForQuery arrived.
func (c *Conn) handle(typ byte, body []byte) (done bool, err error) {
	var r *Result
	if c.cur < len(c.results) {
		r = &c.results[c.cur]
	}
	switch typ {
	case pgwire.ReadyForQuery:
		prev := c.tx
		if c.tx, err = pgwire.DecodeReadyForQuery(body); err != nil {
			return false, err
		}
		c.syncs--
		// Segment c.synced ends here: a simple Query, and every statement
		// of the segment that the server skipped after an error. (Not the
		// segment of c.cur: an extended statement that completed moved
		// c.cur on to the next segment already.)
		seg := c.synced
		c.follow(seg, prev)
		c.synced++
		for c.cur < len(c.reqs) && c.reqs[c.cur].seg <= seg {
			c.cur++
		}
		c.complete = c.syncs == 0
		return c.complete, nil
	case pgwire.ErrorResponse:
		pe := pgwire.DecodeError(body)
		if r == nil || c.reqs[c.cur].seg > c.synced {
			if pe.Severity == "FATAL" || pe.Severity == "PANIC" {
				return false, pe // the server ends the session, and says why
			}
			// Every statement of the segment whose ReadyForQuery is due
			// (c.synced) completed: an ERROR now is its Sync's (syncError).
			// It was taken for an error outside the statements awaited,
			// the connection given up and the transaction counted of
			// unknown outcome (a cancel at a run's end landing on a
			// deferred trigger); then, where the segment committed part of
			// itself before (retests 10 to 12), retried, that part
			// applied again: follow now counts that part (wrote), and a
			// failure after it is not retried.
			if c.syncError(c.synced, pe) {
				return false, nil
			}
			// An ERROR for no statement awaited: the exchange's account
			// is lost, and so is the connection (retrying on it looped
			// on the same error until the stack overflowed).
			return false, pg.Broken(fmt.Errorf("the server sent an error outside the statements awaited: %w", pe))
		}
		r.restart() // the error ends a compound's part: Parts counts those before
		r.Err = pe
		// The server skips the rest of the segment: those statements fail
		// with it too. A named statement whose Parse did not get through
		// is not prepared.
		for i := c.cur; i < len(c.reqs) && c.reqs[i].seg == c.reqs[c.cur].seg; i++ {
			c.results[i].Err = pe
			if q := c.reqs[i]; q.parsed && !q.parseOK {
				c.prepared.remove(c.results[i].stmt)
				c.results[i].ParseFailed = i == c.cur
			}
		}
	case pgwire.RowDescription:
		if r == nil {
			return false, fmt.Errorf("protocol: RowDescription outside a statement")
		}
		r.restart()
		if r.capture != CaptureNone {
			c.fields, err = pgwire.DecodeRowDescription(body, c.fields[:0])
			for _, name := range c.fields {
				r.names = append(r.names, c.keep(name))
			}
			r.Columns = len(r.names)
			if err != nil {
				return false, err
			}
		}
	case pgwire.DataRow:
		if r == nil {
			return false, fmt.Errorf("protocol: DataRow outside a statement")
		}
		r.restart()
		r.Rows++
		switch {
		case r.capture == CaptureNone:
		case r.capture == CaptureFirst && r.kept > 0:
		default:
			if r.capture == CaptureLast && r.kept > 0 {
				r.vals = r.vals[:r.base]
			}
			c.fields, err = pgwire.DecodeDataRow(body, c.fields[:0])
			for _, v := range c.fields {
				if v == nil {
					r.vals = append(r.vals, span{n: -1})
				} else {
					r.vals = append(r.vals, c.keep(v))
				}
			}
			if err != nil {
				return false, err
			}
			if r.capture != CaptureLast || r.kept == 0 {
				r.kept++
			}
		}
	case pgwire.CommandComplete, pgwire.EmptyQueryResponse:
		if r == nil {
			return false, fmt.Errorf("protocol: CommandComplete outside a statement")
		}
		r.restart()
		if typ == pgwire.CommandComplete {
			r.tag = c.keep(pgwire.DecodeCommandComplete(body))
		}
		if r.capture == CaptureLast && r.Rows == 0 {
			// \aset skips a set without rows.
			r.names, r.vals, r.Columns = r.names[:r.base], r.vals[:r.base], r.base
		}
		if c.reqs[c.cur].simple {
			// A \; compound may send another result set: only the last
			// one counts, as pgbench keeps it (\aset: each one's last row).
			r.ended = true
		} else {
			c.cur++
		}
	case pgwire.CopyOutResponse:
		// COPY TO STDOUT: the statement fails with ErrCopy; its data is
		// read and dropped.
		if r != nil && r.Err == nil {
			r.Err = ErrCopy
		}
	case pgwire.CopyData, pgwire.CopyDone:
	case pgwire.CopyInResponse, pgwire.CopyBothResponse:
		// COPY FROM STDIN would wait for data: the connection is given up.
		return false, ErrCopy
	case pgwire.ParseComplete:
		if c.cur < len(c.reqs) {
			c.reqs[c.cur].parseOK = true
		}
	case pgwire.NoticeResponse:
		if c.Notice != nil {
			c.Notice(pgwire.DecodeError(body))
		}
	case pgwire.BindComplete, pgwire.CloseComplete, pgwire.NoData, pgwire.ParameterDescription,
		pgwire.PortalSuspended, pgwire.ParameterStatus, pgwire.NotificationResponse, pgwire.BackendKeyData:
	default:
		return false, fmt.Errorf("protocol: unexpected message %q", typ)
	}
	return false, nil
}

// ErrCopy is the error of a statement that started a COPY: COPY TO
// STDOUT fails the statement, COPY FROM STDIN the connection.
var ErrCopy = errors.New("COPY is not supported in load scripts")

// restart forgets a compound's earlier result set when the next begins.
func (r *Result) restart() {
	if r.ended {
		r.Parts++
		if r.capture == CaptureLast {
			// \aset: keep the set that ended if it had a row.
			if r.Rows > 0 {
				r.base = len(r.names)
			}
			r.names, r.vals, r.Columns = r.names[:r.base], r.vals[:r.base], r.base
			r.ended, r.Rows = false, 0
			r.tag = span{n: -1}
			return
		}
		r.ended, r.Rows, r.Columns, r.kept = false, 0, 0, 0
		r.names, r.vals = r.names[:0], r.vals[:0]
		r.tag = span{n: -1}
	}
}

// sentText is the text of statement i of the exchange as libpq keeps it:
// a simple Query's; the SQL of an unnamed statement or of a named one
// parsed in this exchange (libpq's PQprepare); "" for the execution of a
// named statement prepared before.
func (c *Conn) sentText(i int) string {
	q := c.reqs[i]
	if q.text.n > 0 {
		return string(c.arena[q.text.off : q.text.off+q.text.n])
	}
	if s := c.results[i].stmt; s != nil && !q.simple && (s.Name == "" || q.parsed) {
		return s.SQL
	}
	return ""
}

func (c *Conn) keep(b []byte) span {
	off := len(c.arena)
	c.arena = append(c.arena, b...)
	return span{off: int32(off), n: int32(len(b))}
}

// lost builds the error of an exchange cut by a lost connection: the
// transaction may have committed when the exchange held a COMMIT (in
// flight, or completed with the exchange's ReadyForQuery still to come: a
// backend terminated between the two), or when a statement of the segment
// under way ran outside a transaction block; it may be retried only when
// its block was open and no COMMIT had been sent.
func (c *Conn) lost(err error) error {
	// The server's FATAL, when it said why it closed the connection
	// ("terminating connection due to administrator command"), is the
	// error, as libpq reports it.
	// It may point into the statement it cut (a backend terminated while
	// it parsed): libpq shows that position in the text sent, if it was
	// text (not a prepared statement's execution).
	for i := range c.results {
		var pe *pgconn.PgError
		if errors.As(c.results[i].Err, &pe) && (pe.Severity == "FATAL" || pe.Severity == "PANIC") {
			err = &pg.QueryError{Err: fmt.Errorf("%w (%v)", pe, err), Query: c.sentText(i), Encoding: c.encoding}
			break
		}
	}
	if c.internal || !c.sent {
		// The executor's own ROLLBACK; or nothing of the exchange reached
		// the server (the connection was found broken before it was
		// sent), so nothing of it ran.
		return err
	}
	if c.fate == fateNotCommitted {
		// Cut at the run's end, its backend terminated before its
		// transaction committed (reap).
		return fmt.Errorf("%w; its backend was terminated and its transaction did not commit", err)
	}
	ambiguous := false
	for i := range c.results {
		if s := c.results[i].stmt; s != nil && s.Commits {
			ambiguous = true
		}
	}
	if c.tx == 'I' {
		// The segment under way began outside a block: unless it began
		// one, its statements commit one by one, completed or not.
		for i := range c.reqs {
			if c.reqs[i].seg == c.synced {
				if s := c.results[i].stmt; s == nil || !s.Begins {
					ambiguous = true
				}
				break
			}
		}
	}
	if ambiguous {
		return pg.DuringCommit(err)
	}
	return err
}
