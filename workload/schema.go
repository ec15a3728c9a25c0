package workload

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

// MarkerTable records which workloads' schemas were loaded completely. A
// workload's row says "loading" from the moment its init starts changing
// tables until the load is complete, so that an interrupted init is never
// mistaken for data a run can use.
const MarkerTable = "txload_init"

const markerDDL = `CREATE TABLE IF NOT EXISTS ` + MarkerTable + ` (
	workload   TEXT PRIMARY KEY,
	settings   TEXT NOT NULL,
	state      TEXT NOT NULL,
	updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`

// The states of a marker row.
const (
	stateLoading  = "loading"
	stateComplete = "complete"
)

// Schema declares a workload's tables and how to load them, for workloads
// whose load fits in one transaction: init, its re-run with the same
// settings, --drop and the completion marker are then the same everywhere.
type Schema struct {
	// Workload names the workload: the marker's key, and the name in
	// messages ("run `txload init bank`").
	Workload string
	// Tables are the tables it creates, in an order they can be dropped in.
	Tables []string
	// Settings are the settings that shape the data, canonical: an init with
	// other settings refuses to reuse the tables.
	Settings string
	// Drop runs before the tables are dropped (views that depend on them).
	Drop string
	// Create is the DDL.
	Create string
	// Load fills the tables, in the transaction that created them.
	Load func(ctx context.Context, tx pgx.Tx) error
	// Describe says what was loaded, for the log line: "100000 accounts".
	Describe string
}

// Init creates and loads the schema in one transaction, marked complete in
// that same transaction: an interrupted init leaves nothing behind. An
// existing complete schema with the same settings is kept unless opts.Drop.
func (s Schema) Init(ctx context.Context, t *pg.Target, opts InitOptions) error {
	conn, err := t.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if !opts.Drop {
		st, err := ReadMarker(ctx, conn, s.Workload)
		if err != nil {
			return err
		}
		switch {
		case st.Complete() && st.Settings == s.Settings:
			opts.Logf("init: %s schema already holds %s; --drop recreates it\n", s.Workload, s.Describe)
			return nil
		case st.Complete():
			return &SettingsError{Workload: s.Workload, Msg: fmt.Sprintf("init %s: the %s schema exists with other settings (%s; asked: %s); --drop recreates it",
				s.Workload, s.Workload, st.Settings, s.Settings)}
		case !st.Found:
			exists, err := anyTable(ctx, conn, s.Tables)
			if err != nil {
				return err
			}
			if exists {
				return fmt.Errorf("init %s: tables of the %s schema exist but were not made by txload init; --drop recreates them", s.Workload, s.Workload)
			}
		}
		// A "loading" marker is left by an interrupted multi-step init:
		// reload.
	}
	start := time.Now()
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, markerDDL); err != nil {
			return fmt.Errorf("creating %s: %w", MarkerTable, err)
		}
		if s.Drop != "" {
			if _, err := tx.Exec(ctx, s.Drop); err != nil {
				return fmt.Errorf("dropping %s objects: %w", s.Workload, err)
			}
		}
		if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+strings.Join(s.Tables, ", ")); err != nil {
			return fmt.Errorf("dropping %s tables: %w", s.Workload, err)
		}
		if _, err := tx.Exec(ctx, s.Create); err != nil {
			return fmt.Errorf("creating %s tables: %w", s.Workload, err)
		}
		if s.Load != nil {
			if err := s.Load(ctx, tx); err != nil {
				return err
			}
		}
		return writeMarker(ctx, tx, s.Workload, s.Settings, stateComplete)
	})
	if err != nil {
		return fmt.Errorf("init %s: %w", s.Workload, err)
	}
	opts.Logf("init: %s in %.2fs\n", s.Describe, time.Since(start).Seconds())
	return nil
}

// InitSchema is the Init hook of a workload whose schema is one Schema,
// built from its flags when init runs.
func InitSchema(schema func() Schema) func(context.Context, *pg.Target, InitOptions) error {
	return func(ctx context.Context, t *pg.Target, o InitOptions) error {
		return schema().Init(ctx, t, o)
	}
}

// Require fails with one line that says what to do unless the schema was
// loaded completely.
func (s Schema) Require(ctx context.Context, conn *pgx.Conn) error {
	st, err := ReadMarker(ctx, conn, s.Workload)
	if err != nil {
		return err
	}
	return st.Require(s.Workload)
}

// Marker is a workload's row of the marker table.
type Marker struct {
	Found    bool // a row exists
	State    string
	Settings string
}

// Complete says the workload's init finished.
func (m Marker) Complete() bool { return m.Found && m.State == stateComplete }

// Require returns nil for a complete init, else an error naming the command
// that mends it.
func (m Marker) Require(workload string) error {
	switch {
	case m.Complete():
		return nil
	case m.Found:
		return &IncompleteError{Workload: workload, Msg: fmt.Sprintf(
			"the %s schema is incomplete (an init was interrupted): run `txload init %s --drop`", workload, workload)}
	}
	return &IncompleteError{Workload: workload, Msg: fmt.Sprintf(
		"no %s schema in this database: run `txload init %s` first", workload, workload)}
}

// IncompleteError says a workload's schema cannot be run on.
type IncompleteError struct {
	Workload string
	Msg      string
}

func (e *IncompleteError) Error() string { return e.Msg }

// SettingsError says a workload's tables exist with other settings than
// those asked for, and that --drop recreates them. It is bad usage (exit
// 2), found before anything is written.
type SettingsError struct {
	Workload string
	Msg      string
}

func (e *SettingsError) Error() string { return e.Msg }

// ReadMarker reads workload's marker row; a database without the marker
// table has none.
func ReadMarker(ctx context.Context, conn *pgx.Conn, workload string) (Marker, error) {
	var m Marker
	err := conn.QueryRow(ctx, `SELECT state, settings FROM `+MarkerTable+` WHERE workload = $1`, workload).Scan(&m.State, &m.Settings)
	switch {
	case err == nil:
		m.Found = true
		return m, nil
	case errors.Is(err, pgx.ErrNoRows), isUndefinedTable(err):
		return Marker{}, nil
	}
	return Marker{}, fmt.Errorf("reading %s: %w", MarkerTable, err)
}

// CheckMarker reads workload's marker inside a check's snapshot (tx) and
// says what is wrong with it, if anything: no marker (the tables were not
// made by a complete init: a run refuses them), an init that did not
// finish, or, when the tables keep a record of their settings (have, in the
// marker's words; "" when they keep none), settings other than those init
// recorded. The marker is returned for the settings it holds.
func CheckMarker(ctx context.Context, tx pgx.Tx, workload, have string) (Marker, []string, error) {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, MarkerTable).Scan(&exists); err != nil {
		return Marker{}, nil, fmt.Errorf("looking for %s: %w", MarkerTable, err)
	}
	var m Marker
	if exists {
		err := tx.QueryRow(ctx, `SELECT state, settings FROM `+MarkerTable+` WHERE workload = $1`, workload).Scan(&m.State, &m.Settings)
		switch {
		case err == nil:
			m.Found = true
		case !errors.Is(err, pgx.ErrNoRows):
			return Marker{}, nil, fmt.Errorf("reading %s: %w", MarkerTable, err)
		}
	}
	switch {
	case !m.Found:
		return m, []string{fmt.Sprintf("no %s row for %s: these tables were not made by a complete `txload init %s` (a run refuses them)", MarkerTable, workload, workload)}, nil
	case !m.Complete():
		return m, []string{fmt.Sprintf("the %s schema's init did not finish (%s says %s): run `txload init %s --drop`", workload, MarkerTable, m.State, workload)}, nil
	case have != "" && have != m.Settings:
		return m, []string{fmt.Sprintf("the %s tables say %s, but init recorded %s in %s", workload, have, m.Settings, MarkerTable)}, nil
	}
	return m, nil, nil
}

// BeginLoad marks workload's schema as being loaded, committed at once, for
// inits that take several transactions: until EndLoad, runs refuse it.
func BeginLoad(ctx context.Context, conn *pgx.Conn, workload, settings string) error {
	if _, err := conn.Exec(ctx, markerDDL); err != nil {
		return fmt.Errorf("creating %s: %w", MarkerTable, err)
	}
	return writeMarker(ctx, conn, workload, settings, stateLoading)
}

// EndLoad marks workload's schema complete.
func EndLoad(ctx context.Context, conn *pgx.Conn, workload, settings string) error {
	return writeMarker(ctx, conn, workload, settings, stateComplete)
}

// ForgetMarker deletes workload's marker row, if any: its tables were
// remade by something else (pgbench -i), and are judged by what they hold.
func ForgetMarker(ctx context.Context, conn *pgx.Conn, workload string) error {
	_, err := conn.Exec(ctx, `DELETE FROM `+MarkerTable+` WHERE workload = $1`, workload)
	if err != nil && !isUndefinedTable(err) {
		return fmt.Errorf("forgetting the %s schema's marker: %w", workload, err)
	}
	return nil
}

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func writeMarker(ctx context.Context, db execer, workload, settings, state string) error {
	_, err := db.Exec(ctx, `INSERT INTO `+MarkerTable+` (workload, settings, state) VALUES ($1, $2, $3)
		ON CONFLICT (workload) DO UPDATE SET settings = excluded.settings, state = excluded.state, updated_at = now()`,
		workload, settings, state)
	if err != nil {
		return fmt.Errorf("marking the %s schema %s: %w", workload, state, err)
	}
	return nil
}

func anyTable(ctx context.Context, conn *pgx.Conn, tables []string) (bool, error) {
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = `+SchemaSQL+` AND table_name = ANY($1)`, tables).Scan(&n); err != nil {
		return false, fmt.Errorf("looking for tables %s: %w", strings.Join(tables, ", "), err)
	}
	return n > 0, nil
}

func isUndefinedTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}
