// Package pgbench is the pgbench family: `init tpcb` (pgbench's four
// tables), the builtin scripts tpcb-like, simple-update and select-only, and
// `script`, which runs pgbench script files unmodified.
package pgbench
