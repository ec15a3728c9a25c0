package ycsb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// Hooks: init, run (through failover and lag's markers), check.
func (g *gen) Hooks() workload.Hooks {
	return workload.Hooks{
		Validate: g.validate,
		Init:     workload.InitSchema(g.schema),
		Ops:      g.ops,
		Check:    func(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) { return check(ctx, t) },
		Tables:   []string{"usertable", "ycsb_meta"},
		// YCSB loads once and runs many times.
		RunDefaults: workload.RunDefaults{Init: workload.InitKeep},
		// With markers every operation is a transaction of its own,
		// BEGIN … marker COMMIT, in one exchange.
		MarkTransactions: func() error { return nil },
	}
}

// claim is how many key numbers a run claims for its inserts: runs, and
// the instances of one, never insert the same key.
const claim = 1 << 40

// statements are the workload's statements, made once per run: named
// (prepared once per connection) unless a pooler forbids it. The writes
// have two forms: [0] alone, a transaction of its own (its outcome unknown
// when the connection is lost while it runs), [1] inside BEGIN … COMMIT.
type statements struct {
	read, scan, readForUpdate *executor.Stmt
	insert                    [2]*executor.Stmt
	update                    [2][]*executor.Stmt // per field
	rmwUpdate                 []*executor.Stmt    // per field
	begin, commit, rollback   *executor.Stmt
}

func newStatements(fields int, pooled bool) *statements {
	name := func(n string) string {
		if pooled {
			return ""
		}
		return "ycsb_" + n
	}
	cols := strings.Join(fieldNames(fields), ", ")
	params := make([]string, fields)
	for i := range params {
		params[i] = "$" + strconv.Itoa(i+2)
	}
	insertSQL := fmt.Sprintf("INSERT INTO usertable (YCSB_KEY, %s, YCSB_KEYNUM) VALUES ($1, %s, $%d)", cols, strings.Join(params, ", "), fields+2)
	st := &statements{
		read:          &executor.Stmt{SQL: "SELECT " + cols + " FROM usertable WHERE YCSB_KEY = $1", Name: name("read")},
		scan:          &executor.Stmt{SQL: "SELECT " + cols + " FROM usertable WHERE YCSB_KEY >= $1 ORDER BY YCSB_KEY LIMIT $2", Name: name("scan")},
		readForUpdate: &executor.Stmt{SQL: "SELECT " + cols + ", YCSB_RMW FROM usertable WHERE YCSB_KEY = $1 FOR UPDATE", Name: name("read_for_update")},
		begin:         &executor.Stmt{SQL: "BEGIN", Name: name("begin"), Begins: true},
		commit:        &executor.Stmt{SQL: "COMMIT", Name: name("commit"), Commits: true},
		rollback:      &executor.Stmt{SQL: "ROLLBACK", Name: name("rollback")},
	}
	for tx := range 2 {
		suffix := []string{"", "_tx"}[tx]
		st.insert[tx] = &executor.Stmt{SQL: insertSQL, Name: name("insert" + suffix), Commits: tx == 0}
		for i := range fields {
			st.update[tx] = append(st.update[tx], &executor.Stmt{SQL: fmt.Sprintf("UPDATE usertable SET %s = $2 WHERE YCSB_KEY = $1", fieldName(i)),
				Name: name("update" + strconv.Itoa(i) + suffix), Commits: tx == 0})
		}
	}
	for i := range fields {
		st.rmwUpdate = append(st.rmwUpdate, &executor.Stmt{SQL: fmt.Sprintf("UPDATE usertable SET %s = $2, YCSB_RMW = $3 WHERE YCSB_KEY = $1", fieldName(i)),
			Name: name("rmw_update" + strconv.Itoa(i))})
	}
	return st
}

// all lists every statement, for the protocol they are sent with.
func (st *statements) all() []*executor.Stmt {
	out := []*executor.Stmt{st.read, st.scan, st.readForUpdate, st.insert[0], st.insert[1], st.begin, st.commit, st.rollback}
	out = append(out, st.update[0]...)
	out = append(out, st.update[1]...)
	return append(out, st.rmwUpdate...)
}

// state is a run's, shared by its clients.
type state struct {
	cfg     *config
	st      *statements
	kinds   []kind // the run's kinds of operation, as QueryLoad.Ops
	records int64
	// base is the first key number this run inserts (its claim).
	base int64
	ins  inserts
	// latestZeta and scanZeta are the zipfians' ζ, computed once.
	latestZeta, scanZeta float64
	// notFound counts operations that found no record for their key: of a
	// loaded record, of an insert acknowledged before, of another.
	notFound [3]atomic.Int64
	// badRead counts reads that returned a field of the wrong length.
	badRead atomic.Int64
	// rmwGone counts read-modify-writes that found no record: they
	// wrote nothing.
	rmwGone atomic.Int64
	// before is what the table held when the run began: rows, the sum of
	// YCSB_RMW, of weight × YCSB_RMW and of weight (rmwRows).
	before struct {
		rows, rmw         int64
		weighted, present uint64
	}
	rows rmwRows
}

// The classes of a key an operation found no record for.
const (
	missingLoaded = iota
	missingAcknowledged
	missingOther
)

// keynum maps a position in YCSB's dense key order (the records, then this
// run's inserts) to its key number.
func (s *state) keynum(pos int64) int64 {
	if pos < s.records {
		return pos
	}
	return s.base + pos - s.records
}

// last is YCSB's transactioninsertkeysequence.lastValue(), as a position:
// the newest record below which every insert has ended.
func (s *state) last() int64 { return s.records + s.ins.limit.Load() - 1 }

// missing counts an operation that found no record for keynum.
func (s *state) missing(keynum int64) {
	switch {
	case keynum < s.records:
		s.notFound[missingLoaded].Add(1)
	case keynum >= s.base && s.ins.acknowledged(keynum-s.base):
		s.notFound[missingAcknowledged].Add(1)
	default:
		s.notFound[missingOther].Add(1)
	}
}

// inserts follows this run's inserts: sequence numbers handed out (key
// number base+seq), those under way, those that ended without an
// acknowledged commit. Its limit is YCSB's acknowledged counter: every
// insert below it has ended (committed or not, as YCSB acknowledges them).
type inserts struct {
	mu       sync.Mutex
	next     int64
	inFlight map[int64]struct{}
	unacked  map[int64]struct{}
	limit    atomic.Int64
}

// start hands out the next insert's sequence number.
func (s *inserts) start() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := s.next
	s.next++
	s.inFlight[seq] = struct{}{}
	return seq
}

// retry says insert seq is tried again.
func (s *inserts) retry(seq int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight[seq] = struct{}{}
}

// ended says insert seq ended: its commit acknowledged, or not.
func (s *inserts) ended(seq int64, committed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inFlight, seq)
	if committed {
		delete(s.unacked, seq)
	} else {
		s.unacked[seq] = struct{}{}
	}
	limit := s.next
	for q := range s.inFlight {
		limit = min(limit, q)
	}
	s.limit.Store(limit)
}

// acknowledged says insert seq's commit was acknowledged.
func (s *inserts) acknowledged(seq int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, flying := s.inFlight[seq]
	_, unacked := s.unacked[seq]
	return seq < s.next && !flying && !unacked
}

// unknown returns the inserts handed out and those without an
// acknowledged commit (failed, ambiguous, or under way at the end).
func (s *inserts) unknown() (issued int64, unknown map[int64]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	unknown = map[int64]bool{}
	for q := range s.unacked {
		unknown[q] = true
	}
	for q := range s.inFlight {
		unknown[q] = true
	}
	return s.next, unknown
}

// readBefore reads what the table holds before the run, in one snapshot:
// its rows, its YCSB_RMW added up, and its records weighed (which records,
// and with YCSB_RMW, which records read-modify-writes wrote), streamed by
// COPY.
func (s *state) readBefore(ctx context.Context, conn *pgx.Conn) error {
	return pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT count(*), "+rmwSumSQL()+" FROM usertable").Scan(&s.before.rows, &s.before.rmw); err != nil {
			return fmt.Errorf("counting usertable: %w", err)
		}
		k := &keys{a: &audit{}, weight: s.rows.weight, noKey: true}
		if _, err := tx.Conn().PgConn().CopyTo(ctx, k, "COPY (SELECT '', YCSB_KEYNUM, YCSB_RMW FROM usertable) TO STDOUT"); err != nil {
			return fmt.Errorf("reading usertable's records: %w", err)
		}
		if err := k.flush(); err != nil {
			return err
		}
		s.before.weighted, s.before.present = k.a.weighted, k.a.present
		return nil
	})
}

// ops prepares a run: the schema must be complete and of the flags'
// shape; the run claims its range of key numbers for inserts.
func (g *gen) ops(ctx context.Context, t *pg.Target, opts workload.RunOptions) (*workload.QueryLoad, error) {
	c := &g.cfg
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := g.schema().Require(ctx, conn); err != nil {
		return nil, err
	}
	s := &state{cfg: c, st: newStatements(c.fields, t.Pooled()), ins: inserts{inFlight: map[int64]struct{}{}, unacked: map[int64]struct{}{}}}
	var fields, length int64
	if err := conn.QueryRow(ctx, "SELECT records, fields, field_length FROM ycsb_meta").Scan(&s.records, &fields, &length); err != nil {
		return nil, fmt.Errorf("reading ycsb_meta: %w", err)
	}
	if s.records != c.records || fields != int64(c.fields) || length != int64(c.fieldLength) {
		return nil, fmt.Errorf("usertable holds --records %d --fields %d --field-length %d, not the flags' %d, %d, %d: give those, or `txload init ycsb --drop`",
			s.records, fields, length, c.records, c.fields, c.fieldLength)
	}
	s.rows.seed = rand.Uint64()
	if err := s.readBefore(ctx, conn); err != nil {
		return nil, err
	}
	// A run of reads and scans alone writes nothing, and claims nothing:
	// it runs where nothing can be written (a hot standby, a read-only
	// role: the eighth outside retest), and its audit holds no insert.
	if c.proportions[insert] > 0 || c.proportions[update] > 0 || c.proportions[readModifyWrite] > 0 {
		if err := conn.QueryRow(ctx, "UPDATE ycsb_meta SET next_keynum = next_keynum + $1 RETURNING next_keynum - $1", int64(claim)).Scan(&s.base); err != nil {
			return nil, fmt.Errorf("claiming key numbers for inserts: %w", err)
		}
	} else if opts.Log != nil {
		fmt.Fprintln(opts.Log, "the run only reads and scans: it claims no key numbers for inserts (it writes nothing)")
	}
	if c.distribution == latestDist {
		s.latestZeta = zeta(0, s.records-1, zipfianConstant, 0)
	}
	if c.scanZipfian {
		s.scanZeta = zeta(0, c.maxScan-c.minScan+1, zipfianConstant, 0)
	}
	load := &workload.QueryLoad{Protocol: workload.ProtocolOf(s.st.all()...)}
	var weights []float64
	sum := 0.0
	for k, p := range c.proportions {
		if p > 0 {
			s.kinds = append(s.kinds, kind(k))
			load.Ops = append(load.Ops, kind(k).String())
			load.OpInfo = append(load.OpInfo, workload.OpInfo{Title: kind(k).String(), Weight: int(p*1000 + 0.5)})
			weights = append(weights, p)
			sum += p
		}
	}
	load.Chooser = func(id int) func() int {
		rng := rand.New(rand.NewPCG(opts.Seed, 1<<32+uint64(opts.FirstClient+id)))
		return func() int { return discrete(rng, weights, sum) }
	}
	load.Drive = workload.Programs(t, func(id int) workload.Program {
		markName := "ycsb_mark"
		if t.Pooled() {
			markName = ""
		}
		return newProgram(s, rand.New(rand.NewPCG(opts.Seed, uint64(opts.FirstClient+id))), workload.NewMark(opts, id, markName))
	})
	load.Report = func(ctx context.Context, total *metrics.Snapshot) (*workload.CheckResult, error) {
		return s.report(ctx, t, total)
	}
	return load, nil
}
