package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/txload/txload/internal/pgbenchargs"
)

// installed is the pgbench installed on this machine, whose command line
// `txload pgbench` follows unless --pgbench-version says otherwise: the
// first pgbench on PATH, as its --version reports it.
type installed struct {
	path, version string // "" when none was found
	major         int
}

var pgbenchVersion = regexp.MustCompile(`\(PostgreSQL\) ((\d+)\S*)`)

// findPgbench runs the first pgbench on the PATH lookup gives (bounded by
// two seconds) and reads its version. A txload started as pgbench is not
// asked (TXLOAD_PGBENCH_PROBE in its environment).
func findPgbench(lookup func(string) (string, bool)) installed {
	if _, probing := lookup("TXLOAD_PGBENCH_PROBE"); probing {
		return installed{}
	}
	path, _ := lookup("PATH")
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		bin := filepath.Join(dir, "pgbench")
		if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		cmd := exec.CommandContext(ctx, bin, "--version")
		cmd.Env = append(os.Environ(), "TXLOAD_PGBENCH_PROBE=1")
		out, err := cmd.Output()
		cancel()
		m := pgbenchVersion.FindSubmatch(out)
		if err != nil || m == nil {
			return installed{}
		}
		major, _ := strconv.Atoi(string(m[2]))
		return installed{path: bin, version: string(m[1]), major: major}
	}
	return installed{}
}

// pgbenchMajor is the pgbench version whose command line is followed, and
// why: --pgbench-version, else the installed pgbench's (15 for anything
// older, 18 for anything newer), else pgbenchargs.DefaultMajor.
func pgbenchMajor(args []string, lookup func(string) (string, bool)) (major int, why string) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--"+pgbenchargs.VersionFlag || strings.HasPrefix(a, "--"+pgbenchargs.VersionFlag+"=") {
			return 0, "--" + pgbenchargs.VersionFlag // pgbenchargs reads it
		}
	}
	in := findPgbench(lookup)
	if in.path == "" {
		return pgbenchargs.DefaultMajor, "no pgbench is installed here: the newest"
	}
	major = min(max(in.major, pgbenchargs.MinMajor), pgbenchargs.MaxMajor)
	return major, "the installed " + in.path + " is " + in.version
}
