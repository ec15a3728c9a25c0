// Package failoverrun runs txload failover: a workload through the runner
// against a primary with a standby, one failover caused (the embedded
// pair's fault and promotion, the user's --failover-command) or waited
// for, and what it cost: the write unavailability, what the clients saw,
// and every acknowledged commit the new primary lacks, by id.
//
// Every workload transaction writes a marker row (lag's marker table)
// before its COMMIT, and a probe commits one every --probe-interval on a
// connection of its own; after the run the markers the new primary holds
// are compared, by id, with those txload saw acknowledged. The CLI maps
// failover's flags to Options and calls Run.
package failoverrun
