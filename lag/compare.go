package lag

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"
)

// Pair is a table to compare: its name on the source and on the
// destination (the same unless mapped with --map).
type Pair struct {
	Source string `json:"source"`
	Dest   string `json:"dest"`
}

// Diff is what comparing one table found.
type Diff struct {
	Pair
	// Key is the source's primary key, by which rows are matched; empty for
	// a table without one, whose rows are compared as a multiset of whole
	// rows.
	Key []string `json:"key"`
	// SourceRows and DestRows are the row counts.
	SourceRows int64 `json:"source_rows"`
	DestRows   int64 `json:"dest_rows"`
	// Missing counts rows of the source absent from the destination; Extra
	// rows of the destination absent from the source (a key present twice
	// counts once more); Differing rows whose key is on both sides with
	// other values.
	Missing   int64 `json:"missing"`
	Extra     int64 `json:"extra"`
	Differing int64 `json:"differing"`
	// MissingKeys, ExtraKeys and DifferingKeys list the first rows of each
	// kind by key ("aid=42"), or whole for a table without a key.
	MissingKeys   []string `json:"missing_keys,omitempty"`
	ExtraKeys     []string `json:"extra_keys,omitempty"`
	DifferingKeys []string `json:"differing_keys,omitempty"`
	// Ranges is the number of key-hash ranges the checksums cover;
	// DifferingRanges those whose count or checksum differed.
	Ranges          int `json:"ranges"`
	DifferingRanges int `json:"differing_ranges"`
	// MissingColumns are columns of the source the destination lacks; the
	// others are compared.
	MissingColumns []string `json:"missing_columns,omitempty"`
}

// OK says the table is the same on both sides.
func (d *Diff) OK() bool {
	return d.Missing == 0 && d.Extra == 0 && d.Differing == 0 && len(d.MissingColumns) == 0 && d.SourceRows == d.DestRows
}

// CompareOptions steer CompareTable.
type CompareOptions struct {
	// List is how many rows of each kind a Diff lists (0 = 10).
	List int
}

// CompareTable compares a table on two connections: row counts, then for
// each range of key hashes the count and an order-independent checksum of
// its rows; the rows of the ranges that differ are fetched from both sides
// and matched by key. The SQL is portable (md5, substr, strpos, casts to
// text): it runs on PostgreSQL, CockroachDB and YugabyteDB. Each side is
// read in one REPEATABLE READ snapshot, in UTC, so that values print alike.
func CompareTable(ctx context.Context, src, dst *pgx.Conn, p Pair, o CompareOptions) (*Diff, error) {
	if o.List <= 0 {
		o.List = 10
	}
	d := &Diff{Pair: p}
	cols, err := columns(ctx, src, p.Source)
	if err != nil {
		return nil, fmt.Errorf("comparing %s: on the source: %w", p.Source, err)
	}
	dcols, err := columns(ctx, dst, p.Dest)
	if err != nil {
		return nil, fmt.Errorf("comparing %s: on the destination: %w", p.Dest, err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("comparing %s: no such table on the source", p.Source)
	}
	if len(dcols) == 0 {
		return nil, fmt.Errorf("comparing %s: no such table on the destination", p.Dest)
	}
	have := map[string]bool{}
	for _, c := range dcols {
		have[c] = true
	}
	var common []string
	for _, c := range cols {
		if have[c] {
			common = append(common, c)
		} else {
			d.MissingColumns = append(d.MissingColumns, c)
		}
	}
	if len(common) == 0 {
		return d, nil
	}
	if d.Key, err = primaryKey(ctx, src, p.Source); err != nil {
		return nil, fmt.Errorf("comparing %s: %w", p.Source, err)
	}
	for _, k := range d.Key {
		if !have[k] {
			d.Key = nil // matched as whole rows, then
		}
	}
	q := newQueries(common, d.Key)

	sides := [2]*side{{conn: src, table: p.Source}, {conn: dst, table: p.Dest}}
	for _, s := range sides {
		if err := s.begin(ctx); err != nil {
			return nil, fmt.Errorf("comparing %s: %w", s.table, err)
		}
		defer s.end(ctx)
		if err := s.tx.QueryRow(ctx, "SELECT count(*) FROM "+ident(s.table)).Scan(&s.rows); err != nil {
			return nil, fmt.Errorf("counting %s: %w", s.table, err)
		}
	}
	d.SourceRows, d.DestRows = sides[0].rows, sides[1].rows
	digits := bucketDigits(max(d.SourceRows, d.DestRows))
	d.Ranges = 1 << (4 * digits)
	// Each side on its own server: both at once.
	var g errgroup.Group
	for _, s := range sides {
		g.Go(func() error {
			var err error
			if s.buckets, err = s.checksums(ctx, q, digits); err != nil {
				return fmt.Errorf("checksumming %s: %w", s.table, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var differ []string
	for b, sum := range sides[0].buckets {
		if sides[1].buckets[b] != sum {
			differ = append(differ, b)
		}
	}
	for b := range sides[1].buckets {
		if _, ok := sides[0].buckets[b]; !ok {
			differ = append(differ, b)
		}
	}
	d.DifferingRanges = len(differ)
	if len(differ) == 0 {
		return d, nil
	}
	sort.Strings(differ)
	for _, s := range sides {
		g.Go(func() error {
			var err error
			if s.rowsIn, err = s.fetch(ctx, q, digits, differ); err != nil {
				return fmt.Errorf("listing the differing rows of %s: %w", s.table, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	d.match(sides[0].rowsIn, sides[1].rowsIn, d.Key != nil, o.List)
	return d, nil
}

// side is one database's view of the table.
type side struct {
	conn    *pgx.Conn
	table   string
	tx      pgx.Tx
	rows    int64
	buckets map[string]bucketSum
	rowsIn  map[string][]string // key text → row hashes (a key twice: two)
}

type bucketSum struct {
	n      int64
	s1, s2 string
}

func (s *side) begin(ctx context.Context) error {
	tx, err := s.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("starting a read-only snapshot: %w", err)
	}
	s.tx = tx
	if _, err := tx.Exec(ctx, "SET LOCAL TIME ZONE 'UTC'"); err != nil {
		return fmt.Errorf("setting the time zone: %w", err)
	}
	return nil
}

func (s *side) end(ctx context.Context) {
	if s.tx != nil {
		_ = s.tx.Rollback(context.WithoutCancel(ctx))
	}
}

// queries are the SQL expressions for one table's columns.
type queries struct {
	row  string // the row as text: each column 'v'||value or 'n' for NULL
	key  string // the key as text, for listing ("" = the row)
	keyH string // what the range is a hash of
}

func newQueries(cols, key []string) queries {
	var parts []string
	for _, c := range cols {
		parts = append(parts, "COALESCE('v' || CAST("+pgx.Identifier{c}.Sanitize()+" AS TEXT), 'n')")
	}
	q := queries{row: strings.Join(parts, " || '|' || ")}
	if len(key) == 0 {
		q.key, q.keyH = q.row, q.row
		return q
	}
	parts = parts[:0]
	for _, c := range key {
		parts = append(parts, "'"+strings.ReplaceAll(c, "'", "''")+"=' || COALESCE(CAST("+pgx.Identifier{c}.Sanitize()+" AS TEXT), 'NULL')")
	}
	q.key = strings.Join(parts, " || ',' || ")
	q.keyH = q.key
	return q
}

// hexSum is the integer value of 7 hex digits of h from position from: 28
// bits, so that it stays in a 32-bit integer and a sum of them in 64 bits.
func hexSum(h string, from int) string {
	var terms []string
	for i := range 7 {
		terms = append(terms, fmt.Sprintf("(strpos('0123456789abcdef', substr(%s, %d, 1)) - 1) * %d", h, from+i, 1<<(4*(6-i))))
	}
	return strings.Join(terms, " + ")
}

// checksums returns each range's row count and the sums of two 28-bit
// slices of its rows' md5: equal multisets of rows give equal sums whatever
// their order.
func (s *side) checksums(ctx context.Context, q queries, digits int) (map[string]bucketSum, error) {
	sql := fmt.Sprintf(`SELECT b, count(*), CAST(sum(%s) AS TEXT), CAST(sum(%s) AS TEXT)
		FROM (SELECT substr(md5(%s), 1, %d) AS b, md5(%s) AS r FROM %s OFFSET 0) AS x GROUP BY b`,
		hexSum("r", 1), hexSum("r", 8), q.keyH, digits, q.row, ident(s.table))
	rows, err := s.tx.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bucketSum{}
	for rows.Next() {
		var b string
		var v bucketSum
		if err := rows.Scan(&b, &v.n, &v.s1, &v.s2); err != nil {
			return nil, err
		}
		out[b] = v
	}
	return out, rows.Err()
}

// fetch returns the key and row hash of every row in the given ranges.
func (s *side) fetch(ctx context.Context, q queries, digits int, buckets []string) (map[string][]string, error) {
	out := map[string][]string{}
	const batch = 256
	for i := 0; i < len(buckets); i += batch {
		part := buckets[i:min(i+batch, len(buckets))]
		lits := make([]string, len(part))
		for j, b := range part {
			lits[j] = "'" + b + "'" // hex digits only
		}
		sql := fmt.Sprintf(`SELECT k, md5(r) FROM (SELECT %s AS k, %s AS r, substr(md5(%s), 1, %d) AS b FROM %s OFFSET 0) AS x WHERE b IN (%s)`,
			q.key, q.row, q.keyH, digits, ident(s.table), strings.Join(lits, ", "))
		if digits == 0 {
			sql = fmt.Sprintf(`SELECT %s, md5(%s) FROM %s`, q.key, q.row, ident(s.table))
		}
		rows, err := s.tx.Query(ctx, sql)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k, h string
			if err := rows.Scan(&k, &h); err != nil {
				rows.Close()
				return nil, err
			}
			out[k] = append(out[k], h)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if digits == 0 {
			break
		}
	}
	return out, nil
}

// match sorts the rows of the differing ranges into missing, extra and
// differing.
func (d *Diff) match(src, dst map[string][]string, keyed bool, list int) {
	add := func(n *int64, keys *[]string, k string, count int) {
		if count <= 0 {
			return
		}
		*n += int64(count)
		if len(*keys) < list {
			*keys = append(*keys, k)
		}
	}
	keys := make([]string, 0, len(src)+len(dst))
	for k := range src {
		keys = append(keys, k)
	}
	for k := range dst {
		if _, ok := src[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		s, t := src[k], dst[k]
		if !keyed {
			// The key is the whole row: only counts can differ.
			add(&d.Missing, &d.MissingKeys, k, len(s)-len(t))
			add(&d.Extra, &d.ExtraKeys, k, len(t)-len(s))
			continue
		}
		switch {
		case len(t) == 0:
			add(&d.Missing, &d.MissingKeys, k, len(s))
		case len(s) == 0:
			add(&d.Extra, &d.ExtraKeys, k, len(t))
		default:
			// The first destination row stands for the key; more are extra.
			if s[0] != t[0] {
				add(&d.Differing, &d.DifferingKeys, k, 1)
			}
			add(&d.Extra, &d.ExtraKeys, k, len(t)-1)
		}
	}
}

// bucketDigits chooses the ranges: 16^digits of them, about 256 rows each,
// at most 65536.
func bucketDigits(rows int64) int {
	if rows <= 256 {
		return 0
	}
	return min(int(math.Ceil(math.Log(float64(rows)/256)/math.Log(16))), 4)
}

// columns lists a table's columns in order; none if it does not exist.
func columns(ctx context.Context, conn *pgx.Conn, name string) ([]string, error) {
	return columnList(ctx, conn, name, "listing the columns of",
		`SELECT column_name FROM information_schema.columns WHERE table_name = $1 AND table_schema = `, "ordinal_position")
}

// primaryKey lists a table's primary key columns in order; none if it has
// none.
func primaryKey(ctx context.Context, conn *pgx.Conn, name string) ([]string, error) {
	return columnList(ctx, conn, name, "reading the primary key of",
		`SELECT kcu.column_name FROM information_schema.table_constraints tc
		JOIN information_schema.key_column_usage kcu
		  ON kcu.constraint_name = tc.constraint_name AND kcu.table_name = tc.table_name AND kcu.table_schema = tc.table_schema
		WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_name = $1 AND tc.table_schema = `, "kcu.ordinal_position")
}

// columnList runs q, which ends comparing a schema column, for table name
// (in its schema, or the current one) ordered by order, and returns the
// column names it lists. CockroachDB's hidden rowid of a table without a
// key is left out.
func columnList(ctx context.Context, conn *pgx.Conn, name, doing, q, order string) ([]string, error) {
	schema, table := splitName(name)
	args := []any{table}
	if schema == "" {
		q += "current_schema()"
	} else {
		q += "$2"
		args = append(args, schema)
	}
	rows, err := conn.Query(ctx, q+" ORDER BY "+order, args...)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", doing, name, err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		if c != "rowid" {
			cols = append(cols, c)
		}
	}
	return cols, rows.Err()
}

// MarkerDiff compares a run's markers on both sides.
type MarkerDiff struct {
	// Source and Dest count the run's marker rows on each side.
	Source int64 `json:"source"`
	Dest   int64 `json:"dest"`
	// Gaps are markers on the source that never reached the destination:
	// lost transactions. Repeats are extra copies of a marker on the
	// destination: transactions applied more than once. Extra are markers
	// on the destination that the source does not have.
	Gaps    int64 `json:"gaps"`
	Repeats int64 `json:"repeats"`
	Extra   int64 `json:"extra"`
	// GapKeys, RepeatKeys and ExtraKeys list the first of each
	// ("writer 3 seq 17").
	GapKeys    []string `json:"gap_keys,omitempty"`
	RepeatKeys []string `json:"repeat_keys,omitempty"`
	ExtraKeys  []string `json:"extra_keys,omitempty"`
}

// OK says every marker arrived exactly once.
func (m *MarkerDiff) OK() bool { return m.Gaps == 0 && m.Repeats == 0 && m.Extra == 0 }

// CompareMarkers compares the markers of writers first..first+n-1 on both
// sides; destTable is the marker table's name on the destination.
func CompareMarkers(ctx context.Context, src, dst *pgx.Conn, destTable string, first, n, list int) (*MarkerDiff, error) {
	if list <= 0 {
		list = 10
	}
	type row struct {
		w     int32
		seq   int64
		count int64
	}
	read := func(conn *pgx.Conn, sql string) ([]row, error) {
		rows, err := conn.Query(ctx, sql, int32(first), int32(first+n))
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.w, &r.seq, &r.count); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, rows.Err()
	}
	s, err := read(src, "SELECT writer, seq, count(*) FROM "+Table+" WHERE writer >= $1 AND writer < $2 GROUP BY writer, seq ORDER BY writer, seq")
	if err != nil {
		return nil, fmt.Errorf("reading the markers on the source: %w", err)
	}
	t, err := read(dst, "SELECT writer, seq, count(*) FROM "+ident(destTable)+" WHERE writer >= $1 AND writer < $2 GROUP BY writer, seq ORDER BY writer, seq")
	if err != nil {
		return nil, fmt.Errorf("reading the markers on the destination: %w", err)
	}
	m := &MarkerDiff{}
	key := func(r row) string { return fmt.Sprintf("writer %d seq %d", r.w, r.seq) }
	note := func(n *int64, keys *[]string, r row, count int64) {
		*n += count
		if len(*keys) < list {
			*keys = append(*keys, key(r))
		}
	}
	less := func(a, b row) bool { return a.w < b.w || (a.w == b.w && a.seq < b.seq) }
	i, j := 0, 0
	for i < len(s) || j < len(t) {
		switch {
		case j == len(t) || (i < len(s) && less(s[i], t[j])):
			m.Source += s[i].count
			note(&m.Gaps, &m.GapKeys, s[i], 1)
			i++
		case i == len(s) || less(t[j], s[i]):
			m.Dest += t[j].count
			note(&m.Extra, &m.ExtraKeys, t[j], t[j].count)
			j++
		default:
			m.Source += s[i].count
			m.Dest += t[j].count
			if t[j].count > 1 {
				note(&m.Repeats, &m.RepeatKeys, t[j], t[j].count-1)
			}
			i++
			j++
		}
	}
	return m, nil
}
