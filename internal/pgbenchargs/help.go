package pgbenchargs

import (
	"fmt"
	"strings"
)

// Usage is pgbench's --help for the pgbench of major, with prog in place of
// "pgbench": its options, then which pgbench's command line is followed
// (why says why: the one installed, or --pgbench-version) and what -d
// means there, then more (txload's own options), and it ends as pgbench's
// does, with its last two lines.
// BugTracker and HomePage are where txload's bugs go and where it lives.
const (
	BugTracker = "https://github.com/txload/txload/issues"
	HomePage   = "https://github.com/txload/txload"
)

func Usage(prog string, major int, why, more string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `%[1]s is a benchmarking tool for PostgreSQL.

Usage:
  %[1]s [OPTION]... [DBNAME]

Initialization options:
  -i, --initialize         invokes initialization mode
  -I, --init-steps=[dtgGvpf]+ (default "dtgvp")
`, prog)
	if major >= 18 {
		sb.WriteString(`                           run selected initialization steps, in the specified order
                           d: drop any existing pgbench tables
                           t: create the tables used by the standard pgbench scenario
                           g: generate data, client-side
                           G: generate data, server-side
                           v: invoke VACUUM on the standard tables
                           p: create primary key indexes on the standard tables
                           f: create foreign keys between the standard tables
`)
	} else {
		sb.WriteString("                           run selected initialization steps\n")
	}
	sb.WriteString(`  -F, --fillfactor=NUM     set fill factor
  -n, --no-vacuum          do not run VACUUM during initialization
  -q, --quiet              quiet logging (one message each 5 seconds)
  -s, --scale=NUM          scaling factor
  --foreign-keys           create foreign key constraints between tables
  --index-tablespace=TABLESPACE
                           create indexes in the specified tablespace
  --partition-method=(range|hash)
                           partition pgbench_accounts with this method (default: range)
  --partitions=NUM         partition pgbench_accounts into NUM parts (default: 0)
  --tablespace=TABLESPACE  create tables in the specified tablespace
  --unlogged-tables        create tables as unlogged tables

Options to select what to run:
  -b, --builtin=NAME[@W]   add builtin script NAME weighted at W (default: 1)
                           (use "-b list" to list available scripts)
  -f, --file=FILENAME[@W]  add script FILENAME weighted at W (default: 1)
  -N, --skip-some-updates  skip updates of pgbench_tellers and pgbench_branches
                           (same as "-b simple-update")
  -S, --select-only        perform SELECT-only transactions
                           (same as "-b select-only")

Benchmarking options:
  -c, --client=NUM         number of concurrent database clients (default: 1)
  -C, --connect            establish new connection for each transaction
  -D, --define=VARNAME=VALUE
                           define variable for use by custom script
  -j, --jobs=NUM           number of threads (default: 1)
  -l, --log                write transaction times to log file
  -L, --latency-limit=NUM  count transactions lasting more than NUM ms as late
  -M, --protocol=simple|extended|prepared
                           protocol for submitting queries (default: simple)
  -n, --no-vacuum          do not run VACUUM before tests
  -P, --progress=NUM       show thread progress report every NUM seconds
  -r, --report-per-command report latencies, failures, and retries per command
  -R, --rate=NUM           target rate in transactions per second
  -s, --scale=NUM          report this scale factor in output
  -t, --transactions=NUM   number of transactions each client runs (default: 10)
  -T, --time=NUM           duration of benchmark test in seconds
  -v, --vacuum-all         vacuum all four standard tables before tests
  --aggregate-interval=NUM aggregate data over NUM seconds
`)
	if major >= 17 {
		sb.WriteString("  --exit-on-abort          exit when any client is aborted\n")
	}
	sb.WriteString(`  --failures-detailed      report the failures grouped by basic types
  --log-prefix=PREFIX      prefix for transaction time log file
                           (default: "pgbench_log")
  --max-tries=NUM          max number of tries to run transaction (default: 1)
  --progress-timestamp     use Unix epoch timestamps for progress
  --random-seed=SEED       set random seed ("time", "rand", integer)
  --sampling-rate=NUM      fraction of transactions to log (e.g., 0.01 for 1%)
  --show-script=NAME       show builtin script code, then exit
  --verbose-errors         print messages of all errors

Common options:
`)
	if major >= 17 {
		sb.WriteString(`  --debug                  print debugging output
  -d, --dbname=DBNAME      database name to connect to
`)
	} else {
		sb.WriteString("  -d, --debug              print debugging output\n")
	}
	sb.WriteString(`  -h, --host=HOSTNAME      database server host or socket directory
  -p, --port=PORT          database server port number
  -U, --username=USERNAME  connect as specified database user
  -V, --version            output version information, then exit
  -?, --help               show this help, then exit
`)
	dashD := "-d is --debug, as in pgbench 15 and 16 (from 17 it is --dbname)"
	if major >= 17 {
		dashD = "-d is --dbname, as from pgbench 17 (in 15 and 16 it is --debug)"
	}
	fmt.Fprintf(&sb, `
This command line follows pgbench %d's (%s):
%s.
  --%s=15..18   follow another pgbench's command line
                           (default: the installed pgbench's, else %d)
`, major, why, dashD, VersionFlag, DefaultMajor)
	sb.WriteString(more)
	// pgbench's last two lines, pointing at txload's tracker instead of
	// PostgreSQL's list: a bug of txload pgbench is txload's.
	sb.WriteString(`
Report bugs to <` + BugTracker + `>.
txload home page: <` + HomePage + `>
`)
	return sb.String()
}
