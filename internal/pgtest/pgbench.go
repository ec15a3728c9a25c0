package pgtest

import (
	osexec "os/exec"
	"regexp"
	"strconv"
	"testing"
)

// Pgbench returns the installed pgbench (Debian's postgresql-client) and
// its major version, or skips t: the tests that call it compare with the
// real program.
func Pgbench(t testing.TB) (path string, major int) {
	t.Helper()
	path, err := osexec.LookPath("pgbench")
	if err != nil {
		t.Skip("pgbench is not installed (apt-get install postgresql-client): the comparison needs the real program")
	}
	out, err := osexec.Command(path, "--version").Output()
	if err != nil {
		t.Fatalf("pgbench --version: %v", err)
	}
	m := regexp.MustCompile(`\(PostgreSQL\) (\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("pgbench --version: cannot read the version in %q", out)
	}
	major, _ = strconv.Atoi(string(m[1]))
	return path, major
}
