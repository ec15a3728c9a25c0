package pgbench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/pg"
)

// srv is the real PostgreSQL the tests of this package run against.
var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func target(t *testing.T, url string) *pg.Target {
	t.Helper()
	tg, err := pg.NewTarget([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// realPgbench is Debian's pgbench and its major version, or a skip.
func realPgbench(t *testing.T) (string, int) {
	t.Helper()
	return pgtest.Pgbench(t)
}

// runPgbench runs pgbench with args and the database url last; it returns
// its stderr (and stdout, interleaved) and its exit status.
func runPgbench(t *testing.T, url string, args ...string) (string, int) {
	t.Helper()
	path, _ := realPgbench(t)
	cmd := exec.Command(path, append(args, url)...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + cmd.Dir, "LANG=C", "LC_ALL=C"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), 0
}

// serverVersion is the test server's server_version_num.
func serverVersion(t *testing.T) int {
	t.Helper()
	var v string
	if err := pgtest.Conn(t, srv.URL()).QueryRow(context.Background(), "SELECT current_setting('server_version_num')").Scan(&v); err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(v)
	return n
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
