package pgio

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/pg"
)

// Blocks counts buffer accesses: hits in shared_buffers and reads from the
// OS (the page cache or the disk). Logical I/Os are their sum; physical
// I/Os the reads.
type Blocks struct{ Hit, Read int64 }

// Logical is the number of logical I/Os.
func (b Blocks) Logical() int64 { return b.Hit + b.Read }

// HitRatio is the share of logical I/Os served from shared_buffers; 0 with
// no I/O.
func (b Blocks) HitRatio() float64 {
	if b.Logical() == 0 {
		return 0
	}
	return float64(b.Hit) / float64(b.Logical())
}

func (b Blocks) sub(o Blocks) Blocks { return Blocks{b.Hit - o.Hit, b.Read - o.Read} }
func (b Blocks) add(o Blocks) Blocks { return Blocks{b.Hit + o.Hit, b.Read + o.Read} }

// DBCounters are pg_stat_database's counters of one database.
type DBCounters struct {
	Blocks
	TupReturned, TupFetched, TupUpdated int64
}

func (d DBCounters) sub(o DBCounters) DBCounters {
	return DBCounters{d.Blocks.sub(o.Blocks), d.TupReturned - o.TupReturned, d.TupFetched - o.TupFetched, d.TupUpdated - o.TupUpdated}
}

// StmtCounters are pg_stat_statements' counters of the pgio statements of a
// kind, in the run's database.
type StmtCounters struct {
	Blocks
	Calls, Rows int64
}

func (s StmtCounters) sub(o StmtCounters) StmtCounters {
	return StmtCounters{s.Blocks.sub(o.Blocks), s.Calls - o.Calls, s.Rows - o.Rows}
}

// Counters is one sample of the server's counters.
type Counters struct {
	At    time.Time
	DB    DBCounters
	Stmts [numKinds]StmtCounters
	// Dealloc is pg_stat_statements_info.dealloc: how many times the
	// extension evicted entries to make room (PostgreSQL 14 and later).
	// Between two samples, anything but 0 means an evicted pgio statement
	// may have taken calls and blocks with it.
	Dealloc int64
	// Disk is the device's counters, where the sampler reads a device.
	Disk DiskCounters
}

// Sub is c - o: what happened between two samples.
func (c Counters) Sub(o Counters) Counters {
	out := Counters{At: c.At, DB: c.DB.sub(o.DB), Dealloc: c.Dealloc - o.Dealloc, Disk: c.Disk.sub(o.Disk)}
	for k := range c.Stmts {
		out.Stmts[k] = c.Stmts[k].sub(o.Stmts[k])
	}
	return out
}

// StmtBlocks is the blocks of every pgio statement.
func (c Counters) StmtBlocks() Blocks {
	var b Blocks
	for _, s := range c.Stmts {
		b = b.add(s.Blocks)
	}
	return b
}

// Sampler reads the counters that exist on the server: pg_stat_database
// (PostgreSQL) and pg_stat_statements where it is loaded.
type Sampler struct {
	conn *pgx.Conn
	// DB and Stmts say which counters are read; DBWhy and StmtsWhy say
	// why one is not. Flush says a backend flushes its statistics to
	// pg_stat_database when asked (ForceFlush).
	DB, Stmts, Flush bool
	noInfo           bool // the server has no pg_stat_statements_info
	DBWhy, StmtsWhy  string
	// Database is the run's database.
	Database string
	// Disk is the device of the tables' file, where this machine's
	// counters of it can be read; else DiskWhy says why not.
	Disk    *Disk
	DiskWhy string
}

// stmtQuery sums pg_stat_statements over the pgio statements of the
// current database, by kind: the SELECT and UPDATE of client mode and of the
// server-mode procedure (PL/pgSQL blanks out its INTO clause; the
// procedure's other statements are not counted).
const stmtQuery = `SELECT (query ~* '^\s*UPDATE')::INT AS kind,
	COALESCE(sum(shared_blks_hit), 0)::BIGINT, COALESCE(sum(shared_blks_read), 0)::BIGINT,
	COALESCE(sum(calls), 0)::BIGINT, COALESCE(sum(rows), 0)::BIGINT
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND query ~ '^(SELECT count\(\*\), sum\(scratch\)\s+FROM|UPDATE) pgio[0-9]+\s'
GROUP BY 1`

const dbQuery = `SELECT blks_hit, blks_read, tup_returned, tup_fetched, tup_updated
FROM pg_stat_database WHERE datname = current_database()`

// NewSampler finds which counters conn's server has. On PostgreSQL it
// creates the pg_stat_statements extension in the database if the library
// is loaded (shared_preload_libraries) and the extension is missing; a
// failure only leaves those counters out. On YugabyteDB and CockroachDB
// block counters do not describe the storage layer and none are read. The
// sampler keeps conn.
func NewSampler(ctx context.Context, conn *pgx.Conn, d pg.Dialect) (*Sampler, error) {
	s := &Sampler{conn: conn}
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&s.Database); err != nil {
		return nil, fmt.Errorf("reading the database's name: %w", err)
	}
	if d != pg.PostgreSQL {
		why := fmt.Sprintf("%s's storage layer is not PostgreSQL's buffers", d)
		s.DBWhy, s.StmtsWhy = why, why
		s.DiskWhy = fmt.Sprintf("%s's storage is not in a data directory of this machine", d)
		return s, nil
	}
	var c Counters
	if err := s.readDB(ctx, &c); err != nil {
		s.DBWhy = oneLine(err.Error())
	} else {
		s.DB = true
	}
	s.Stmts, s.StmtsWhy = s.enableStatements(ctx)
	if s.Disk, s.DiskWhy = findDisk(ctx, conn); s.Disk != nil {
		if _, err := s.Disk.Read(); err != nil {
			s.Disk, s.DiskWhy = nil, oneLine(err.Error())
		}
	}
	if s.DB {
		// What these first reads cost (the catalogs of a new backend) is
		// flushed to pg_stat_database now, not into the measured period.
		s.Flush = ForceFlush(ctx, conn)
	}
	return s, nil
}

func (s *Sampler) enableStatements(ctx context.Context) (bool, string) {
	var loaded, installed bool
	err := s.conn.QueryRow(ctx, `SELECT current_setting('shared_preload_libraries') ~ 'pg_stat_statements',
		EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements')`).Scan(&loaded, &installed)
	if err != nil {
		return false, oneLine(err.Error())
	}
	if !loaded {
		return false, "pg_stat_statements is not in shared_preload_libraries"
	}
	if !installed {
		if _, err := s.conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
			return false, "CREATE EXTENSION pg_stat_statements: " + oneLine(err.Error())
		}
	}
	var c Counters
	if err := s.readStmts(ctx, &c); err != nil {
		return false, oneLine(err.Error())
	}
	return true, ""
}

// Sample reads the counters now.
func (s *Sampler) Sample(ctx context.Context) (Counters, error) {
	c := Counters{At: time.Now()}
	if s.DB {
		if err := s.readDB(ctx, &c); err != nil {
			return c, err
		}
	}
	if s.Stmts {
		if err := s.readStmts(ctx, &c); err != nil {
			return c, err
		}
	}
	if s.Disk != nil {
		d, err := s.Disk.Read()
		if err != nil {
			return c, err
		}
		c.Disk = d
	}
	return c, nil
}

// Sizes are the run's tables' sizes in 8 KiB blocks: their heaps and their
// indexes.
type Sizes struct{ Heap, Index int64 }

// ReadSizes reads the sizes of tables pgio1..pgioN (PostgreSQL).
func ReadSizes(ctx context.Context, conn *pgx.Conn, tables int) (Sizes, error) {
	var z Sizes
	err := conn.QueryRow(ctx, `SELECT COALESCE(sum(pg_relation_size(c)), 0)::BIGINT / 8192, COALESCE(sum(pg_indexes_size(c)), 0)::BIGINT / 8192
		FROM unnest($1::regclass[]) AS c`, tableNames(tables)).Scan(&z.Heap, &z.Index)
	if err != nil {
		return z, fmt.Errorf("reading the pgio tables' sizes: %w", err)
	}
	return z, nil
}

func (s *Sampler) readDB(ctx context.Context, c *Counters) error {
	d := &c.DB
	if err := s.conn.QueryRow(ctx, dbQuery).Scan(&d.Hit, &d.Read, &d.TupReturned, &d.TupFetched, &d.TupUpdated); err != nil {
		return fmt.Errorf("reading pg_stat_database: %w", err)
	}
	return nil
}

func (s *Sampler) readStmts(ctx context.Context, c *Counters) error {
	rows, err := s.conn.Query(ctx, stmtQuery)
	if err != nil {
		return fmt.Errorf("reading pg_stat_statements: %w", err)
	}
	var kind int
	var sc StmtCounters
	_, err = pgx.ForEachRow(rows, []any{&kind, &sc.Hit, &sc.Read, &sc.Calls, &sc.Rows}, func() error {
		if kind >= 0 && kind < int(numKinds) {
			c.Stmts[kind] = sc
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading pg_stat_statements: %w", err)
	}
	if s.noInfo {
		return nil
	}
	if err := s.conn.QueryRow(ctx, "SELECT dealloc FROM pg_stat_statements_info").Scan(&c.Dealloc); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" { // before PostgreSQL 14: no evictions to see
			s.noInfo = true
			return nil
		}
		return fmt.Errorf("reading pg_stat_statements_info: %w", err)
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
