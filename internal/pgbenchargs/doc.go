// Package pgbenchargs parses pgbench's command line (PostgreSQL 15 to 18)
// exactly as pgbench does: GNU getopt_long over pgbench's option table, its
// value syntax, defaults, cross-option checks and error messages, into a
// plain struct. txload's own long flags given beside pgbench's are passed
// through untouched for the caller's flag set. Follow says which pgbench's
// command line to read: the installed pgbench's, unless told otherwise.
package pgbenchargs
