package cli

import (
	"testing"

	"github.com/txload/txload/report"
)

// --output pgbench's "query mode" line, and the document's protocol, say
// what the clients sent: bank, vote and append prepare their statements
// (issue 38 §5: the line said simple for every workload but pgbench's).
func TestQueryModeFollowsStatements(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		workload string
		args     []string
	}{
		{"bank", []string{"--accounts", "100"}},
		{"vote", []string{"--articles", "100"}},
		{"append", nil},
	} {
		t.Run(tc.workload, func(t *testing.T) {
			url := srv.NewDatabase(t)
			js := jsonPath(t)
			args := append([]string{"run", tc.workload, "--url", url, "--duration", "500ms", "--concurrency", "2",
				"--progress", "0", "--output", "pgbench", "--json", js}, tc.args...)
			r := txload(t.Context(), nil, args...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			mustContain(t, r.stdout, "\nquery mode: prepared\n")
			if got := readDoc(t, js).ConfigString(report.KeyProtocol); got != "prepared" {
				t.Fatalf("document's protocol %q, want prepared", got)
			}
		})
	}
}
