package txload_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/txload/txload/internal/cli"
	"github.com/txload/txload/workload"
	"github.com/txload/txload/workload/all"
)

// unreachable is the $URL of docs/bad-input.md's refusals that come before
// connecting.
const unreachable = "postgres://nobody@127.0.0.1:1/x"

// txloadLine runs a command line in-process with every workload, as the
// binary does, and returns what it printed on stderr and its exit code.
func txloadLine(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	ran := false
	root := cli.Root(cli.Env{Stdout: &out, Stderr: &errb, Registry: all.Registry(), Version: "test",
		Getenv: func(string) string { return "" }, LookupEnv: func(string) (string, bool) { return "", false }}, &ran)
	root.SetArgs(args)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err := root.ExecuteContext(ctx)
	if err != nil && !cli.Printed(err) {
		_, _ = io.WriteString(&errb, "txload: "+err.Error()+"\n")
	}
	return errb.String(), cli.ExitCode(err, ran)
}

// The README lists every registered workload as `txload workloads` prints
// them, and each has a row of its table linking its page, which exists
// and is in the README's Documentation list; a workload whose runs do not
// load fresh data by default is named in the --init row; docs/bad-input.md
// has a refusal of each, and its rows that refuse before connecting are
// what the commands print (those that enumerate the workloads included,
// "No workload" too), so a new workload cannot be left out of them (issue
// 38 §6).
func TestWorkloadListings(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	root := cli.Root(cli.Env{Stdout: &out, Stderr: io.Discard, Registry: all.Registry(), Version: "test"}, new(bool))
	root.SetArgs([]string{"workloads"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	listing := "```\n$ txload workloads\n" + out.String() + "```\n"
	if !strings.Contains(string(readme), listing) {
		t.Errorf("README.md's workload listing is not what `txload workloads` prints; want:\n%s", listing)
	}
	table := map[string]string{} // workload: the page its row links
	for _, m := range regexp.MustCompile("(?m)^\\| (`[^|]+`) \\| (.*)$").FindAllStringSubmatch(string(readme), -1) {
		page := regexp.MustCompile(`\]\((docs/[^)#]+\.md)\)`).FindStringSubmatch(m[2])
		for _, name := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(m[1], -1) {
			if page == nil {
				table[name[1]] = ""
			} else {
				table[name[1]] = page[1]
			}
		}
	}
	_, docList, _ := strings.Cut(string(readme), "\n## Documentation\n")
	docList, _, _ = strings.Cut(docList, "\n## ")
	initRow := regexp.MustCompile("(?m)^\\| `--init fresh\\\\\\|keep\\\\\\|skip` \\|.*$").FindString(string(readme))
	if initRow == "" {
		t.Fatal("README.md has no row of --init fresh|keep|skip")
	}
	bad, err := os.ReadFile("docs/bad-input.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := badInputRows(string(bad))
	for _, m := range all.Registry().All() {
		name, h := m.Name, m.New().Hooks()
		page, ok := table[name]
		switch {
		case !ok:
			t.Errorf("README.md's table of workloads has no row for %s", name)
		case page == "":
			t.Errorf("README.md's row of %s links no page of docs/ (docs/%s.md: what it measures, with real output)", name, name)
		default:
			if _, err := os.Stat(page); err != nil {
				t.Errorf("README.md's row of %s links %s: %v", name, page, err)
			}
			if !strings.Contains(docList, "("+page+")") {
				t.Errorf("README.md's Documentation list does not link %s, the page of %s", page, name)
			}
		}
		if d := h.RunDefaults.Init; h.Ops != nil && h.Init != nil && d.String() != workload.InitFresh.String() &&
			!regexp.MustCompile("[ `(]"+regexp.QuoteMeta(name)+"[`,;:) ]").MatchString(initRow) {
			t.Errorf("README.md's --init row does not name %s, whose runs default to --init %s:\n%s", name, d, initRow)
		}
		if !slices.ContainsFunc(rows, func(r row) bool { return len(r.args) > 1 && r.args[1] == name }) {
			t.Errorf("docs/bad-input.md has no refusal of a command of %s (txload VERB %s …)", name, name)
		}
	}
	checked := 0
	for _, r := range rows {
		if r.exit != "2" || !r.beforeConnecting() {
			continue
		}
		t.Run(strings.Join(r.args, " "), func(t *testing.T) {
			stderr, code := txloadLine(t, r.args...)
			if code != 2 || strings.TrimSuffix(stderr, "\n") != r.line {
				t.Errorf("docs/bad-input.md:%d: `%s` printed (exit %d):\n%s\nthe page says (exit 2):\n%s", r.n, r.cmd, code, stderr, r.line)
			}
		})
		checked++
	}
	if checked < 50 {
		t.Errorf("checked only %d rows of docs/bad-input.md: the row reader is broken", checked)
	}
}

// row is a row of docs/bad-input.md's tables: its command, exit code and
// line.
type row struct {
	n               int
	cmd, exit, line string
	args            []string
	// server: the row is under "Needs the server's answer".
	server bool
}

var rowRE = regexp.MustCompile("^\\| [^|]+ \\| `([^`]+)` \\| ([0-9]+) \\| `(.+)` \\|$")

func badInputRows(page string) []row {
	var out []row
	server := false
	for i, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "## ") {
			server = strings.HasPrefix(l, "## Needs the server")
		}
		m := rowRE.FindStringSubmatch(l)
		if m == nil || !strings.HasPrefix(m[1], "txload ") {
			continue
		}
		out = append(out, row{n: i + 1, cmd: m[1], exit: m[2], line: strings.Trim(m[3], "`"), args: strings.Fields(m[1])[1:], server: server})
	}
	return out
}

// prepared are arguments the page's rows refuse for what the machine
// held when they were run: a directory named hdir, a port in use.
var prepared = map[string]bool{"hdir": true, "127.0.0.1:9464": true}

var fileRE = regexp.MustCompile(`\.(sql|json|html|csv|png|svg|gif|hlog|jsonl|edn|txt)$|\$URL[0-9]`)

// beforeConnecting says the row's command is refused before any server
// is touched, given nothing but $URL: no quotes to interpret, no file.
func (r row) beforeConnecting() bool {
	if len(r.args) == 1 {
		return true // a verb alone: refused before any flag is read
	}
	if r.server || strings.ContainsAny(r.cmd, `'"<>|&;*/`) || !strings.Contains(r.cmd, "--url $URL") {
		return false
	}
	for _, a := range r.args {
		if fileRE.MatchString(a) || prepared[a] {
			return false
		}
	}
	for i, a := range r.args {
		if a == "$URL" {
			r.args[i] = unreachable
		}
	}
	return true
}
