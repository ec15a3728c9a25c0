// Package lag measures how long writes on a source database take to become
// visible on a destination (a replica, a subscriber, the far end of a CDC
// pipeline), and proves afterwards that every row arrived.
//
// Writers put marker rows into a table owned by txload on the source
// (txload_lag_marker: writer, seq, committed_at): a Stream writes one every
// interval on its own connection, and a workload's clients may add one to
// each of their transactions (TxMarks). A Reader polls the destination for
// markers it has not seen yet. A Tracker pairs the moment the source
// acknowledged each marker's COMMIT with the moment the Reader saw the row,
// both read from txload's own monotonic clock, so no clock skew between
// machines enters the figure; the lag goes into HDR histograms in µs.
//
// Views samples what the servers say of themselves beside it
// (pg_stat_replication on the source, pg_stat_subscription on the
// destination). Compare checks convergence once the destination has every
// marker: row counts and order-independent checksums of each table by
// ranges of key hashes, the rows of ranges that differ listed as missing,
// extra or differing, and the marker sequences compared for gaps and
// repeats.
package lag
