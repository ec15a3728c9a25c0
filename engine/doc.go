// Package engine runs a workload: closed loop (each client back to back) or
// open loop (operations on an absolute schedule), with warm-up, retries,
// reconnection and interval ticks. It knows no SQL: it hands the workload's
// Drive one session per client, which decides what the client does next
// and records what it did, and classifies their errors with the function
// it is given.
package engine
