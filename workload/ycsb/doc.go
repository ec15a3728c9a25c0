// Package ycsb is YCSB's core workloads (A to F) as YCSB's CoreWorkload
// runs them: reads, updates, inserts, short scans and read-modify-writes
// of usertable's records, keyed "user" and the FNV hash of their number,
// chosen by a scrambled zipfian, uniform, latest or hotspot distribution;
// with a check of every record (its fields' lengths and checksums, its key,
// the loaded and inserted ones) and, after a run, of what the run saw (its
// acknowledged inserts there, its read-modify-writes counted).
package ycsb
