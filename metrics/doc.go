// Package metrics records operation latencies in HDR histograms, one recorder
// per worker, and merges them on each tick into interval and cumulative results.
//
// Times are recorded in microseconds with 3 significant digits, from 1 µs to
// one hour. A worker records into its own Recorder: the only lock it takes is
// the recorder's own, which nobody else touches except the ticker once per
// interval, so workers never contend with each other and recording allocates
// nothing.
package metrics
