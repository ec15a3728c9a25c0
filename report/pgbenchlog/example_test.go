package pgbenchlog_test

import (
	"os"
	"time"

	"github.com/txload/txload/report/pgbenchlog"
)

func at(sec, usec int64) time.Time { return time.Unix(sec, usec*1000) }

// A line per transaction: client, transaction number, latency in µs (or
// how it ended), script, end time in seconds and µs, then the schedule lag
// under --rate and the retries unless --max-tries 1.
func ExampleWriter() {
	w := pgbenchlog.New(os.Stdout, pgbenchlog.Config{Throttled: true, MaxTries: 3, FailuresDetailed: true}, at(1700000000, 0))
	_ = w.Log(pgbenchlog.Txn{Client: 0, Number: 1, Latency: 3806 * time.Microsecond, Lag: 172 * time.Microsecond, Tries: 1, End: at(1700000000, 242576)})
	_ = w.Log(pgbenchlog.Txn{Client: 1, Number: 1, Latency: 9100 * time.Microsecond, Lag: 81 * time.Microsecond, Tries: 3, End: at(1700000000, 250001)})
	_ = w.Log(pgbenchlog.Txn{Client: 0, Number: 2, Script: 1, Outcome: pgbenchlog.Serialization, Tries: 3, End: at(1700000000, 300000)})
	_ = w.Log(pgbenchlog.Txn{Client: 1, Number: 2, Outcome: pgbenchlog.Skipped, Tries: 1, End: at(1700000001, 5)})
	_ = w.Close(at(1700000002, 0))
	// Output:
	// 0 1 3806 0 1700000000 242576 172 0
	// 1 1 9100 0 1700000000 250001 81 2
	// 0 2 serialization 1 1700000000 300000 0 2
	// 1 2 skipped 0 1700000001 5 0 0
}

// A line per interval: its start, the transactions that committed, the
// sum, sum of squares, min and max of their latencies, the same four for
// the schedule lag (under --rate), then skipped (under -L), retried and
// retries (unless --max-tries 1), serialization and deadlock failures
// (under --failures-detailed). Empty intervals are written; the last,
// incomplete one is not.
func ExampleWriter_aggregate() {
	w := pgbenchlog.New(os.Stdout, pgbenchlog.Config{AggregateInterval: 1, Throttled: true, LatencyLimit: true, MaxTries: 2, FailuresDetailed: true}, at(1700000000, 400000))
	_ = w.Log(pgbenchlog.Txn{Latency: 1000 * time.Microsecond, Lag: 10 * time.Microsecond, Tries: 1, End: at(1700000000, 500000)})
	_ = w.Log(pgbenchlog.Txn{Latency: 3000 * time.Microsecond, Lag: 30 * time.Microsecond, Tries: 2, End: at(1700000000, 900000)})
	_ = w.Log(pgbenchlog.Txn{Outcome: pgbenchlog.Deadlock, Tries: 2, End: at(1700000000, 950000)})
	_ = w.Log(pgbenchlog.Txn{Outcome: pgbenchlog.Skipped, End: at(1700000002, 100000)})
	_ = w.Log(pgbenchlog.Txn{Latency: 2000 * time.Microsecond, Tries: 1, End: at(1700000002, 200000)})
	_ = w.Close(at(1700000003, 500000))
	// Output:
	// 1700000000 2 4000 10000000 1000 3000 40 1000 10 30 0 2 2 0 1
	// 1700000001 0 0 0 0 0 0 0 0 0 0 0 0 0 0
	// 1700000002 1 2000 4000000 2000 2000 0 0 0 0 1 0 0 0 0
}
