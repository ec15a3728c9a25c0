package txload_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txload/txload/internal/doctest"
	"github.com/txload/txload/internal/pgtest"
)

// The docs' samples are tests: every command a page shows with its output
// is run by TestDocSamples and its output compared with the page's, numbers
// and times masked (package doctest). TXLOAD_DOCS_UPDATE=1 writes what the
// commands printed back into the pages instead: the one way samples are
// made. docs/testing.md says how to mark a sample.

// docPages are the pages whose samples are run.
func docPages(t *testing.T) []*doctest.Page {
	t.Helper()
	paths, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var pages []*doctest.Page
	for _, path := range append([]string{"README.md"}, paths...) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := doctest.Parse(path, src)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
	}
	return pages
}

// TestDocSamplesMarked checks that every block that shows commands, or
// reads as txload's output (doctest's Block.LooksLikeOutput), either runs in
// TestDocSamples or says why not and when it was made, and that every other
// block says what it is by its language tag, so that no output slips in
// untested.
func TestDocSamplesMarked(t *testing.T) {
	run, notRun := 0, 0
	for _, p := range docPages(t) {
		for _, b := range p.Blocks {
			switch {
			case b.Kind == doctest.Run:
				run++
			case b.Kind == doctest.NotRun:
				notRun++
			case b.Sample():
				t.Errorf("%s:%d: a block of commands neither runs (<!-- sample: run -->) nor says why not (<!-- sample: not run: WHY; made DATE with txload VERSION -->)", p.Path, b.Line)
			case b.Kind == doctest.Plain && b.LooksLikeOutput():
				t.Errorf("%s:%d: a block that reads as txload's output neither runs (<!-- sample: run cmd=\"...\" -->, or a \"$ \" line in the block) nor says why not (<!-- sample: not run: WHY; made DATE with txload VERSION -->)", p.Path, b.Line)
			case b.Kind == doctest.Plain && b.Lang == "":
				t.Errorf("%s:%d: a block without a language: tag it (text for a diagram or a listing that is no output, sql, json ...) or, if it is output, mark it as a sample", p.Path, b.Line)
			}
		}
	}
	t.Logf("%d samples run, %d marked not run", run, notRun)
	// docs/testing.md says how many: kept true here.
	testing, err := os.ReadFile("docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	if says := fmt.Sprintf("%d blocks run in the harness and %d are marked not run", run, notRun); !strings.Contains(string(testing), says) {
		t.Errorf("docs/testing.md should say %q", says)
	}
}

// docServer is the server the samples' $URL databases are made on, started
// once for every page.
var docServer struct {
	once sync.Once
	srv  *pgtest.Server
	err  error
}

func TestDocSamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the docs' commands: builds txload and starts servers")
	}
	update := os.Getenv("TXLOAD_DOCS_UPDATE") == "1"
	long := os.Getenv("TXLOAD_TEST_LONG") == "1"
	bin := buildTxload(t)
	for _, p := range docPages(t) {
		if !hasRun(p) {
			continue
		}
		t.Run(strings.TrimSuffix(filepath.Base(p.Path), ".md"), func(t *testing.T) {
			t.Parallel()
			if p.Settings.Has("long") && !long {
				t.Skip("a long page: runs with TXLOAD_TEST_LONG=1")
			}
			runPage(t, p, bin, update, long)
		})
	}
	t.Cleanup(func() {
		if docServer.srv != nil {
			_ = docServer.srv.Stop()
		}
	})
}

func hasRun(p *doctest.Page) bool {
	for _, b := range p.Blocks {
		if b.Kind == doctest.Run {
			return true
		}
	}
	return false
}

// buildTxload compiles the binary the samples run as `txload`, its version
// "dev" whatever the checkout: in a clean git clone Go stamps a
// pseudo-version (v0.0.0-DATE-REV), which pgbench's banner and the
// documents show, and a sample made in one checkout failed in another.
func buildTxload(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "txload")
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.version=dev", "-o", bin, "./cmd/txload").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// pageEnv is where a page's samples run: their directory, environment, and
// how their output is made to read as the page's (the test database's
// address shown as a stable one).
type pageEnv struct {
	dir     string
	env     []string
	replace *strings.Replacer
}

func runPage(t *testing.T, p *doctest.Page, bin string, update, long bool) {
	for _, prog := range strings.Fields(p.Settings["needs"]) {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("needs %s, not installed", prog)
		}
	}
	e := newPageEnv(t, p, bin)
	contents := map[*doctest.Block][]string{}
	for _, b := range p.Blocks {
		switch b.Kind {
		case doctest.File:
			if err := os.WriteFile(filepath.Join(e.dir, b.Name), []byte(strings.Join(b.Content, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		case doctest.Run:
			if b.Options.Has("long") && !long {
				t.Logf("%s:%d: a long sample: runs with TXLOAD_TEST_LONG=1", p.Path, b.Line)
				continue
			}
			if missing := missingPrograms(b.Options["needs"]); missing != "" {
				t.Logf("%s:%d: skipped: needs %s, not installed", p.Path, b.Line, missing)
				continue
			}
			outputs := e.runBlock(t, p, b)
			if update {
				contents[b] = b.Rewritten(outputs)
				continue
			}
			for i, s := range b.Steps {
				d := doctest.Compare(s.Want, outputs[i], b.Vary())
				if d == "" {
					d = doctest.ExitStatus(s.Cmd, s.Want, outputs[i])
				}
				if d != "" {
					t.Errorf("%s:%d: $ %s\n%s\n(TXLOAD_DOCS_UPDATE=1 go test -run 'TestDocSamples/%s' . writes the output into the page)",
						p.Path, b.Line, s.Cmd, d, strings.TrimSuffix(filepath.Base(p.Path), ".md"))
				}
			}
		}
	}
	if update && len(contents) > 0 {
		if err := os.WriteFile(p.Path, p.Rewrite(contents), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func missingPrograms(needs string) string {
	var missing []string
	for _, prog := range strings.Fields(needs) {
		if _, err := exec.LookPath(prog); err != nil {
			missing = append(missing, prog)
		}
	}
	return strings.Join(missing, ", ")
}

// newPageEnv gives a page a directory, a database ($URL) on the shared
// server or, with server=own, a server of its own with the databases the
// page names (PGHOST, PGPORT and PGUSER set to it), and an environment free
// of the caller's PG* variables.
func newPageEnv(t *testing.T, p *doctest.Page, bin string) *pageEnv {
	e := &pageEnv{dir: t.TempDir()}
	for p := e.dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o755) // the embedded server's user (nobody, as root) reaches its files
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PG") || k == "DATABASE_URL" || k == "TXLOAD_TEST_URL" || k == "PATH" || k == "HOME" {
			continue
		}
		e.env = append(e.env, kv)
	}
	e.env = append(e.env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+e.dir, "LC_ALL=C.UTF-8", "COLUMNS=80")
	var base, host, port string
	var pairs []string
	if p.Settings["server"] == "own" {
		srv := pgtest.OwnServer(t)
		base = srv.URL()
		createDatabases(t, base, p.Settings["databases"])
	} else {
		docServer.once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			docServer.srv, docServer.err = pgtest.StartEmbedded(ctx)
		})
		if docServer.err != nil {
			t.Fatal(docServer.err)
		}
		base = docServer.srv.NewDatabase(t)
		u, _ := url.Parse(base)
		pairs = append(pairs, strings.TrimPrefix(u.Path, "/"), "postgres")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	host, port = u.Hostname(), u.Port()
	u.User = url.UserPassword(u.User.Username(), "secret")
	e.env = append(e.env, "URL="+u.String(), "PGHOST="+host, "PGPORT="+port, "PGUSER="+u.User.Username())
	pairs = append(pairs, host+":"+port, "127.0.0.1:5432", "port "+port, "port 5432", "pgport: "+port, "pgport: 5432")
	if tmp := os.TempDir(); tmp != "/tmp" {
		pairs = append(pairs, tmp, "/tmp")
	}
	pairs = append(pairs, e.dir, "~")
	e.replace = strings.NewReplacer(pairs...)
	return e
}

// createDatabases makes "name" or "name:ENCODING" databases on the server.
func createDatabases(t *testing.T, base, names string) {
	conn := pgtest.Conn(t, base)
	for _, n := range strings.Fields(names) {
		name, enc, _ := strings.Cut(n, ":")
		sql := "CREATE DATABASE " + name
		if enc != "" {
			sql += fmt.Sprintf(" ENCODING '%s' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0", enc)
		}
		if _, err := conn.Exec(context.Background(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// runBlock runs a sample's setup and commands in order, and returns what
// each command printed, stdout and stderr together, as the page shows it.
func (e *pageEnv) runBlock(t *testing.T, p *doctest.Page, b *doctest.Block) [][]string {
	timeout := 5 * time.Minute
	if v, ok := b.Options["timeout"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s:%d: timeout=%q: %v", p.Path, b.Line, v, err)
		}
		timeout = d
	}
	for _, f := range strings.Fields(b.Options["copy"]) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("%s:%d: copy: %v", p.Path, b.Line, err)
		}
		if err := os.WriteFile(filepath.Join(e.dir, filepath.Base(f)), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if setup, ok := b.Options["setup"]; ok {
		if out, err := e.shell(setup, timeout); err != nil {
			t.Fatalf("%s:%d: setup %q: %v\n%s", p.Path, b.Line, setup, err, out)
		}
	}
	// One bash runs the block's commands, as a terminal would: `echo $?`
	// sees the command before it. A line no command prints follows each
	// command, and is where the outputs are cut.
	salt := fmt.Sprintf("@@doctest-%d@@", time.Now().UnixNano())
	var script strings.Builder
	for _, s := range b.Steps {
		fmt.Fprintf(&script, "%s\n__rc=$?; printf '\\n%s\\n'; (exit $__rc)\n", s.Cmd, salt)
	}
	out, err := e.shell(script.String(), timeout)
	if err != nil {
		if _, exit := err.(*exec.ExitError); !exit {
			t.Fatalf("%s:%d: %v\n%s", p.Path, b.Line, err, out)
		}
	}
	parts := strings.Split(e.replace.Replace(out), "\n"+salt+"\n")
	if len(parts) != len(b.Steps)+1 {
		t.Fatalf("%s:%d: %d of the block's %d commands ended (a command that exits the shell?):\n%s", p.Path, b.Line, len(parts)-1, len(b.Steps), out)
	}
	var outputs [][]string
	for _, part := range parts[:len(b.Steps)] {
		text := strings.TrimSuffix(part, "\n")
		var lines []string
		if text != "" {
			lines = strings.Split(text, "\n")
		}
		outputs = append(outputs, lines)
	}
	return outputs
}

// shell runs cmd with bash in the page's directory; stdout and stderr share
// one pipe, so their lines keep the order they were written in.
func (e *pageEnv) shell(cmd string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-c", cmd)
	c.Dir, c.Env = e.dir, e.env
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	c.WaitDelay = 10 * time.Second
	err := c.Run()
	if ctx.Err() != nil {
		return out.String(), fmt.Errorf("still running after %s: %w", timeout, ctx.Err())
	}
	return out.String(), err
}
