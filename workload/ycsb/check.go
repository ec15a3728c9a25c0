package ycsb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// audit is what usertable holds: every record's shape, read in one
// snapshot.
type audit struct {
	records, fields, fieldLength, nextKeynum int64
	rows, loaded, keys, rmw                  int64
	// Rows with a field of another length, with a field whose checksum
	// is wrong, with a key number outside every claim, whose key is not
	// "user" and the hash of its key number.
	badLength, badChecksum, badKeynum, badKey int64
	example                                   string   // a wrong key
	badRMW                                    int64    // rows whose YCSB_RMW is below 0 or NULL
	badForm                                   int64    // rows with a field in characters txload never writes
	hugeRMW                                   int64    // rows whose YCSB_RMW is maxRMW or more
	hugeKeynum                                int64    // the least key number of them
	meta                                      []string // what is wrong with ycsb_meta or the init marker
	weighted                                  uint64   // sum of weight × YCSB_RMW, when the run weighs records (rmwRows)
	present                                   uint64   // sum of weight over the rows but a run's inserts: which records the table holds
}

// maxRMW bounds a record's YCSB_RMW, and their sum: each
// read-modify-write adds 1, and 2^50 of them take 35 years at a million a
// second. A count beyond it is no run's, and would overflow the sums.
const maxRMW = 1 << 50

// rmwSumSQL is usertable's YCSB_RMW added up, held within ±maxRMW (a sum
// beyond it, which no run writes, is then still a 64-bit integer).
func rmwSumSQL() string {
	return fmt.Sprintf("GREATEST(LEAST(COALESCE(sum(YCSB_RMW), 0), %d), -%[1]d)::BIGINT", int64(maxRMW))
}

func auditSQL(fields int) string {
	var length, sum []string
	for i := range fields {
		length = append(length, fmt.Sprintf("length(%s) IS DISTINCT FROM $2", fieldName(i)))
		sum = append(sum, checksumSQL(i))
	}
	return fmt.Sprintf(`SELECT count(*),
	COALESCE(sum(CASE WHEN YCSB_KEYNUM >= 0 AND YCSB_KEYNUM < $1 THEN 1 ELSE 0 END), 0),
	count(DISTINCT YCSB_KEY),
	%s,
	COALESCE(sum(CASE WHEN %s THEN 1 ELSE 0 END), 0),
	COALESCE(sum(CASE WHEN %s THEN 0 ELSE 1 END), 0),
	COALESCE(sum(CASE WHEN YCSB_KEYNUM < 0 OR YCSB_KEYNUM >= $3 THEN 1 ELSE 0 END), 0),
	count(*) FILTER (WHERE YCSB_RMW < 0 OR YCSB_RMW IS NULL),
	count(*) FILTER (WHERE %s),
	count(*) FILTER (WHERE YCSB_RMW >= %d),
	COALESCE(min(YCSB_KEYNUM) FILTER (WHERE YCSB_RMW >= %d), 0)
FROM usertable`, rmwSumSQL(), strings.Join(length, " OR "), strings.Join(sum, " AND "), badFormSQL(fields), int64(maxRMW), int64(maxRMW))
}

var errNoSchema = errors.New("no ycsb schema in this database: run `txload init ycsb` first")

// runAudit reads usertable in one snapshot: its shape in the server, its
// keys here (each recomputed from its key number, as COPY streams them),
// and with a run's weight its YCSB_RMW weighed by record, and its records
// weighed but the run's inserts (key numbers from lo up to hi).
func runAudit(ctx context.Context, t *pg.Target, weight func(int64) uint64, lo, hi int64) (*audit, error) {
	a := &audit{}
	err := workload.ReadSnapshot(ctx, t, "check ycsb", errNoSchema, func(tx pgx.Tx) error {
		if err := a.readMeta(ctx, tx); err != nil {
			return err
		}
		if err := a.readColumns(ctx, tx); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, auditSQL(int(a.fields)), a.records, a.fieldLength, a.nextKeynum).Scan(
			&a.rows, &a.loaded, &a.keys, &a.rmw, &a.badLength, &a.badChecksum, &a.badKeynum, &a.badRMW, &a.badForm, &a.hugeRMW, &a.hugeKeynum); err != nil {
			return fmt.Errorf("auditing usertable: %w", err)
		}
		k := &keys{a: a, weight: weight, lo: lo, hi: hi}
		if _, err := tx.Conn().PgConn().CopyTo(ctx, k, "COPY (SELECT YCSB_KEY, YCSB_KEYNUM, YCSB_RMW FROM usertable) TO STDOUT"); err != nil {
			return fmt.Errorf("reading usertable's keys: %w", err)
		}
		return k.flush()
	})
	return a, err
}

// readMeta reads ycsb_meta, which must be the one row init wrote (its
// next_keynum records plus the runs' claims, 2^40 each), and holds it to
// the settings init recorded in its marker. Without it, the audit goes by
// the marker, every key number claimed.
func (a *audit) readMeta(ctx context.Context, tx pgx.Tx) error {
	var rows int64
	var records, fields, length, next *int64
	if err := tx.QueryRow(ctx, "SELECT count(*), min(records), min(fields), min(field_length), min(next_keynum) FROM ycsb_meta").Scan(
		&rows, &records, &fields, &length, &next); err != nil {
		return fmt.Errorf("reading ycsb_meta: %w", err)
	}
	have := ""
	if rows == 1 && records != nil && fields != nil && length != nil && next != nil {
		a.records, a.fields, a.fieldLength, a.nextKeynum = *records, *fields, *length, *next
		c := config{records: a.records, fields: int(a.fields), fieldLength: int(a.fieldLength)}
		have = c.settings()
		if a.nextKeynum < a.records {
			a.meta = append(a.meta, fmt.Sprintf("ycsb_meta's next_keynum %d is below its %d records (inserts only raise it)", a.nextKeynum, a.records))
		} else if (uint64(a.nextKeynum)-uint64(a.records))%claim != 0 {
			// Init sets next_keynum to records and each run raises it by
			// its claim: a record count changed behind them shows.
			a.meta = append(a.meta, fmt.Sprintf("ycsb_meta's next_keynum %d less its %d records is %d, not a multiple of 2^40 "+
				"(init sets next_keynum to records, each run raises it by its claim of 2^40 key numbers): records or next_keynum changed since init",
				a.nextKeynum, a.records, uint64(a.nextKeynum)-uint64(a.records)))
		}
	} else {
		a.meta = append(a.meta, fmt.Sprintf("ycsb_meta holds %d rows, or NULLs, where init wrote one row", rows))
	}
	m, problems, err := workload.CheckMarker(ctx, tx, "ycsb", have)
	if err != nil {
		return err
	}
	a.meta = append(a.meta, problems...)
	if have == "" {
		if _, err := fmt.Sscanf(m.Settings, "records=%d fields=%d field-length=%d", &a.records, &a.fields, &a.fieldLength); err != nil {
			return fmt.Errorf("ycsb_meta holds %d rows and %s has no ycsb settings: run `txload init ycsb --drop`", rows, workload.MarkerTable)
		}
		a.nextKeynum = math.MaxInt64
	}
	return nil
}

// readColumns holds usertable's field columns to the settings: FIELD0 to
// FIELDn-1 for n fields, no other (a column beyond them would go
// unaudited). The audit then reads the settings' fields that are there.
func (a *audit) readColumns(ctx context.Context, tx pgx.Tx) error {
	var cols []int64
	if err := tx.QueryRow(ctx, `SELECT COALESCE(array_agg(substr(attname, 6)::BIGINT ORDER BY substr(attname, 6)::BIGINT), '{}') FROM pg_attribute
WHERE attrelid = 'usertable'::regclass AND attnum > 0 AND NOT attisdropped AND attname ~ '^field[0-9]{1,9}$'`).Scan(&cols); err != nil {
		return fmt.Errorf("reading usertable's columns: %w", err)
	}
	present := int64(0)
	for present < int64(len(cols)) && cols[present] == present {
		present++
	}
	if present == int64(len(cols)) && present == a.fields {
		return nil
	}
	have := make([]string, len(cols))
	for i, c := range cols {
		have[i] = fieldName(int(c))
	}
	list := strings.Join(have, ", ")
	if present == int64(len(cols)) && present > 2 {
		list = fmt.Sprintf("FIELD0 to FIELD%d", present-1)
	}
	a.meta = append(a.meta, fmt.Sprintf("usertable has %s (%s), where the settings' %d fields are FIELD0 to FIELD%d", metrics.Count(int64(len(cols)), "field column"), list, a.fields, a.fields-1))
	a.fields = min(a.fields, present)
	return nil
}

// keys checks the lines "key\tkeynum\trmw" COPY writes: each key is
// "user" and the hash of its number (unless noKey); with weight, it adds
// up weight(keynum) × rmw (a NULL rmw, which the audit counts, as 0) and,
// for key numbers outside lo…hi-1, weight(keynum) (which records are
// there).
type keys struct {
	a      *audit
	line   []byte
	want   []byte
	weight func(int64) uint64
	lo, hi int64
	noKey  bool
}

func (k *keys) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			k.line = append(k.line, p...)
			break
		}
		k.line = append(k.line, p[:i]...)
		if err := k.flush(); err != nil {
			return 0, err
		}
		p = p[i+1:]
	}
	return n, nil
}

func (k *keys) flush() error {
	if len(k.line) == 0 {
		return nil
	}
	key, rest, ok := bytes.Cut(k.line, []byte{'\t'})
	num, rmw, ok2 := bytes.Cut(rest, []byte{'\t'})
	keynum, err := strconv.ParseInt(string(num), 10, 64)
	if !ok || !ok2 || err != nil {
		return fmt.Errorf("reading usertable's keys: line %q", k.line)
	}
	if k.weight != nil {
		w := k.weight(keynum)
		if keynum < k.lo || keynum >= k.hi {
			k.a.present += w
		}
		if string(rmw) != `\N` {
			n, err := strconv.ParseInt(string(rmw), 10, 64)
			if err != nil {
				return fmt.Errorf("reading usertable's keys: line %q", k.line)
			}
			k.a.weighted += w * uint64(n)
		}
	}
	if k.noKey {
		k.line = k.line[:0]
		return nil
	}
	if k.want = appendKey(k.want[:0], keynum); !bytes.Equal(key, k.want) {
		k.a.badKey++
		if k.a.example == "" {
			k.a.example = fmt.Sprintf("%s (key number %d is %s)", key, keynum, k.want)
		}
	}
	k.line = k.line[:0]
	return nil
}

// result is the audit's lines and violations.
func (a *audit) result() *workload.CheckResult {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	res := &workload.CheckResult{
		Lines: []workload.Line{
			{Label: "records", Value: fmt.Sprintf("%d rows = %d loaded + %d inserted", a.rows, a.loaded, a.rows-a.loaded)},
			{Label: "fields", Value: fmt.Sprintf("%d of %d characters a row, checksums and keys recomputed: %d rows of another length, %d with a wrong checksum, %d with a wrong key",
				a.fields, a.fieldLength, a.badLength, a.badChecksum, a.badKey)},
			{Label: "YCSB_RMW", Value: i(a.rmw) + " (read-modify-writes applied, added up over the rows)"},
		},
		Values: map[string]int64{"rows": a.rows, "loaded": a.loaded, "inserted": a.rows - a.loaded, "rmw": a.rmw,
			"bad_length": a.badLength, "bad_checksum": a.badChecksum, "bad_key": a.badKey, "bad_keynum": a.badKeynum},
	}
	res.Violations = append(res.Violations, a.meta...)
	switch {
	case a.keys < a.rows:
		res.Violations = append(res.Violations, rowsVerb(a.rows-a.keys, "repeats", "repeat")+" another row's key")
	case a.loaded < a.records:
		res.Violations = append(res.Violations, fmt.Sprintf("%d of the %d records init loaded are missing", a.records-a.loaded, a.records))
	case a.loaded > a.records:
		res.Violations = append(res.Violations, fmt.Sprintf("%s more than the %d records init loaded %s their key numbers", metrics.Count(a.loaded-a.records, "row"), a.records, verb(a.loaded-a.records, "has", "have")))
	}
	if a.badLength > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%s a field of another length than %d", rowsVerb(a.badLength, "has", "have"), a.fieldLength))
	}
	if a.badChecksum > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%s a field whose checksum is wrong (a value torn, or written to another field or record)", rowsVerb(a.badChecksum, "has", "have")))
	}
	if a.badKey > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%s a key that is not \"user\" and the hash of their key number: %s", rowsVerb(a.badKey, "has", "have"), a.example))
	}
	if a.badRMW > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%s a YCSB_RMW below 0 or NULL (it counts read-modify-writes, from 0)", rowsVerb(a.badRMW, "has", "have")))
	}
	if a.badForm > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%s a field in characters txload never writes (a value opens with %d lowercase hex digits, its checksum, then writes only %s)",
			rowsVerb(a.badForm, "has", "have"), checksumLen, fillerSays))
	}
	switch {
	case a.hugeRMW > 0:
		res.Violations = append(res.Violations, fmt.Sprintf("%s a YCSB_RMW of 2^50 or more, first key number %d (%s): read-modify-writes add 1 each, and 2^50 of them take 35 years at a million a second",
			rowsVerb(a.hugeRMW, "has", "have"), a.hugeKeynum, appendKey(nil, a.hugeKeynum)))
	case a.rmw >= maxRMW:
		res.Violations = append(res.Violations, "the rows' YCSB_RMW add up to 2^50 or more: read-modify-writes add 1 each, and 2^50 of them take 35 years at a million a second")
	}
	if a.badKeynum > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%s a key number no run claimed (below 0, or from %d)", rowsVerb(a.badKeynum, "has", "have"), a.nextKeynum))
	}
	return res
}

// check is `txload check ycsb`: the data alone.
func check(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
	if res, err := workload.CheckColumns(ctx, t, initColumns()); res != nil || err != nil {
		return res, err
	}
	a, err := runAudit(ctx, t, nil, 0, 0)
	if err != nil {
		return nil, err
	}
	return a.result(), nil
}

// report is the run's audit: the data, and what the run saw against it
// (its inserts all there, its read-modify-writes all counted, no record
// missing that must be there).
func (s *state) report(ctx context.Context, t *pg.Target, total *metrics.Snapshot) (*workload.CheckResult, error) {
	if res, err := workload.CheckColumns(ctx, t, initColumns()); res != nil || err != nil {
		return res, err
	}
	issued, _ := s.ins.unknown()
	a, err := runAudit(ctx, t, s.rows.weight, s.base, s.base+issued)
	if err != nil {
		return nil, err
	}
	res := a.result()
	var ins inserted
	for i, k := range s.kinds {
		switch k {
		case insert:
			if ins, err = s.missingInserts(ctx, t); err != nil {
				return nil, err
			}
			rec := workload.Reconcile(total.Ops[i], a.rows-s.before.rows)
			res.Lines = append(res.Lines, reconciled("inserts", "rows", rec, res, ins.missing == 0)...)
			ins.into(res)
		case readModifyWrite:
			rec := workload.Reconcile(total.Ops[i], a.rmw-s.before.rmw)
			rec.Committed -= s.rmwGone.Load() // found no record: wrote nothing
			res.Lines = append(res.Lines, reconciled("read-modify-writes", "YCSB_RMW", rec, res, false)...)
			s.whichRows(a, res)
		}
	}
	if !slices.Contains(s.kinds, readModifyWrite) {
		s.noRMW(a, res)
	}
	// Which records: but for the run's inserts (each held to its key
	// number, and by the count), those before the run, by the sum of their
	// weights (rmwRows), known to no one else.
	if a.present != s.before.present {
		res.Violations = append(res.Violations, "records: the table holds other records than it held before the run and the run's own inserts: "+
			"records deleted or added by someone else during the run (another run on these tables at the same time: a run's audit holds the tables to that run alone)")
	}
	nf := [3]int64{s.notFound[0].Load(), s.notFound[1].Load(), s.notFound[2].Load()}
	res.Lines = append(res.Lines, workload.Line{Label: "not found", Value: fmt.Sprintf("%d operations found no record: %d loaded, %d inserted and acknowledged before, %d whose insert failed or was under way",
		nf[0]+nf[1]+nf[2], nf[missingLoaded], nf[missingAcknowledged], nf[missingOther])})
	res.Values["not_found"] = nf[0] + nf[1] + nf[2]
	if n := nf[missingLoaded] + nf[missingAcknowledged]; n > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d operations found no record for a key that must be there (%d loaded, %d acknowledged inserts)", n, nf[missingLoaded], nf[missingAcknowledged]))
	}
	if n := s.badRead.Load(); n > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d reads returned a field of another length than %d", n, s.cfg.fieldLength))
	}
	return res, nil
}

// noRMW holds a run without read-modify-writes, YCSB_RMW's only writer
// (its inserts leave it at 0), to the YCSB_RMW the table held before it:
// the sum, and which rows (whichRows, with no read-modify-write to
// explain a change).
func (s *state) noRMW(a *audit, res *workload.CheckResult) {
	if d := a.rmw - s.before.rmw; d != 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("YCSB_RMW: the rows' sum changed by %+d during a run without read-modify-writes, which alone write it (inserts leave it 0): "+
			"written by someone else, or by a column default", d))
	}
	s.whichRows(a, res)
}

// whichRows holds the read-modify-writes to the rows they wrote: the
// table's YCSB_RMW weighed by record grew by the weights of those that
// committed and of some of those in doubt (rmwRows).
func (s *state) whichRows(a *audit, res *workload.CheckResult) {
	ok, checked, doubt := s.rows.explained(a.weighted - s.before.weighted)
	switch {
	case !checked:
		res.Lines = append(res.Lines, workload.Line{Label: "rmw rows", Value: fmt.Sprintf("not checked: %d read-modify-writes in doubt, more than the %d whose every subset is tried", doubt, workload.MaxInDoubt)})
	case !ok:
		res.Violations = append(res.Violations, fmt.Sprintf("read-modify-writes: YCSB_RMW changed on other rows than those the run's read-modify-writes wrote (%d of them in doubt): "+
			"counts moved between records, or written by someone else (another run on these tables at the same time: a run's audit holds the tables to that run alone)", doubt))
	}
}

// reconciled words what a count the server keeps (rows gained, YCSB_RMW
// added) says of the operations of one kind: their commits, and of those
// with an unknown outcome how many committed; a count they cannot explain
// is a violation. allThere says every acknowledged one is in the table:
// a count short of them is then of other rows, deleted.
func reconciled(what, where string, rec workload.Reconciliation, res *workload.CheckResult, allThere bool) []workload.Line {
	cu := rec.CommittedUnknown()
	key := strings.ReplaceAll(what, "-", "_")
	res.Values[key+"_committed"] = rec.Committed
	res.Values[key+"_unknown"] = rec.Unknown
	res.Values[key+"_server"] = rec.Server
	v := fmt.Sprintf("%d committed, %d with an unknown outcome; the server's %s grew by %d", rec.Committed, rec.Unknown, where, rec.Server)
	switch {
	case cu < 0 && allThere:
		res.Violations = append(res.Violations, fmt.Sprintf("%s: the server's %s grew by %d, %d fewer than the %d %s txload saw commit, though every one of them is in the table: "+
			"%d other rows were deleted during the run, by someone else", what, where, rec.Server, -cu, rec.Committed, what, -cu))
	case cu < 0:
		res.Violations = append(res.Violations, fmt.Sprintf("%s: the server's %s grew by %d, but txload saw %d commit: at least %d acknowledged %s are missing", what, where, rec.Server, rec.Committed, -cu, what))
	case cu > rec.Unknown:
		res.Violations = append(res.Violations, fmt.Sprintf("%s: the server's %s grew by %d, %d more than txload saw commit, and only %d ended with an unknown outcome: %d were applied twice or by someone else (another run on these tables at the same time: a run's audit holds the tables to that run alone)", what, where, rec.Server, cu, rec.Unknown, cu-rec.Unknown))
	default:
		v += fmt.Sprintf(" (%d of the unknown committed)", cu)
	}
	return []workload.Line{{Label: what, Value: v}}
}

// inserted is what became of a run's inserts: handed out, ended without
// an acknowledged commit (or under way at the end), acknowledged and
// missing (a few of them named).
type inserted struct {
	issued, unknown, missing int64
	examples                 []string
}

// missingInserts looks for every insert of the run: each whose commit was
// acknowledged must be in the table.
func (s *state) missingInserts(ctx context.Context, t *pg.Target) (inserted, error) {
	issued, unknown := s.ins.unknown()
	in := inserted{issued: issued, unknown: int64(len(unknown))}
	if issued == 0 {
		return in, nil
	}
	conn, err := t.Connect(ctx)
	if err != nil {
		return in, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT s FROM generate_series(0, $1::BIGINT - 1) AS s
WHERE NOT EXISTS (SELECT 1 FROM usertable WHERE YCSB_KEYNUM = $2::BIGINT + s) ORDER BY s`, issued, s.base)
	if err != nil {
		return in, fmt.Errorf("looking for the run's inserts: %w", err)
	}
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return in, err
		}
		if unknown[seq] {
			continue
		}
		in.missing++
		if len(in.examples) < 3 {
			in.examples = append(in.examples, string(appendKey(nil, s.base+seq)))
		}
	}
	if err := rows.Err(); err != nil {
		return in, fmt.Errorf("looking for the run's inserts: %w", err)
	}
	return in, nil
}

// into adds the inserts' line, and a violation for those acknowledged and
// missing.
func (in inserted) into(res *workload.CheckResult) {
	if in.issued == 0 {
		return
	}
	acked := in.issued - in.unknown
	res.Values["inserts_acknowledged_missing"] = in.missing
	res.Lines = append(res.Lines, workload.Line{Label: "acknowledged inserts", Value: fmt.Sprintf("%d of %d in the table", acked-in.missing, acked)})
	if in.missing > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d inserts whose commit was acknowledged are not in the table: %s", in.missing, strings.Join(in.examples, ", ")))
	}
}

// rowsVerb is "1 row has" or "n rows have" (say, one and many).
func rowsVerb(n int64, one, many string) string {
	return metrics.Count(n, "row") + " " + verb(n, one, many)
}

// verb is one for n = 1, many otherwise.
func verb(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
