// Package runner runs workloads for the commands: it opens the target,
// loads the schema, drives the engine, and writes the reports and output
// files. Every command that runs load (run, sweep, lag, pgbench) calls it
// with one Options value; the CLI only parses flags into it and maps its
// errors to exit codes.
package runner
