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
	case c.WorkUnit > c.Scale:
		return fmt.Errorf("--work-unit %d is larger than --scale (%d rows per table): a SELECT reads at most the whole table", c.WorkUnit, c.Scale)
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
	return nil
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
