package txload_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/txload/txload/"

// Dependencies point one way: cli → engine, report, workload/* → workload,
// metrics, pg. This test lists each package's imports and keeps it so.
func TestDependencyDirection(t *testing.T) {
	forbidden := map[string][]string{
		"metrics":              {"engine", "report", "workload", "internal/"},
		"engine":               {"internal/pg", "internal/cli", "report", "workload/"},
		"report":               {"engine", "workload", "internal/"},
		"workload":             {"engine", "report", "internal/cli", "workload/"},
		"workload/bank":        {"engine", "report", "internal/cli"},
		"internal/pg":          {"engine", "report", "workload", "internal/cli"},
		"internal/pgtest":      {"engine", "report", "workload", "internal/cli"},
		"internal/pg/embedded": {"engine", "report", "workload", "metrics", "internal/cli"},
	}
	for pkg, bad := range forbidden {
		files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("package %s: no files (%v)", pkg, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
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
		}
	}
}
