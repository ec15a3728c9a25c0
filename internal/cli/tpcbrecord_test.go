package cli

import (
	"os/exec"
	"testing"
)

// pgbench -i after txload's init makes all four tables again, under the
// init marker txload left: the record of the scripts names other tables,
// which is said, and nothing is accused (the rules that read the record
// are not applied). One table made again alone is a violation
// (TestTamperCatalogue, tamperRemade).
func TestBuiltinRecordOfOtherTables(t *testing.T) {
	t.Parallel()
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		t.Skip("pgbench is not installed (Debian: postgresql-contrib; .ci/run installs it)")
	}
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "tpcb", "--url", url); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	if r := txload(t.Context(), nil, "run", "simple-update", "--url", url, "--transactions", "20", "--progress", "0"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"-i", "-q", url}, {"-n", "-b", "tpcb-like", "-t", "30", url}} {
		if out, err := exec.CommandContext(t.Context(), pgbench, args...).CombinedOutput(); err != nil {
			t.Fatalf("pgbench %v: %v\n%s", args, err, out)
		}
	}
	for _, check := range []string{"simple-update", "tpcb-like", "tpcb"} {
		r := txload(t.Context(), nil, "check", check, "--url", url)
		if r.code != 0 {
			t.Fatalf("check %s: exit %d\n%s\n%s", check, r.code, r.stdout, r.stderr)
		}
		mustContain(t, r.stdout, "txload_pgbench_builtin: names other tables than these (made again since txload's init")
	}
}
