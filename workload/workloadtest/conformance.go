package workloadtest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/report"
	"github.com/txload/txload/workload"
)

// Config is what Run needs to know of a workload beyond its hooks.
type Config struct {
	// Flags are the workload's own flags, given to every command: sizes
	// small enough for a quick test.
	Flags []string
	// RunFlags are the workload's flags of its runs only
	// (workload.OnlyFor).
	RunFlags []string
	// Setup, if set, prepares the test's database before the workload's
	// first command: the tables of a workload that has no init.
	Setup func(t *testing.T, url string)
	// Others are workloads Setup runs commands of (Command), beside m.
	Others []workload.Meta
}

// runFor is the length of each run: the steps test what the commands do,
// not how fast.
const runFor = "700ms"

// Run takes the workload m through every command a user runs it with, on a
// database of its own on srv, as subtests: init (twice: it is
// re-runnable), a closed-loop run (its report and its audit), an open-loop
// run, check (with the workload's flags, then without them), -r and --output pgbench (whose query mode is the one the
// document records), two load generators (--instance) merged and drawn as
// HTML, and an interrupt (exit 130, the report says so, and check still
// passes: nothing half-written is accepted). A step the workload's hooks do
// not offer is a refusal with exit 2.
func Run(t *testing.T, srv *Server, m workload.Meta, cfg Config) {
	t.Helper()
	reg, err := workload.NewRegistry(append([]workload.Meta{m}, cfg.Others...)...)
	if err != nil {
		t.Fatal(err)
	}
	c := &conformance{reg: reg, name: m.Name, hooks: m.New().Hooks(), cfg: cfg, url: srv.NewDatabase(t), dir: t.TempDir()}
	if cfg.Setup != nil {
		cfg.Setup(t, c.url)
	}
	type step struct {
		name string
		f    func(t *testing.T)
	}
	steps := []step{{"init", c.init}, {"closed loop", c.closed}, {"open loop", c.open}, {"check", c.check},
		{"per statement", c.perStatement}, {"pgbench format", c.pgbenchFormat},
		{"instances merged and drawn", c.instances}, {"interrupt", c.interrupt}}
	if c.hooks.Ops == nil {
		steps = []step{{"init", c.init}, {"run refused", c.noRun}, {"check", c.check}}
	}
	for _, step := range steps {
		if !t.Run(step.name, step.f) {
			return // the next steps build on this one
		}
	}
}

type conformance struct {
	reg   *workload.Registry
	name  string
	hooks workload.Hooks
	cfg   Config
	url   string
	dir   string
}

// cmd runs a command of the workload (verb name --url … flags… args…).
func (c *conformance) cmd(ctx context.Context, verb string, args ...string) Result {
	all := append([]string{verb, c.name, "--url", c.url}, c.cfg.Flags...)
	return Command(ctx, c.reg, append(all, args...)...)
}

// run runs the workload with args after the run's flags of every step.
func (c *conformance) run(ctx context.Context, args ...string) Result {
	all := append([]string{"--concurrency", "2", "--progress", "0"}, c.cfg.RunFlags...)
	return c.cmd(ctx, "run", append(all, args...)...)
}

func (c *conformance) path(name string) string { return filepath.Join(c.dir, name) }

func want(t *testing.T, r Result, code int, what string) {
	t.Helper()
	if r.Code != code {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, r.Code, code, r.Stdout, r.Stderr)
	}
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Fatalf("%s lacks %q:\n%s", what, sub, s)
		}
	}
}

// refused checks a command the workload's hooks do not offer: exit 2, one
// line that says what it has.
func refused(t *testing.T, r Result, what string) {
	t.Helper()
	want(t, r, ExitUsage, what)
	if lines := strings.Split(strings.TrimSpace(r.Stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "it has: ") {
		t.Fatalf("%s: want one line saying what the workload has, got:\n%s", what, r.Stderr)
	}
}

func (c *conformance) init(t *testing.T) {
	if c.hooks.Init == nil {
		refused(t, c.cmd(t.Context(), "init"), "init of a workload without Init")
		return
	}
	for i := range 2 {
		want(t, c.cmd(t.Context(), "init"), ExitOK, "init #"+strconv.Itoa(i+1))
	}
}

// noRun: a workload without Ops (tpcb: init and check) refuses run and
// sweep with one line, exit 2.
func (c *conformance) noRun(t *testing.T) {
	for _, verb := range []string{"run", "sweep"} {
		r := c.cmd(t.Context(), verb)
		refused(t, r, verb+" of a workload without Ops")
	}
}

// closed runs the workload's default way (its --init default): its report
// names it, every operation it counted is in the document, its audit (a
// Report, or its Check) is printed and passes.
func (c *conformance) closed(t *testing.T) {
	js := c.path("closed.json")
	r := c.run(t.Context(), "--duration", runFor, "--json", js)
	want(t, r, ExitOK, "closed-loop run")
	// (a workload may choose its number of clients: pgio's)
	mustContain(t, "the report", r.Stdout, c.name+" on ", ": closed loop, ")
	doc := readDoc(t, js)
	if doc.Workload != c.name || len(doc.Runs) == 0 {
		t.Fatalf("document of workload %q with %d runs", doc.Workload, len(doc.Runs))
	}
	ok := int64(0)
	for _, run := range doc.Runs {
		for _, op := range run.Ops {
			ok += op.OK
			mustContain(t, "the report", r.Stdout, op.Name+": ")
		}
	}
	if ok == 0 {
		t.Fatalf("no operation succeeded:\n%s", r.Stdout)
	}
	if c.hooks.Check != nil {
		// The run ends with the audit (a workload's Report, else its
		// Check), recorded in the document.
		if doc.Runs[0].Check == nil {
			t.Fatalf("the run's document has no audit:\n%s", r.Stdout)
		}
	}
}

// open runs an open loop at a rate the test server sustains.
func (c *conformance) open(t *testing.T) {
	js := c.path("open.json")
	r := c.run(t.Context(), "--init", "skip", "--rate", "40", "--duration", runFor, "--json", js)
	// A loaded machine may leave the loop behind its rate (BEHIND, exit
	// 1, its last error): that is the database's figure, not the
	// workload's conformance.
	// Its BEHIND line then says what was offered, in the offered line's
	// place.
	offered := "offered "
	if r.Code == 1 && strings.Contains(r.Stderr, "txload: behind: the database did not sustain ") {
		offered = "BEHIND: the target of 40 ops/s was not sustained"
	} else {
		want(t, r, ExitOK, "open-loop run")
	}
	mustContain(t, "the report", r.Stdout, "open loop at 40 ops/s", offered)
	if doc := readDoc(t, js); doc.Runs[0].Offered == 0 {
		t.Fatalf("the open loop offered nothing:\n%s", r.Stdout)
	}
}

func (c *conformance) check(t *testing.T) {
	r := c.cmd(t.Context(), "check")
	if c.hooks.Check == nil {
		refused(t, r, "check of a workload without Check")
		return
	}
	want(t, r, ExitOK, "check after the runs")
	if strings.Contains(r.Stdout, "VIOLATION") {
		t.Fatalf("check found violations:\n%s", r.Stdout)
	}
	if len(c.cfg.Flags) == 0 {
		return
	}
	// As a user (and the tamper catalogue) runs it: without the flags
	// init was given. What init loaded comes from the database (the
	// settings its marker recorded: workload.ReadMarker), not from the
	// flags' defaults.
	r = Command(t.Context(), c.reg, "check", c.name, "--url", c.url)
	want(t, r, ExitOK, "check without the workload's flags ("+strings.Join(c.cfg.Flags, " ")+")")
	if strings.Contains(r.Stdout, "VIOLATION") {
		t.Fatalf("check without the workload's flags (%s) found violations: what init loaded must come from the database:\n%s",
			strings.Join(c.cfg.Flags, " "), r.Stdout)
	}
}

// perStatement: -r reports each statement of a workload that times them,
// and is refused (exit 2, one line) by one that does not.
func (c *conformance) perStatement(t *testing.T) {
	r := c.run(t.Context(), "--init", "skip", "--duration", runFor, "-r")
	if !c.hooks.PerStatement {
		want(t, r, ExitUsage, "-r of a workload that does not time its statements")
		mustContain(t, "the refusal", r.Stderr, "--report-per-statement (-r): workload "+c.name)
		return
	}
	want(t, r, ExitOK, "run -r")
	if !regexp.MustCompile(`(?m)^ +statement +mean +count +failures +retries$`).MatchString(r.Stdout) {
		t.Fatalf("run -r printed no statement:\n%s", r.Stdout)
	}
}

// pgbenchFormat: --output pgbench prints pgbench's report, whose query
// mode is the protocol the document records: the workload says what its
// clients send.
func (c *conformance) pgbenchFormat(t *testing.T) {
	js := c.path("pgbench.json")
	r := c.run(t.Context(), "--init", "skip", "--duration", runFor, "--output", "pgbench", "--json", js)
	want(t, r, ExitOK, "run --output pgbench")
	m := regexp.MustCompile(`(?m)^query mode: (.*)$`).FindStringSubmatch(r.Stdout)
	if m == nil {
		t.Fatalf("no query mode line:\n%s", r.Stdout)
	}
	if got := readDoc(t, js).ConfigString(report.KeyProtocol); got == "" || got != m[1] {
		t.Fatalf("query mode %q, the document's protocol %q: the workload must say what it sends (QueryLoad.Protocol)", m[1], got)
	}
}

// instances runs two load generators at once, as --instance i/2 on one
// database, then merges their documents and draws them.
func (c *conformance) instances(t *testing.T) {
	docs := []string{c.path("i0.json"), c.path("i1.json")}
	if c.hooks.SingleProcess != "" {
		// Refused before the database is touched, whichever instance.
		for _, i := range []string{"0/2", "1/2"} {
			r := c.run(t.Context(), "--instance", i, "--duration", runFor)
			want(t, r, ExitUsage, "--instance "+i+" of a workload that runs in one process")
			mustContain(t, "the refusal", r.Stderr, "--instance: "+c.name+" runs in one txload process only: ")
		}
		docs = []string{c.path("closed.json")}
	} else {
		results := make(chan Result, 2)
		for i, js := range docs {
			go func() {
				results <- c.run(t.Context(), "--instance", strconv.Itoa(i)+"/2", "--duration", runFor, "--json", js)
			}()
		}
		for range docs {
			want(t, <-results, ExitOK, "run --instance i/2")
		}
	}
	m := Command(t.Context(), c.reg, append([]string{"merge"}, docs...)...)
	want(t, m, ExitOK, "merge")
	mustContain(t, "the merged report", m.Stdout, c.name+" on ")
	if len(docs) > 1 {
		mustContain(t, "the merged report", m.Stdout, "merged from 2 documents")
	}
	merged := c.path("merged.json")
	want(t, Command(t.Context(), c.reg, append([]string{"merge", "--output", "json", "-o", merged}, docs...)...), ExitOK, "merge --output json")
	html := c.path("report.html")
	want(t, Command(t.Context(), c.reg, "report", merged, c.path("open.json"), "-o", html), ExitOK, "report")
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "<!DOCTYPE html>") || !strings.Contains(string(b), "<svg") {
		t.Fatalf("report -o %s wrote no page with charts: %.200s", html, b)
	}
}

// interrupt stops a long run once it has made progress: exit 130, a
// report that says so, promptly; then check still passes.
func (c *conformance) interrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errb buffer
	done := make(chan int, 1)
	go func() {
		args := append([]string{"run", c.name, "--url", c.url, "--init", "skip", "--concurrency", "2", "--progress", "100ms",
			"--duration", "10m"}, c.cfg.Flags...)
		args = append(args, c.cfg.RunFlags...)
		done <- run(ctx, c.reg, &out, &errb, args...)
	}()
	deadline := time.After(time.Minute)
	for !errb.has("ops/s") {
		select {
		case code := <-done:
			t.Fatalf("a 10-minute run ended by itself: exit %d\n%s\n%s", code, out.String(), errb.String())
		case <-deadline:
			cancel()
			t.Fatalf("no progress line in a minute:\n%s", errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	stopped := time.Now()
	var code int
	select {
	case code = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("the run did not end a minute after its interrupt:\n%s", errb.String())
	}
	r := Result{Stdout: out.String(), Stderr: errb.String(), Code: code}
	want(t, r, ExitInterrupted, "an interrupted run")
	mustContain(t, "the report", r.Stdout, "INTERRUPTED")
	t.Logf("ended %s after the interrupt", time.Since(stopped).Round(time.Millisecond))
	if c.hooks.Check != nil {
		r := c.cmd(t.Context(), "check")
		want(t, r, ExitOK, "check after the interrupt")
	}
}

func readDoc(t *testing.T, path string) *report.Document {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc report.Document
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return &doc
}
