package pgbenchargs

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/txload/txload/internal/pgtest"
)

// pgbench returns the path of Debian's pgbench and its major version, or
// skips: these tests compare with the real program.
func pgbench(t *testing.T) (string, int) {
	t.Helper()
	path, major := pgtest.Pgbench(t)
	if major < MinMajor || major > MaxMajor {
		t.Skipf("pgbench %d is outside the versions txload follows (%d to %d)", major, MinMajor, MaxMajor)
	}
	return path, major
}

// runPgbench runs the real pgbench on args where no server can be reached,
// so that a command line it accepts ends in a connection failure. It
// returns its exit status and its stderr, with its argv[0] (getopt prints
// the full path) replaced by "pgbench".
func runPgbench(t *testing.T, path string, dir string, args []string, stdin string) (int, []string) {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Dir = dir
	cmd.Env = []string{"PGHOST=/nonexistent", "PGPORT=1", "PGUSER=nobody", "PGDATABASE=nobody", "HOME=" + dir, "LANG=C", "LC_ALL=C"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running pgbench: %v", err)
	}
	text := strings.ReplaceAll(stderr.String(), path+":", "pgbench:")
	text = regexp.MustCompile(`(?m)^/\S*/pgbench:`).ReplaceAllString(text, "pgbench:")
	return code, strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// Every command line here goes to the real pgbench and to Parse: a command
// line pgbench accepts (it then fails to connect) Parse accepts; one it
// refuses Parse refuses with the same lines; -b list and --show-script
// print the same text.
func TestSameAsPgbench(t *testing.T) {
	pgtest.OutsideRace(t, "pgbench's parsing")
	path, major := pgbench(t)
	dir := t.TempDir()
	for name, src := range map[string]string{
		"ok.sql":    "\\set aid random(1, 10)\nSELECT :aid;\n",
		"empty.sql": "-- nothing\n",
		"bad.sql":   "\\set\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []string{
		// accepted
		"", "-c 4 -j 2 -T 10 -P 5 -M prepared", "-c4 -j2 -t100", "-nS", "-N -c 2", "-b select@3 -b tpcb", "-f ok.sql@2 -f ok.sql",
		"--client=8 --jobs=8 --time=60 --progress=5 --failures-detailed --max-tries=10 --protocol=prepared",
		"--rate=2500 -T 10 -c 10", "-R 1e3 -L 10.5 -T 5", "-R 10abc", "-L 1.5abc", "--max-tries 0 -T 5", "--max-tries 0 -L 5",
		"--max-tries x -T 5", "--random-seed 10", "--random-seed ' 5'", "--random-seed -1", "--random-seed time", "--random-seed=rand",
		"-D a=1 -D b=x=y -D é=3 -D a=2", "-l", "-l --log-prefix=foo", "-l --sampling-rate 0.5", "-T 10 -l --aggregate-interval 5",
		"-l --aggregate-interval 1", "-P 1 --progress-timestamp", "-r -v -C", "--verbose-errors", "-s 5", "-s 5 -n", "mydb", "-- -c",
		"mydb -c 2", "--cli=4", "--no-v", "--pro=simple", "--sel", "-h localhost -p 5432 -U me db", "--host=h --port=1 --username=u",
		"-i", "-i -s 2 -F 50 --foreign-keys --partitions 3 --partition-method hash", "-i -I dtGpf --no-vacuum", "-i -I ' '",
		"-i -I dtgGvpf -q", "-i --tablespace=x --index-tablespace=y --unlogged-tables", "-i -n --foreign-keys -I dtp",
		"--initialize --init-steps=dtGpf --foreign-keys --no-vacuum --scale=3 db", "-i --partitions 2", "-f -",
		"-b list", "-Sb list", "-b list -c 0", "--show-script=select-only", "--show-script tpcb", "--sh=simple", "-i --show-script=tpcb",
		// refused
		"-c 0", "-c x", "-c 3x", "-c ''", "-c ' 4 '", "-c 99999999999", "-j 0", "-T 0", "-t -1", "-P 0", "-s 0", "-s 1x", "-F 5", "-F 101",
		"--partitions -1", "--aggregate-interval 0", "-R 0", "-R -1", "-R abc", "-L 0", "-L x", "--max-tries -1",
		"--sampling-rate 2", "--sampling-rate 0", "-M foo", "--partition-method foo", "--random-seed foo", "--random-seed 0x10",
		"--random-seed '5 '", "-I x", "-i -I ''", "-i -I dtgGvpfx", "-D foo", "-D =x", "-D x=", "-D 1x=3", "-D a.b=3",
		"-b foo", "-b s", "-b ''", "-b simple@x", "-b simple@-1", "-b tpcb-like@", "-b tpcb-like@99999999999", "-b tpcb@0",
		"-f /nonexistent", "-f empty.sql", "-f ok.sql@0 -b tpcb@0",
		"-t 5 -T 5", "-i -t 5", "-i -S", "-i -n -v", "-i -P 1", "-D x=1 -i", "-i --random-seed 5", "-F 50", "-q -t 1", "--tablespace=x",
		"-i --partition-method hash", "--progress-timestamp", "--log-prefix x", "--sampling-rate 0.5",
		"-l --sampling-rate 0.5 --aggregate-interval 1", "--aggregate-interval 1", "-T 5 -l --aggregate-interval 10",
		"-T 5 -l --aggregate-interval 2", "--max-tries 0", "--progress-timestamp -P 1 -t 5 --max-tries=0",
		"a b", "--foo", "--foo=bar", "-Z", "-nZ", "-c", "--client", "--cli", "--p 5", "--pro=1", "--no-vacuum=x", "--no-v=x",
		"--show-script", "--show-script=foo", "--sh=s", "-c 4 --help", "-c 4 -?", "-c 4 -V", "-Stb", "-I",
		"--exit-on-abort", "--dbname x", "--continue-on-error",
	}
	for _, line := range cases {
		t.Run(line, func(t *testing.T) {
			t.Parallel() // each waits on a pgbench process
			args := splitArgs(t, line)
			const stdin = "SELECT 1;\n"
			code, want := runPgbench(t, path, dir, args, stdin)
			opts, err := Parse(args, Config{Major: major, Stdin: strings.NewReader(stdin),
				ReadFile: func(p string) ([]byte, error) {
					if !filepath.IsAbs(p) {
						p = filepath.Join(dir, p)
					}
					return os.ReadFile(p)
				}})
			accepted := code == 1 && strings.Contains(strings.Join(want, "\n"), "could not create connection")
			switch {
			case accepted && err != nil:
				t.Fatalf("pgbench accepts it, Parse refuses it:\n%v", err)
			case accepted:
				// pgbench prints "setting random seed" before connecting;
				// "time" and "rand" seeds differ from run to run.
				var notices []string
				for _, l := range want {
					if strings.Contains(l, "setting random seed") {
						notices = append(notices, l)
					}
				}
				mask := func(ls []string) string {
					s := strings.Join(ls, "\n")
					if strings.Contains(line, "time") || strings.Contains(line, "rand") {
						s = regexp.MustCompile(`[0-9]+`).ReplaceAllString(s, "N")
					}
					return s
				}
				if mask(notices) != mask(opts.Notices) {
					t.Errorf("notices: pgbench %q, Parse %q", notices, opts.Notices)
				}
			case code == 0:
				if err != nil {
					t.Fatalf("pgbench prints and exits 0, Parse refuses it:\n%v", err)
				}
				if got := strings.TrimSuffix(opts.Output, "\n"); got != strings.Join(want, "\n") {
					t.Errorf("output:\n--- pgbench\n%s\n--- Parse\n%s", strings.Join(want, "\n"), got)
				}
			default:
				var pe *Error
				if !errors.As(err, &pe) {
					t.Fatalf("pgbench refuses it (exit %d):\n%s\nParse returns %v", code, strings.Join(want, "\n"), err)
				}
				got := pe.Lines
				// Parse explains options of other pgbench versions: the
				// explanation is txload's addition.
				var kept []string
				for _, l := range got {
					if !strings.Contains(l, "is an option of pgbench") {
						kept = append(kept, l)
					}
				}
				if strings.Join(kept, "\n") != strings.Join(want, "\n") {
					t.Errorf("pgbench says:\n%s\nParse says:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
				}
			}
		})
	}
}

// splitArgs splits a command line as a shell would, for the quoting used
// above: quotes group words, and an empty pair is an empty argument.
func splitArgs(t *testing.T, line string) []string {
	t.Helper()
	var args []string
	var cur strings.Builder
	in, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			in = !in
			quoted = true
		case r == ' ' && !in:
			if cur.Len() > 0 || quoted {
				args = append(args, cur.String())
			}
			cur.Reset()
			quoted = false
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 || quoted {
		args = append(args, cur.String())
	}
	return args
}
