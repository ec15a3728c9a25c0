package pgio

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// BlockSize is the block size pgio's scale is counted in: PostgreSQL's
// default page, which holds one row of the pgio tables.
const BlockSize = 8192

// MaxScale bounds --scale: 2^40 blocks (8 PiB of PostgreSQL pages).
const MaxScale = int64(1) << 40

// MaxTables bounds --tables; pgio's setup drops pgio1..pgio8192.
const MaxTables = 8192

// Mode is where a run's loop runs.
type Mode string

// The modes.
const (
	// ModeAuto is ModeServer where the server runs PL/pgSQL procedures
	// (PostgreSQL, YugabyteDB) and the run is closed loop, else Client.
	ModeAuto Mode = "auto"
	// ModeServer runs pgio's loop inside the server, one procedure call per
	// session.
	ModeServer Mode = "server"
	// ModeClient runs the same statements from txload, prepared.
	ModeClient Mode = "client"
)

// Commit is how much of a session's work one transaction holds.
type Commit string

// The transaction shapes.
const (
	// CommitStatement commits every statement: each is its own
	// transaction, so an update's old row version is dead at once and the
	// tables keep their size (updates stay HOT), but every update waits for
	// its commit's WAL flush.
	CommitStatement Commit = "statement"
	// CommitRun is pgio's own shape (its mypgio() function, one call per
	// session): the whole test is one transaction per session. Updated rows
	// keep every version until the end, so the tables and their index
	// grow, a SELECT reads more blocks as the run goes, and sessions that
	// update the same table can deadlock.
	CommitRun Commit = "run"
)

// Range is how a statement's rows are chosen.
type Range string

// The ranges.
const (
	// RangePgio is mypgio()'s: a first key k from 1 to scale-WORK_UNIT-1,
	// then BETWEEN k AND k+WORK_UNIT for a SELECT (WORK_UNIT+1 rows) and
	// BETWEEN k AND k+UPDATE_WORK_UNIT for an UPDATE (the same choice of
	// k): the last rows of a table are never read.
	RangePgio Range = "pgio"
	// RangeExact reads exactly a work unit of rows (an update an update
	// work unit), the first key uniform over the whole table.
	RangeExact Range = "exact"
)

// Config is a pgio workload's settings.
type Config struct {
	// Tables is the number of tables, pgio1..pgioN.
	Tables int
	// Scale is the rows of each table: its blocks on PostgreSQL.
	Scale int64
	// WorkUnit is the rows a SELECT reads; UpdateWorkUnit those an UPDATE
	// changes.
	WorkUnit, UpdateWorkUnit int64
	// UpdatePct is the percentage of statements that are updates, exact in
	// every window of 100 statements of a session.
	UpdatePct int
	// SessionsPerTable is the number of sessions on each table.
	SessionsPerTable int
	// Mode is where the loop runs.
	Mode Mode
	// Commit is the transaction shape; Range how rows are chosen.
	Commit Commit
	Range  Range
	// Statements, if positive, ends each session after that many measured
	// statements (pgbench's -t); else the run's duration ends it.
	Statements int64
	// LoadJobs is the number of connections init loads over; BatchRows the
	// rows of one committed batch on distributed databases.
	LoadJobs  int
	BatchRows int64
}

// Sessions is the number of sessions of a run.
func (c Config) Sessions() int { return c.Tables * c.SessionsPerTable }

// Validate checks c; its errors name the flag and what is allowed.
func (c Config) Validate() error {
	switch {
	case c.Tables < 1 || c.Tables > MaxTables:
		return fmt.Errorf("--tables must be between 1 and %d, got %d", MaxTables, c.Tables)
	case c.Scale < 1 || c.Scale > MaxScale:
		return fmt.Errorf("--scale must be between 1 and %d blocks, got %d", MaxScale, c.Scale)
	case c.WorkUnit < 1:
		return fmt.Errorf("--work-unit must be at least 1 row, got %d", c.WorkUnit)
	case c.Range != RangePgio && c.WorkUnit > c.Scale:
		return fmt.Errorf("--work-unit %d is larger than --scale (%d rows per table): a SELECT reads at most the whole table", c.WorkUnit, c.Scale)
	case c.Range == RangePgio && c.WorkUnit > c.Scale-2:
		return fmt.Errorf("--work-unit %d is too large for --scale %d: pgio's range (BETWEEN k AND k+%d, k from 1 to scale-%d-1) needs a work unit of at most %d (--range exact reads up to the whole table)",
			c.WorkUnit, c.Scale, c.WorkUnit, c.WorkUnit, max(c.Scale-2, 0))
	case c.UpdateWorkUnit < 1:
		return fmt.Errorf("--update-work-unit must be at least 1 row, got %d", c.UpdateWorkUnit)
	case c.UpdateWorkUnit > c.Scale:
		return fmt.Errorf("--update-work-unit %d is larger than --scale (%d rows per table): an UPDATE changes at most the whole table", c.UpdateWorkUnit, c.Scale)
	case c.UpdatePct < 0 || c.UpdatePct > 100:
		return fmt.Errorf("--update-pct must be between 0 and 100, got %d", c.UpdatePct)
	case c.SessionsPerTable < 1 || c.SessionsPerTable > 1000:
		return fmt.Errorf("--sessions-per-table must be between 1 and 1000, got %d", c.SessionsPerTable)
	case c.Statements < 0:
		return fmt.Errorf("--statements must be 0 (until --duration) or positive, got %d", c.Statements)
	case c.LoadJobs < 1 || c.LoadJobs > 64:
		return fmt.Errorf("--load-jobs must be between 1 and 64, got %d", c.LoadJobs)
	case c.BatchRows < 1:
		return fmt.Errorf("--batch-rows must be at least 1, got %d", c.BatchRows)
	}
	switch c.Mode {
	case ModeAuto, ModeServer, ModeClient:
	default:
		return fmt.Errorf("--mode %q is not allowed (allowed: auto, server, client)", c.Mode)
	}
	switch c.Commit {
	case CommitStatement, CommitRun:
	default:
		return fmt.Errorf("--commit %q is not allowed (allowed: statement, run)", c.Commit)
	}
	switch c.Range {
	case RangePgio, RangeExact:
	default:
		return fmt.Errorf("--range %q is not allowed (allowed: pgio, exact)", c.Range)
	}
	return nil
}

// Span is the keys a statement of kind k may cover: its first key is drawn
// uniformly from 1 to first, and it covers width keys from there (fewer at
// the end of the table, where an update's range may run past it).
func (c Config) Span(k Kind) (first, width int64) {
	n := c.WorkUnit
	if k == Update {
		n = c.UpdateWorkUnit
	}
	if c.Range == RangePgio {
		// mypgio(): pgio_get_random_number(1, scale - WORK_UNIT), which
		// is trunc(random() * (scale - WORK_UNIT - 1) + 1), for either
		// kind; then BETWEEN k AND k + the kind's work unit.
		return max(c.Scale-c.WorkUnit-1, 1), n + 1
	}
	return c.Scale - n + 1, n
}

var errScaleSyntax = errors.New("give a number of 8 KiB blocks (2000) or a size with K, M, G or T (512M, 8G)")

// ParseScale reads pgio's SCALE: a number of 8 KiB blocks ("2000"), or a
// size in binary units ("512M", "8G", "1T"; "64K") that is a whole number
// of blocks. It accepts nothing else: no sign, no fraction, no other unit,
// nothing that overflows or exceeds MaxScale.
func ParseScale(s string) (int64, error) {
	bad := func(err error) (int64, error) { return 0, fmt.Errorf("--scale %q: %w", s, err) }
	t := strings.TrimSpace(s)
	if t == "" {
		return bad(errScaleSyntax)
	}
	unit := int64(0) // bytes per unit; 0: the number is blocks
	switch t[len(t)-1] {
	case 'K', 'k':
		unit = 1 << 10
	case 'M', 'm':
		unit = 1 << 20
	case 'G', 'g':
		unit = 1 << 30
	case 'T', 't':
		unit = 1 << 40
	}
	digits := t
	if unit != 0 {
		digits = t[:len(t)-1]
	}
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		if strings.HasPrefix(digits, "-") {
			return bad(errors.New("must be positive"))
		}
		return bad(errScaleSyntax)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return bad(fmt.Errorf("too large (at most %d blocks, 8 PiB)", MaxScale))
	}
	if n == 0 {
		return bad(errors.New("must be at least 1 block"))
	}
	blocks := n
	if unit != 0 {
		if n > (MaxScale*BlockSize)/unit {
			return bad(fmt.Errorf("too large (at most %d blocks, 8 PiB)", MaxScale))
		}
		bytes := n * unit
		if bytes%BlockSize != 0 {
			return bad(errors.New("is not a whole number of 8 KiB blocks"))
		}
		blocks = bytes / BlockSize
	}
	if blocks > MaxScale {
		return bad(fmt.Errorf("too large (at most %d blocks, 8 PiB)", MaxScale))
	}
	return blocks, nil
}

// Settings is the canonical form of what shapes the data, for the init
// marker: "tables=1 scale=2000".
func (c Config) Settings() string { return fmt.Sprintf("tables=%d scale=%d", c.Tables, c.Scale) }

// ParseSettings reads Settings back.
func ParseSettings(s string) (tables int, scale int64, err error) {
	if _, err := fmt.Sscanf(s, "tables=%d scale=%d", &tables, &scale); err != nil {
		return 0, 0, fmt.Errorf("reading the pgio settings %q: %w", s, err)
	}
	return tables, scale, nil
}

// Table names table i (from 1), as pgio does.
func Table(i int) string { return "pgio" + strconv.Itoa(i) }
