package failoverrun

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/lag"
	"github.com/txload/txload/pg"
)

// OldPrimary is what the embedded pair's old primary, restarted on its
// own after the run (read-only), says of the commits the new one lacks.
type OldPrimary struct {
	// Holds counts the lost commits it has (with synchronous_commit=on,
	// every one it acknowledged); AmbiguousHeld the ambiguous commits it
	// has that the new primary lacks.
	Holds         int64 `json:"lost_held"`
	AmbiguousHeld int64 `json:"ambiguous_held"`
	// Tables are the workload's tables whose rows were looked up.
	Tables []string `json:"tables,omitempty"`
	// Err is why it could not be read (no password).
	Err string `json:"error,omitempty"`
}

// readOld restarts the old primary and attaches to each lost (and
// ambiguous, absent) commit the rows of the workload's tables it wrote
// there: the rows whose xmin is its transaction, as the old primary holds
// them (a row a later transaction changed again shows under that one).
// Transaction ids are compared on the old primary only: the new primary
// hands out again those the old one used after the standby fell behind.
func (s *session) readOld(ctx context.Context) {
	t := &s.res.Tally
	if s.pair == nil || s.res.FaultSent.IsZero() || (t.Lost == 0 && t.Ambiguous == t.Survived) {
		return
	}
	res := &OldPrimary{Tables: s.p.h.Tables}
	s.res.Old = res
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := s.pair.RestartOld(ctx); err != nil {
		res.Err = err.Error()
		return
	}
	conn, err := pg.Connect(ctx, s.pair.Primary.URL())
	if err != nil {
		res.Err = err.Error()
		return
	}
	defer conn.Close(ctx)
	if err := res.attach(ctx, conn, t.LostIDs, &res.Holds); err != nil {
		res.Err = err.Error()
		return
	}
	var absent []Commit
	for _, c := range t.AmbiguousIDs {
		if !c.OnNew {
			absent = append(absent, c)
		}
	}
	if err := res.attach(ctx, conn, absent, &res.AmbiguousHeld); err != nil {
		res.Err = err.Error()
	}
	for i, c := range t.AmbiguousIDs {
		for _, a := range absent {
			if a.Writer == c.Writer && a.Seq == c.Seq {
				t.AmbiguousIDs[i].Rows = a.Rows
			}
		}
	}
}

// attach finds commits' markers on the old primary, counts them in held,
// and gives each the rows of the workload's tables its transaction wrote.
func (o *OldPrimary) attach(ctx context.Context, conn *pgx.Conn, commits []Commit, held *int64) error {
	if len(commits) == 0 {
		return nil
	}
	xid, err := markersOn(ctx, conn, commits, "the old primary")
	if err != nil {
		return err
	}
	*held = int64(len(xid))
	var xids []string
	for _, x := range xid {
		xids = append(xids, x)
	}
	written := map[string][]string{}
	for _, table := range o.Tables {
		id := pgx.Identifier{table}.Sanitize()
		rows, err := conn.Query(ctx, `SELECT t.xmin::text, $2 || ' ' || row_to_json(t)::text FROM `+id+` t WHERE t.xmin::text = ANY($1)`, xids, table)
		if err != nil {
			return fmt.Errorf("reading %s on the old primary: %w", table, err)
		}
		for rows.Next() {
			var x, row string
			if err := rows.Scan(&x, &row); err != nil {
				return fmt.Errorf("reading %s on the old primary: %w", table, err)
			}
			written[x] = append(written[x], row)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("reading %s on the old primary: %w", table, err)
		}
	}
	for i, c := range commits {
		if x, ok := xid[lag.Marker{Writer: c.Writer, Seq: c.Seq}]; ok {
			commits[i].Rows = written[x]
		}
	}
	return nil
}

// markersOn reads which of commits' markers the node on conn (named by
// where) holds, with the transaction that wrote each there.
func markersOn(ctx context.Context, conn *pgx.Conn, commits []Commit, where string) (map[lag.Marker]string, error) {
	xid := map[lag.Marker]string{}
	if len(commits) == 0 {
		return xid, nil
	}
	writers, seqs := make([]int32, len(commits)), make([]int64, len(commits))
	for i, c := range commits {
		writers[i], seqs[i] = int32(c.Writer), c.Seq
	}
	rows, err := conn.Query(ctx, `SELECT m.writer, m.seq, m.xmin::text FROM `+lag.Table+` m
		JOIN unnest($1::int[], $2::bigint[]) AS l(writer, seq) USING (writer, seq)`, writers, seqs)
	if err != nil {
		return nil, fmt.Errorf("reading the markers on %s: %w", where, err)
	}
	for rows.Next() {
		var m lag.Marker
		var x string
		if err := rows.Scan(&m.Writer, &m.Seq, &x); err != nil {
			return nil, fmt.Errorf("reading the markers on %s: %w", where, err)
		}
		xid[m] = x
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the markers on %s: %w", where, err)
	}
	return xid, nil
}
