// Package workload defines the contract every txload workload implements and
// the registry the commands look workloads up in.
//
// A workload is data plus plain functions: a Meta names it and makes a
// Generator; the Generator carries its flags and configuration, and its
// Hooks are its capabilities as functions and fields (Init, Ops, Check,
// Variants, RunDefaults, MarkTransactions, …): a nil hook is a capability
// it lacks, and the commands say so. Ops hands the engine a QueryLoad whose
// Drive runs one executor Program per client (Programs); a Program may also
// be a Setuper, an Ender or a Statementer. Schema makes an init
// all-or-nothing, Mark writes lag's and failover's markers, ProtocolOf names
// the query protocol. docs/architecture.md has the table of capabilities
// and a recipe that compiles. A workload never imports the engine or the
// CLI; package workloadtest is its conformance tests.
package workload
