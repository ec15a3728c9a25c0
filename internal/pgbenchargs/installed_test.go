package pgbenchargs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFollow finds the pgbench whose command line is followed: the one on
// PATH (the real one where Debian's is installed, and programs that answer
// --version as an older or a newer pgbench would), none, or
// --pgbench-version in the arguments.
func TestFollow(t *testing.T) {
	dir := func(version string) string {
		d := t.TempDir()
		script := "#!/bin/sh\necho 'pgbench (PostgreSQL) " + version + "'\n"
		if v, ok := strings.CutPrefix(version, "slow "); ok { // a pgbench that answers as Debian's wrapper does on a loaded machine
			script = "#!/bin/sh\nsleep 3\necho 'pgbench (PostgreSQL) " + v + "'\n"
		}
		if err := os.WriteFile(filepath.Join(d, "pgbench"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	env := func(kv ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	old, newer, slow, empty := dir("12.3"), dir("19devel"), dir("slow 15.18"), t.TempDir()
	for _, c := range []struct {
		name      string
		args      []string
		lookup    func(string) (string, bool)
		wantMajor int
		wantWhy   string
	}{
		{"flag", []string{"-c", "2", "--pgbench-version=16"}, env("PATH", old), 0, "--pgbench-version"},
		{"flag after --", []string{"--", "--pgbench-version"}, env("PATH", old), MinMajor, "the installed " + old + "/pgbench is 12.3"},
		{"older", nil, env("PATH", old), MinMajor, "the installed " + old + "/pgbench is 12.3"},
		{"newer", nil, env("PATH", empty+string(filepath.ListSeparator)+newer), MaxMajor, "the installed " + newer + "/pgbench is 19devel"},
		{"slow to answer", nil, env("PATH", slow), 15, "the installed " + slow + "/pgbench is 15.18"},
		{"none", nil, env("PATH", empty), DefaultMajor, "no pgbench is installed here: the newest"},
		{"probing", nil, env("PATH", old, ProbeEnv, "1"), DefaultMajor, "no pgbench is installed here: the newest"},
	} {
		t.Run(c.name, func(t *testing.T) {
			major, why := Follow(c.args, c.lookup)
			if major != c.wantMajor || why != c.wantWhy {
				t.Errorf("Follow = %d, %q; want %d, %q", major, why, c.wantMajor, c.wantWhy)
			}
		})
	}
	t.Run("installed", func(t *testing.T) {
		bin, err := exec.LookPath("pgbench")
		if err != nil {
			t.Skip("pgbench is not installed (Debian: postgresql-contrib; .ci/run installs it)")
		}
		in := FindInstalled(env("PATH", filepath.Dir(bin)))
		out, _ := exec.Command(bin, "--version").Output()
		if in.Path != bin || in.Major < 10 || !strings.Contains(string(out), "(PostgreSQL) "+in.Version) {
			t.Errorf("FindInstalled = %+v; pgbench --version says %q", in, out)
		}
	})
}
