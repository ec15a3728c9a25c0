//go:build linux

package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every output file of a run is written the way its path asks: a regular
// file atomically, with mode 0644 less the umask and a "wrote" line; a
// symlink through to its target (the link stays); /dev/stdout through the
// descriptor, after the report. Nothing is left beside them.
func TestOutputFilesWrittenThrough(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	dir := t.TempDir()
	real := filepath.Join(dir, "real.html")
	link := filepath.Join(dir, "link.html")
	if err := os.Symlink("real.html", link); err != nil {
		t.Fatal(err)
	}
	js, hlog := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.hlog")
	want := os.FileMode(0o644) &^ umask(t)
	r := txload(t.Context(), nil, "run", "bank", "--url", url, "--accounts", "1000", "--duration", "1s", "--progress", "0",
		"--json", js, "--html", link, "--histogram", hlog)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, p := range []string{js, link, hlog} {
		if !strings.Contains(r.stderr, "wrote "+p+"\n") {
			t.Errorf("no wrote line for %s:\n%s", p, r.stderr)
		}
	}
	for _, p := range []string{js, real, hlog} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v (0644 less the umask)", p, st.Mode().Perm(), want)
		}
	}
	if li, err := os.Lstat(link); err != nil || li.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("--html through a symlink replaced the link: %v", err)
	}
	if b, _ := os.ReadFile(real); !strings.Contains(string(b), "<html") {
		t.Fatalf("the symlink's target holds no report: %.100s", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Fatalf("left beside the outputs: %v", left)
	}
}

// --json /dev/stdout: the document follows the report on stdout (the test
// gives txload a real file as stdout, as `> out.txt` does).
func TestJSONToStdout(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	bin := buildTxload(t)
	out := filepath.Join(t.TempDir(), "out.txt")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bin, "run", "bank", "--url", url, "--accounts", "1000", "--duration", "1s", "--progress", "0", "--json", "/dev/stdout")
	cmd.Stdout = f
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "\n{\n")
	if i < 0 || !strings.Contains(string(b[:i]), "transfer: ") {
		t.Fatalf("stdout holds no report followed by the document:\n%.2000s", b)
	}
	var doc map[string]any
	if err := json.Unmarshal(b[i+1:], &doc); err != nil || doc["workload"] != "bank" {
		t.Fatalf("the document after the report: %v\n%.300s", err, b[i+1:])
	}
	if st, err := os.Lstat("/dev/stdout"); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("/dev/stdout is no longer a link: %v", err)
	}
}

// umask reads the process's umask (from /proc, without changing it).
func umask(t *testing.T) os.FileMode {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status to read the umask from")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err == nil {
				return os.FileMode(m)
			}
		}
	}
	t.Skip("no umask in /proc/self/status")
	return 0
}

// An output that is one of the run's inputs is refused before anything
// runs, and the input is left as it was: run script (exit 2) and txload
// pgbench (pgbench's exit 1 for a bad option).
func TestOutputOverItsInputRefused(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	dir := t.TempDir()
	sql := filepath.Join(dir, "s.sql")
	if err := os.WriteFile(sql, []byte("SELECT 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "script", "--file", sql, "--url", url, "--duration", "1s", "--json", sql}, ExitUsage, "--json " + sql + " is also its --file"},
		{[]string{"pgbench", "-f", sql, "-t", "1", "--json", sql, url}, 1, "--json " + sql + " is also its -f"},
		{[]string{"run", "script", "--file", sql + "@3", "--url", url, "--duration", "1s", "--html", sql}, ExitUsage, "--html " + sql + " is also its --file"},
	} {
		r := txload(t.Context(), nil, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q\n%s", tc.args, r.code, tc.code, tc.want, r.stderr)
		}
		if b, _ := os.ReadFile(sql); string(b) != "SELECT 1;\n" {
			t.Fatalf("%v overwrote the script: %q", tc.args, b)
		}
	}
}
