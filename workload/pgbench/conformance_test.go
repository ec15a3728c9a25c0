package pgbench_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/txload/txload/workload"
	"github.com/txload/txload/workload/pgbench"
	"github.com/txload/txload/workload/workloadtest"
)

// The pgbench family through every command (workloadtest.Run): tpcb's
// tables, the builtins, and a script file on those tables.
func TestConformance(t *testing.T) {
	metas := map[string]workload.Meta{}
	for _, m := range pgbench.Metas() {
		metas[m.Name] = m
	}
	for _, name := range []string{"tpcb", "tpcb-like", "simple-update", "select-only"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			workloadtest.Run(t, pgbench.Srv(), metas[name], workloadtest.Config{})
		})
	}
	t.Run("script", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "read.sql")
		script := "\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"
		if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		workloadtest.Run(t, pgbench.Srv(), metas["script"], workloadtest.Config{
			Flags:  []string{"--file", file},
			Others: []workload.Meta{metas["tpcb"]},
			Setup: func(t *testing.T, url string) {
				reg, err := workload.NewRegistry(metas["tpcb"])
				if err != nil {
					t.Fatal(err)
				}
				if r := workloadtest.Command(t.Context(), reg, "init", "tpcb", "--url", url); r.Code != workloadtest.ExitOK {
					t.Fatalf("init tpcb: exit %d\n%s", r.Code, r.Stderr)
				}
			},
		})
	})
}
