package txload_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/txload/txload/"

// forbidden maps each package (a directory; "x/..." covers the packages under
// x too) to what it must not import. Dependencies point one way:
// cli → runner → engine, report, workload/* → workload, metrics, pg; lag's
// orchestration (internal/lagrun) sits beside the runner and drives the load
// through it, with package lag's instrument (which knows no engine, workload
// or report) around it. The runner names no workload and no format but its
// own: pgbenchrun plugs pgbench's ways into it, and runs `txload pgbench`
// on workload/pgbench (no other workload).
var forbidden = map[string][]string{
	"cmd/txload":           {"engine", "report", "internal/runner", "pg", "metrics"},
	"internal/cli":         {},
	"internal/runner":      {"internal/cli", "internal/lagrun", "internal/failoverrun", "internal/pgbenchrun", "workload/"},
	"internal/pgbenchrun":  {"internal/cli", "internal/lagrun", "internal/failoverrun", "workload/all", "workload/append", "workload/bank", "workload/pgio", "workload/vote"},
	"internal/lagrun":      {"engine", "internal/cli", "internal/pgtest"},
	"internal/failoverrun": {"internal/cli", "internal/pgtest", "internal/lagrun"},
	"engine":               {"internal/", "report", "workload/", "pg", "executor"},
	"report/...":           {"engine", "workload", "internal/", "pg", "executor"},
	"metrics":              {"engine", "report", "workload", "internal/", "pg", "executor"},
	"history":              {"engine", "report", "workload", "metrics", "internal/", "pg", "executor"},
	"workload":             {"engine", "report", "internal/cli", "internal/runner", "workload/"},
	"workload/...":         {"engine", "report", "internal/cli", "internal/runner"},
	// The workloads' conformance tests drive the commands as a user does.
	"workload/workloadtest": {"engine", "internal/runner", "internal/lagrun", "internal/failoverrun", "internal/pg/"},
	"internal/pg/...":       {"engine", "report", "workload", "internal/cli", "internal/runner", "internal/pgtest"},
	"internal/pgwire":       {"engine", "report", "workload", "metrics", "internal/", "pg", "executor"},
	"executor":              {"engine", "report", "workload", "internal/cli", "internal/runner", "internal/pgtest"},
	"internal/pg/embedded":  {"engine", "report", "workload", "metrics", "internal/cli", "internal/runner"},
	"internal/pgtest":       {"engine", "report", "workload", "internal/cli", "internal/runner"},
	"internal/outfile":      {"engine", "report", "workload", "metrics", "internal/", "pg", "executor"},
	"internal/doctest":      {"engine", "report", "workload", "metrics", "history", "slo", "lag", "internal/", "pg", "executor"},
	"internal/tcpproxy":     {"engine", "report", "workload", "metrics", "history", "slo", "lag", "internal/", "pg", "executor"},
	"pg":                    {"engine", "report", "workload", "internal/cli", "internal/runner", "executor"},
	"slo":                   {"engine", "report", "workload", "internal/", "pg", "executor"},
	"internal/interrupt":    {"engine", "report", "workload", "internal/cli"},
	"printable":             {"engine", "report", "workload", "metrics", "history", "slo", "lag", "internal/", "pg", "executor"},
	"internal/pgbenchargs":  {"engine", "report", "internal/cli", "internal/runner", "pg"},
	"lag":                   {"engine", "report", "workload", "internal/cli", "internal/runner", "internal/lagrun", "internal/pgtest"},
	// Programs of the bench scripts: they make inputs from the public
	// packages, as a user's program would.
	"bench/...": {"engine", "workload", "internal/", "pg", "executor"},
}

// The packages that may talk to the outside world: only the CLI (and main)
// write to stdout and stderr or read the environment; the test helper reads
// TXLOAD_TEST_URL.
var mayUseProcessIO = map[string]bool{"cmd/txload": true, "internal/cli": true, "internal/pgtest": true, "bench/longdoc": true}

// packages lists every directory of the module holding non-test Go files.
func packages(t *testing.T) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dir := filepath.ToSlash(filepath.Dir(path))
			pkgs[dir] = append(pkgs[dir], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// ownRule lists the packages whose entry replaces those of the trees above
// them: the workloads' test helper, which runs the commands.
var ownRule = map[string]bool{"workload/workloadtest": true}

// rules returns the rules that apply to pkg: its own, and those of the
// "x/..." entries above it (but for ownRule's).
func rules(pkg string) ([]string, bool) {
	if ownRule[pkg] {
		bad, ok := forbidden[pkg]
		return bad, ok
	}
	var out []string
	found := false
	for key, bad := range forbidden {
		base, tree := strings.CutSuffix(key, "/...")
		if pkg == base || (tree && strings.HasPrefix(pkg, base+"/")) {
			out = append(out, bad...)
			found = true
		}
	}
	return out, found
}

// Every package has a rule, and keeps it.
func TestDependencyDirection(t *testing.T) {
	for pkg, files := range packages(t) {
		if pkg == "." {
			continue
		}
		bad, ok := rules(pkg)
		if !ok {
			t.Errorf("package %s has no dependency rule: add it to forbidden in deps_test.go", pkg)
			continue
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path := strings.Trim(imp.Path.Value, `"`)
				if !strings.HasPrefix(path, module) {
					continue
				}
				rel := strings.TrimPrefix(path, module)
				for _, b := range bad {
					// "x/" forbids the packages under x; "x" forbids x and them.
					sub := strings.HasSuffix(b, "/") && strings.HasPrefix(rel, b)
					if sub || rel == b || strings.HasPrefix(rel, b+"/") {
						t.Errorf("%s imports %s: %s must not depend on %s", f, rel, pkg, b)
					}
				}
			}
			if !mayUseProcessIO[pkg] {
				ast.Inspect(af, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "os" {
						switch sel.Sel.Name {
						case "Stdout", "Stderr", "Getenv", "LookupEnv":
							t.Errorf("%s uses os.%s: only the CLI reads the environment and writes to stdout/stderr", f, sel.Sel.Name)
						}
					}
					return true
				})
			}
		}
	}
}
