package ycsb

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/workload"
)

// The table is YCSB's (its JDBC binding's usertable: YCSB_KEY and
// FIELD0…), with two columns of txload's beside it, which no operation
// reads: YCSB_KEYNUM, the number the key was hashed from (the check
// recomputes every key, and tells loaded records from inserted ones), and
// YCSB_RMW, the read-modify-writes that built on the record (each writes
// what it read plus one). Every field's value opens with a checksum of the
// key, the field's number and the rest of the value: the first 8 hex
// digits of md5(key:i:rest), which the check recomputes in the server.
const checksumLen = 8

// fieldName is FIELDi.
func fieldName(i int) string { return "FIELD" + strconv.Itoa(i) }

func fieldNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fieldName(i)
	}
	return out
}

// initColumns are the columns init makes, its fields any number (the
// audit holds them to the settings).
func initColumns() []workload.Column {
	return append(workload.ColumnsOf(createSQL(0)), workload.Column{Table: "usertable", Name: "field*", Type: "text"})
}

func createSQL(fields int) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE usertable (\n\tYCSB_KEY VARCHAR(255) PRIMARY KEY")
	for _, f := range fieldNames(fields) {
		b.WriteString(",\n\t" + f + " TEXT NOT NULL")
	}
	b.WriteString(",\n\tYCSB_KEYNUM BIGINT NOT NULL,\n\tYCSB_RMW BIGINT NOT NULL DEFAULT 0\n);\n")
	// next_keynum: the first key number no run has claimed for its inserts.
	b.WriteString("CREATE TABLE ycsb_meta (\n\trecords BIGINT NOT NULL,\n\tfields INT NOT NULL,\n\tfield_length INT NOT NULL,\n\tnext_keynum BIGINT NOT NULL\n)")
	return b.String()
}

func (g *gen) schema() workload.Schema {
	c := g.cfg
	return workload.Schema{
		Workload: "ycsb",
		Tables:   []string{"usertable", "ycsb_meta"},
		Settings: c.settings(),
		Create:   createSQL(c.fields),
		Load: func(ctx context.Context, tx pgx.Tx) error {
			if err := load(ctx, tx, &c); err != nil {
				return fmt.Errorf("loading %d records: %w", c.records, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO ycsb_meta VALUES ($1, $2, $3, $1)", c.records, c.fields, c.fieldLength); err != nil {
				return fmt.Errorf("writing ycsb_meta: %w", err)
			}
			return nil
		},
		Describe: fmt.Sprintf("%d records of %d fields of %d characters", c.records, c.fields, c.fieldLength),
	}
}

// settings are the flags that shape the data, as the init marker keeps
// them.
func (c *config) settings() string {
	return fmt.Sprintf("records=%d fields=%d field-length=%d", c.records, c.fields, c.fieldLength)
}

// load copies the records into usertable (COPY … FROM STDIN), made as they
// are sent: keys 0 to records-1, each field random text after its
// checksum.
func load(ctx context.Context, tx pgx.Tx, c *config) error {
	cols := "YCSB_KEY, " + strings.Join(fieldNames(c.fields), ", ") + ", YCSB_KEYNUM"
	r := &rows{c: c, rng: rand.New(rand.NewPCG(uint64(c.records), 0x9e3779b97f4a7c15)), v: newValues(c.fieldLength)}
	_, err := tx.Conn().PgConn().CopyFrom(ctx, r, "COPY usertable ("+cols+") FROM STDIN")
	return err
}

// rows is the text of COPY's rows, made as they are read.
type rows struct {
	c    *config
	rng  *rand.Rand
	v    *values
	next int64
	buf  []byte
	key  []byte
}

func (r *rows) Read(p []byte) (int, error) {
	for len(r.buf) < len(p) && r.next < r.c.records {
		r.key = appendKey(r.key[:0], r.next)
		r.buf = append(r.buf, r.key...)
		for i := range r.c.fields {
			r.buf = append(append(r.buf, '\t'), r.v.make(r.rng, r.key, i)...)
		}
		r.buf = strconv.AppendInt(append(r.buf, '\t'), r.next, 10)
		r.buf = append(r.buf, '\n')
		r.next++
	}
	if len(r.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.buf)
	r.buf = r.buf[:copy(r.buf, r.buf[n:])]
	return n, nil
}

// filler is the alphabet of the values' random text: nothing COPY's text
// format or a client encoding would change.
const filler = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// values makes fields' values in buffers of its own: nothing is allocated
// per value.
type values struct {
	val, sum []byte
}

func newValues(length int) *values {
	return &values{val: make([]byte, length), sum: make([]byte, 0, 300+length)}
}

// make returns a new value of field i of key (valid until the next call):
// random text, opened by its checksum.
func (v *values) make(rng *rand.Rand, key []byte, i int) []byte {
	rest := v.val[checksumLen:]
	for j := 0; j < len(rest); {
		x := rng.Uint64()
		for k := 0; k < 10 && j < len(rest); k++ {
			rest[j] = filler[x&63]
			x >>= 6
			j++
		}
	}
	v.sign(key, i)
	return v.val
}

// sign writes the checksum of v.val's rest, as field i of key, into its
// first characters.
func (v *values) sign(key []byte, i int) {
	v.sum = append(v.sum[:0], key...)
	v.sum = strconv.AppendInt(append(v.sum, ':'), int64(i), 10)
	v.sum = append(append(v.sum, ':'), v.val[checksumLen:]...)
	h := md5.Sum(v.sum)
	hex.Encode(v.val[:checksumLen], h[:checksumLen/2])
}

// fillerSays words filler, for a violation.
const fillerSays = "A-Z, a-z, 0-9, - and _"

// badFormSQL is true when a field of a row's first n holds a character
// make never writes: filler's are all it writes after the checksum,
// whose lowercase hex digits (md5's) are filler's too and checksumSQL
// holds. One expression over the fields joined costs a tenth of a
// checksum; one per field, four fifths. Characters are compared by code,
// not by the columns' collation.
func badFormSQL(n int) string {
	return fmt.Sprintf(`(%s) COLLATE "C" ~ '[^-_A-Za-z0-9]'`, strings.Join(fieldNames(n), " || "))
}

// checksumSQL is true when FIELDi's checksum is right, as sign makes it.
func checksumSQL(i int) string {
	f := fieldName(i)
	return fmt.Sprintf("left(%s, %d) = left(md5(YCSB_KEY || ':%d:' || substr(%s, %d)), %d)", f, checksumLen, i, f, checksumLen+1, checksumLen)
}
