// Package engine runs a workload: closed loop (each worker back to back) or
// open loop (operations on an absolute schedule), with warm-up, retries,
// reconnection and interval ticks. It knows no SQL: it calls the workload's
// workers and classifies their errors with the function it is given.
package engine
