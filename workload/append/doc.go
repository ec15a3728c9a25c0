// Package append is the list-append workload, as Jepsen runs it against
// PostgreSQL to check isolation with Elle: transactions of reads and
// appends to lists of integers, whose history (every attempt, what each
// read returned) the history package checks for the anomalies of Adya's
// definitions, online while the run goes and offline from the file
// --history writes.
package append
