package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// pgbenchCase is one command line given to the installed pgbench and to
// txload pgbench, on the same database, in the same directory, with the
// same environment.
type pgbenchCase struct {
	name string
	args []string
	// files are written in the case's directory before the run, and are
	// named in args as given (relative paths, as a user types them).
	files map[string]string
	// db: "" runs on a database holding pgbench's tables (scale 1), made
	// afresh for the case; "empty" on an empty database; "none" gives no
	// database name (option errors, -V, --help).
	db string
	// setup is SQL run on the database before each program runs.
	setup string
	// env are more variables for both programs.
	env   []string
	stdin string
	// inexact compares only the exit codes and the kinds of error lines
	// (the "pgbench: error: " lines, numbers masked): for runs whose
	// report or interleaving of clients depends on timing.
	inexact bool
	// differs, if set, says why txload differs on purpose: the case is
	// counted as differing, and must differ in exit code or lines only
	// as that says (its lines are checked to hold pgbench's).
	differs string
	// unordered compares stderr's lines in any order (several clients'
	// lines, whose order follows the server's timing in pgbench too).
	unordered bool
	// collapse compares stderr with runs of the same line as one (-d's
	// "receiving", printed as often as pgbench happens to look).
	collapse bool
	// keep, if set, is the part of stdout compared (what a user of the
	// command reads or a script parses: the version, help's last lines).
	keep func(stdout string) string
}

// pgbenchOutcome is what a user of one program sees.
type pgbenchOutcome struct {
	code           int
	stdout, stderr []string
}

var (
	decimals = regexp.MustCompile(`[0-9]+\.[0-9]+`)
	// getopt names the program by its path as started: Debian's pgbench
	// wrapper starts /usr/lib/postgresql/N/bin/pgbench.
	argv0 = regexp.MustCompile(`^/\S*/pgbench: `)
)

// stderrLines are a program's stderr lines as compared: decimals (times,
// rates) masked, the banner's version and the progress lines' numbers
// too.
func stderrLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.HasPrefix(l, "progress: ") {
			l = outputNumbers.ReplaceAllStringFunc(l, maskNumber)
		}
		l = argv0.ReplaceAllString(l, "pgbench: ")
		out = append(out, decimals.ReplaceAllString(l, "N"))
	}
	return out
}

func (o pgbenchOutcome) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s\n--- stderr\n%s", o.code, strings.Join(o.stdout, "\n"), strings.Join(o.stderr, "\n"))
}

// agree says whether ours shows what theirs shows; the reason when not.
func (c pgbenchCase) agree(theirs, ours pgbenchOutcome) (bool, string) {
	if theirs.code != ours.code {
		return false, fmt.Sprintf("exit %d, pgbench's %d", ours.code, theirs.code)
	}
	if c.inexact {
		keep := func(l string) bool { return strings.HasPrefix(l, "pgbench: error: ") }
		t, o := lineKinds(strings.Join(theirs.stderr, "\n"), keep), lineKinds(strings.Join(ours.stderr, "\n"), keep)
		for l := range t {
			if !o[l] {
				return false, "txload lacks " + l
			}
		}
		for l := range o {
			if !t[l] {
				return false, "txload prints " + l
			}
		}
		return true, ""
	}
	if a, b := strings.Join(theirs.stdout, "\n"), strings.Join(ours.stdout, "\n"); a != b {
		return false, "stdout differs"
	}
	if a, b := strings.Join(theirs.stderr, "\n"), strings.Join(ours.stderr, "\n"); a != b {
		return false, "stderr differs"
	}
	return true, ""
}

// subsequence says whether every line of want is in got, in order.
func subsequence(want, got []string) bool {
	i := 0
	for _, l := range got {
		if i < len(want) && l == want[i] {
			i++
		}
	}
	return i == len(want)
}

// pgbenchDatabases makes the databases of one encoding: a template holding
// pgbench's tables, copied for each case that needs them.
type pgbenchDatabases struct {
	enc      string
	template string // name of the template database
	base     string // the server's URL
	mu       sync.Mutex
	n        int
}

func newPgbenchDatabases(t *testing.T, pgbench, enc string) *pgbenchDatabases {
	t.Helper()
	d := &pgbenchDatabases{enc: enc, base: srv.URL()}
	url := srv.NewDatabaseEncoding(t, enc)
	d.template = strings.TrimPrefix(mustURL(t, url).Path, "/")
	cmd := exec.Command(pgbench, "-i", "-q", d.template)
	cmd.Env = append(os.Environ(), pgEnv(t, url)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	return d
}

// pgEnv names the server of url in libpq's variables.
func pgEnv(t *testing.T, url string) []string {
	u := mustURL(t, url)
	return []string{"PGHOST=" + u.Hostname(), "PGPORT=" + u.Port(), "PGUSER=" + u.User.Username(), "PGSSLMODE=disable"}
}

// name returns the name of a new database for a case.
func (d *pgbenchDatabases) name() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	return fmt.Sprintf("%s_%d", d.template, d.n)
}

// create makes database name afresh (dropping what has that name): a copy
// of the template with pgbench's tables, or an empty one. It is dropped
// when t ends.
func (d *pgbenchDatabases) create(t *testing.T, name string, tables bool) {
	t.Helper()
	from := "template0"
	if tables {
		from = d.template
	}
	admin := pgtest.Conn(t, d.base)
	if _, err := admin.Exec(t.Context(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	create := fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s ENCODING '%s' LC_COLLATE 'C' LC_CTYPE 'C' STRATEGY file_copy", name, from, d.enc)
	// A template is copied only while nobody else is connected to it.
	for try := 0; ; try++ {
		_, err := admin.Exec(t.Context(), create)
		if err == nil {
			break
		}
		if try == 50 || !strings.Contains(err.Error(), "being accessed by other users") {
			t.Fatalf("%s: %v", create, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
	})
}

// runCase runs prog (pgbench, or txload with "pgbench" first in args) as
// the case says, in dir.
func (c pgbenchCase) run(t *testing.T, dir, db string, env []string, prog string, pre ...string) pgbenchOutcome {
	t.Helper()
	if c.setup != "" && db != "" {
		conn := pgtest.Conn(t, strings.Replace(srv.URL(), mustURL(t, srv.URL()).Path, "/"+db, 1))
		if _, err := conn.Exec(t.Context(), c.setup); err != nil {
			t.Fatalf("setup: %v", err)
		}
		conn.Close(t.Context())
	}
	args := append(append([]string{}, pre...), c.args...)
	if c.db != "none" {
		args = append(args, db)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), c.env...)
	cmd.Stdin = strings.NewReader(c.stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("%s: %v", prog, err)
	}
	out := stdout.String()
	if c.keep != nil {
		out = c.keep(out)
	}
	errLines := stderrLines(stderr.String())
	if c.collapse {
		errLines = slices.Compact(errLines)
	}
	if c.unordered {
		slices.Sort(errLines)
	}
	return pgbenchOutcome{code: cmd.ProcessState.ExitCode(), stdout: outputShape(out), stderr: errLines}
}

// TestPgbenchCasesLikePgbench runs a body of pgbench command lines (option
// errors, script errors, meta-commands, limits, runs, init, connection
// failures) through the installed pgbench and through txload pgbench on
// the same database, on a UTF8 and on a SQL_ASCII database, and requires
// the same exit code and the same lines: stdout with numbers masked, and
// stderr with decimals masked. It logs the agreement per encoding.
func TestPgbenchCasesLikePgbench(t *testing.T) {
	pgtest.Long(t, "271 command lines through pgbench and txload")
	pgtest.OutsideRace(t, "pgbench's output")
	pgbench, _ := installedPgbench(t)
	bin := buildTxload(t)
	if b := os.Getenv("TXLOAD_COMPARE_BIN"); b != "" {
		bin = b // another txload binary, to measure its agreement
	}
	cases := pgbenchCases()
	for _, enc := range []string{"UTF8", "SQL_ASCII"} {
		t.Run(enc, func(t *testing.T) {
			t.Parallel()
			dbs := newPgbenchDatabases(t, pgbench, enc)
			env := pgEnv(t, srv.URL())
			var mu sync.Mutex
			agreed, disagreed := 0, []string{}
			t.Cleanup(func() {
				sort.Strings(disagreed)
				t.Logf("%s: %d of %d cases agree with pgbench%s", enc, agreed, len(cases),
					strings.Join(append([]string{""}, disagreed...), "\n  differs: "))
			})
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					for name, text := range c.files {
						if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
							t.Fatal(err)
						}
					}
					db := ""
					if c.db != "none" {
						db = dbs.name()
						dbs.create(t, db, c.db == "")
					}
					theirs := c.run(t, dir, db, env, pgbench)
					if db != "" {
						// The same database afresh for txload: the first
						// run may have changed it.
						dbs.create(t, db, c.db == "")
					}
					ours := c.run(t, dir, db, env, bin, "pgbench")
					ok, why := c.agree(theirs, ours)
					mu.Lock()
					if ok {
						agreed++
					} else {
						disagreed = append(disagreed, c.name+": "+why)
					}
					mu.Unlock()
					switch {
					case c.differs != "" && ok:
						t.Errorf("txload pgbench %s: agrees with pgbench, but the case says it differs (%s)", strings.Join(c.args, " "), c.differs)
					case c.differs != "":
						// On purpose: pgbench's lines are all there, in order.
						if theirs.code != ours.code || !subsequence(theirs.stderr, ours.stderr) || !subsequence(theirs.stdout, ours.stdout) {
							t.Errorf("txload pgbench %s: differs beyond %s\npgbench:\n%s\ntxload:\n%s", strings.Join(c.args, " "), c.differs, theirs, ours)
						}
					case !ok:
						t.Errorf("txload pgbench %s: %s\npgbench:\n%s\ntxload:\n%s", strings.Join(c.args, " "), why, theirs, ours)
					}
				})
			}
		})
	}
}
