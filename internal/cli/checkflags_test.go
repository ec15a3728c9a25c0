package cli

import (
	"strings"
	"testing"
)

// A check is rerun with its run's own command line: each check takes the
// flags of its workload's runs and says, in one line, that it ignores
// those it does not use, then audits (here it cannot connect: exit 1, by
// the connection and not by the flags).
func TestCheckIgnoresRunFlags(t *testing.T) {
	t.Parallel()
	const url = "postgres://nobody@127.0.0.1:1/none"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"append", "--keys", "5"}, "txload check append ignores --keys: it reads the tables and the history, whatever run made them"},
		{[]string{"append", "--min-ops", "2", "--max-ops", "3", "--max-writes-per-key", "3", "--append", "update-insert"},
			"txload check append ignores --append, --max-ops, --max-writes-per-key, --min-ops: it reads the tables and the history"},
		{[]string{"ycsb", "--workload", "f"}, "txload check ycsb ignores --workload: it reads the settings init recorded in the database"},
		{[]string{"ycsb", "--request-distribution", "uniform", "--read-proportion", "0.5"}, "txload check ycsb ignores --read-proportion, --request-distribution: "},
		{[]string{"vote", "--variant", "counter"}, "txload check vote ignores --variant: it reads the settings init recorded in the database"},
		{[]string{"tpcc", "--warehouses", "2"}, "txload check tpcc ignores --warehouses: it reads the settings init recorded in the database"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := txload(t.Context(), nil, append(append([]string{"check"}, tc.args...), "--url", url)...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != ExitFailed || len(lines) != 2 || !strings.Contains(lines[0], tc.want) || !strings.Contains(lines[1], "connecting to") {
				t.Fatalf("exit %d, stderr %q; want exit 1, %q and the connection's error", r.code, r.stderr, tc.want)
			}
		})
	}
}
