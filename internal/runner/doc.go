// Package runner runs workloads for the commands: it opens the target,
// loads the schema, drives the engine, and writes the reports and output
// files. Every command that runs load calls it with one Options value; the
// CLI only parses flags into it and maps its errors to exit codes. It knows
// no workload by name: a workload's needs come through its hooks and its
// load, and an output format other than txload's own through Format.
package runner
