package tpcc

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// loadDatedSQL is how far tpcc_meta's loaded_at (the server's now() when
// init created the tables) falls before the time the load dated its rows
// with, the customers' C_SINCE (the client's clock in UTC, once for the
// whole load; no transaction changes it), beyond the check's 2 days of
// clock margin: the check's dates are held to loaded_at (loSQL), so one
// moved back would let rows dated before the load pass.
//
// The customers' median C_SINCE: one customer's, changed, is the
// customer line's violation, not this one's.
const loadDatedSQL = `WITH c AS (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY c_since) AS since FROM customer)
SELECT count(*), COALESCE(min(warehouses), 0),
	COALESCE(min(c.since) - min(loaded_at AT TIME ZONE 'UTC') > INTERVAL '2 days', false),
	COALESCE(min(loaded_at AT TIME ZONE 'UTC')::text, ''), COALESCE(min(c.since)::text, '')
	FROM ` + metaTable + `, c`

// readMeta reads tpcc_meta, which must be the one row init wrote, dated
// no earlier than the load's rows: a second row, or loaded_at moved back,
// lowers the bound of the check's dates (min(loaded_at)).
func (r *checkResult) readMeta(ctx context.Context, tx pgx.Tx) error {
	var rows int64
	var early bool
	var loadedAt, since string
	if err := tx.QueryRow(ctx, loadDatedSQL).Scan(&rows, &r.warehouses, &early, &loadedAt, &since); err != nil {
		return fmt.Errorf("reading %s: %w", metaTable, err)
	}
	if rows != 1 {
		r.meta = append(r.meta, fmt.Sprintf("%s holds %d rows, where init wrote one", metaTable, rows))
	}
	if early {
		r.meta = append(r.meta, fmt.Sprintf("%s's loaded_at (%s UTC) is more than 2 days before the load's C_SINCE (%s UTC, the customers' median), which the load dates every customer with and no transaction changes: loaded_at moved back, which lowers the bound of every date the check holds",
			metaTable, loadedAt, since))
	}
	return nil
}
