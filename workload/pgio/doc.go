// Package pgio is Kevin Closson's PGIO (the SLOB method) on every dialect:
// tables of one row per 8 KiB block in random key order, and sessions that
// read (and update) random ranges of rows through an index, so that the
// work done is exactly known and the database's logical and physical I/O
// per second can be measured.
//
// The logic is in plain functions and types: Config and ParseScale (the
// settings, validated before anything touches the database; Span is pgio's
// choice of rows), Init (the tables, loaded set-based in parallel, with the
// layout verified), RunServer (pgio's loop inside the server as a PL/pgSQL
// procedure that commits every statement or, as pgio's mypgio(), none until
// the end, behind a start barrier, reporting in NOTICEs), Replay (which
// hands the server's statements on a fixed lag later, on the run's clock
// shifted by it), Client (the same statements from txload, prepared),
// Chooser (pgio's choice of statement in windows of 100), the Collector
// with the server's counters (pg_stat_database, pg_stat_statements, and
// /proc/diskstats for the tables' device: Disk), and the Result's report
// lines. adapter.go wires them to the workload contract.
package pgio
