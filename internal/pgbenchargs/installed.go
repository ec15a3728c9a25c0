package pgbenchargs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Installed is the pgbench installed on this machine, whose command line
// `txload pgbench` follows unless --pgbench-version says otherwise: the
// first pgbench on PATH, as its --version reports it.
type Installed struct {
	Path, Version string // "" when none was found
	Major         int
}

var pgbenchVersion = regexp.MustCompile(`\(PostgreSQL\) ((\d+)\S*)`)

// ProbeEnv is set in the environment of the pgbench FindInstalled asks
// for its version: a txload started as pgbench then answers without
// looking for one in turn.
const ProbeEnv = "TXLOAD_PGBENCH_PROBE"

// probeTimeout bounds the installed pgbench's --version. Debian's pgbench
// is a Perl wrapper (pg_wrapper): on a loaded machine it took more than two
// seconds to answer, and txload then followed pgbench 18's command line
// beside an installed pgbench 15 (-d read as --dbname, not --debug).
const probeTimeout = 10 * time.Second

// FindInstalled runs the first pgbench on the PATH lookup gives (bounded by
// probeTimeout) and reads its version. A txload started as pgbench is not
// asked (ProbeEnv in its environment).
func FindInstalled(lookup func(string) (string, bool)) Installed {
	if _, probing := lookup(ProbeEnv); probing {
		return Installed{}
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
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		cmd := exec.CommandContext(ctx, bin, "--version")
		cmd.Env = append(cmd.Environ(), ProbeEnv+"=1")
		out, err := cmd.Output()
		cancel()
		m := pgbenchVersion.FindSubmatch(out)
		if err != nil || m == nil {
			return Installed{}
		}
		major, _ := strconv.Atoi(string(m[2]))
		return Installed{Path: bin, Version: string(m[1]), Major: major}
	}
	return Installed{}
}

// Follow is the pgbench version whose command line args are read by, and
// why: 0 when args hold --pgbench-version (Parse reads it), else the
// installed pgbench's (MinMajor for anything older, MaxMajor for anything
// newer), else DefaultMajor.
func Follow(args []string, lookup func(string) (string, bool)) (major int, why string) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--"+VersionFlag || strings.HasPrefix(a, "--"+VersionFlag+"=") {
			return 0, "--" + VersionFlag // Parse reads it
		}
	}
	in := FindInstalled(lookup)
	if in.Path == "" {
		return DefaultMajor, "no pgbench is installed here: the newest"
	}
	major = min(max(in.Major, MinMajor), MaxMajor)
	return major, "the installed " + in.Path + " is " + in.Version
}
