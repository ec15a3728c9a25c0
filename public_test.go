package txload_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// recipe returns the Go files of docs/architecture.md's recipe: the
// workload and its test, the page's two go blocks under "### The recipe".
func recipe(t *testing.T) (workload, test string) {
	t.Helper()
	b, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, page, ok := strings.Cut(string(b), "\n### The recipe\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "### The recipe"`)
	}
	var blocks []string
	for {
		_, rest, ok := strings.Cut(page, "\n```go\n")
		if !ok {
			break
		}
		block, after, ok := strings.Cut(rest, "\n```\n")
		if !ok {
			t.Fatal("docs/architecture.md: a go block of the recipe does not end")
		}
		blocks, page = append(blocks, block+"\n"), after
	}
	if len(blocks) != 2 {
		t.Fatalf("docs/architecture.md's recipe has %d go blocks, want 2 (the workload, its test)", len(blocks))
	}
	return blocks[0], blocks[1]
}

// wrongNames is a workload's code with names of the contract misspelt: a
// verb that is not a command and a run default that does not exist. It
// must not compile.
const wrongNames = `package wrong

import (
	"github.com/spf13/pflag"
	"github.com/txload/txload/workload"
)

func Hooks(fs *pflag.FlagSet) workload.Hooks {
	workload.OnlyFor(fs, "lag", "rows")
	return workload.Hooks{RunDefaults: workload.RunDefaults{Init: "kep"}}
}
`

// The public surface is honest: docs/architecture.md's recipe, a workload
// written outside this module against the packages outside internal/,
// compiles, and its test passes the conformance tests (workloadtest); a
// verb or a run default misspelt does not compile.
func TestPublicContract(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	repo, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	goMod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := "1.26"
	for _, l := range strings.Split(string(goMod), "\n") {
		if v, ok := strings.CutPrefix(l, "go "); ok {
			goVersion = strings.TrimSpace(v)
		}
	}
	dir := t.TempDir()
	mod := "module example.com/hello\n\ngo " + goVersion + "\n\nrequire github.com/txload/txload v0.0.0\n\nreplace github.com/txload/txload => " + repo + "\n"
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	code, test := recipe(t)
	if err := os.Mkdir(filepath.Join(dir, "wrong"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"go.mod": mod, "go.sum": string(sum), "hello.go": code, "hello_test.go": test,
		"wrong/wrong.go": wrongNames} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The requirements come from txload's go.mod, through the replace;
	// nothing is downloaded that txload's own build did not already.
	tidy := exec.Command(goBin, "mod", "tidy")
	tidy.Dir = dir
	tidy.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy in the outside module: %v\n%s", err, out)
	}
	vet := exec.Command(goBin, "vet", ".")
	vet.Dir = dir
	vet.Env = append(os.Environ(), "GOWORK=off")
	if out, err := vet.CombinedOutput(); err != nil {
		t.Fatalf("the recipe does not build against the public packages: %v\n%s", err, out)
	}
	wrong := exec.Command(goBin, "build", "./wrong")
	wrong.Dir = dir
	wrong.Env = append(os.Environ(), "GOWORK=off")
	out, err := wrong.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "wrong.go:9:") || !strings.Contains(string(out), "wrong.go:10:") {
		t.Fatalf("a misspelt verb and run default compiled (want errors at wrong.go:9 and :10): %v\n%s", err, out)
	}
	// The recipe's test: the conformance tests, against the test server
	// (TXLOAD_TEST_URL, or an embedded one from the cache).
	run := exec.Command(goBin, "test", "-count=1", ".")
	run.Dir = dir
	run.Env = append(os.Environ(), "GOWORK=off")
	out, err = run.CombinedOutput()
	if err != nil {
		t.Fatalf("the recipe's test fails: %v\n%s", err, out)
	}
	t.Logf("the recipe's test: %s", bytes.TrimSpace(out))
}
