package lag

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Table is the marker table txload owns on the source, and the name the
// destination holds it under unless mapped.
const Table = "txload_lag_marker"

// InsertSQL writes one marker; committed_at is the source's clock when the
// row was written, for tools that compare clocks (txload's own lag never
// reads it).
const InsertSQL = "INSERT INTO " + Table + " (writer, seq, committed_at) VALUES ($1, $2, clock_timestamp())"

// sourceDDL has the primary key: a writer never writes a seq twice.
const sourceDDL = `CREATE TABLE IF NOT EXISTS ` + Table + ` (
	writer       INT NOT NULL,
	seq          BIGINT NOT NULL,
	committed_at TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (writer, seq)
)`

// CreateSource creates the marker table on the source unless it exists.
func CreateSource(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, sourceDDL); err != nil {
		return fmt.Errorf("creating %s on the source: %w", Table, err)
	}
	return nil
}

// CreateDest creates the marker table on a destination unless it exists,
// under name: without a primary key, so that a pipeline that applies a
// marker twice leaves two rows (counted as a repeat) instead of failing or
// hiding it, and with a plain index on (writer, seq) for the reader's
// polls. A destination whose marker table has a primary key cannot show
// repeats.
func CreateDest(ctx context.Context, conn *pgx.Conn, name string) error {
	id := ident(name)
	ddl := `CREATE TABLE IF NOT EXISTS ` + id + ` (
	writer       INT NOT NULL,
	seq          BIGINT NOT NULL,
	committed_at TIMESTAMPTZ NOT NULL
)`
	index := `CREATE INDEX IF NOT EXISTS ` + ident(lastPart(name)+"_writer_seq") + ` ON ` + id + ` (writer, seq)`
	for _, q := range []string{ddl, index} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("creating %s on the destination: %w", name, err)
		}
	}
	return nil
}

// FirstWriter is the first writer number no marker of the table uses yet:
// each run takes fresh numbers, so the markers of earlier runs are never
// mistaken for its own.
func FirstWriter(ctx context.Context, conn *pgx.Conn) (int, error) {
	var n int
	if err := conn.QueryRow(ctx, "SELECT COALESCE(max(writer), 0) + 1 FROM "+Table).Scan(&n); err != nil {
		return 0, fmt.Errorf("reading the writers of %s: %w", Table, err)
	}
	return n, nil
}

// MissingTables returns those of names that do not exist in the database
// conn reached (in the current schema, or the schema a name gives as
// schema.table).
func MissingTables(ctx context.Context, conn *pgx.Conn, names []string) ([]string, error) {
	var missing []string
	for _, name := range names {
		schema, table := splitName(name)
		var n int
		q := `SELECT count(*) FROM information_schema.tables WHERE table_name = $1 AND table_schema = current_schema()`
		args := []any{table}
		if schema != "" {
			q = `SELECT count(*) FROM information_schema.tables WHERE table_name = $1 AND table_schema = $2`
			args = append(args, schema)
		}
		if err := conn.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			return nil, fmt.Errorf("looking for table %s: %w", name, err)
		}
		if n == 0 {
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// splitName splits "schema.table"; a plain name has no schema.
func splitName(name string) (schema, table string) {
	if s, t, ok := strings.Cut(name, "."); ok {
		return s, t
	}
	return "", name
}

func lastPart(name string) string {
	_, t := splitName(name)
	return t
}

// ident quotes a table name, schema-qualified or not.
func ident(name string) string {
	s, t := splitName(name)
	if s == "" {
		return pgx.Identifier{t}.Sanitize()
	}
	return pgx.Identifier{s, t}.Sanitize()
}

// Marker is one marker row's key.
type Marker struct {
	Writer int
	Seq    int64
}

// Args are InsertSQL's arguments.
func (m Marker) Args() []any { return []any{int32(m.Writer), m.Seq} }

// TxMarks hands each client of a workload the markers it adds to its own
// transactions (--mark-transactions), so that the lag is measured per
// transaction and not only per heartbeat. Client i is the Tracker's writer
// first+i and the table's writer firstWriter+i.
//
// The proposed contract for the workloads: RunOptions carries
// Marks func(client int) TxMarker, with
//
//	type TxMarker interface {
//		Begin() (sql string, args []any) // run inside the transaction, before COMMIT
//		Committed(at time.Time)          // COMMIT acknowledged at at
//		RolledBack(ambiguous bool, at time.Time)
//	}
//
// which *TxMark satisfies. A client calls Begin once per attempt (a retry
// writes a new marker), then exactly one of Committed and RolledBack.
type TxMarks struct {
	t           *Tracker
	first       int
	firstWriter int
}

// NewTxMarks returns the markers of clients numbered from 0, tracked as
// writers first, first+1, ... and written as firstWriter, firstWriter+1, ...
func NewTxMarks(t *Tracker, first, firstWriter int) *TxMarks {
	return &TxMarks{t: t, first: first, firstWriter: firstWriter}
}

// Client returns client id's marker source. Only that client uses it.
func (m *TxMarks) Client(id int) *TxMark {
	return &TxMark{t: m.t, w: m.first + id, writer: m.firstWriter + id}
}

// TxMark is one client's markers.
type TxMark struct {
	t      *Tracker
	w      int
	writer int
	cur    int64 // the attempt's seq; 0 when none is open
}

// Begin opens an attempt: the statement that writes its marker, to be run
// inside the client's transaction before COMMIT.
func (c *TxMark) Begin() (string, []any) {
	c.cur = c.t.Send(c.w)
	return InsertSQL, Marker{Writer: c.writer, Seq: c.cur}.Args()
}

// Committed says the attempt's COMMIT was acknowledged at at.
func (c *TxMark) Committed(at time.Time) {
	if c.cur != 0 {
		c.t.Acked(c.w, c.cur, at)
		c.cur = 0
	}
}

// RolledBack says the attempt ended without an acknowledged COMMIT;
// ambiguous when the connection was lost while COMMIT was in flight.
func (c *TxMark) RolledBack(ambiguous bool, at time.Time) {
	if c.cur != 0 {
		c.t.Failed(c.w, c.cur, ambiguous, at)
		c.cur = 0
	}
}

// SameDatabase says two connections reached one database: the same cluster
// (PostgreSQL's system identifier, CockroachDB's cluster id) and database
// name, and for PostgreSQL the same server of the cluster (a standby shares
// its primary's identifier). The destination is then the source itself:
// the instrument's floor.
func SameDatabase(ctx context.Context, a, b *pgx.Conn) (bool, error) {
	ida, err := identity(ctx, a)
	if err != nil {
		return false, err
	}
	idb, err := identity(ctx, b)
	if err != nil {
		return false, err
	}
	return ida == idb, nil
}

func identity(ctx context.Context, conn *pgx.Conn) (string, error) {
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		return "", fmt.Errorf("identifying the database: %w", err)
	}
	for _, q := range []string{
		"SELECT system_identifier::text || '/' || pg_is_in_recovery()::text || '/' || COALESCE(inet_server_port()::text, '') FROM pg_control_system()",
		"SELECT crdb_internal.cluster_id()::text",
	} {
		var id string
		if err := conn.QueryRow(ctx, q).Scan(&id); err == nil {
			return id + "/" + db, nil
		}
	}
	cfg := conn.Config()
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, db), nil
}
